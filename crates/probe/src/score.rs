//! Scoring one tool's answers, check by check: pure functions of the parsed
//! answers (status, parsed category, permission, details, the body's
//! structure). Only [`no_leak`] reads message text; see `leak.rs`.

use recourse_protocol::{ErrorCategory, RetryPermission};
use serde_json::Value;

use super::answer::{Answer, Reply, Response};
use super::battery::{Over, ProbeKind};
use super::check::{CheckId, CheckResult, Observation, aggregate};
use super::leak;

/// Every check's verdict over `answers`; `replay` is judged elsewhere, from
/// the replay sequence.
pub(crate) fn score(answers: &[Answer], over: Over, replay: CheckResult) -> Vec<CheckResult> {
    CheckId::ALL
        .iter()
        .map(|&check| match check {
            CheckId::Replay => replay.clone(),
            CheckId::CategoryStatus if over == Over::Mcp => {
                CheckResult::skipped(check, "MCP answers carry no HTTP status to agree with")
            }
            _ => {
                let (observe, none) = observer(check);
                aggregate(check, answers.iter().map(|a| (a.probe, observe(a))), none)
            }
        })
        .collect()
}

type Observer = fn(&Answer) -> Observation;

/// The per-answer rule of `check`, and what to say when no answer applied.
fn observer(check: CheckId) -> (Observer, &'static str) {
    match check {
        CheckId::Envelope => (envelope, "no answer to judge"),
        CheckId::CategoryStatus => (category_status, "no failure named a category"),
        CheckId::DetailsField => (
            details_field,
            "no missing or mistyped field was refused (the schema names no field, or the tool accepted it)",
        ),
        CheckId::NoLeak => (no_leak, "no failure to read"),
        CheckId::Retryable => (retryable, "no failure to read"),
        CheckId::RetryAfter => (retry_after, "no answer was a rate limit (429)"),
        CheckId::AllowedValues => (allowed_values, "the schema has no enum field"),
        CheckId::CategoryFits => (category_fits, "no bad-input failure to judge"),
        CheckId::Replay => (
            |_| Observation::NotApplicable,
            "judged from the replay sequence",
        ),
    }
}

/// The failure response of `answer`, if it got one.
fn failure(answer: &Answer) -> Option<&Response> {
    answer.response().filter(|r| !r.parsed.success)
}

fn envelope(answer: &Answer) -> Observation {
    let r = match &answer.reply {
        // Refusing a body by closing the connection while it is still being
        // sent is fair; the answer written first is then often lost to the
        // client (a reset discards it), so its absence says nothing.
        Reply::NoAnswer(_) if answer.probe == ProbeKind::OversizedBody => {
            return Observation::NotApplicable;
        }
        Reply::NoAnswer(why) => return Observation::Fail(format!("no answer ({why})")),
        Reply::Response(r) => r,
    };
    if r.parsed.success {
        if r.error_inside_success() {
            return Observation::Fail(format!(
                "{} read as success, with an error in the body",
                r.describe()
            ));
        }
        if answer.probe.must_fail() {
            return Observation::Fail(format!("{} read as success", r.describe()));
        }
        return Observation::NotApplicable;
    }
    if r.names_category() {
        Observation::Pass
    } else {
        Observation::Fail(format!("{} names no category", r.describe()))
    }
}

fn category_status(answer: &Answer) -> Observation {
    let Some(r) = failure(answer).filter(|r| r.names_category()) else {
        return Observation::NotApplicable;
    };
    let (status, category) = (r.parsed.status, r.parsed.category.clone());
    let Some(category) = category else {
        return Observation::NotApplicable;
    };
    if agrees(status, &category) {
        Observation::Pass
    } else {
        Observation::Fail(format!(
            "{status} with {category}, whose status is {}",
            category.http_status()
        ))
    }
}

/// A status agrees with a category when it is the category's own, or the
/// one the status implies on its own (415 and 413 are input errors, 502 a
/// service error).
pub(crate) fn agrees(status: u16, category: &ErrorCategory) -> bool {
    status == category.http_status()
        || ErrorCategory::from_http_status(status).as_ref() == Some(category)
}

