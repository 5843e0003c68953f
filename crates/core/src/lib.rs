//! # recourse-core
//!
//! The part of recourse that decides, with no I/O: one call as a state
//! machine ([`machine`]) fed what happened and answering what to do next,
//! the rules it follows ([`policy`]), and the types it is made of — where a
//! call goes ([`target`], [`allow`]), whether resending it is harmless
//! ([`idempotency`]), how long to wait ([`backoff`], and every lease and `Retry-After`
//! timing: [`timing`]), how many resends the calls have earned
//! ([`budget`]) and which endpoints fail fast ([`breaker`]), what must not change
//! ([`protect`]), what happened ([`record`]), what a person approves
//! ([`approval`]), and what a journal keeps ([`journal`]). The seams the runtime fills — [`transport::Transport`],
//! [`reconcile::Reconciler`], [`journal::Journal`], [`clock::Clock`] — are
//! traits here; their implementations (HTTP, SQLite, tokio's timers) live
//! in the `recourse` and `recourse-journal` crates. Nothing here depends on
//! tokio, hyper or reqwest.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use recourse_core::machine::{CallMachine, Command, Finish, Lookup, MachineSetup, Ruling};
//! use recourse_core::policy::{Limits, Observation, Traits};
//! use recourse_core::reconcile::Reconciliation;
//! use recourse_protocol::parse_response;
//!
//! // A write whose answer says its outcome is unknown, settled by a lookup.
//! let write = Traits { idempotent: false, delegated: false };
//! let setup = MachineSetup::new(Limits::default(), write, Duration::from_secs(10)).with_lookup(Lookup::Operation);
//! let mut machine = CallMachine::new(setup);
//! let now = Instant::now();
//! let Command::Admit(admit) = machine.start(now) else { unreachable!() };
//! let Command::Dispatch(dispatch) = machine.admitted(admit, true, now) else { unreachable!() };
//! let unknown = parse_response(500, [("content-type", "application/json")],
//!     br#"{"success":false,"error":{"code":"TIMEOUT","message":"maybe","category":"UNKNOWN_OUTCOME"}}"#);
//! let Ruling::DecisionMade(decided) = machine.answered(dispatch, Observation::Response(&unknown), now).verdict else { unreachable!() };
//! // Never a blind resend: the write is looked up first.
//! let Command::LookUp(lookup) = machine.follow(decided) else { unreachable!() };
//! let Ruling::DecisionMade(decided) = machine.looked_up(lookup, Reconciliation::Committed(serde_json::json!({"id": 7})), now) else { unreachable!() };
//! assert!(matches!(machine.follow(decided), Command::Finish(Finish::Succeeded(_))));
//! ```
//!
//! Sections cited as "protocol §N" are those of the recourse protocol,
//! `docs/protocol.md` in the recourse source tree.

pub mod allow;
pub mod approval;
pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod clock;
pub mod config;
pub mod duration;
pub mod hex;
pub mod idempotency;
pub mod journal;
pub mod method;
#[cfg(test)]
mod names;
pub mod policy;
pub mod protect;
pub mod reconcile;
pub mod record;
pub mod target;
mod timestamp;
pub mod timing;
pub mod transport;

pub use policy::machine;
