//! The replay check: is resending a write with the same `Idempotency-Key`
//! safe?
//!
//! recourse sends every non-idempotent call with a key and, after an
//! unknown outcome, relies on the tool to treat a second request with that
//! key as the same operation. So, only with `--allow-writes`, a write tool
//! is sent its valid payload three times:
//!
//! 1. with a fresh key: it must succeed (else there is nothing to replay,
//!    and the check is skipped, asking for a valid `--payload`);
//! 2. the same payload with the same key: it must succeed with the same
//!    result (an operation id that changed is a second write);
//! 3. another payload with the same key: it must be refused — a tool that
//!    writes again, or answers with the first result as if it had done the
//!    new request, makes the key a lie.

use serde_json::Value;

use super::answer::{Answer, Reply, Response};
use super::battery::{Body, Probe, ProbeKind, other_payload};
use super::check::{CheckId, CheckResult, Verdict};

/// The three requests of the replay sequence for a write with `baseline`.
pub(crate) fn probes(schema: &Value, baseline: &Value) -> [Probe; 3] {
    let probe = |kind, payload| Probe {
        kind,
        field: None,
        body: Body::Json(payload),
    };
    [
        probe(ProbeKind::ReplayFirst, baseline.clone()),
        probe(ProbeKind::ReplaySameKey, baseline.clone()),
        probe(
            ProbeKind::ReplayOtherPayload,
            other_payload(schema, baseline),
        ),
    ]
}

/// The verdict over the answers to [`probes`] (the later ones absent when
/// the first write did not succeed, which ends the sequence).
pub(crate) fn judge(answers: &[Answer]) -> CheckResult {
    let fail = |detail: String| CheckResult::new(CheckId::Replay, Verdict::Fail, detail);
    let Some(first) = answers.first() else {
        return CheckResult::skipped(CheckId::Replay, "no write was sent");
    };
    let first = match &first.reply {
        Reply::Response(r) if r.parsed.success => r,
        Reply::Response(r) => {
            return CheckResult::skipped(
                CheckId::Replay,
                format!(
                    "the baseline payload was not accepted ({}), so there is no write to replay; \
                     give a valid one with --payload NAME=JSON",
                    r.describe()
                ),
            );
        }
        Reply::NoAnswer(why) => {
            return CheckResult::skipped(
                CheckId::Replay,
                format!("the first write got no answer ({why})"),
            );
        }
    };
    let (Some(same), Some(other)) = (answers.get(1), answers.get(2)) else {
        return fail("the sequence was cut short".to_owned());
    };
    match &same.reply {
        Reply::NoAnswer(why) => {
            return fail(format!(
                "the replay with the same key got no answer ({why})"
            ));
        }
        Reply::Response(r) if !r.parsed.success => {
            return fail(format!(
                "the replay with the same key was refused: {}",
                r.describe()
            ));
        }
        Reply::Response(r) if r.parsed.data != first.parsed.data => {
            return fail(
                "the replay with the same key answered with another result: a second write"
                    .to_owned(),
            );
        }
        Reply::Response(_) => {}
    }
    match &other.reply {
        Reply::NoAnswer(why) => fail(format!(
            "another payload with the same key got no answer ({why})"
        )),
        Reply::Response(r) if r.parsed.success => fail(accepted(first, r)),
        Reply::Response(r) => CheckResult::new(
            CheckId::Replay,
            Verdict::Pass,
            format!(
                "the same key replayed the first result; with another payload it was refused ({})",
                r.describe()
            ),
        ),
    }
}

fn accepted(first: &Response, other: &Response) -> String {
    if other.parsed.data == first.parsed.data {
        "another payload with the same key was answered with the first result, as if it had been done".to_owned()
    } else {
        "another payload with the same key was accepted: a second write under one key".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recourse::transport::RawResponse;

    fn reply(status: u16, body: &str) -> Answer {
        let raw = RawResponse {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.as_bytes().to_vec(),
            read: None,
        };
        Answer {
            probe: ProbeKind::ReplayFirst,
            field: None,
            reply: Response::read(&raw, crate::battery::Over::Http),
        }
    }

    const OP1: &str = r#"{"success":true,"data":{"id":"op-1"}}"#;
    const OP2: &str = r#"{"success":true,"data":{"id":"op-2"}}"#;
    const REUSED: &str = r#"{"success":false,"error":{"code":"IDEMPOTENCY_KEY_REUSED","message":"m","category":"POLICY_REJECTION","retryable":false}}"#;

    fn verdict(answers: &[Answer]) -> (Verdict, String) {
        let r = judge(answers);
        (r.verdict, r.detail)
    }

    #[test]
    fn a_replay_and_a_refusal_pass() {
        let (v, detail) = verdict(&[reply(200, OP1), reply(200, OP1), reply(422, REUSED)]);
        assert_eq!(v, Verdict::Pass, "{detail}");
        assert!(detail.contains("IDEMPOTENCY_KEY_REUSED"));
    }

    #[test]
    fn second_writes_and_ignored_keys_fail() {
        assert_eq!(
            verdict(&[reply(200, OP1), reply(200, OP2), reply(422, REUSED)]).0,
            Verdict::Fail
        );
        assert_eq!(
            verdict(&[reply(200, OP1), reply(409, REUSED), reply(422, REUSED)]).0,
            Verdict::Fail
        );
        let (v, detail) = verdict(&[reply(200, OP1), reply(200, OP1), reply(200, OP2)]);
        assert_eq!(v, Verdict::Fail);
        assert!(detail.contains("second write"), "{detail}");
        let (v, detail) = verdict(&[reply(200, OP1), reply(200, OP1), reply(200, OP1)]);
        assert_eq!(v, Verdict::Fail);
        assert!(detail.contains("first result"), "{detail}");
    }

    #[test]
    fn a_refused_baseline_skips_and_asks_for_a_payload() {
        let (v, detail) = verdict(&[reply(400, REUSED)]);
        assert_eq!(v, Verdict::Skipped);
        assert!(detail.contains("--payload"), "{detail}");
    }
}