fn details_field(answer: &Answer) -> Observation {
    if !matches!(answer.probe, ProbeKind::MissingField | ProbeKind::WrongType) {
        return Observation::NotApplicable;
    }
    let (Some(r), Some(field)) = (failure(answer), answer.field.as_deref()) else {
        return Observation::NotApplicable;
    };
    match r.parsed.details.get("field").and_then(Value::as_str) {
        Some(named) if named == field || named.strip_prefix('/') == Some(field) => {
            Observation::Pass
        }
        Some(named) => Observation::Fail(format!("details.field is {named:?}, not {field:?}")),
        None => Observation::Fail(format!("{} without details.field", r.describe())),
    }
}

fn no_leak(answer: &Answer) -> Observation {
    let Some(r) = answer
        .response()
        .filter(|r| !r.parsed.success || r.error_inside_success())
    else {
        return Observation::NotApplicable;
    };
    match leak::find(r.json.as_ref(), &r.text) {
        Some(found) => Observation::Fail(found),
        None => Observation::Pass,
    }
}

/// Categories whose failures are never resent unchanged: a `retryable: true`
/// on one of them contradicts the category.
const NEVER_RESENT: [ErrorCategory; 4] = [
    ErrorCategory::AuthError,
    ErrorCategory::PermissionDenied,
    ErrorCategory::PolicyRejection,
    ErrorCategory::UnknownOutcome,
];

fn retryable(answer: &Answer) -> Observation {
    let Some(r) = failure(answer) else {
        return Observation::NotApplicable;
    };
    match (r.parsed.permission, &r.parsed.category) {
        (RetryPermission::Unspecified, _) => {
            Observation::Fail(format!("{} without a retryable flag", r.describe()))
        }
        (RetryPermission::Allowed, Some(c)) if NEVER_RESENT.contains(c) => {
            Observation::Fail(format!("retryable: true on {c}, which is never resent"))
        }
        _ => Observation::Pass,
    }
}

fn retry_after(answer: &Answer) -> Observation {
    let Some(r) = failure(answer) else {
        return Observation::NotApplicable;
    };
    let p = &r.parsed;
    if p.status != 429 && p.category != Some(ErrorCategory::RateLimit) {
        return Observation::NotApplicable;
    }
    match p.server_wait {
        Some(_) => Observation::Pass,
        None => Observation::Fail(format!(
            "{} without Retry-After or details.retry_after",
            r.describe()
        )),
    }
}

fn allowed_values(answer: &Answer) -> Observation {
    if answer.probe != ProbeKind::EnumNearMiss {
        return Observation::NotApplicable;
    }
    let field = answer.field.as_deref().unwrap_or("?");
    match &answer.reply {
        Reply::NoAnswer(_) => Observation::NotApplicable,
        Reply::Response(r) if r.parsed.success => {
            Observation::Fail(format!("accepted a value outside the enum of {field:?}"))
        }
        Reply::Response(r) => match r.parsed.details.get("allowed_values") {
            Some(v) if !v.is_null() => Observation::Pass,
            _ => Observation::Fail(format!("{} without details.allowed_values", r.describe())),
        },
    }
}

