//! [`ListedTools`]: the server's tools as last listed, one list for all of a
//! transport's sessions, kept current when the server says they changed.
//!
//! # Why one list, marked with its session
//!
//! A call looks its tool up here, so the list must be the live session's,
//! and reading it must cost a call next to nothing: it is an `Arc` behind a
//! lock held only to clone it. A session replaced after a restart lists its
//! tools into the same place, and a list read on an older session (a
//! notification it sent just before it was dropped) never overwrites a
//! newer session's. Reads are one at a time, so the last to finish is the
//! newest.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use recourse_protocol::mcp::McpError;
use rmcp::model::Tool;
use rmcp::service::{Peer, RoleClient};
use tokio::sync::Mutex;

/// The server's tools as last listed, and on which session.
#[derive(Debug, Default)]
pub(crate) struct ListedTools {
    current: RwLock<Listing>,
    /// Held while a list is read, so reads do not overtake each other.
    reading: Mutex<()>,
}

#[derive(Debug, Default)]
struct Listing {
    /// The session that listed them; 0 before any did.
    session: u64,
    tools: Arc<Vec<Tool>>,
}

impl ListedTools {
    /// The tools as last listed.
    pub(crate) fn current(&self) -> Arc<Vec<Tool>> {
        let listing = self.current.read().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(&listing.tools)
    }

    /// Lists the tools through `peer` (session number `session`) and keeps
    /// them; whether they differ from an earlier listing's. Waiting for
    /// another read and this one take at most `timeout`.
    ///
    /// # Errors
    /// `tools/list` failed or took too long; the list kept is unchanged.
    pub(crate) async fn read_again(
        &self,
        session: u64,
        peer: &Peer<RoleClient>,
        timeout: Duration,
    ) -> Result<bool, McpError> {
        let read = async {
            let _one_at_a_time = self.reading.lock().await;
            let tools = peer.list_all_tools().await;
            tools.map(|tools| self.keep(session, tools))
        };
        match tokio::time::timeout(timeout, read).await {
            Ok(Ok(changed)) => Ok(changed),
            Ok(Err(e)) => Err(McpError::unreachable(format!("tools/list failed: {e}"))),
            Err(_) => Err(McpError::unreachable(format!(
                "tools/list got no answer within {timeout:?}"
            ))),
        }
    }

    /// Keeps `tools`, listed on session `session`, unless a later session
    /// listed already; whether they differ from an earlier listing's.
    fn keep(&self, session: u64, tools: Vec<Tool>) -> bool {
        let mut listing = self.current.write().unwrap_or_else(PoisonError::into_inner);
        if session < listing.session {
            return false;
        }
        let changed = listing.session > 0 && *listing.tools != tools;
        *listing = Listing {
            session,
            tools: Arc::new(tools),
        };
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(names: &[&str]) -> Vec<Tool> {
        names
            .iter()
            .map(|name| {
                serde_json::from_value(
                    serde_json::json!({"name": name, "inputSchema": {"type": "object"}}),
                )
                .unwrap()
            })
            .collect()
    }

    fn names(listed: &ListedTools) -> Vec<String> {
        listed
            .current()
            .iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    #[test]
    fn a_first_listing_is_no_change_and_a_different_one_is() {
        let listed = ListedTools::default();
        assert!(!listed.keep(1, tools(&["a"])));
        assert!(!listed.keep(1, tools(&["a"])));
        assert!(listed.keep(1, tools(&["a", "b"])));
        // A restarted session listing the same tools changed nothing.
        assert!(!listed.keep(2, tools(&["a", "b"])));
        assert!(listed.keep(3, tools(&["a"])));
        assert_eq!(names(&listed), ["a"]);
    }

    #[test]
    fn an_older_sessions_list_never_replaces_a_newer_ones() {
        let listed = ListedTools::default();
        listed.keep(2, tools(&["new"]));
        assert!(!listed.keep(1, tools(&["old"])));
        assert_eq!(names(&listed), ["new"]);
    }
}
