//! How many calls a journal holds, by state: its size as one viewer sees it.

use serde::Serialize;
use strum::IntoEnumIterator;

use crate::record::CallState;

/// How many calls a journal holds in each state ([`Journal::count`](super::Journal::count)).
///
/// ```
/// use recourse_core::journal::{CallState, StateCounts};
/// use strum::VariantNames;
///
/// let mut counts = StateCounts::default();
/// counts.add_stored("unknown", 2);
/// counts.add_stored("succeeded", 40);
/// counts.add_stored("a_state_of_a_newer_build", 1);
/// assert_eq!(counts.get(CallState::Unknown), 2);
/// assert_eq!(counts.get(CallState::Failed), 0);
/// assert_eq!(counts.other(), 1);
/// assert_eq!(counts.total(), 43);
/// assert_eq!(counts.by_state().count(), CallState::VARIANTS.len(), "every state, zeros too");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StateCounts {
    /// One count per state, in [`CallState`]'s order.
    counts: Vec<(CallState, u64)>,
    /// Calls in a state this build does not know (a newer process shares the journal).
    other: u64,
}

impl StateCounts {
    /// Adds `n` calls in `state`.
    pub fn add(&mut self, state: CallState, n: u64) {
        match self.counts.iter_mut().find(|(s, _)| *s == state) {
            Some((_, count)) => *count += n,
            None => self.counts.push((state, n)),
        }
    }

    /// Adds `n` calls in the state stored as `name`; a name this build does
    /// not know counts as [`other`](Self::other).
    pub fn add_stored(&mut self, name: &str, n: u64) {
        match CallState::parse(name) {
            Some(state) => self.add(state, n),
            None => self.other += n,
        }
    }

    /// How many calls are in `state`.
    pub fn get(&self, state: CallState) -> u64 {
        self.counts
            .iter()
            .find(|(s, _)| *s == state)
            .map_or(0, |(_, n)| *n)
    }

    /// Every state this build knows and its count (zero included), in
    /// [`CallState`]'s order.
    pub fn by_state(&self) -> impl Iterator<Item = (CallState, u64)> + '_ {
        CallState::iter().map(|state| (state, self.get(state)))
    }

    /// Calls in a state this build does not know.
    pub fn other(&self) -> u64 {
        self.other
    }

    /// Every call counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|(_, n)| n).sum::<u64>() + self.other
    }
}
