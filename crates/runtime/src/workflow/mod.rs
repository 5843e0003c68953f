//! Workflows (protocol §6): a plan of steps, run as a dependency graph.
//!
//! A planner turns "Sell 100 Tesla shares and convert the proceeds to EUR"
//! into a [`Plan`]: a quote step and a convert step that depends on it. The
//! engine validates the plan before anything runs ([`Workflow::new`]: unknown
//! capabilities, unknown dependencies, duplicate ids and cycles are named),
//! then the [`WorkflowRunner`] dispatches ready steps concurrently, each
//! through the [`Executor`](crate::executor::Executor) and its policy.
//!
//! Three things make a workflow more than a loop over calls:
//!
//! - **References.** `{{quote.data.price}}` puts an earlier step's result into
//!   a later step's parameters. The value is a fact of this run, so it is
//!   exact-bound: no correction may change it.
//! - **The trajectory.** When a step fails and the failure alone cannot be
//!   fixed (L3), contextual re-resolution (L4) sees the user's original
//!   request and what each dependency returned, per step, and can compute a
//!   parameter the planner got wrong — an `amount: 0` that should have been
//!   100 shares × the quoted price.
//! - **Approvals.** A step marked `approval: true` is shown, resolved, to an
//!   [`Approver`] before it is sent; what a person approved is protected.

mod approver;
mod catalogue;
mod error;
mod plan;
mod reference;
mod report;
mod runner;
mod step;
mod validate;

pub use approver::{ApprovalRequest, ApproveAll, Approver, RejectAll, StepApproval};
pub use catalogue::{CAPABILITIES_PATH, Catalogue, CatalogueEntry};
pub use error::PlanError;
pub use plan::{Plan, PlanStep};
pub use report::{StepOutcome, StepReport, WorkflowReport};
pub use runner::{DEFAULT_CONCURRENCY, WorkflowRunner};
pub use validate::Workflow;
