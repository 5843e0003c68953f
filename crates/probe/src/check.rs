//! The checks, their kinds, and how one tool's answers become a verdict per check.

use super::battery::ProbeKind;

/// One property of honest error reporting the probe scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum CheckId {
    /// Every failure is a structure recourse reads with a category the tool named.
    Envelope,
    /// The HTTP status agrees with the named category.
    CategoryStatus,
    /// A missing or mistyped field is named in `details.field`.
    DetailsField,
    /// The same `Idempotency-Key` replays; with another payload it is refused.
    Replay,
    /// No stack trace or secret in a failure.
    NoLeak,
    /// Failures carry a boolean `retryable`, never `true` where resending is never safe.
    Retryable,
    /// A 429 says how long to wait.
    RetryAfter,
    /// An enum near-miss is answered with `details.allowed_values`.
    AllowedValues,
    /// Bad input routes as `INPUT_ERROR` (an unknown route as `NOT_FOUND`).
    CategoryFits,
}

/// Whether a failed check fails the probe (exit 1) or only advises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CheckKind {
    Required,
    Advisory,
}

impl CheckKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Required => "required",
            Self::Advisory => "advisory",
        }
    }
}

impl CheckId {
    /// Every check, required ones first: the order of every report.
    pub(crate) const ALL: [CheckId; 9] = [
        Self::Envelope,
        Self::CategoryStatus,
        Self::DetailsField,
        Self::Replay,
        Self::NoLeak,
        Self::Retryable,
        Self::RetryAfter,
        Self::AllowedValues,
        Self::CategoryFits,
    ];

    /// The id reports use (a contract of `--json`).
    pub(crate) fn id(self) -> &'static str {
        match self {
            Self::Envelope => "envelope",
            Self::CategoryStatus => "category_status",
            Self::DetailsField => "details_field",
            Self::Replay => "replay",
            Self::NoLeak => "no_leak",
            Self::Retryable => "retryable",
            Self::RetryAfter => "retry_after",
            Self::AllowedValues => "allowed_values",
            Self::CategoryFits => "category_fits",
        }
    }

    pub(crate) fn kind(self) -> CheckKind {
        match self {
            Self::Envelope
            | Self::CategoryStatus
            | Self::DetailsField
            | Self::Replay
            | Self::NoLeak => CheckKind::Required,
            Self::Retryable | Self::RetryAfter | Self::AllowedValues | Self::CategoryFits => {
                CheckKind::Advisory
            }
        }
    }

    /// What the check asks, for the HTML report.
    pub(crate) fn question(self) -> &'static str {
        match self {
            Self::Envelope => "every failure names its category in a structure recourse reads",
            Self::CategoryStatus => "the HTTP status agrees with the category",
            Self::DetailsField => "a missing or mistyped field is named in details.field",
            Self::Replay => "the same Idempotency-Key replays; with another payload it is refused",
            Self::NoLeak => "no stack trace or secret in a failure",
            Self::Retryable => "failures say retryable, and never true where resending is unsafe",
            Self::RetryAfter => "a 429 carries Retry-After",
            Self::AllowedValues => "an enum near-miss is answered with details.allowed_values",
            Self::CategoryFits => "bad input is INPUT_ERROR, an unknown route NOT_FOUND",
        }
    }
}

/// A check's outcome for one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Pass,
    Fail,
    /// Nothing the battery got back was something this check could judge.
    Skipped,
}

impl Verdict {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::Skipped => "skipped",
        }
    }
}

/// One check's verdict for one tool, with what it rests on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CheckResult {
    pub(crate) check: CheckId,
    pub(crate) verdict: Verdict,
    pub(crate) detail: String,
}

impl CheckResult {
    pub(crate) fn new(check: CheckId, verdict: Verdict, detail: impl Into<String>) -> Self {
        Self {
            check,
            verdict,
            detail: detail.into(),
        }
    }

    pub(crate) fn skipped(check: CheckId, why: impl Into<String>) -> Self {
        Self::new(check, Verdict::Skipped, why)
    }
}

/// What a check made of one answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Observation {
    Pass,
    Fail(String),
    /// The answer says nothing this check judges.
    NotApplicable,
}

/// The verdict over one tool's observations: failed when any answer failed
/// (the failing probes named, grouped by reason), passed when at least one
/// passed, else skipped with `none`.
pub(crate) fn aggregate(
    check: CheckId,
    observations: impl IntoIterator<Item = (ProbeKind, Observation)>,
    none: &str,
) -> CheckResult {
    let mut passed = 0;
    let mut failures: Vec<(String, Vec<&'static str>)> = Vec::new();
    for (probe, observation) in observations {
        match observation {
            Observation::Pass => passed += 1,
            Observation::Fail(why) => match failures.iter_mut().find(|(w, _)| *w == why) {
                Some((_, probes)) => probes.push(probe.id()),
                None => failures.push((why, vec![probe.id()])),
            },
            Observation::NotApplicable => {}
        }
    }
    if !failures.is_empty() {
        let detail: Vec<String> = failures
            .into_iter()
            .map(|(why, probes)| format!("{}: {why}", probes.join(", ")))
            .collect();
        return CheckResult::new(check, Verdict::Fail, detail.join("; "));
    }
    match passed {
        0 => CheckResult::skipped(check, none),
        1 => CheckResult::new(check, Verdict::Pass, "1 answer"),
        n => CheckResult::new(check, Verdict::Pass, format!("{n} answers")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_failure_fails_and_nothing_judged_skips() {
        let pass = (ProbeKind::MissingField, Observation::Pass);
        let fail = (ProbeKind::WrongType, Observation::Fail("500 text".into()));
        let na = (ProbeKind::UnknownField, Observation::NotApplicable);
        let again = (
            ProbeKind::MalformedJson,
            Observation::Fail("500 text".into()),
        );
        let other = (
            ProbeKind::MissingField,
            Observation::Fail("200 json".into()),
        );
        let r = aggregate(
            CheckId::Envelope,
            [pass.clone(), fail, na.clone(), again, other],
            "-",
        );
        assert_eq!(r.verdict, Verdict::Fail);
        assert_eq!(
            r.detail,
            "wrong_type, malformed_json: 500 text; missing_field: 200 json"
        );
        let r = aggregate(CheckId::Retryable, [pass.clone(), pass, na.clone()], "-");
        assert_eq!((r.verdict, r.detail.as_str()), (Verdict::Pass, "2 answers"));
        let r = aggregate(CheckId::RetryAfter, [na], "no 429");
        assert_eq!((r.verdict, r.detail.as_str()), (Verdict::Skipped, "no 429"));
    }

    #[test]
    fn required_checks_are_the_five_the_protocol_rests_on() {
        let required: Vec<&str> = CheckId::ALL
            .iter()
            .filter(|c| c.kind() == CheckKind::Required)
            .map(|c| c.id())
            .collect();
        assert_eq!(
            required,
            [
                "envelope",
                "category_status",
                "details_field",
                "replay",
                "no_leak"
            ]
        );
    }
}
