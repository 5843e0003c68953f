//! The tests of the console's approval pages and forms.

use super::*;

use axum::body::Body;
use axum::extract::FromRequest;
use axum::http::Request;

use recourse_door::Callers;

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

fn approval(state: ApprovalState) -> Approval {
    Approval {
        id: "ap-1".into(),
        call_id: "c-1".into(),
        state,
        request_sha256: "cd".repeat(32),
        expires_at: "2040-01-01T00:00:00.000Z".into(),
        reason: "exports <b>leave</b> the building".into(),
        decided_by: None,
        decided_at: None,
        note: None,
        self_approved: false,
    }
}

/// An entry of `state` holding `approval`.
fn entry(state: CallState, approval: Approval) -> JournalEntry {
    let mut entry = JournalEntry::new("c-1", state);
    entry.target = "http://127.0.0.1:9/api/exports".into();
    entry.payload = serde_json::json!({});
    entry.times.started_at = "2029-01-01T00:00:00.000Z".into();
    entry.times.updated_at = "2029-01-01T00:00:00.000Z".into();
    entry.replay.request_hash = Some("cd".repeat(32));
    entry.caller = Some("agent".into());
    entry.asked.approval = Some(approval);
    entry
}

fn callers() -> Callers {
    Callers::parse(
        r#"{"callers": [
            {"name": "lead", "token": "lead-token-0123456789", "approver": true},
            {"name": "agent", "token": "agent-token-0123456789"}
        ]}"#,
    )
    .unwrap()
}

async fn form(body: &str) -> Result<DecisionForm, FormRejection> {
    let request = Request::post("/console/approvals/ap-1")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(body.to_owned()))
        .unwrap();
    Form::<DecisionForm>::from_request(request, &())
        .await
        .map(|Form(f)| f)
}

#[tokio::test]
async fn a_decision_is_read_as_its_kind_and_nothing_else() {
    let hash = "ab".repeat(32);
    let approve = form(&format!(
        "csrf=t&decision=approve&request_sha256={hash}&note=ok"
    ))
    .await
    .unwrap();
    assert_eq!(approve.decision, Decision::Approve);
    assert_eq!(
        (approve.note.as_str(), approve.request_sha256.len()),
        ("ok", 64)
    );
    let reject = form(&format!("csrf=t&decision=reject&request_sha256={hash}"))
        .await
        .unwrap();
    assert_eq!(reject.decision, Decision::Reject);
    assert_eq!(reject.note, "", "a note is optional");
    for bad in [
        format!("csrf=t&decision=Approve&request_sha256={hash}"),
        format!("csrf=t&decision=approved&request_sha256={hash}"),
        format!("csrf=t&decision=&request_sha256={hash}"),
        format!("csrf=t&request_sha256={hash}"),
        format!("csrf=t&decision=approve&request_sha256={hash}&by=lead"),
        "decision=approve&request_sha256=x".to_owned(),
    ] {
        assert!(form(&bad).await.is_err(), "{bad}");
    }
}

#[test]
fn the_list_decides_nothing_and_links_each_call_s_page() {
    let page = section(&[pending()], 1, true).into_string();
    assert!(!page.contains("<form"), "{page}");
    assert!(page.contains("Review the request and decide"), "{page}");
    assert!(!page.contains("<script"), "tool text is text: {page}");
    assert!(page.contains("&lt;script&gt;document.title='pwned'&lt;/script&gt;"));
    let page = section(&[pending()], 1, false).into_string();
    assert!(page.contains("Deciding needs the approver role."));
    let empty = section(&[], 0, true).into_string();
    assert!(empty.contains("No call is waiting"));
    assert!(
        empty.contains(r#"<span class="count" id="awaiting-count">0</span>"#),
        "{empty}"
    );
}

#[test]
fn the_count_is_all_of_them_and_the_page_says_when_it_shows_fewer() {
    let page = section(&[pending()], 250, true).into_string();
    assert!(page.contains(r#"id="awaiting-count">250<"#), "{page}");
    assert!(page.contains("The 1 newest are shown."), "{page}");
}

#[test]
fn a_pending_approval_is_decided_on_its_call_page_by_an_approver_only() {
    let callers = callers();
    let lead = callers.identify("lead-token-0123456789").unwrap();
    let agent = callers.identify("agent-token-0123456789").unwrap();
    let a = approval(ApprovalState::Pending);
    let e = entry(CallState::AwaitingApproval, a.clone());
    let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_900_000_000);

    let page = on_call_page(&e, &a, now, &lead, "csrf-token").into_string();
    assert!(page.contains(r#"class="state pending">pending<"#), "{page}");
    assert!(
        page.contains("exports &lt;b&gt;leave&lt;/b&gt; the building"),
        "{page}"
    );
    assert!(
        page.contains(r#"action="/console/approvals/ap-1""#),
        "{page}"
    );
    assert!(page.contains(&format!(r#"value="{}""#, "cd".repeat(32))));

    let page = on_call_page(&e, &a, now, &agent, "csrf-token").into_string();
    assert!(!page.contains("<form"), "{page}");
    assert!(page.contains("Deciding needs the approver role; you are agent."));
}

#[test]
fn a_decided_or_expired_approval_says_who_when_and_why_and_has_no_form() {
    let lead = callers().identify("lead-token-0123456789").unwrap();
    let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_900_000_000);
    let decided = Approval {
        decided_by: Some("lead".into()),
        decided_at: Some("2029-01-01T00:05:00.000Z".into()),
        note: Some("<i>checked</i> with finance".into()),
        ..approval(ApprovalState::Rejected)
    };
    let e = entry(CallState::Failed, decided.clone());
    let page = on_call_page(&e, &decided, now, &lead, "t").into_string();
    assert!(
        page.contains(r#"class="state rejected">rejected<"#),
        "{page}"
    );
    assert!(page.contains(r#"id="approval-by">lead<"#), "{page}");
    assert!(
        page.contains("<dt>Decided</dt><dd>2029-01-01T00:05:00.000Z</dd>"),
        "{page}"
    );
    assert!(
        page.contains("&lt;i&gt;checked&lt;/i&gt; with finance"),
        "{page}"
    );
    assert!(!page.contains("<form"), "{page}");

    // Pending in the journal, but past its expiry: expired, not offered.
    let due = Approval {
        expires_at: "2000-01-01T00:00:00.000Z".into(),
        ..approval(ApprovalState::Pending)
    };
    let e = entry(CallState::AwaitingApproval, due.clone());
    let page = on_call_page(&e, &due, now, &lead, "t").into_string();
    assert!(page.contains(r#"class="state expired">expired<"#), "{page}");
    assert!(!page.contains("<form"), "{page}");
}
