//! The machine's own rules (what the loops used to decide), one test each,
//! and the property that no sequence of events makes it resend a write
//! after an ambiguous failure.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use recourse_protocol::{ParsedResponse, parse_response};
use serde_json::json;

use super::*;
use crate::transport::{TransportFailure, TransportFailureKind};

fn write() -> Traits {
    Traits {
        idempotent: false,
        delegated: false,
    }
}

fn setup(traits: Traits) -> MachineSetup {
    MachineSetup::new(Limits::default(), traits, Duration::from_secs(10)).with_backoff(
        Backoff::full_jitter(Duration::from_millis(100), Duration::from_secs(1)).with_seed(1),
    )
}

fn envelope(status: u16, category: &str) -> ParsedResponse {
    let body = format!(
        r#"{{"success":false,"error":{{"code":"X","message":"m","category":"{category}"}}}}"#
    );
    parse_response(
        status,
        [("content-type", "application/json")],
        body.as_bytes(),
    )
}

fn ok() -> ParsedResponse {
    parse_response(
        200,
        [("content-type", "application/json")],
        br#"{"success":true,"data":1}"#,
    )
}

/// Starts `machine` and admits its first attempt.
fn first_dispatch(machine: &mut CallMachine, now: Instant) -> Dispatch {
    let Command::Admit(admit) = machine.start(now) else {
        panic!("a call without a read before starts by admitting an attempt")
    };
    let Command::Dispatch(dispatch) = machine.admitted(admit, true, now) else {
        panic!("an admitted attempt is dispatched")
    };
    dispatch
}

fn decided<A: Resend>(verdict: Ruling<A>) -> DecisionMade<A> {
    match verdict {
        Ruling::DecisionMade(decided) => decided,
        Ruling::AskBudget(ask) => ask.answer(true),
    }
}

/// Dispatches `machine`'s first attempt, which answers UNKNOWN_OUTCOME:
/// the lookup that follows.
fn unknown_write_looked_up(machine: &mut CallMachine, now: Instant) -> LookUp {
    let dispatch = first_dispatch(machine, now);
    let unknown = envelope(500, "UNKNOWN_OUTCOME");
    let answered = machine.answered(dispatch, Observation::Response(&unknown), now);
    let Command::LookUp(lookup) = machine.follow(decided(answered.verdict)) else {
        panic!("an unknown outcome with a lookup is looked up")
    };
    lookup
}

#[test]
fn an_open_breaker_stops_the_call_before_dispatch() {
    let mut machine = CallMachine::new(setup(Traits::default()));
    let Command::Admit(admit) = machine.start(Instant::now()) else {
        panic!()
    };
    assert!(matches!(
        machine.admitted(admit, false, Instant::now()),
        Command::Finish(Finish::Stopped(StopReason::CircuitOpen))
    ));
}

/// A refused admission stops the call with a retryable `CIRCUIT_OPEN`:
/// the machine says what the loop records, whether or not an attempt
/// answered before.
#[test]
fn a_refused_admission_is_a_retryable_circuit_open() {
    let mut machine = CallMachine::new(setup(Traits::default()));
    let Command::Admit(admit) = machine.start(Instant::now()) else {
        panic!()
    };
    let refused = machine.refused(admit);
    assert_eq!(refused.finish, Finish::Stopped(StopReason::CircuitOpen));
    assert_eq!(refused.error.code, "CIRCUIT_OPEN");
    assert_eq!(
        refused.error.category,
        recourse_protocol::ErrorCategory::ServiceError
    );
    assert!(refused.error.retryable);
}

/// The `retryable` a call's error ends with: the tool's word when it said
/// one, else whether a resend could help and is harmless.
#[test]
fn an_error_s_retryable_is_the_tool_s_word_else_the_machine_s() {
    use recourse_protocol::RetryPermission::{Allowed, Refused, Unspecified};
    let assessed = |transient, unknown| Assessment {
        transient,
        unknown,
        facts: AnswerFacts::default(),
    };
    for (transient, unknown, permission, stated, retryable) in [
        (true, false, Unspecified, false, true),
        (true, true, Unspecified, false, false),
        (false, false, Unspecified, true, false),
        (true, false, Refused, false, false),
        (false, false, Allowed, true, true),
        (true, true, Allowed, true, true),
    ] {
        assert_eq!(
            assessed(transient, unknown).retryable(permission, stated),
            retryable,
            "{transient} {unknown} {permission:?} {stated}"
        );
    }
}

