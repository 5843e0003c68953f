//! A scenario, as declared in a data file: a task, how the tool behaves, and
//! which outcomes are acceptable (protocol §8).
//!
//! Scenarios are data so that a reliability engineer can add one without
//! touching Rust: the runner knows how to play any task against any tool
//! behaviour, and the scorer knows how to judge any run against any
//! acceptance set. Unknown fields are errors, so a typo in a scenario file
//! fails loudly instead of silently weakening a check.
//!
//! Names — final states, actions, stop reasons, categories, verifications,
//! transport failures — are read by serde into the types the record holds,
//! so the file spells them exactly as the record does, a bad one is an
//! error naming its field and the allowed values, and the scorer compares
//! types, never text.

use std::collections::BTreeMap;

use recourse::policy::{ActionKind, StopReason, Verification};
use recourse::record::OutcomeKind;
use recourse::transport::TransportFailureKind;
use serde::Deserialize;
use serde_json::Value;

use super::failure::{FirstFailure, ScenarioCategory};

/// One scenario, as its data file declares it: a task, how the tool
/// behaves, and which outcomes are acceptable.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A stable id, matched by `--scenario GLOB`.
    pub(crate) id: String,
    /// One line saying what is tested.
    pub(crate) title: String,
    /// The category it is scored under.
    pub(crate) category: ScenarioCategory,
    /// What the agent is asked to do.
    pub(crate) task: Task,
    /// How the tool behaves.
    pub(crate) tool: ToolBehaviour,
    /// A model's reference replies, for scenarios that need a model.
    #[serde(default)]
    pub(crate) model: Option<ModelScript>,
    /// What counts as a correct recovery.
    pub(crate) accept: Acceptance,
}

/// The call the agent makes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Task {
    /// The reference tool's route (`/api/exports`) or, for scripts, a tool name.
    pub(crate) route: String,
    /// The payload.
    pub(crate) payload: Value,
    /// Whether the caller says resending is harmless. Absent, the evidence
    /// order decides: a reference tool's manifest, else not idempotent.
    #[serde(default)]
    pub(crate) idempotent: Option<bool>,
    /// Whether the tool is a delegated orchestrator (default false).
    #[serde(default)]
    pub(crate) delegated: bool,
    /// JSON Pointers to values no layer may change.
    #[serde(default)]
    pub(crate) protect: Vec<String>,
    /// Headers the caller sends (its identity, its tenant).
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    /// The user's original request.
    #[serde(default)]
    pub(crate) intent: Option<String>,
    /// The capability's input schema.
    #[serde(default)]
    pub(crate) schema: Option<Value>,
    /// Whether an outcome lookup is configured (default: for non-idempotent
    /// calls without a verification).
    #[serde(default)]
    pub(crate) reconcile: Option<bool>,
    /// A read-back verification (the gateway's `verify` object); a `url`
    /// starting with `/` is a reference-tool route, a `tool` a script's read.
    #[serde(default)]
    pub(crate) verify: Option<recourse::VerifySpec>,
    /// The call's deadline in seconds (default 120).
    #[serde(default)]
    pub(crate) deadline_secs: Option<f64>,
    /// Same-payload resends allowed (default 3).
    #[serde(default)]
    pub(crate) max_retries: Option<u32>,
    /// Corrections allowed (default 2).
    #[serde(default)]
    pub(crate) max_corrections: Option<u32>,
    /// Backoff base in milliseconds (default 1000).
    #[serde(default)]
    pub(crate) backoff_ms: Option<u64>,
}

impl Scenario {
    /// Whether the call writes: as the task says, else as the tool is — the
    /// reference export tool writes, the others read; a script writes when
    /// any of its answers commits. The scorer's ground truth, not recourse's
    /// belief.
    pub(crate) fn writes(&self) -> bool {
        if let Some(idempotent) = self.task.idempotent {
            return !idempotent;
        }
        match &self.tool {
            ToolBehaviour::Reference(_) => self.task.route == "/api/exports",
            ToolBehaviour::Script(script) => script.responses.iter().any(|r| r.commits),
        }
    }
}

/// Where the tool's answers come from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub(crate) enum ToolBehaviour {
    /// The reference tools over loopback HTTP, with injected faults.
    Reference(ReferenceTool),
    /// An inline script of answers, played by an in-process transport.
    Script(Script),
}

/// The reference tools and their faults (`TOOL:KIND[:RATE]`, seeded by the run index).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReferenceTool {
    /// Faults to inject.
    #[serde(default)]
    pub(crate) faults: Vec<String>,
    /// The wait a `rate_limit` fault demands, in milliseconds (default 1000).
    #[serde(default)]
    pub(crate) retry_after_ms: Option<u64>,
}

