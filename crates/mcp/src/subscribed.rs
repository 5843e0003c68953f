//! Resource subscriptions (`resources/subscribe`, protocol versions up to
//! 2025-11-25) that outlive a session.
//!
//! # Why the transport keeps what was subscribed
//!
//! A subscription belongs to the server's session, and this transport
//! replaces a session that died (a child process restarted, an HTTP session
//! the server forgot). Its owner subscribed once and expects updates for as
//! long as it has not unsubscribed, so the transport keeps the URIs it
//! subscribed to and subscribes to each again on every new session, before
//! the session is used. An update the server sent while no session was up
//! is not replayed: an owner that must not miss one reads the resource
//! again when [`McpTransport::sessions_started`] moves.

use std::collections::BTreeSet;
use std::sync::PoisonError;
use std::time::Duration;

use recourse_protocol::mcp::McpError;
use rmcp::model::SubscribeRequestParams;
use rmcp::service::{Peer, RoleClient};
use serde_json::json;
use tokio::sync::broadcast;

use crate::forward::RpcError;
use crate::transport::McpTransport;

impl McpTransport {
    /// Subscribes to updates of the resource at `uri` (`resources/subscribe`)
    /// on this session and, until [`unsubscribe`](Self::unsubscribe)d, on
    /// every session started after it. The server's refusal comes back as
    /// it sent it, and nothing is kept.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use recourse_mcp::{McpTarget, McpTransport};
    ///
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = McpTransport::new(McpTarget::command_line("mcp-server-everything")?);
    /// let mut updates = server.resource_updates();
    /// let timeout = Duration::from_secs(20);
    /// if let Err(refused) = server.subscribe("test://static/resource/1", timeout).await? {
    ///     return Err(format!("refused: {}", refused.message).into());
    /// }
    /// while let Ok(uri) = updates.recv().await {
    ///     println!("{uri} was updated");
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`forward`](Self::forward).
    pub async fn subscribe(
        &self,
        uri: &str,
        timeout: Duration,
    ) -> Result<Result<(), RpcError>, McpError> {
        let answer = self
            .forward("resources/subscribe", Some(json!({ "uri": uri })), timeout)
            .await?;
        Ok(answer.map(|_| {
            self.kept().insert(uri.to_owned());
        }))
    }

    /// Stops the updates of the resource at `uri` (`resources/unsubscribe`):
    /// no session started from now on subscribes to it again, whatever the
    /// server answers.
    ///
    /// # Errors
    /// As [`forward`](Self::forward).
    pub async fn unsubscribe(
        &self,
        uri: &str,
        timeout: Duration,
    ) -> Result<Result<(), RpcError>, McpError> {
        self.kept().remove(uri);
        let answer = self
            .forward(
                "resources/unsubscribe",
                Some(json!({ "uri": uri })),
                timeout,
            )
            .await?;
        Ok(answer.map(|_| ()))
    }

    /// The URIs of the resources the server says were updated
    /// (`notifications/resources/updated`), on this session and every one
    /// started after it. A receiver that falls behind gets
    /// `RecvError::Lagged`: it should then read its resources again.
    pub fn resource_updates(&self) -> broadcast::Receiver<String> {
        self.updates.subscribe()
    }

    /// Subscribes the new session of `peer` to every resource kept; a
    /// refusal is warned of, and the URI kept for the next session.
    pub(crate) async fn subscribe_again(&self, peer: &Peer<RoleClient>) {
        let uris: Vec<String> = self.kept().iter().cloned().collect();
        for uri in uris {
            // The method sessions up to 2025-11-25 have (rmcp marks it legacy).
            #[allow(deprecated)]
            let subscribed = peer
                .subscribe(SubscribeRequestParams::new(uri.clone()))
                .await;
            if let Err(e) = subscribed {
                tracing::warn!(%uri, error = %e, "resources/subscribe on a new session failed");
            }
        }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.subscribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
