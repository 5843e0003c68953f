//! Reconciliation: finding out whether a write whose outcome is unknown
//! committed. The seam ([`Reconciler`]) and what it answers come from
//! `recourse-core`; [`HttpReconciler`] looks a write up at a URL template.

mod http;

pub use http::HttpReconciler;
pub use recourse_core::reconcile::{ReconcileRequest, Reconciler, Reconciliation};
