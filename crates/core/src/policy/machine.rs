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
pub use settle::{Settle, SettleCommand};
pub use transitions::{AfterRead, Phase, Resend};

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

mod settle;
#[cfg(test)]
mod tests;
mod transitions;
