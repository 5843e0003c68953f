//! The gateway's tests, in-process, one module per concern in one test binary
//! (each binary links the whole dependency tree again).

#[path = "../support/mod.rs"]
mod support;

mod approval_gate;
mod approvals;
mod callers;
mod console;
mod failover;
mod hosts;
mod journal_blip;
mod journal_cuts;
mod keyed;
mod next;
mod openapi;
mod orphans;
mod requests;
mod retention;
mod settle;
mod templates;
