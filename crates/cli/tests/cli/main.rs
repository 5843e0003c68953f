//! The `recourse` binary's tests, one module per command or concern, in one
//! test binary: each binary links the whole dependency tree again, and on a
//! 2-core machine two dozen of them cost CI minutes. Run one module with
//! `cargo test -p recourse-cli --test cli readme::` (or any other module name).

#[path = "../support/held_tool.rs"]
mod held;
#[path = "../support/gateway.rs"]
mod support;

mod approvals;
mod attacks;
mod call;
mod call_correction;
mod config;
mod debug_llm;
mod demo;
mod deploy;
mod documents;
mod eval;
mod explain;
mod explains;
mod fleet;
mod fleet_journal;
mod flood;
mod gateway;
mod gateway_writes;
mod healthcheck;
mod journal;
mod journal_crash;
mod mcp;
mod mcp_http_tools;
mod mcp_proxy;
mod mcp_proxy_orphans;
mod mcp_proxy_stop;
mod mcp_stdio_proxy;
mod openapi;
mod probe;
mod readme;
mod run;
mod secrets;
mod server_limits;
mod shapes;
mod soak;
mod stdin_watch;
mod verify;
