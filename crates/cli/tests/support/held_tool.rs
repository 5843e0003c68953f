//! A tool that tells the test when a request has arrived, then holds it
//! until the test lets it answer: the call is provably in flight. Shared by
//! the gateway test files (`#[path]`-included).

use std::sync::Arc;

use serde_json::json;

/// The tool's URL, a receiver told of each arrival, and the sender that
/// releases the (first) held request.
pub(crate) async fn held_tool() -> (
    String,
    tokio::sync::mpsc::Receiver<()>,
    tokio::sync::oneshot::Sender<()>,
) {
    let (arrived_tx, arrived_rx) = tokio::sync::mpsc::channel(1);
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    let release = Arc::new(tokio::sync::Mutex::new(Some(release_rx)));
    let app = axum::Router::new().route(
        "/tool",
        axum::routing::post(move || {
            let (arrived, release) = (arrived_tx.clone(), Arc::clone(&release));
            async move {
                let _ = arrived.send(()).await;
                if let Some(rx) = release.lock().await.take() {
                    let _ = rx.await;
                }
                axum::Json(json!({"success": true, "data": {"held": true}}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/tool", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, arrived_rx, release_tx)
}
