//! SEAM(approvals): the console's "Awaiting approval" section and its
//! approve/reject form, ready for the gateway's approvals.
//!
//! The journal has no `awaiting_approval` state yet, so [`awaiting`] finds
//! nothing and the section says so. When approvals land, the section comes
//! alive in three steps, each marked `SEAM(approvals)`:
//!
//! 1. [`awaiting`]: list the entries in state `awaiting_approval` that
//!    `seen` admits (`ListQuery { state: Some(CallState::AwaitingApproval), .. }`)
//!    and read each one's approval (`id`, `reason`, `request_sha256`,
//!    `expires_at`) into a [`Pending`].
//! 2. A route `POST /console/approvals/{approval_id}` (in `console::routes`,
//!    with the form limit) whose handler reads a [`DecisionForm`], checks
//!    the viewer's CSRF token (`Viewer::check`) and runs the same code as
//!    `POST /v1/approvals/{id}` as the viewer's caller — the approver role,
//!    `APPROVAL_STALE` and `APPROVAL_DECIDED` come from there — then sees
//!    other to `/console`.
//! 3. The call page shows its approval (state, who decided, the note).
//!
//! The form already carries the request's hash, so that an approval is
//! bound to the exact request the approver saw.

use maud::{Markup, html};
use recourse::journal::{Journal, JournalResult, Seen};
use serde::Deserialize;

use super::html::{call_href, segment};

/// A call waiting for a person's approval, as the console lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pending {
    /// The approval's id (what the decision is posted to).
    pub(crate) approval_id: String,
    /// The call waiting for it.
    pub(crate) call_id: String,
    /// Whose call it is.
    pub(crate) caller: String,
    /// What it would call.
    pub(crate) target: String,
    /// Why it needs approval, as its tool or policy said.
    pub(crate) reason: String,
    /// The keyed-request hash the approval is bound to.
    pub(crate) request_sha256: String,
    /// When it expires (RFC 3339, UTC).
    pub(crate) expires_at: String,
}

/// The approve/reject form's fields (for the route of step 2).
#[allow(dead_code)] // SEAM(approvals): read by the decision route.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DecisionForm {
    pub(crate) csrf: String,
    /// `approve` or `reject`.
    pub(crate) decision: String,
    pub(crate) request_sha256: String,
    #[serde(default)]
    pub(crate) note: String,
}

/// The calls awaiting approval that `seen` admits, oldest first.
///
/// SEAM(approvals): none until the journal has the `awaiting_approval` state.
pub(crate) async fn awaiting(_journal: &dyn Journal, _seen: &Seen) -> JournalResult<Vec<Pending>> {
    Ok(Vec::new())
}

/// The "Awaiting approval" section: each call, and — for an approver — the
/// form that decides it.
pub(crate) fn section(pending: &[Pending], csrf: &str, may_decide: bool) -> Markup {
    html! {
        section #approvals {
            h2 { "Awaiting approval " span.count { (pending.len()) } }
            @if pending.is_empty() {
                p.empty { "No call is waiting for a person's approval." }
            } @else {
                table {
                    thead { tr { th { "Call" } th { "Caller" } th { "Target" } th { "Why" } th { "Expires" } th {} } }
                    tbody {
                        @for p in pending {
                            tr {
                                td { a href=(call_href(&p.call_id)) { code { (p.call_id) } } }
                                td { (p.caller) }
                                td { code { (p.target) } }
                                td { (p.reason) }
                                td { (p.expires_at) }
                                td {
                                    @if may_decide {
                                        (decision_form(p, csrf))
                                    } @else {
                                        "An approver decides."
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn decision_form(p: &Pending, csrf: &str) -> Markup {
    html! {
        form.decide method="post" action={ "/console/approvals/" (segment(&p.approval_id)) } {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="request_sha256" value=(p.request_sha256);
            input type="text" name="note" maxlength="2000" placeholder="Note (optional)";
            button type="submit" name="decision" value="approve" { "Approve" }
            button type="submit" name="decision" value="reject" { "Reject" }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending() -> Pending {
        Pending {
            approval_id: "ap-1\"><script>x()</script>".into(),
            call_id: "c-1".into(),
            caller: "agent".into(),
            target: "http://127.0.0.1:9/api/refunds".into(),
            reason: "<script>document.title='pwned'</script>refund over 100 EUR".into(),
            request_sha256: "ab".repeat(32),
            expires_at: "2026-12-03T10:00:00.000Z".into(),
        }
    }

    #[test]
    fn an_approver_gets_a_form_bound_to_the_request_and_the_session() {
        let page = section(&[pending()], "csrf-token", true).into_string();
        assert!(page.contains(r#"name="csrf" value="csrf-token""#), "{page}");
        assert!(page.contains(&format!(
            r#"name="request_sha256" value="{}""#,
            "ab".repeat(32)
        )));
        assert!(page.contains(r#"value="approve""#) && page.contains(r#"value="reject""#));
        assert!(!page.contains("<script"), "tool text is text: {page}");
        assert!(page.contains("&lt;script&gt;document.title='pwned'&lt;/script&gt;"));
    }

    #[test]
    fn others_see_the_list_without_a_form() {
        let page = section(&[pending()], "csrf-token", false).into_string();
        assert!(!page.contains("<form"), "{page}");
        assert!(
            section(&[], "t", true)
                .into_string()
                .contains("No call is waiting")
        );
    }
}
