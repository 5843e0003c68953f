//! A lookup whose placeholder is the value of a credential-named query
//! parameter (`/lookup?key={key}`), in front of the reference tools'
//! export lookup: a template the journal must keep as it is.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use recourse_reference_tools::RunningTools;
use serde_json::Value;

/// A lookup at `/lookup?key=K`, answering what the tools' `/api/exports/K`
/// answers — once switched on; until then 503, so a call looked up through it
/// stays `unknown` and a settler has to use the template the journal kept.
#[derive(Debug, Clone)]
pub struct KeyLookup {
    /// The lookup template: `http://ADDR/lookup?key={key}`.
    pub template: String,
    up: Arc<AtomicBool>,
}

impl KeyLookup {
    /// Starts it, switched off, in front of `tools`.
    pub async fn start(tools: &RunningTools) -> Self {
        #[derive(Clone)]
        struct Forward {
            up: Arc<AtomicBool>,
            tools: String,
        }
        async fn answer(
            State(f): State<Forward>,
            Query(query): Query<HashMap<String, String>>,
        ) -> Response {
            if !f.up.load(Ordering::SeqCst) {
                return StatusCode::SERVICE_UNAVAILABLE.into_response();
            }
            let Some(key) = query.get("key") else {
                return StatusCode::BAD_REQUEST.into_response();
            };
            let answer = reqwest::get(format!("{}/api/exports/{key}", f.tools))
                .await
                .expect("the tools answer");
            let body: Value = answer.json().await.expect("an envelope");
            axum::Json(body).into_response()
        }
        let up = Arc::new(AtomicBool::new(false));
        let state = Forward {
            up: Arc::clone(&up),
            tools: tools.base_url(),
        };
        let app = axum::Router::new()
            .route("/lookup", axum::routing::get(answer))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("its address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            template: format!("http://{addr}/lookup?key={{key}}"),
            up,
        }
    }

    /// Lookups are answered from now on.
    pub fn switch_on(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}
