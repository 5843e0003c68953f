//! The call as a state machine: every decision of one call, fed what
//! happened, answering what to do next.
//!
//! # Why a machine
//!
//! The policy's rules are pure functions ([`Policy::decide`],
//! [`Policy::after_lookup`], [`Policy::after_verification`]). A call is more
//! than one rule: it counts resends, corrections and lookups, keeps a
//! deadline, asks the breaker before every attempt and the retry budget
//! before every resend, and knows whether a write's outcome is in doubt when
//! it is cancelled. Kept in the loops that send and wait, those decisions
//! spread out — each loop grows a rule of its own. So they live here, in a
//! value with no I/O and no clock of its own, like a QUIC connection in
//! quinn-proto: it is told what happened (an answer, the breaker's verdict, a
//! lookup's verdict, a read, a wait that passed, a journal that failed,
//! cancellation) and answers a [`Command`]: admit, dispatch, wait, correct,
//! look up, read back, or finish. The executor's loop and the journal's
//! settler only carry commands out.
//!
//! Every command that expects an answer carries a token ([`Dispatch`],
//! [`LookUp`], …) that only the machine makes and only the matching input
//! takes back, so a loop cannot hand a lookup's verdict to a machine waiting
//! for an answer, and what follows each phase has a type of its own
//! ([`AfterLookup`], [`AfterRead`]) without arms that cannot happen there.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use recourse_core::backoff::Backoff;
//! use recourse_core::policy::{Limits, Observation, Traits};
//! use recourse_core::machine::{CallMachine, Command, Finish, Lookup, MachineSetup, Ruling};
//! use recourse_protocol::parse_response;
//!
//! let setup = MachineSetup::new(Limits::default(), Traits::default(), Duration::from_secs(10))
//!     .with_backoff(Backoff::full_jitter(Duration::from_millis(100), Duration::from_secs(1)).with_seed(7));
//! let mut machine = CallMachine::new(setup);
//! let now = Instant::now();
//! let Command::Admit(admit) = machine.start(now) else { unreachable!() };
//! let Command::Dispatch(dispatch) = machine.admitted(admit, true, now) else { unreachable!() };
//! let answer = parse_response(200, [("content-type", "application/json")], br#"{"success":true,"data":1}"#);
//! let Ruling::DecisionMade(decided) = machine.answered(dispatch, Observation::Response(&answer), now).verdict else { unreachable!() };
//! assert!(matches!(machine.follow(decided), Command::Finish(Finish::Succeeded(_))));
//! ```

use std::time::{Duration, Instant};

use recourse_protocol::{RetryPermission, ToolError};
use serde_json::Value;

pub use super::decide::AfterLookup;
use super::decide::is_transient_observation;
pub use super::lookup::{Lookup, ManifestQuestion};
use super::{
    Action, ActionKind, AnswerFacts, Limits, Observation, Policy, Situation, StopReason, Traits,
    VerifyResult, WaitCause, WriteAnswer,
};
use crate::backoff::Backoff;
use crate::reconcile::Reconciliation;

/// What a [`CallMachine`] is set up with.
#[derive(Debug, Clone)]
pub struct MachineSetup {
    limits: Limits,
    traits: Traits,
    per_attempt: Duration,
    deadline: Option<Duration>,
    /// `None`: full jitter from 1 s, made when the machine is.
    backoff: Option<Backoff>,
    corrector: bool,
    lookup: Lookup,
    mutable_inputs: bool,
}

impl MachineSetup {
    /// A call under `limits` with `traits`, each attempt allowed
    /// `per_attempt`: no deadline, no corrector, no lookup, mutable inputs,
    /// full-jitter backoff from 1 s.
    pub fn new(limits: Limits, traits: Traits, per_attempt: Duration) -> Self {
        Self {
            backoff: None,
            limits,
            traits,
            per_attempt,
            deadline: None,
            corrector: false,
            lookup: Lookup::None,
            mutable_inputs: true,
        }
    }

    /// The whole call must end within `deadline` of its start.
    #[must_use]
    pub fn with_deadline(mut self, deadline: Option<Duration>) -> Self {
        self.deadline = deadline;
        self
    }

