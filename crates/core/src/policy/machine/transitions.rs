//! How the machine moves: what follows each phase (`Resend`, `Phase`,
//! `AfterRead`), and [`CallMachine`]'s transitions from one command to the next.

use super::*;

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
    pub(super) fn reconcile(&mut self) -> Command {
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

fn verdict<A: Resend>(action: A) -> Ruling<A> {
    if action.resends() {
        Ruling::AskBudget(AskBudget(action))
    } else {
        Ruling::DecisionMade(DecisionMade(action))
    }
}
