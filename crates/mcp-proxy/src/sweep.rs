//! The proxy's lease sweeper: the calls a proxy left in flight (it was
//! killed mid-write, or another proxy on the same journal was) settled once
//! their lease runs out, by the runtime's sweeper
//! ([`recourse::journal::sweep`]), reading MCP tools through the upstreams.
//!
//! # Why reads are routed by tool name
//!
//! A journaled call's verification names the tool it reads as its upstream
//! knows it (`exports_lookup`, not `exports__exports_lookup`), and the
//! settler has one transport for tool reads. So the proxy gives it one that
//! sends each read to the upstream offering that tool. A name two upstreams
//! offer cannot be routed: that read cannot tell, and the call is left
//! unknown rather than settled on a guess.

use std::sync::Arc;

use recourse::clock::Clock;
use recourse::journal::{SettleOptions, sweep_once};
use recourse::transport::{BoxFuture, Delivery, Request, TransportFailure, TransportFailureKind};
use recourse::{SystemClock, Transport};
use recourse_mcp::McpTransport;

use crate::proxy::McpProxy;

impl McpProxy {
    /// Settles, in the background and for as long as the runtime runs, the
    /// journaled calls left in flight whose lease has run out — left by a
    /// proxy killed mid-call, this one before a restart or another on the
    /// same journal — through their recorded read (an MCP tool of the
    /// upstreams) or lookup, or leaves them unknown; never resends. It looks
    /// at once, then every half lease (at least every second) — and first,
    /// each time, sends the approved calls that are this proxy's to send,
    /// taking over those a stopped proxy of the same server left unsent. What it
    /// settled is reported to `report`, one line each. Without a journal it
    /// does nothing.
    pub fn sweep(&self, report: impl Fn(String) + Send + Sync + 'static) {
        let shared = &self.shared;
        let Some(journal) = shared.journal.clone() else {
            return;
        };
        let Some(first) = shared.upstreams.first() else {
            return;
        };
        let reads = Reads {
            upstreams: shared
                .catalog()
                .tools()
                .iter()
                .map(|t| {
                    let upstream = &shared.upstreams[t.upstream];
                    (t.tool.name.clone(), Arc::clone(&upstream.transport))
                })
                .collect(),
        };
        let options = SettleOptions::from_config(first.executor.config())
            .with_tool_transport(Arc::new(reads));
        let every = recourse::timing::sweep_every(first.executor.config().lease);
        let shared = Arc::clone(&self.shared);
        tokio::spawn(async move {
            let clock: Arc<dyn Clock> = Arc::new(SystemClock);
            loop {
                // The approved calls this proxy holds the server of first —
                // its own, and those a stopped proxy left unsent — so that
                // settling never ends one of them unsent.
                crate::approved::send_waiting(&shared).await;
                sweep_once(journal.as_ref(), &options, &report).await;
                clock.sleep_in_background(every).await;
            }
        });
    }
}

/// Sends a tool read to the upstream offering the tool.
struct Reads {
    /// Each tool by its upstream's name for it, with its upstream.
    upstreams: Vec<(String, Arc<McpTransport>)>,
}

impl Reads {
    /// The one upstream offering `tool`, or why there is none.
    fn route(&self, tool: &str) -> Result<&Arc<McpTransport>, String> {
        let mut offering = self.upstreams.iter().filter(|(name, _)| name == tool);
        match (offering.next(), offering.next()) {
            (Some((_, upstream)), None) => Ok(upstream),
            (None, _) => Err(format!("no upstream offers a tool named {tool:?}")),
            (Some(_), Some(_)) => Err(format!(
                "several upstreams offer a tool named {tool:?}: the read cannot be routed"
            )),
        }
    }
}

impl Transport for Reads {
    fn send<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Delivery> {
        Box::pin(async move {
            match self.route(request.target.as_str()) {
                Ok(upstream) => upstream.send(request).await,
                Err(why) => Err(TransportFailure::new(
                    TransportFailureKind::RequestNotBuilt,
                    why,
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use recourse_mcp::McpTarget;

    use super::*;

    #[test]
    fn a_read_goes_to_the_one_upstream_offering_the_tool() {
        // Sessions start when first asked something: these never are.
        let upstream =
            |cmd: &str| Arc::new(McpTransport::new(McpTarget::command_line(cmd).unwrap()));
        let (a, b) = (upstream("a"), upstream("b"));
        let reads = Reads {
            upstreams: vec![
                ("exports_lookup".to_owned(), Arc::clone(&a)),
                ("read_file".to_owned(), Arc::clone(&a)),
                ("read_file".to_owned(), Arc::clone(&b)),
            ],
        };
        assert!(Arc::ptr_eq(reads.route("exports_lookup").unwrap(), &a));
        let twice = reads.route("read_file").unwrap_err();
        assert!(twice.contains("several upstreams"), "{twice}");
        let none = reads.route("exports_lookp").unwrap_err();
        assert!(none.contains("no upstream"), "{none}");
    }
}