    /// Draws the waits between resends (and pending lookups) from `backoff`.
    #[must_use]
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = Some(backoff);
        self
    }

    /// Whether a corrector can be asked for a new payload.
    #[must_use]
    pub fn with_corrector(mut self, corrector: bool) -> Self {
        self.corrector = corrector;
        self
    }

    /// How an unknown outcome is settled.
    #[must_use]
    pub fn with_lookup(mut self, lookup: Lookup) -> Self {
        self.lookup = lookup;
        self
    }

    /// Whether the payload has a value a correction may change.
    #[must_use]
    pub fn with_mutable_inputs(mut self, mutable: bool) -> Self {
        self.mutable_inputs = mutable;
        self
    }
}

/// The decisions of one call. See the [module docs](self).
#[derive(Debug)]
pub struct CallMachine {
    policy: Policy,
    setup: MachineSetup,
    backoff: Backoff,
    deadline: Option<Instant>,
    attempts: u32,
    retries: u32,
    corrections: u32,
    lookups: u32,
    /// The retry permission of the last answer (rule 4 still holds for a
    /// resend after a lookup).
    permission: RetryPermission,
    /// A resend of a write found not committed: its success is read back too.
    verify_next_success: bool,
    /// The last answer left the write's outcome unknown, and no lookup or
    /// read has settled it since.
    in_doubt: bool,
}

/// What to do next.
#[must_use = "a command is what the loop does next"]
#[derive(Debug)]
pub enum Command {
    /// Read the write's effect once before the first dispatch.
    ReadBefore(ReadBefore),
    /// Ask the endpoint's circuit breaker whether the next attempt may go.
    Admit(Admit),
    /// Record the attempt in the journal (when the call is journaled), then send it.
    Dispatch(Dispatch),
    /// Wait, then tell the machine ([`CallMachine::waited`]).
    Wait(Wait),
    /// Ask the corrector for a new payload.
    Correct(Correct),
    /// Look the write's outcome up.
    LookUp(LookUp),
    /// Read the write's effect back.
    ReadBack(ReadBack),
    /// The call is over.
    Finish(Finish),
}

/// How a call ends.
#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    /// It succeeded.
    Succeeded(SuccessFrom),
    /// It stopped, for a reason (some leave the outcome unknown:
    /// [`StopReason::leaves_outcome_unknown`]).
    Stopped(StopReason),
}

/// Where a success's data comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum SuccessFrom {
    /// The last answer's data (read back and confirmed, when the call reads
    /// its successes back).
    Answered,
    /// A lookup found the write committed, with this result.
    Committed(Value),
    /// A read found the effect of a write whose outcome was unknown: the
    /// read's document.
    ReadBack,
}

/// A call the breaker refused ([`CallMachine::refused`]): how it ends, and
/// the error it ends with when no attempt left one.
#[derive(Debug, Clone, PartialEq)]
#[must_use = "the refusal is how the call ends"]
pub struct RefusedAdmission {
    /// How the call ends.
    pub finish: Finish,
    /// `CIRCUIT_OPEN`, retryable.
    pub error: ToolError,
}

/// Token of [`Command::ReadBefore`]; give it back to [`CallMachine::read_before`].
#[derive(Debug)]
pub struct ReadBefore(());

/// Token of [`Command::Admit`]; give it back to [`CallMachine::admitted`].
#[derive(Debug)]
pub struct Admit(());

/// Token of [`Command::Dispatch`]: which attempt, and how long it may take.
#[derive(Debug)]
pub struct Dispatch {
    attempt: u32,
    timeout: Duration,
}

impl Dispatch {
    /// The attempt's number, from 1.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// How long the attempt may take: the per-attempt timeout, cut to the
    /// time left before the deadline.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// Token of [`Command::Wait`]: how long, and who asked.
#[derive(Debug)]
pub struct Wait {
    wait: Duration,
    cause: WaitCause,
    then: AfterWait,
}

#[derive(Debug, Clone, Copy)]
enum AfterWait {
    Resend,
    LookAgain,
}

impl Wait {
    /// How long to wait.
    pub fn duration(&self) -> Duration {
        self.wait
    }