#[test]
fn no_time_left_stops_before_dispatch_and_attempts_are_cut_to_the_deadline() {
    let t0 = Instant::now();
    let mut machine =
        CallMachine::new(setup(Traits::default()).with_deadline(Some(Duration::from_secs(3))));
    let dispatch = first_dispatch(&mut machine, t0);
    assert_eq!(dispatch.timeout(), Duration::from_secs(3));
    let down = envelope(503, "SERVICE_ERROR");
    let later = t0 + Duration::from_secs(3);
    let answered = machine.answered(dispatch, Observation::Response(&down), t0);
    let Command::Wait(wait) = machine.follow(decided(answered.verdict)) else {
        panic!("a transient failure waits")
    };
    let Command::Admit(admit) = machine.waited(wait) else {
        panic!("then resends")
    };
    assert!(matches!(
        machine.admitted(admit, true, later),
        Command::Finish(Finish::Stopped(StopReason::DeadlineExceeded))
    ));
}

#[test]
fn a_resend_the_budget_refuses_stops_and_is_recorded_as_the_stop() {
    let mut machine = CallMachine::new(setup(Traits::default()));
    let now = Instant::now();
    let dispatch = first_dispatch(&mut machine, now);
    let down = envelope(503, "SERVICE_ERROR");
    let answered = machine.answered(dispatch, Observation::Response(&down), now);
    assert!(answered.assessment.transient && answered.assessment.resendable());
    let Ruling::AskBudget(ask) = answered.verdict else {
        panic!("a resend asks the budget")
    };
    let refused = ask.answer(false);
    assert_eq!(
        refused.action(),
        &Action::stop(StopReason::RetryBudgetExhausted)
    );
    assert!(matches!(
        machine.follow(refused),
        Command::Finish(Finish::Stopped(StopReason::RetryBudgetExhausted))
    ));
}

#[test]
fn an_ambiguous_answer_is_assessed_unknown_and_not_resendable() {
    let mut machine = CallMachine::new(setup(write()).with_lookup(Lookup::Operation));
    let now = Instant::now();
    let dispatch = first_dispatch(&mut machine, now);
    let timeout = TransportFailure::new(TransportFailureKind::TimedOutAfterSend, "slow");
    let answered = machine.answered(dispatch, Observation::Transport(&timeout), now);
    assert!(answered.assessment.transient && answered.assessment.unknown);
    assert!(answered.assessment.facts.lost_after_send);
    assert!(!answered.assessment.resendable());
    let Command::LookUp(lookup) = machine.follow(decided(answered.verdict)) else {
        panic!("an unknown outcome is looked up")
    };
    assert_eq!(lookup.n(), 1);
}

#[test]
fn cancelled_while_a_write_is_in_doubt_is_unknown_otherwise_cancelled() {
    let mut machine = CallMachine::new(setup(write()).with_lookup(Lookup::Operation));
    let now = Instant::now();
    assert_eq!(machine.cancelled(), Finish::Stopped(StopReason::Cancelled));
    let lookup = unknown_write_looked_up(&mut machine, now);
    let pending = Reconciliation::Pending {
        wait: Some(Duration::from_millis(200)),
    };
    let looked = decided(machine.looked_up(lookup, pending, now));
    let Command::Wait(wait) = machine.follow(looked) else {
        panic!("a pending write waits")
    };
    assert_eq!(wait.cause(), WaitCause::PendingLookup);
    assert_eq!(
        machine.cancelled(),
        Finish::Stopped(StopReason::OutcomeUnknown)
    );
}

#[test]
fn a_lookup_that_finds_nothing_committed_allows_one_resend_through_the_budget() {
    let mut machine = CallMachine::new(setup(write()).with_lookup(Lookup::Operation));
    let now = Instant::now();
    let lookup = unknown_write_looked_up(&mut machine, now);
    let Ruling::AskBudget(ask) = machine.looked_up(lookup, Reconciliation::NotCommitted, now)
    else {
        panic!("the resend asks the budget")
    };
    assert!(matches!(
        machine.follow(ask.answer(true)),
        Command::Admit(_)
    ));
    assert_eq!(machine.retries(), 1);
    assert_eq!(
        machine.cancelled(),
        Finish::Stopped(StopReason::Cancelled),
        "nothing is in doubt after 'not committed'"
    );
}

