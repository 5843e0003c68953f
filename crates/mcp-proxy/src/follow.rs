//! Following the upstreams' list changes: an upstream whose tools changed
//! has them offered anew, and the clients are told; with one upstream, a
//! change of its resources or prompts is passed on as it is.
//!
//! # How a change flows
//!
//! The upstream's session hears it (`notifications/tools/list_changed`, on
//! a `subscriptions/listen` stream from 2026-07-28) and lists its tools
//! again before passing the change on ([`McpTransport::list_changes`]).
//! The proxy then builds a new catalog from every upstream's latest list —
//! the same names, the same policy file — swaps it in whole, and only then
//! tells its clients ([`Listeners::tell`](crate::listeners::Listeners::tell)),
//! so a client that lists the tools on hearing of the change sees the new
//! ones. A relisting that offers exactly what was offered tells no one.
//!
//! A follower holds the proxy weakly: it ends when the proxy is dropped (its
//! upstreams' sessions then end, and with them the changes).
//!
//! [`McpTransport::list_changes`]: recourse_mcp::McpTransport::list_changes

use std::sync::{Arc, Weak};

use recourse_mcp::ListChange;
use tokio::sync::broadcast::{Receiver, error::RecvError};

use crate::capabilities;
use crate::proxy::{McpProxy, Shared};

impl McpProxy {
    /// Follows upstream `upstream`'s `changes` in the background.
    pub(crate) fn follow(&self, upstream: usize, changes: Receiver<ListChange>) {
        let shared = Arc::downgrade(&self.shared);
        tokio::spawn(follow(shared, upstream, changes));
    }
}

async fn follow(shared: Weak<Shared>, upstream: usize, mut changes: Receiver<ListChange>) {
    loop {
        let changed: &[ListChange] = match changes.recv().await {
            Ok(ListChange::Tools) => &[ListChange::Tools],
            Ok(ListChange::Resources) => &[ListChange::Resources],
            Ok(ListChange::Prompts) => &[ListChange::Prompts],
            Ok(_) => &[],
            // Changes were missed: anything may have changed.
            Err(RecvError::Lagged(_)) => &[
                ListChange::Tools,
                ListChange::Resources,
                ListChange::Prompts,
            ],
            Err(RecvError::Closed) => return,
        };
        let Some(shared) = shared.upgrade() else {
            return;
        };
        for &change in changed {
            let tell = if change == ListChange::Tools {
                relist(&shared, upstream).await
            } else {
                // Resources and prompts are the one upstream's, passed on.
                shared.upstreams.len() == 1
            };
            if tell && capabilities::announces(&shared.capabilities, change) {
                shared.listeners.tell(change).await;
            }
        }
    }
}

/// Offers upstream `upstream`'s tools as it lists them now; whether what is
/// offered changed. A relisting that fails keeps what was offered, warned.
async fn relist(shared: &Shared, upstream: usize) -> bool {
    let _one_at_a_time = shared.rebuilding.lock().await;
    let connected = &shared.upstreams[upstream];
    let warn = |why: String| {
        (shared.warn)(format!(
            "{}: its tools changed, but {why}; the tools offered are unchanged",
            connected.upstream
        ));
    };
    let timeout = connected.executor.config().request_timeout;
    let transport = &connected.transport;
    let (listed, described) = match (
        transport.listed_tools(timeout).await,
        transport.tools().await,
    ) {
        (Ok(listed), Ok(described)) => (listed, described),
        (Err(e), _) | (_, Err(e)) => {
            warn(format!("they could not be listed ({e})"));
            return false;
        }
    };
    let current = shared.catalog();
    let mut rebuilt = match current.relisted(upstream, listed, described) {
        Ok(rebuilt) => rebuilt,
        Err(e) => {
            warn(e.to_string());
            return false;
        }
    };
    for left_out in rebuilt.apply_leniently(&shared.policies) {
        (shared.warn)(left_out);
    }
    let changed = !rebuilt.offers_as(&current);
    shared.offer(rebuilt);
    changed
}