    /// Whose wait it is.
    pub fn cause(&self) -> WaitCause {
        self.cause
    }
}

/// Token of [`Command::Correct`]: the correction's number, from 1.
#[derive(Debug)]
pub struct Correct {
    n: u32,
}

impl Correct {
    /// Which correction of the call this is, from 1.
    pub fn n(&self) -> u32 {
        self.n
    }
}

/// Token of [`Command::LookUp`]: the lookup's number, from 1.
#[derive(Debug)]
pub struct LookUp {
    n: u32,
}

impl LookUp {
    /// Which lookup of this unknown outcome it is, from 1.
    pub fn n(&self) -> u32 {
        self.n
    }
}

/// Token of [`Command::ReadBack`]: what the write answered.
#[derive(Debug)]
pub struct ReadBack {
    answer: WriteAnswer,
}

impl ReadBack {
    /// What the write answered before the read.
    pub fn answer(&self) -> WriteAnswer {
        self.answer
    }
}

/// What a correction came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corrected {
    /// A new payload passed the gate; the next attempt sends it.
    Accepted {
        /// Whether the new payload still has a value a correction may change.
        mutable_inputs: bool,
    },
    /// No acceptable payload.
    CannotFix,
}

/// What the machine made of an answer, for the loop's bookkeeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Assessment {
    /// The endpoint failed transiently (for its circuit breaker).
    pub transient: bool,
    /// The write's outcome is unknown.
    pub unknown: bool,
    /// What the answer says about whether a write ran (for the record).
    pub facts: AnswerFacts,
}

impl Assessment {
    /// Whether a resend after this answer can help and is harmless, as the
    /// record says when the tool did not: transient, and not in doubt.
    pub fn resendable(self) -> bool {
        self.transient && !self.unknown
    }

    /// The `retryable` of the error the call ends with: what the tool said
    /// (`stated`, under `permission`), or — when it said nothing, or never
    /// answered — [`resendable`](Self::resendable), so a call that was
    /// resent does not end reading `retryable: false`.
    pub fn retryable(self, permission: RetryPermission, stated: bool) -> bool {
        match permission {
            RetryPermission::Unspecified => self.resendable(),
            RetryPermission::Allowed | RetryPermission::Refused => stated,
        }
    }
}

/// What the machine made of an answer: its [`Assessment`] and the decision.
#[derive(Debug)]
#[must_use = "the verdict holds the decision"]
pub struct Answered {
    /// For the breaker and the record.
    pub assessment: Assessment,
    /// The decision, or the retry budget to ask first.
    pub verdict: Ruling<Action>,
}

/// A decision, or — when it resends — the retry budget's verdict to get first.
#[derive(Debug)]
#[must_use = "a verdict must be followed"]
pub enum Ruling<A> {
    /// DecisionMade.
    DecisionMade(DecisionMade<A>),
    /// A resend: ask the shared retry budget, and give its answer to
    /// [`AskBudget::answer`].
    AskBudget(AskBudget<A>),
}

/// A decision made; [`CallMachine::follow`] turns it into the next command.
#[derive(Debug)]
#[must_use = "a decision must be followed"]
pub struct DecisionMade<A>(A);

impl<A> DecisionMade<A> {
    /// What was decided.
    pub fn action(&self) -> &A {
        &self.0
    }
}

/// A resend waiting for the retry budget.
#[derive(Debug)]
#[must_use = "the budget's answer decides"]
pub struct AskBudget<A>(A);

impl<A: Resend> AskBudget<A> {
    /// The budget's verdict: granted, the resend stands; refused, the call
    /// stops ([`StopReason::RetryBudgetExhausted`]).
    pub fn answer(self, granted: bool) -> DecisionMade<A> {
        if granted {
            DecisionMade(self.0)
        } else {
            DecisionMade(A::refused())
        }
    }
}

/// A phase's decision type with a resend in it.
pub trait Resend: Sized {
    /// Whether this decision resends.
    fn resends(&self) -> bool;
    /// What the decision becomes when the retry budget refuses the resend.
    fn refused() -> Self;
}

impl Resend for Action {
    fn resends(&self) -> bool {
        matches!(self, Self::RetrySame { .. })
    }

    fn refused() -> Self {
        Self::stop(StopReason::RetryBudgetExhausted)
    }
}