#[test]
fn a_committed_lookup_succeeds_with_its_result() {
    let mut machine = CallMachine::new(setup(write()).with_lookup(Lookup::Operation));
    let now = Instant::now();
    let lookup = unknown_write_looked_up(&mut machine, now);
    let found = Reconciliation::Committed(json!({"id": 7}));
    let looked = decided(machine.looked_up(lookup, found, now));
    assert!(matches!(
        machine.follow(looked),
        Command::Finish(Finish::Succeeded(SuccessFrom::Committed(v))) if v == json!({"id": 7})
    ));
}

#[test]
fn without_a_lookup_an_unknown_outcome_stops_unknown() {
    let mut machine = CallMachine::new(setup(write()));
    let now = Instant::now();
    let dispatch = first_dispatch(&mut machine, now);
    let unknown = envelope(500, "UNKNOWN_OUTCOME");
    let answered = machine.answered(dispatch, Observation::Response(&unknown), now);
    assert!(matches!(
        machine.follow(decided(answered.verdict)),
        Command::Finish(Finish::Stopped(StopReason::OutcomeUnknown))
    ));
}

#[test]
fn a_read_back_call_reads_before_and_reads_its_successes_back_when_asked() {
    let mut machine = CallMachine::new(setup(write()).with_lookup(Lookup::ReadBack {
        before: true,
        always: true,
    }));
    let now = Instant::now();
    let Command::ReadBefore(before) = machine.start(now) else {
        panic!("the read before the write comes first")
    };
    let Command::Admit(admit) = machine.read_before(before) else {
        panic!()
    };
    let Command::Dispatch(dispatch) = machine.admitted(admit, true, now) else {
        panic!()
    };
    let answered = machine.answered(dispatch, Observation::Response(&ok()), now);
    let Command::ReadBack(read) = machine.follow(decided(answered.verdict)) else {
        panic!("a success is read back")
    };
    assert_eq!(read.answer(), WriteAnswer::Succeeded);
    let verdict = machine.read_back(
        read,
        Some(VerifyResult::NotHeld),
        VerifyResult::NotHeld,
        now,
    );
    assert!(matches!(
        machine.follow(decided(verdict)),
        Command::Finish(Finish::Stopped(StopReason::NotApplied))
    ));
}

#[test]
fn a_journal_that_cannot_record_stops_the_call() {
    let mut machine = CallMachine::new(setup(write()));
    let _ = first_dispatch(&mut machine, Instant::now());
    assert_eq!(
        machine.journal_failed(),
        Finish::Stopped(StopReason::JournalUnavailable)
    );
}

#[test]
fn a_rejected_correction_stops_and_an_accepted_one_is_sent() {
    let mut machine = CallMachine::new(setup(Traits::default()).with_corrector(true));
    let now = Instant::now();
    let dispatch = first_dispatch(&mut machine, now);
    let bad = envelope(400, "INPUT_ERROR");
    let answered = machine.answered(dispatch, Observation::Response(&bad), now);
    let Command::Correct(correct) = machine.follow(decided(answered.verdict)) else {
        panic!("a 400 is corrected")
    };
    assert_eq!(correct.n(), 1);
    let Command::Admit(admit) = machine.corrected(
        correct,
        Corrected::Accepted {
            mutable_inputs: true,
        },
    ) else {
        panic!("the corrected payload is sent")
    };
    let Command::Dispatch(dispatch) = machine.admitted(admit, true, now) else {
        panic!()
    };
    assert_eq!(dispatch.attempt(), 2);
    let answered = machine.answered(dispatch, Observation::Response(&bad), now);
    let Command::Correct(correct) = machine.follow(decided(answered.verdict)) else {
        panic!()
    };
    assert_eq!(correct.n(), 2);
    assert!(matches!(
        machine.corrected(correct, Corrected::CannotFix),
        Command::Finish(Finish::Stopped(StopReason::CannotFix))
    ));
}

