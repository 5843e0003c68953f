//! The machine as a settler drives it ([`Settle`]): lookups, reads and
//! waits only, never a resend.

use super::*;

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