impl AfterLookup {
    /// The action this decision amounts to: succeed, retry the same
    /// payload, reconcile (look again) or stop.
    pub fn kind(&self) -> ActionKind {
        match self {
            Self::Succeed(_) => ActionKind::Succeed,
            Self::Resend => ActionKind::RetrySame,
            Self::LookAgain { .. } => ActionKind::Reconcile,
            Self::Stop(_) => ActionKind::Stop,
        }
    }

    /// The snake-case name used in traces: `succeed`, `retry_same`, `reconcile`, `stop`.
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }
}

impl Resend for AfterLookup {
    fn resends(&self) -> bool {
        matches!(self, Self::Resend)
    }

    fn refused() -> Self {
        Self::Stop(StopReason::RetryBudgetExhausted)
    }
}

/// What follows a verification read after the write answered.
#[must_use]
#[derive(Debug, Clone, PartialEq)]
pub enum AfterRead {
    /// The call succeeded: the effect is there (or, after a success, the
    /// read cannot tell otherwise).
    Succeed(SuccessFrom),
    /// Not committed: one resend with the same key; its success is read back.
    Resend,
    /// Stop, for a reason.
    Stop(StopReason),
}

impl AfterRead {
    /// The action this decision amounts to: succeed, retry the same payload or stop.
    pub fn kind(&self) -> ActionKind {
        match self {
            Self::Succeed(_) => ActionKind::Succeed,
            Self::Resend => ActionKind::RetrySame,
            Self::Stop(_) => ActionKind::Stop,
        }
    }

    /// The snake-case name used in traces: `succeed`, `retry_same`, `stop`.
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }
}

impl Resend for AfterRead {
    fn resends(&self) -> bool {
        matches!(self, Self::Resend)
    }

    fn refused() -> Self {
        Self::Stop(StopReason::RetryBudgetExhausted)
    }
}

/// A phase's decision, carried out: what [`CallMachine::follow`] accepts.
pub trait Phase: Resend {
    /// The next command after this decision.
    #[doc(hidden)]
    fn next(self, machine: &mut CallMachine) -> Command;
}

impl Phase for Action {
    fn next(self, m: &mut CallMachine) -> Command {
        match self {
            Self::Succeed => Command::Finish(Finish::Succeeded(SuccessFrom::Answered)),
            Self::RetrySame { wait, cause } => m.wait(wait, cause, AfterWait::Resend),
            Self::Correct => Command::Correct(Correct {
                n: m.corrections + 1,
            }),
            Self::Reconcile { .. } => m.reconcile(),
            Self::Verify => Command::ReadBack(ReadBack {
                answer: WriteAnswer::Succeeded,
            }),
            Self::Stop { reason } => Command::Finish(Finish::Stopped(reason)),
        }
    }
}

impl Phase for AfterLookup {
    fn next(self, m: &mut CallMachine) -> Command {
        match self {
            Self::Succeed(result) => {
                Command::Finish(Finish::Succeeded(SuccessFrom::Committed(result)))
            }
            Self::Resend => m.resend(),
            Self::LookAgain { wait } => {
                m.wait(wait, WaitCause::PendingLookup, AfterWait::LookAgain)
            }
            Self::Stop(reason) => Command::Finish(Finish::Stopped(reason)),
        }
    }
}

impl Phase for AfterRead {
    fn next(self, m: &mut CallMachine) -> Command {
        match self {
            Self::Succeed(from) => Command::Finish(Finish::Succeeded(from)),
            Self::Resend => {
                m.verify_next_success = true;
                m.resend()
            }
            Self::Stop(reason) => Command::Finish(Finish::Stopped(reason)),
        }
    }
}

impl CallMachine {
    /// A machine for one call, set up with `setup`. Nothing happens until
    /// [`start`](Self::start).
    pub fn new(mut setup: MachineSetup) -> Self {
        let backoff = setup.backoff.take().unwrap_or_else(|| {
            Backoff::full_jitter(Duration::from_secs(1), setup.limits.max_backoff)
        });
        Self {
            policy: Policy::new(setup.limits),
            setup,
            backoff,
            deadline: None,
            attempts: 0,
            retries: 0,
            corrections: 0,
            lookups: 0,
            permission: RetryPermission::Unspecified,
            verify_next_success: false,
            in_doubt: false,
        }
    }