#[test]
fn a_settler_never_resends_and_a_call_never_dispatched_wrote_nothing() {
    let now = Instant::now();
    let mut never = Settle::new(setup(write()).with_lookup(Lookup::Operation), false);
    assert!(matches!(
        never.start(now),
        SettleCommand::Finish(Finish::Stopped(StopReason::NotCommitted))
    ));
    let mut settle = Settle::new(setup(write()).with_lookup(Lookup::Operation), true);
    let SettleCommand::LookUp(lookup) = settle.start(now) else {
        panic!()
    };
    assert!(matches!(
        settle.looked_up(lookup, Reconciliation::NotCommitted, now),
        SettleCommand::Finish(Finish::Stopped(StopReason::NotCommitted))
    ));
    let mut nothing = Settle::new(setup(write()), true);
    assert!(matches!(
        nothing.start(now),
        SettleCommand::Finish(Finish::Stopped(StopReason::OutcomeUnknown))
    ));
}

#[test]
fn a_settler_looks_a_pending_write_up_within_its_limit_and_deadline() {
    let t0 = Instant::now();
    let limits = Limits {
        max_lookups: 3,
        ..Limits::default()
    };
    let setup = MachineSetup::new(limits, write(), Duration::from_secs(10))
        .with_lookup(Lookup::Operation)
        .with_deadline(Some(Duration::from_secs(60)));
    let mut settle = Settle::new(setup, true);
    let mut step = settle.start(t0);
    let mut lookups = 0;
    let finish = loop {
        step = match step {
            SettleCommand::LookUp(lookup) => {
                lookups += 1;
                let pending = Reconciliation::Pending {
                    wait: Some(Duration::from_millis(10)),
                };
                settle.looked_up(lookup, pending, t0)
            }
            SettleCommand::Wait(wait) => settle.waited(wait),
            SettleCommand::ReadBack(_) => panic!("no read declared"),
            SettleCommand::Finish(finish) => break finish,
        };
    };
    assert_eq!(lookups, 3);
    assert_eq!(finish, Finish::Stopped(StopReason::OutcomeUnknown));
}

/// One answer a tool (or the transport) can give, and whether the protocol
/// calls it ambiguous for a write — written out here, not asked of the
/// machine, so the property checks the machine against the protocol.
#[derive(Debug, Clone, Copy)]
enum Answer {
    SuccessFrom,
    Stated(u16, &'static str, Option<bool>),
    Plain(u16),
    JsonRpc(i64),
    Transport(TransportFailureKind, Option<u16>),
}

impl Answer {
    fn ambiguous(self) -> bool {
        match self {
            Self::SuccessFrom => false,
            Self::Stated(_, category, _) => category == "UNKNOWN_OUTCOME",
            Self::Plain(status) => matches!(status, 500 | 502 | 504),
            Self::JsonRpc(code) => matches!(code, -32603 | -32000),
            Self::Transport(kind, status) => {
                match kind {
                    TransportFailureKind::TimedOutAfterSend
                    | TransportFailureKind::FailedAfterSend => true,
                    TransportFailureKind::ResponseTooLarge => status
                        .is_none_or(|s| (200..300).contains(&s) || matches!(s, 500 | 502 | 504)),
                    TransportFailureKind::ConnectFailed
                    | TransportFailureKind::RequestNotBuilt
                    | TransportFailureKind::TlsFailed
                    | TransportFailureKind::AuthRequired => false,
                }
            }
        }
    }

