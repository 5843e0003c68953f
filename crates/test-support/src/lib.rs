//! # recourse-test-support
//!
//! Test helpers shared by the recourse crates (a dev-dependency, never
//! published):
//!
//! - [`FakeLlm`]: a scripted OpenAI-compatible model server on loopback, which
//!   records every request it was sent. Its replies are text, raw answers, or
//!   tool calls in the OpenAI tool-calling format ([`Reply::tool_call`]), so
//!   it can drive an agent loop.
//! - [`service_var`]: the skip rule for tests that need an outside service
//!   (PostgreSQL, Redis, a third-party MCP server). An unset variable skips
//!   the test and says so on stderr, past libtest's output capture; with
//!   [`NO_SKIP_VAR`] on, it fails the test instead.
//! - [`OwnedRedis`]: a `redis-server` of the test's own, to stop and start
//!   mid-run; [`redis_ping`] checks that a Redis answers.
//! - [`OwnedPostgres`]: a PostgreSQL cluster of the test's own, to restart
//!   mid-run ([`Shutdown::Fast`] or, as a crash, [`Shutdown::Immediate`]).
//! - [`KeyLookup`]: an export lookup whose template's placeholder is a
//!   `?key=` query value, switched on when a test says so.
//! - [`harness`]: the runner of a `harness = false` test binary that is
//!   also a scripted MCP server on its stdout (libtest would write there).
//! - [`FaultyJournal`]: a journal whose first writes of a kind fail, as a
//!   database restarting between two statements makes them.
//!
//! ```
//! use recourse_test_support::{FakeLlm, Reply};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let llm = FakeLlm::start(vec![Reply::json(json!({"can_fix": false}))]).await;
//! assert!(llm.base_url.starts_with("http://127.0.0.1:"));
//! assert_eq!(llm.hits(), 0); // nothing asked yet; the next request gets the reply
//! # });
//! ```
//!
//! Helpers used by one crate only stay in that crate's `tests/support/`.

mod exports;
mod fake_llm;
mod faulty_journal;
pub mod harness;
mod lookup;
mod openapi;
mod postgres;
#[cfg(unix)]
mod postgres_server;
mod redis_server;
mod skip;

pub use exports::{export, keyed, tools, tools_without_lookups, wait_until_the_tool_has};
pub use fake_llm::{FakeLlm, Reply, SeenRequest, ToolCall};
pub use faulty_journal::FaultyJournal;
pub use lookup::KeyLookup;
pub use openapi::{check_openapi, openapi_mismatches};
pub use postgres::PostgresSchema;
#[cfg(unix)]
pub use postgres_server::{OwnedPostgres, Shutdown};
pub use redis_server::{OwnedRedis, redis_ping, redis_prefix, shared_redis};
pub use skip::{NO_SKIP_VAR, service_var};