    /// Starts the call at `now` (its deadline counts from here): the read
    /// before the write, when one is declared, else the first attempt.
    pub fn start(&mut self, now: Instant) -> Command {
        self.deadline = self.setup.deadline.and_then(|d| now.checked_add(d));
        match self.setup.lookup {
            Lookup::ReadBack { before: true, .. } => Command::ReadBefore(ReadBefore(())),
            _ => Command::Admit(Admit(())),
        }
    }

    /// The read before the write is done (whatever it found, which the
    /// read after is compared with): the first attempt.
    pub fn read_before(&mut self, _: ReadBefore) -> Command {
        Command::Admit(Admit(()))
    }

    /// Whether the payload, as admitted, has a value a correction may change.
    pub fn set_mutable_inputs(&mut self, mutable: bool) {
        self.setup.mutable_inputs = mutable;
    }

    /// How long a read may take now: the per-attempt timeout, cut to the
    /// time left before the deadline; `None` when no time is left.
    pub fn read_timeout(&self, now: Instant) -> Option<Duration> {
        self.policy
            .attempt_timeout(self.setup.per_attempt, self.remaining(now))
    }

    /// The breaker's verdict on the next attempt. Admitted, the attempt
    /// goes with the time it may take — unless no time is left; refused,
    /// the call stops as [`refused`](Self::refused) says.
    pub fn admitted(&mut self, admit: Admit, admitted: bool, now: Instant) -> Command {
        if !admitted {
            return Command::Finish(self.refused(admit).finish);
        }
        let remaining = self.remaining(now);
        match self
            .policy
            .attempt_timeout(self.setup.per_attempt, remaining)
        {
            None => Command::Finish(Finish::Stopped(StopReason::DeadlineExceeded)),
            Some(timeout) => {
                self.attempts += 1;
                Command::Dispatch(Dispatch {
                    attempt: self.attempts,
                    timeout,
                })
            }
        }
    }

    /// The breaker refused the next attempt: the call stops
    /// ([`StopReason::CircuitOpen`]), nothing dispatched. The error it
    /// carries is the last attempt's, when one answered; otherwise
    /// [`RefusedAdmission::error`] — retryable: the endpoint takes calls
    /// again once its breaker lets a probe through.
    pub fn refused(&mut self, _: Admit) -> RefusedAdmission {
        RefusedAdmission {
            finish: Finish::Stopped(StopReason::CircuitOpen),
            error: ToolError::service_error("CIRCUIT_OPEN", "circuit breaker open; not dispatched")
                .retryable(true),
        }
    }

    /// The journal could not record the call or the attempt about to be
    /// sent: nothing is dispatched.
    pub fn journal_failed(&mut self) -> Finish {
        Finish::Stopped(StopReason::JournalUnavailable)
    }

    /// The call was cancelled: `unknown` when a write's outcome is in
    /// doubt, cancelled otherwise.
    pub fn cancelled(&mut self) -> Finish {
        if self.in_doubt {
            Finish::Stopped(StopReason::OutcomeUnknown)
        } else {
            Finish::Stopped(StopReason::Cancelled)
        }
    }

    /// What the attempt brought back, at `now`: the rules of the policy decide.
    pub fn answered(
        &mut self,
        _: Dispatch,
        observation: Observation<'_>,
        now: Instant,
    ) -> Answered {
        let facts = AnswerFacts::of(observation);
        let unknown = facts.leaves_outcome_unknown(self.setup.traits);
        self.in_doubt = unknown;
        self.permission = match observation {
            Observation::Response(r) => r.permission,
            Observation::Transport(_) => RetryPermission::Unspecified,
        };
        let action = match Policy::on_success(observation, self.verify_success()) {
            Some(action) => action,
            None => {
                let situation = self.situation(now);
                self.policy.decide(observation, &situation)
            }
        };
        Answered {
            assessment: Assessment {
                transient: is_transient_observation(observation),
                unknown,
                facts,
            },
            verdict: verdict(action),
        }
    }

    /// Carries a decision out: the next command.
    pub fn follow<A: Phase>(&mut self, decided: DecisionMade<A>) -> Command {
        decided.0.next(self)
    }

    /// The wait is over.
    pub fn waited(&mut self, wait: Wait) -> Command {
        match wait.then {
            AfterWait::Resend => self.resend(),
            AfterWait::LookAgain => Command::LookUp(LookUp {
                n: self.lookups + 1,
            }),
        }
    }