/// A scripted tool: rules matched on the payload first, then answers in order
/// (the last one repeats).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Script {
    /// Answers chosen by the payload, first match wins.
    #[serde(default)]
    pub(crate) rules: Vec<Rule>,
    /// Answers in order, for requests no rule matched.
    pub(crate) responses: Vec<Step>,
    /// What an outcome lookup reports: `truth` (what was committed) or `unknown`.
    #[serde(default)]
    pub(crate) lookup: Lookup,
    /// The script's read tool, for verifications: what it shows.
    #[serde(default)]
    pub(crate) read: Option<ScriptRead>,
}

/// A scripted read tool: it answers with the tool's state, which starts as
/// `initial` and becomes a committing answer's `state`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScriptRead {
    /// The read tool's name (a verification's `tool`).
    pub(crate) tool: String,
    /// What it shows before anything is committed.
    pub(crate) initial: Value,
    /// It answers 503 to every read: a verification cannot tell.
    #[serde(default)]
    pub(crate) unavailable: bool,
}

/// What a scripted outcome lookup says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Lookup {
    /// Committed (with the committing answer's data) or not committed, truthfully.
    #[default]
    Truth,
    /// The lookup cannot tell.
    Unknown,
}

/// An answer given when every pointer in `when` holds the given value.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Rule {
    /// JSON Pointer → the value it must hold.
    pub(crate) when: BTreeMap<String, Value>,
    /// The answer.
    pub(crate) respond: Step,
}

/// One scripted answer: a response or a transport failure.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Step {
    /// The HTTP status (default 200).
    #[serde(default)]
    pub(crate) status: Option<u16>,
    /// Response headers.
    #[serde(default)]
    pub(crate) headers: BTreeMap<String, String>,
    /// A JSON body.
    #[serde(default)]
    pub(crate) body: Option<Value>,
    /// A raw text body (instead of `body`).
    #[serde(default)]
    pub(crate) text: Option<String>,
    /// A transport failure instead of a response: one of [`SCRIPTED_FAILURES`].
    #[serde(default)]
    pub(crate) transport: Option<TransportFailureKind>,
    /// Whether the tool committed a write while answering this way.
    #[serde(default)]
    pub(crate) commits: bool,
    /// What the script's read shows once this answer committed (default:
    /// unchanged).
    #[serde(default)]
    pub(crate) state: Option<Value>,
}

/// The model's reference replies, in the order a correction asks for them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ModelScript {
    /// Reply texts (the last repeats).
    pub(crate) replies: Vec<String>,
}

/// The acceptable outcomes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Acceptance {
    /// Allowed final states: `succeeded`, `failed`, `unknown`.
    pub(crate) states: Vec<OutcomeKind>,
    /// The category the first failure must be read as (`TRANSPORT` for a
    /// transport failure, `HTTP_<status>` for a bare status).
    #[serde(default)]
    pub(crate) category: Option<FirstFailure>,
    /// The action the policy must take after the first attempt.
    #[serde(default)]
    pub(crate) next_action: Option<ActionKind>,
    /// The stop reason required when the call stops (its code).
    #[serde(default)]
    pub(crate) stop_reason: Option<StopReason>,
    /// Actions that must never be taken.
    #[serde(default)]
    pub(crate) forbidden_actions: Vec<ActionKind>,
    /// Whether a question to the user is expected (`true`), forbidden (`false`) or either.
    #[serde(default)]
    pub(crate) question: Option<bool>,
    /// The most dispatches allowed.
    #[serde(default)]
    pub(crate) max_attempts: Option<u32>,
    /// The most committed writes allowed.
    #[serde(default)]
    pub(crate) max_writes: Option<usize>,
    /// The fewest committed writes required.
    #[serde(default)]
    pub(crate) min_writes: Option<usize>,
    /// The most model calls allowed.
    #[serde(default)]
    pub(crate) max_llm_calls: Option<u32>,
    /// Text from an error body that must never appear in a request (case-insensitive).
    #[serde(default)]
    pub(crate) forbidden_text: Vec<String>,
    /// Values the last payload sent must hold (JSON Pointer → value).
    #[serde(default)]
    pub(crate) final_payload: BTreeMap<String, Value>,
    /// Waits (ms) the executor must have taken, in order.
    #[serde(default)]
    pub(crate) waits_ms: Option<Vec<u64>>,
    /// What the record's `verification` must say (`verified`,
    /// `already_applied`, `not_committed`, `not_applied`, `cannot_tell`).
    #[serde(default)]
    pub(crate) verification: Option<Verification>,
}