fn category_fits(answer: &Answer) -> Observation {
    let expected: &[ErrorCategory] = match answer.probe {
        ProbeKind::MalformedJson | ProbeKind::MissingField | ProbeKind::WrongType => {
            &[ErrorCategory::InputError]
        }
        ProbeKind::UnknownRoute => &[ErrorCategory::NotFound, ErrorCategory::InputError],
        _ => return Observation::NotApplicable,
    };
    let Some(r) = failure(answer) else {
        return Observation::NotApplicable;
    };
    match r.parsed.effective_category() {
        Some(c) if expected.contains(&c) => Observation::Pass,
        Some(c) => Observation::Fail(format!("routes as {c} ({})", r.describe())),
        None => Observation::NotApplicable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Verdict;
    use recourse::transport::RawResponse;

    fn answer(
        probe: ProbeKind,
        field: Option<&str>,
        status: u16,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Answer {
        let raw = RawResponse {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect(),
            body: body.as_bytes().to_vec(),
            read: None,
        };
        Answer {
            probe,
            field: field.map(str::to_owned),
            reply: Response::read(&raw, Over::Http),
        }
    }

    const JSON: (&str, &str) = ("content-type", "application/json");

    fn envelope_body(category: &str, retryable: Option<bool>, details: &str) -> String {
        let retry = retryable.map_or(String::new(), |r| format!(r#","retryable":{r}"#));
        format!(
            r#"{{"success":false,"error":{{"code":"C","message":"m","category":"{category}"{retry},"details":{details}}}}}"#
        )
    }

    fn verdicts(answers: &[Answer], over: Over) -> Vec<(&'static str, Verdict)> {
        let replay = CheckResult::skipped(CheckId::Replay, "-");
        score(answers, over, replay)
            .into_iter()
            .map(|r| (r.check.id(), r.verdict))
            .collect()
    }

    fn verdict_of(answers: &[Answer], check: &str) -> Verdict {
        verdicts(answers, Over::Http)
            .into_iter()
            .find(|(id, _)| *id == check)
            .unwrap()
            .1
    }

    #[test]
    fn an_honest_tool_passes_everything_it_was_asked() {
        let answers = [
            answer(
                ProbeKind::MalformedJson,
                None,
                400,
                &[JSON],
                &envelope_body("INPUT_ERROR", Some(false), "{}"),
            ),
            answer(
                ProbeKind::MissingField,
                Some("q"),
                400,
                &[JSON],
                &envelope_body("INPUT_ERROR", Some(true), r#"{"field":"q"}"#),
            ),
            answer(
                ProbeKind::WrongType,
                Some("q"),
                400,
                &[JSON],
                &envelope_body("INPUT_ERROR", Some(true), r#"{"field":"/q"}"#),
            ),
            answer(
                ProbeKind::EnumNearMiss,
                Some("u"),
                400,
                &[JSON],
                &envelope_body(
                    "INPUT_ERROR",
                    Some(true),
                    r#"{"field":"u","allowed_values":"a,b"}"#,
                ),
            ),
            answer(
                ProbeKind::UnknownField,
                None,
                200,
                &[JSON],
                r#"{"success":true,"data":{}}"#,
            ),
            answer(
                ProbeKind::OversizedBody,
                None,
                429,
                &[JSON, ("retry-after", "1")],
                &envelope_body("RATE_LIMIT", Some(true), "{}"),
            ),
            answer(
                ProbeKind::WrongContentType,
                None,
                415,
                &[JSON],
                &envelope_body("INPUT_ERROR", Some(false), "{}"),
            ),
        ];
        for (id, verdict) in verdicts(&answers, Over::Http) {
            let expected = if id == "replay" {
                Verdict::Skipped
            } else {
                Verdict::Pass
            };
            assert_eq!(verdict, expected, "{id}");
        }
    }

    #[test]
    fn plain_text_500s_fail_the_envelope_and_route_as_service_errors() {
        let answers = [answer(
            ProbeKind::MissingField,
            Some("q"),
            500,
            &[("content-type", "text/plain")],
            "Internal Server Error",
        )];
        assert_eq!(verdict_of(&answers, "envelope"), Verdict::Fail);
        assert_eq!(verdict_of(&answers, "details_field"), Verdict::Fail);
        assert_eq!(verdict_of(&answers, "category_status"), Verdict::Skipped);
        assert_eq!(verdict_of(&answers, "category_fits"), Verdict::Fail);
        assert_eq!(verdict_of(&answers, "retryable"), Verdict::Fail);
        assert_eq!(verdict_of(&answers, "no_leak"), Verdict::Pass);
    }

    #[test]
    fn a_200_with_an_error_inside_is_not_an_envelope() {
        let answers = [answer(
            ProbeKind::WrongType,
            Some("q"),
            200,
            &[JSON],
            r#"{"error":"bad q"}"#,
        )];
        assert_eq!(verdict_of(&answers, "envelope"), Verdict::Fail);
        let enveloped = [answer(
            ProbeKind::MissingField,
            Some("q"),
            200,
            &[JSON],
            &envelope_body("INPUT_ERROR", Some(true), r#"{"field":"q"}"#),
        )];
        assert_eq!(verdict_of(&enveloped, "envelope"), Verdict::Pass);
        assert_eq!(verdict_of(&enveloped, "category_status"), Verdict::Fail);
        let accepted = [answer(
            ProbeKind::MalformedJson,
            None,
            200,
            &[JSON],
            r#"{"ok":true}"#,
        )];
        assert_eq!(verdict_of(&accepted, "envelope"), Verdict::Fail);
        let no_answer = |probe| {
            [Answer {
                probe,
                field: None,
                reply: Reply::NoAnswer("reset".into()),
            }]
        };
        assert_eq!(
            verdict_of(&no_answer(ProbeKind::WrongContentType), "envelope"),
            Verdict::Fail
        );
        assert_eq!(
            verdict_of(&no_answer(ProbeKind::OversizedBody), "envelope"),
            Verdict::Skipped
        );
    }

    #[test]
    fn statuses_agree_with_their_own_or_implied_category() {
        assert!(agrees(415, &ErrorCategory::InputError));
        assert!(agrees(422, &ErrorCategory::PolicyRejection));
        assert!(agrees(502, &ErrorCategory::ServiceError));
        assert!(!agrees(200, &ErrorCategory::InputError));
        assert!(!agrees(500, &ErrorCategory::InputError));
        assert!(!agrees(400, &ErrorCategory::ServiceError));
    }

    #[test]
    fn advisory_rules() {
        let no_wait = [answer(
            ProbeKind::UnknownField,
            None,
            429,
            &[JSON],
            &envelope_body("RATE_LIMIT", Some(true), "{}"),
        )];
        assert_eq!(verdict_of(&no_wait, "retry_after"), Verdict::Fail);
        let unsafe_flag = [answer(
            ProbeKind::UnknownField,
            None,
            403,
            &[JSON],
            &envelope_body("PERMISSION_DENIED", Some(true), "{}"),
        )];
        assert_eq!(verdict_of(&unsafe_flag, "retryable"), Verdict::Fail);
        let accepted = [answer(
            ProbeKind::EnumNearMiss,
            Some("u"),
            200,
            &[JSON],
            r#"{"success":true}"#,
        )];
        assert_eq!(verdict_of(&accepted, "allowed_values"), Verdict::Fail);
        let wrong = [answer(
            ProbeKind::MissingField,
            Some("q"),
            503,
            &[JSON],
            &envelope_body("SERVICE_ERROR", Some(true), r#"{"field":"q"}"#),
        )];
        assert_eq!(verdict_of(&wrong, "category_fits"), Verdict::Fail);
        assert_eq!(verdict_of(&wrong, "details_field"), Verdict::Pass);
        let misnamed = [answer(
            ProbeKind::MissingField,
            Some("q"),
            400,
            &[JSON],
            &envelope_body("INPUT_ERROR", Some(true), r#"{"field":"p"}"#),
        )];
        assert_eq!(verdict_of(&misnamed, "details_field"), Verdict::Fail);
    }

    #[test]
    fn over_mcp_there_is_no_status_to_agree_with() {
        let answers = [answer(
            ProbeKind::MissingField,
            Some("q"),
            200,
            &[JSON],
            &envelope_body("INPUT_ERROR", Some(true), r#"{"field":"q"}"#),
        )];
        let v = verdicts(&answers, Over::Mcp);
        assert!(v.contains(&("category_status", Verdict::Skipped)));
        assert!(v.contains(&("envelope", Verdict::Pass)));
    }
}