    /// What the correction came to: the next attempt sends the new payload.
    pub fn corrected(&mut self, _: Correct, corrected: Corrected) -> Command {
        self.corrections += 1;
        match corrected {
            Corrected::Accepted { mutable_inputs } => {
                self.setup.mutable_inputs = mutable_inputs;
                Command::Admit(Admit(()))
            }
            Corrected::CannotFix => Command::Finish(Finish::Stopped(StopReason::CannotFix)),
        }
    }

    /// What a lookup found, at `now`.
    pub fn looked_up(
        &mut self,
        _: LookUp,
        found: Reconciliation,
        now: Instant,
    ) -> Ruling<AfterLookup> {
        self.lookups += 1;
        let situation = self.situation(now);
        let after = self.policy.after_lookup(found, self.permission, &situation);
        if !matches!(after, AfterLookup::LookAgain { .. } | AfterLookup::Stop(_)) {
            self.in_doubt = false;
        }
        verdict(after)
    }

    /// What the verification read found after the write: `before` is the
    /// read before the write when it asked the same as this one.
    pub fn read_back(
        &mut self,
        read: ReadBack,
        before: Option<VerifyResult>,
        after: VerifyResult,
        now: Instant,
    ) -> Ruling<AfterRead> {
        self.lookups += 1;
        let situation = self.situation(now);
        let decided = self
            .policy
            .after_verification(before, after, read.answer, &situation);
        if matches!(decided, AfterRead::Succeed(_) | AfterRead::Resend) {
            self.in_doubt = false;
        }
        verdict(decided)
    }

    /// Same-payload resends made so far.
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// Lookups (and reads after the write) of the current unknown outcome made so far.
    pub fn lookups(&self) -> u32 {
        self.lookups
    }

    fn remaining(&self, now: Instant) -> Option<Duration> {
        self.deadline
            .map(|deadline| deadline.saturating_duration_since(now))
    }

    /// Whether the next success is read back: the call reads its successes
    /// back, or this attempt resent a write a read found not committed.
    fn verify_success(&self) -> bool {
        self.verify_next_success
            || matches!(self.setup.lookup, Lookup::ReadBack { always: true, .. })
    }

    fn situation(&mut self, now: Instant) -> Situation {
        Situation {
            traits: self.setup.traits,
            retries_used: self.retries,
            corrections_used: self.corrections,
            lookups_used: self.lookups,
            backoff: self.backoff.next().unwrap_or_default(),
            remaining: self.remaining(now),
            corrector_available: self.setup.corrector,
            reconciler_available: self.setup.lookup != Lookup::None,
            verify_success: self.verify_success(),
            has_mutable_inputs: self.setup.mutable_inputs,
        }
    }

    fn wait(&mut self, wait: Duration, cause: WaitCause, then: AfterWait) -> Command {
        Command::Wait(Wait { wait, cause, then })
    }

    fn resend(&mut self) -> Command {
        self.retries += 1;
        Command::Admit(Admit(()))
    }

    /// Rule 3: look the write up, by the lookup the call has.
    fn reconcile(&mut self) -> Command {
        self.lookups = 0;
        match self.setup.lookup {
            Lookup::None => Command::Finish(Finish::Stopped(StopReason::OutcomeUnknown)),
            Lookup::Operation => Command::LookUp(LookUp { n: 1 }),
            Lookup::ReadBack { .. } => Command::ReadBack(ReadBack {
                answer: WriteAnswer::Unknown {
                    permission: self.permission,
                },
            }),
        }
    }
}