/// The transport failures a script can play: those of a request that went
/// out, or never did. (A body over the cap, a request that cannot be built
/// are not the tool's doing.)
pub(crate) const SCRIPTED_FAILURES: [TransportFailureKind; 3] = [
    TransportFailureKind::ConnectFailed,
    TransportFailureKind::TimedOutAfterSend,
    TransportFailureKind::FailedAfterSend,
];

impl Scenario {
    /// Its stable id (`export_unknown_outcome`), which selects it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Reads and checks a scenario file. A value serde cannot read is an
    /// error that names its field and, for a name, the allowed ones
    /// (`accept.states[0]: unknown variant `done`, expected one of …`).
    pub(crate) fn from_json(text: &str) -> Result<Self, String> {
        let mut json = serde_json::Deserializer::from_str(text);
        let scenario: Self =
            serde_path_to_error::deserialize(&mut json).map_err(|e| e.to_string())?;
        json.end().map_err(|e| e.to_string())?;
        scenario.validate()?;
        Ok(scenario)
    }

    /// Whether the scenario needs a model to run.
    pub(crate) fn needs_model(&self) -> bool {
        self.model.is_some()
    }

    /// Checks what serde cannot: sensible values (serde has read the names).
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.id.trim().is_empty() || self.id.contains(char::is_whitespace) {
            return Err(format!("id {:?} must be non-empty without spaces", self.id));
        }
        if !self.task.payload.is_object() {
            return Err("task.payload must be a JSON object".to_owned());
        }
        for pointer in &self.task.protect {
            recourse::protect::validate_pointer(pointer)
                .map_err(|e| format!("task.protect: {e}"))?;
        }
        if let Some(secs) = self.task.deadline_secs
            && !(secs.is_finite() && secs > 0.0)
        {
            return Err(format!("task.deadline_secs must be positive, not {secs}"));
        }
        self.tool_is_valid()?;
        self.verify_is_valid()?;
        if let Some(model) = &self.model
            && model.replies.is_empty()
        {
            return Err("model.replies must hold at least one reply".to_owned());
        }
        self.accept.validate()
    }

    /// A verification fits the tool: a route of the reference tools, or the
    /// script's read tool; its templates resolve against the payload.
    fn verify_is_valid(&self) -> Result<(), String> {
        let Some(spec) = &self.task.verify else {
            return Ok(());
        };
        match (&self.tool, &spec.url, &spec.tool) {
            (ToolBehaviour::Reference(_), Some(url), None) if url.starts_with("/api/") => {}
            (ToolBehaviour::Script(s), None, Some(tool))
                if s.read.as_ref().is_some_and(|r| &r.tool == tool) => {}
            _ => {
                return Err(
                    "task.verify reads a reference-tool route (url: \"/api/…\") or the script's read.tool"
                        .to_owned(),
                );
            }
        }
        Ok(())
    }

    fn tool_is_valid(&self) -> Result<(), String> {
        match &self.tool {
            ToolBehaviour::Reference(r) => {
                if !self.task.route.starts_with("/api/") {
                    return Err(format!(
                        "task.route {:?} must be a reference-tool route such as /api/exports",
                        self.task.route
                    ));
                }
                for fault in &r.faults {
                    fault
                        .parse::<recourse_reference_tools::Fault>()
                        .map_err(|e| format!("tool.reference.faults: {e}"))?;
                }
                Ok(())
            }
            ToolBehaviour::Script(s) => {
                if s.responses.is_empty() {
                    return Err("tool.script.responses must hold at least one answer".to_owned());
                }
                let steps = s.rules.iter().map(|r| &r.respond).chain(&s.responses);
                steps.enumerate().try_for_each(|(i, step)| {
                    step.validate()
                        .map_err(|e| format!("tool.script answer {}: {e}", i + 1))
                })?;
                for rule in &s.rules {
                    for pointer in rule.when.keys() {
                        recourse::protect::validate_pointer(pointer)
                            .map_err(|e| format!("tool.script.rules: {e}"))?;
                    }
                }
                Ok(())
            }
        }
    }
}

impl Step {
    fn validate(&self) -> Result<(), String> {
        if let Some(kind) = self.transport {
            if !SCRIPTED_FAILURES.contains(&kind) {
                let allowed: Vec<&str> = SCRIPTED_FAILURES.iter().map(|k| k.as_str()).collect();
                return Err(format!(
                    "transport {:?} is not one of {}",
                    kind.as_str(),
                    allowed.join(", ")
                ));
            }
            if self.status.is_some() || self.body.is_some() || self.text.is_some() {
                return Err("a transport failure has no status or body".to_owned());
            }
        }
        if self.body.is_some() && self.text.is_some() {
            return Err("give either body or text, not both".to_owned());
        }
        if let Some(status) = self.status
            && !(100..=599).contains(&status)
        {
            return Err(format!("status {status} is not an HTTP status"));
        }
        Ok(())
    }
}