    fn observe<T>(self, with: impl FnOnce(Observation<'_>) -> T) -> T {
        match self {
            Self::SuccessFrom => with(Observation::Response(&ok())),
            Self::Stated(status, category, retryable) => {
                let flag = retryable.map_or(String::new(), |b| format!(r#","retryable":{b}"#));
                let body = format!(
                    r#"{{"success":false,"error":{{"code":"X","message":"m","category":"{category}"{flag}}}}}"#
                );
                let r = parse_response(
                    status,
                    [("content-type", "application/json")],
                    body.as_bytes(),
                );
                with(Observation::Response(&r))
            }
            Self::Plain(status) => {
                let r = parse_response(status, [("content-type", "text/html")], b"<p>oops</p>");
                with(Observation::Response(&r))
            }
            Self::JsonRpc(code) => {
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":{code},"message":"m"}}}}"#
                );
                let r =
                    parse_response(200, [("content-type", "application/json")], body.as_bytes());
                with(Observation::Response(&r))
            }
            Self::Transport(kind, status) => {
                let mut t = TransportFailure::new(kind, "boom");
                t.status = status;
                with(Observation::Transport(&t))
            }
        }
    }
}

const ANSWERS: &[Answer] = &[
    Answer::SuccessFrom,
    Answer::Stated(500, "UNKNOWN_OUTCOME", None),
    Answer::Stated(500, "UNKNOWN_OUTCOME", Some(false)),
    Answer::Stated(200, "UNKNOWN_OUTCOME", Some(true)),
    Answer::Stated(503, "SERVICE_ERROR", None),
    Answer::Stated(503, "SERVICE_ERROR", Some(true)),
    Answer::Stated(502, "SERVICE_ERROR", Some(false)),
    Answer::Stated(429, "RATE_LIMIT", Some(true)),
    Answer::Stated(400, "INPUT_ERROR", Some(true)),
    Answer::Stated(404, "NOT_FOUND", None),
    Answer::Stated(401, "AUTH_ERROR", None),
    Answer::Stated(422, "POLICY_REJECTION", None),
    Answer::Plain(500),
    Answer::Plain(502),
    Answer::Plain(503),
    Answer::Plain(504),
    Answer::Plain(408),
    Answer::Plain(400),
    Answer::JsonRpc(-32603),
    Answer::JsonRpc(-32000),
    Answer::JsonRpc(-32602),
    Answer::Transport(TransportFailureKind::ConnectFailed, None),
    Answer::Transport(TransportFailureKind::TimedOutAfterSend, None),
    Answer::Transport(TransportFailureKind::FailedAfterSend, None),
    Answer::Transport(TransportFailureKind::ResponseTooLarge, Some(200)),
    Answer::Transport(TransportFailureKind::ResponseTooLarge, Some(503)),
    Answer::Transport(TransportFailureKind::ResponseTooLarge, None),
    Answer::Transport(TransportFailureKind::RequestNotBuilt, None),
    Answer::Transport(TransportFailureKind::TlsFailed, None),
    Answer::Transport(TransportFailureKind::AuthRequired, None),
];

/// A script of choices: each time the machine asks something, the next
/// byte picks what happens (cycling when the script runs out).
struct Script {
    bytes: Vec<u8>,
    at: usize,
}

impl Script {
    fn next(&mut self) -> u8 {
        let byte = self
            .bytes
            .get(self.at % self.bytes.len().max(1))
            .copied()
            .unwrap_or(0);
        self.at += 1;
        byte
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[usize::from(self.next()) % from.len()]
    }

    /// True about one time in `n`.
    fn one_in(&mut self, n: u8) -> bool {
        self.next().is_multiple_of(n)
    }
}

fn lookup_of(byte: u8) -> Lookup {
    match byte % 4 {
        0 => Lookup::None,
        1 => Lookup::Operation,
        2 => Lookup::ReadBack {
            before: true,
            always: false,
        },
        _ => Lookup::ReadBack {
            before: byte % 8 < 4,
            always: true,
        },
    }
}

/// Drives one non-idempotent call through the script; fails if it ever
/// dispatches while an ambiguous answer is unsettled.
fn drive(
    bytes: Vec<u8>,
    lookup: Lookup,
    corrector: bool,
    deadline: Option<u64>,
) -> Result<(), TestCaseError> {
    let mut script = Script { bytes, at: 0 };
    let limits = Limits {
        max_retries: u32::from(script.next() % 4),
        max_corrections: u32::from(script.next() % 3),
        max_lookups: u32::from(script.next() % 4) + 1,
        ..Limits::default()
    };
    let setup = MachineSetup::new(limits, write(), Duration::from_secs(5))
        .with_deadline(deadline.map(Duration::from_secs))
        .with_corrector(corrector)
        .with_lookup(lookup)
        .with_backoff(
            Backoff::full_jitter(Duration::from_millis(50), Duration::from_secs(2)).with_seed(3),
        );
    let mut machine = CallMachine::new(setup);
    let mut now = Instant::now();
    let mut doubt = false;
    let mut command = machine.start(now);
    for _ in 0..500 {
        command = match command {
            Command::ReadBefore(read) => machine.read_before(read),
            Command::Admit(_) if script.one_in(16) => Command::Finish(machine.cancelled()),
            Command::Admit(admit) => {
                let admitted = !script.one_in(12);
                machine.admitted(admit, admitted, now)
            }
            Command::Dispatch(dispatch) => {
                prop_assert!(
                    !doubt,
                    "dispatched attempt {} while a write was in doubt",
                    dispatch.attempt()
                );
                if script.one_in(20) {
                    Command::Finish(machine.journal_failed())
                } else {
                    let answer = script.pick(ANSWERS);
                    doubt = answer.ambiguous();
                    now += Duration::from_millis(u64::from(script.next()));
                    let answered = answer.observe(|o| machine.answered(dispatch, o, now));
                    prop_assert_eq!(answered.assessment.unknown, doubt, "{:?}", answer);
                    let granted = !script.one_in(6);
                    let decided = match answered.verdict {
                        Ruling::DecisionMade(d) => d,
                        Ruling::AskBudget(ask) => ask.answer(granted),
                    };
                    machine.follow(decided)
                }
            }
            Command::Wait(wait) => {
                if script.one_in(16) {
                    Command::Finish(machine.cancelled())
                } else {
                    now += wait.duration();
                    machine.waited(wait)
                }
            }
            Command::Correct(correct) => {
                let corrected = if script.one_in(3) {
                    Corrected::CannotFix
                } else {
                    Corrected::Accepted {
                        mutable_inputs: !script.one_in(4),
                    }
                };
                machine.corrected(correct, corrected)
            }
            Command::LookUp(lookup) => {
                let found = match script.next() % 4 {
                    0 => Reconciliation::Committed(json!({"ok": true})),
                    1 => Reconciliation::NotCommitted,
                    2 => Reconciliation::Pending {
                        wait: script
                            .one_in(2)
                            .then(|| Duration::from_millis(u64::from(script.next()) * 10)),
                    },
                    _ => Reconciliation::Unknown("cannot tell".into()),
                };
                if matches!(found, Reconciliation::NotCommitted) {
                    doubt = false;
                }
                let granted = !script.one_in(6);
                let decided = match machine.looked_up(lookup, found, now) {
                    Ruling::DecisionMade(d) => d,
                    Ruling::AskBudget(ask) => ask.answer(granted),
                };
                machine.follow(decided)
            }
            Command::ReadBack(read) => {
                let results = [
                    VerifyResult::Holds,
                    VerifyResult::NotHeld,
                    VerifyResult::CannotTell,
                ];
                let before = match script.next() % 4 {
                    0 => None,
                    n => Some(results[usize::from(n) - 1]),
                };
                let after = script.pick(&results);
                // Not held now and not before: the write did not commit.
                if after == VerifyResult::NotHeld && before != Some(VerifyResult::Holds) {
                    doubt = false;
                }
                let granted = !script.one_in(6);
                let decided = match machine.read_back(read, before, after, now) {
                    Ruling::DecisionMade(d) => d,
                    Ruling::AskBudget(ask) => ask.answer(granted),
                };
                machine.follow(decided)
            }
            Command::Finish(finish) => {
                if doubt && let Finish::Stopped(reason) = &finish {
                    prop_assert!(
                        reason.leaves_outcome_unknown(),
                        "stopped {reason:?} with a write in doubt"
                    );
                }
                return Ok(());
            }
        };
    }
    Err(TestCaseError::fail(
        "the call did not finish within 500 commands",
    ))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Whatever the tool answers, whatever the breaker, the budget, the
    /// lookups, the reads, the corrector and the journal say, and whenever
    /// the call is cancelled: a write whose outcome is in doubt is never
    /// dispatched again until a lookup or a read says it did not commit, and
    /// a call that stops in doubt says its outcome is unknown.
    #[test]
    fn no_sequence_of_events_resends_a_write_after_an_ambiguous_failure(
        bytes in prop::collection::vec(any::<u8>(), 1..96),
        kind in any::<u8>(),
        corrector in any::<bool>(),
        deadline in prop::option::of(1u64..120),
    ) {
        drive(bytes, lookup_of(kind), corrector, deadline)?;
    }
}