/// The machine as a settler drives it: a journaled call whose outcome is
/// open — in flight after its process died, or unknown — settled by its
/// lookup or its read, never by a resend (a settler never writes: a write
/// found not committed ends failed).
///
/// ```
/// use std::time::{Duration, Instant};
/// use recourse_core::policy::{Limits, Traits};
/// use recourse_core::reconcile::Reconciliation;
/// use recourse_core::machine::{Finish, Lookup, Settle, SettleCommand, MachineSetup, SuccessFrom};
///
/// let setup = MachineSetup::new(Limits::default(), Traits { idempotent: false, delegated: false }, Duration::from_secs(10))
///     .with_lookup(Lookup::Operation);
/// let mut settle = Settle::new(setup, true);
/// let now = Instant::now();
/// let SettleCommand::LookUp(lookup) = settle.start(now) else { unreachable!() };
/// let SettleCommand::Wait(wait) = settle.looked_up(lookup, Reconciliation::Pending { wait: Some(Duration::from_millis(300)) }, now) else { unreachable!() };
/// assert_eq!(wait.duration(), Duration::from_millis(300));
/// let SettleCommand::LookUp(again) = settle.waited(wait) else { unreachable!() };
/// let done = settle.looked_up(again, Reconciliation::NotCommitted, now);
/// assert!(matches!(done, SettleCommand::Finish(Finish::Stopped(r)) if !r.leaves_outcome_unknown()));
/// ```
#[derive(Debug)]
pub struct Settle {
    machine: CallMachine,
    dispatched: bool,
}

/// What a settler does next.
#[must_use = "a command is what the settler does next"]
#[derive(Debug)]
pub enum SettleCommand {
    /// Look the write's outcome up.
    LookUp(LookUp),
    /// Read the write's effect back.
    ReadBack(ReadBack),
    /// Wait before the next lookup.
    Wait(Wait),
    /// Settled (or left unknown).
    Finish(Finish),
}

impl Settle {
    /// Settles a call set up as `setup` (its deadline bounds the whole
    /// settling); `dispatched` is whether any attempt of it was recorded.
    pub fn new(setup: MachineSetup, dispatched: bool) -> Self {
        Self {
            machine: CallMachine::new(setup),
            dispatched,
        }
    }

    /// Starts at `now`: a call never dispatched wrote nothing (failed);
    /// otherwise its lookup or read.
    pub fn start(&mut self, now: Instant) -> SettleCommand {
        if !self.dispatched {
            return SettleCommand::Finish(Finish::Stopped(StopReason::NotCommitted));
        }
        let _ = self.machine.start(now);
        self.machine.in_doubt = true;
        let first = self.machine.reconcile();
        Self::settle(first)
    }

    /// What the lookup found, at `now`.
    pub fn looked_up(
        &mut self,
        lookup: LookUp,
        found: Reconciliation,
        now: Instant,
    ) -> SettleCommand {
        match self.machine.looked_up(lookup, found, now) {
            Ruling::DecisionMade(decided) => Self::settle(self.machine.follow(decided)),
            Ruling::AskBudget(_) => Self::never_resent(),
        }
    }

    /// What the read found, at `now` (no read ran before the write).
    pub fn read_back(
        &mut self,
        read: ReadBack,
        after: VerifyResult,
        now: Instant,
    ) -> SettleCommand {
        match self.machine.read_back(read, None, after, now) {
            Ruling::DecisionMade(decided) => Self::settle(self.machine.follow(decided)),
            Ruling::AskBudget(_) => Self::never_resent(),
        }
    }

    /// The wait is over: the next lookup.
    pub fn waited(&mut self, wait: Wait) -> SettleCommand {
        Self::settle(self.machine.waited(wait))
    }

    /// A write found not committed, which a call would resend: settled failed.
    fn never_resent() -> SettleCommand {
        SettleCommand::Finish(Finish::Stopped(StopReason::NotCommitted))
    }

    /// A command of the lookup phase. The others are what follows a
    /// resend, which a settler never makes: the outcome stays unknown.
    fn settle(command: Command) -> SettleCommand {
        match command {
            Command::LookUp(lookup) => SettleCommand::LookUp(lookup),
            Command::ReadBack(read) => SettleCommand::ReadBack(read),
            Command::Wait(wait) => SettleCommand::Wait(wait),
            Command::Finish(finish) => SettleCommand::Finish(finish),
            Command::ReadBefore(_)
            | Command::Admit(_)
            | Command::Dispatch(_)
            | Command::Correct(_) => {
                SettleCommand::Finish(Finish::Stopped(StopReason::OutcomeUnknown))
            }
        }
    }
}

fn verdict<A: Resend>(action: A) -> Ruling<A> {
    if action.resends() {
        Ruling::AskBudget(AskBudget(action))
    } else {
        Ruling::DecisionMade(DecisionMade(action))
    }
}

#[cfg(test)]
mod tests;
