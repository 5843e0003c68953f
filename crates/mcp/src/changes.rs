//! List changes: a server's word that its tools, resources or prompts
//! changed, observed on every session of an [`McpTransport`] and passed to
//! its owner ([`McpTransport::list_changes`]).
//!
//! [`McpTransport`]: crate::McpTransport
//! [`McpTransport::list_changes`]: crate::McpTransport::list_changes
//! [`McpTransport::listed_tools`]: crate::McpTransport::listed_tools
//!
//! # How a change arrives, by protocol version
//!
//! Up to 2025-11-25 a server sends `notifications/tools/list_changed` (or
//! the `resources` or `prompts` one) on the session, whenever it likes; the
//! session's client handler ([`Watcher`]) hears it. From 2026-07-28 a
//! server sends list changes only on a `subscriptions/listen` stream the
//! client opened, so a session that negotiated that version opens one, for
//! the lists the server declared `listChanged` for, and reads the tools
//! again once the server acknowledged it: a stream does not replay what
//! changed before it was open. A notification a server sends outside any
//! stream reaches the handler whatever the version, and counts the same.
//!
//! # Why the transport reads the tools again itself
//!
//! A call is checked against the tools the server listed, and a proxy
//! offers what [`McpTransport::listed_tools`] says; both must be the
//! server's current list by the time the owner hears of the change. So a
//! tools change is passed on only after the list was read again. A session
//! started again after a restart that lists other tools than the one before
//! it is a tools change too: the owner cannot tell a restart from an edit.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ClientHandler;
use rmcp::model::{
    ResourceUpdatedNotificationParam, ServerCapabilities, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, Peer, RoleClient};
use tokio::sync::broadcast;

use crate::listed::ListedTools;

/// How long a server may take to list its tools again after a change (a
/// server that never answers must not hold the next session's listing).
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How many changes an owner that does not keep up may fall behind before
/// it is told it lagged (and should read everything again).
pub(crate) const CHANGES_BUFFERED: usize = 16;

/// How many resource updates an owner that does not keep up may fall
/// behind before it is told it lagged (and should read its resources again).
pub(crate) const UPDATES_BUFFERED: usize = 64;

/// A list of the server's that changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ListChange {
    /// Its tools (`notifications/tools/list_changed`); read again already.
    Tools,
    /// Its resources (`notifications/resources/list_changed`).
    Resources,
    /// Its prompts (`notifications/prompts/list_changed`).
    Prompts,
}

impl ListChange {
    /// The change `notification` announces, if it announces one.
    fn of(notification: &ServerNotification) -> Option<Self> {
        match notification {
            ServerNotification::ToolListChangedNotification(_) => Some(Self::Tools),
            ServerNotification::ResourceListChangedNotification(_) => Some(Self::Resources),
            ServerNotification::PromptListChangedNotification(_) => Some(Self::Prompts),
            _ => None,
        }
    }
}

/// A session's client handler: it answers the server as `()` does, and
/// passes on the list changes the server announces.
#[derive(Clone)]
pub(crate) struct Watcher {
    /// Which session this is (1 for the transport's first).
    pub(crate) session: u64,
    pub(crate) tools: Arc<ListedTools>,
    pub(crate) changes: broadcast::Sender<ListChange>,
    /// The URIs of the resources the server says were updated.
    pub(crate) updates: broadcast::Sender<String>,
}

impl Watcher {
    /// Passes `change` on, after reading the tools again through `peer`
    /// for a tools change.
    async fn changed(&self, change: ListChange, peer: &Peer<RoleClient>) {
        if change == ListChange::Tools
            && let Err(e) = self
                .tools
                .read_again(self.session, peer, READ_TIMEOUT)
                .await
        {
            // The owner hears of it all the same; what it reads next starts
            // a new session if this one is gone.
            tracing::warn!(error = %e, "tools/list after a tools change failed");
        }
        // No receiver is no error: nobody follows the changes.
        let _ = self.changes.send(change);
    }