impl Acceptance {
    fn validate(&self) -> Result<(), String> {
        if self.states.is_empty() {
            return Err("accept.states must name at least one final state".to_owned());
        }
        for pointer in self.final_payload.keys() {
            recourse::protect::validate_pointer(pointer)
                .map_err(|e| format!("accept.final_payload: {e}"))?;
        }
        Ok(())
    }

    /// Whether a run that ended `state` ended acceptably.
    pub(crate) fn allows(&self, state: OutcomeKind) -> bool {
        self.states.contains(&state)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A valid scenario file, with `change` applied to it.
    fn file(change: impl FnOnce(&mut Value)) -> String {
        let mut scenario = json!({
            "id": "t", "title": "t", "category": "UNKNOWN_OUTCOME",
            "task": {"route": "w", "payload": {"amount": 5}, "idempotent": false},
            "tool": {"script": {"responses": [{"transport": "timed_out_after_send"}, {"status": 200}]}},
            "accept": {
                "states": ["succeeded", "unknown"], "category": "TRANSPORT",
                "next_action": "reconcile", "forbidden_actions": ["retry_same"],
                "stop_reason": "outcome_unknown", "verification": "not_committed",
            },
        });
        change(&mut scenario);
        scenario.to_string()
    }

    #[test]
    fn names_are_read_into_the_records_types() {
        let s = Scenario::from_json(&file(|_| {})).unwrap();
        assert_eq!(s.category, ScenarioCategory::UnknownOutcome);
        assert_eq!(
            s.accept.states,
            [OutcomeKind::Succeeded, OutcomeKind::Unknown]
        );
        assert_eq!(s.accept.category, Some(FirstFailure::Transport));
        assert_eq!(s.accept.next_action, Some(ActionKind::Reconcile));
        assert_eq!(s.accept.forbidden_actions, [ActionKind::RetrySame]);
        assert_eq!(s.accept.stop_reason, Some(StopReason::OutcomeUnknown));
        assert_eq!(s.accept.verification, Some(Verification::NotCommitted));
        let ToolBehaviour::Script(script) = &s.tool else {
            panic!("a script")
        };
        assert_eq!(
            script.responses[0].transport,
            Some(TransportFailureKind::TimedOutAfterSend)
        );
        assert!(s.accept.allows(OutcomeKind::Unknown) && !s.accept.allows(OutcomeKind::Failed));
    }

    /// The error for the file with `value` at `pointer`.
    fn error(pointer: &str, value: Value) -> String {
        let text = file(|s| *s.pointer_mut(pointer).unwrap() = value);
        Scenario::from_json(&text).unwrap_err()
    }

    #[test]
    fn a_bad_name_names_its_field_and_the_allowed_values() {
        let cases = [
            ("/category", "NOPE", "category", "`CONTROL`"),
            (
                "/accept/states/0",
                "done",
                "accept.states[0]",
                "`succeeded`, `failed`, `unknown`",
            ),
            (
                "/accept/next_action",
                "retry",
                "accept.next_action",
                "`retry_same`",
            ),
            (
                "/accept/forbidden_actions/0",
                "resend",
                "accept.forbidden_actions[0]",
                "`reconcile`",
            ),
            (
                "/accept/stop_reason",
                "gave_up",
                "accept.stop_reason",
                "`outcome_unknown`",
            ),
            (
                "/accept/verification",
                "ok",
                "accept.verification",
                "`already_applied`",
            ),
            (
                "/accept/category",
                "INPUT_EROR",
                "accept.category",
                "NOT_FOUND",
            ),
            (
                "/tool/script/responses/0/transport",
                "lost",
                "tool.script.responses[0].transport",
                "`failed_after_send`",
            ),
        ];
        for (pointer, bad, field, allowed) in cases {
            let err = error(pointer, bad.into());
            assert!(err.starts_with(&format!("{field}: ")), "{err}");
            assert!(err.contains(bad), "{err}");
            assert!(err.contains(allowed), "{err}");
        }
    }

    #[test]
    fn a_transport_failure_a_script_cannot_play_is_refused() {
        let err = error(
            "/tool/script/responses/0/transport",
            "response_too_large".into(),
        );
        assert_eq!(
            err,
            "tool.script answer 1: transport \"response_too_large\" is not one of \
             connect_failed, timed_out_after_send, failed_after_send"
        );
    }
}