    /// On a session that negotiated 2026-07-28, opens `subscriptions/listen`
    /// for the lists the server declared `listChanged` for and passes on
    /// what arrives on it, in the background, until the session ends.
    pub(crate) fn listen(&self, peer: &Peer<RoleClient>) {
        let Some(info) = peer.peer_info() else {
            return;
        };
        if info.protocol_version.has_initialize() {
            return;
        }
        let Some(filter) = declared(&info.capabilities) else {
            return;
        };
        let (watcher, peer) = (self.clone(), peer.clone());
        tokio::spawn(async move { watcher.follow(&peer, filter).await });
    }

    async fn follow(&self, peer: &Peer<RoleClient>, filter: SubscriptionFilter) {
        let mut stream = match peer.listen(filter).await {
            Ok(stream) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "subscriptions/listen was refused: list changes are not followed");
                return;
            }
        };
        if stream.acknowledged().tools_list_changed == Some(true) {
            match self
                .tools
                .read_again(self.session, peer, READ_TIMEOUT)
                .await
            {
                Ok(true) => {
                    let _ = self.changes.send(ListChange::Tools);
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "tools/list after subscribing failed"),
            }
        }
        while let Ok(Some(notification)) = stream.next().await {
            if let Some(change) = ListChange::of(&notification) {
                self.changed(change, peer).await;
            }
        }
    }
}

/// The list changes `capabilities` declare, as a `subscriptions/listen`
/// filter; `None` when they declare none.
fn declared(capabilities: &ServerCapabilities) -> Option<SubscriptionFilter> {
    let mut filter = SubscriptionFilter::builder();
    let mut any = false;
    if capabilities
        .tools
        .as_ref()
        .is_some_and(|c| c.list_changed == Some(true))
    {
        filter = filter.tools_list_changed();
        any = true;
    }
    if capabilities
        .resources
        .as_ref()
        .is_some_and(|c| c.list_changed == Some(true))
    {
        filter = filter.resources_list_changed();
        any = true;
    }
    if capabilities
        .prompts
        .as_ref()
        .is_some_and(|c| c.list_changed == Some(true))
    {
        filter = filter.prompts_list_changed();
        any = true;
    }
    any.then(|| filter.build())
}

impl ClientHandler for Watcher {
    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.changed(ListChange::Tools, &context.peer).await;
    }

    async fn on_resource_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.changed(ListChange::Resources, &context.peer).await;
    }

    async fn on_prompt_list_changed(&self, context: NotificationContext<RoleClient>) {
        self.changed(ListChange::Prompts, &context.peer).await;
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // No receiver is no error: nobody follows the updates.
        let _ = self.updates.send(params.uri);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn capabilities(declared: serde_json::Value) -> ServerCapabilities {
        serde_json::from_value(declared).unwrap()
    }

    #[test]
    fn a_stream_asks_for_the_changes_the_server_declared() {
        let none = capabilities(json!({"tools": {}, "resources": {"listChanged": false}}));
        assert_eq!(declared(&none), None);
        let some = capabilities(json!({"tools": {"listChanged": true}, "resources": {},
                                       "prompts": {"listChanged": true}}));
        let filter = declared(&some).unwrap();
        assert_eq!(filter.tools_list_changed, Some(true));
        assert_eq!(filter.resources_list_changed, None);
        assert_eq!(filter.prompts_list_changed, Some(true));
        assert_eq!(filter.resource_subscriptions, None);
    }

    #[test]
    fn a_watcher_answers_the_server_as_the_unit_handler_does() {
        let (changes, _) = broadcast::channel(1);
        let watcher = Watcher {
            session: 1,
            tools: Arc::default(),
            changes,
            updates: broadcast::channel(1).0,
        };
        assert_eq!(
            serde_json::to_value(ClientHandler::get_info(&watcher)).unwrap(),
            serde_json::to_value(ClientHandler::get_info(&())).unwrap()
        );
    }
}
