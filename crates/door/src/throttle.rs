//! Failed authentication, counted per peer: a peer whose tokens fail
//! [`LIMIT`] times within a [`WINDOW`] is refused (429 with `Retry-After`)
//! until that window ends, so guessing a token costs time. Time is handed
//! in, so the rule is a pure function of the failures and the clock.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use recourse_door::throttle::{FailedLogins, LIMIT, WINDOW};
//!
//! let mut failed = FailedLogins::default();
//! let peer = "192.0.2.7".parse().unwrap();
//! let start = Instant::now();
//! for _ in 0..LIMIT {
//!     assert_eq!(failed.refused_for(peer, start), None);
//!     failed.failed(peer, start);
//! }
//! assert_eq!(failed.refused_for(peer, start + Duration::from_secs(1)), Some(WINDOW - Duration::from_secs(1)));
//! assert_eq!(failed.refused_for(peer, start + WINDOW), None);
//! ```
//!
//! Memory is bounded: at most [`MAX_PEERS`] peers are remembered; past it,
//! windows that ended are forgotten first, and then the new peer's
//! failures are counted together with every other unremembered peer's —
//! so a flood of addresses slows itself, never the peers already known.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// How many failures within a window refuse a peer.
pub const LIMIT: u32 = 10;
/// How long failures are counted, and a peer refused, from its first failure.
pub const WINDOW: Duration = Duration::from_secs(60);
/// How many peers are remembered at once.
pub const MAX_PEERS: usize = 4096;

/// One peer's failures in its current window.
#[derive(Debug, Clone, Copy)]
struct Window {
    started: Instant,
    failures: u32,
}

impl Window {
    fn is_over(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.started) >= WINDOW
    }
}

/// Failed authentications by peer, and the peers refused for them.
#[derive(Debug, Default)]
pub struct FailedLogins {
    peers: HashMap<IpAddr, Window>,
    /// The failures of peers not remembered (the table was full).
    others: Option<Window>,
}

impl FailedLogins {
    /// How long `peer` is still refused at `now`, if it is.
    pub fn refused_for(&self, peer: IpAddr, now: Instant) -> Option<Duration> {
        let window = self.peers.get(&peer).or(self.others.as_ref())?;
        if window.failures < LIMIT || window.is_over(now) {
            return None;
        }
        Some(WINDOW - now.saturating_duration_since(window.started))
    }

    /// Counts a failed authentication of `peer` at `now`.
    pub fn failed(&mut self, peer: IpAddr, now: Instant) {
        if !self.peers.contains_key(&peer) && self.peers.len() >= MAX_PEERS {
            self.peers.retain(|_, w| !w.is_over(now));
        }
        let slot = if self.peers.len() < MAX_PEERS || self.peers.contains_key(&peer) {
            self.peers.entry(peer).or_insert(Window {
                started: now,
                failures: 0,
            })
        } else {
            self.others.get_or_insert(Window {
                started: now,
                failures: 0,
            })
        };
        if slot.is_over(now) {
            *slot = Window {
                started: now,
                failures: 0,
            };
        }
        slot.failures = slot.failures.saturating_add(1);
    }

    /// How many peers are remembered.
    pub fn len(&self) -> usize {
        self.peers.len()
    }

    /// Whether no peer is remembered.
    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(n: u32) -> IpAddr {
        IpAddr::from(n.to_be_bytes())
    }

    #[test]
    fn a_peer_is_refused_from_its_limit_until_its_window_ends() {
        let mut failed = FailedLogins::default();
        let t0 = Instant::now();
        for i in 0..LIMIT {
            assert_eq!(failed.refused_for(peer(1), t0), None, "failure {i}");
            failed.failed(peer(1), t0 + Duration::from_secs(u64::from(i)));
        }
        let at = t0 + Duration::from_secs(20);
        assert_eq!(
            failed.refused_for(peer(1), at),
            Some(Duration::from_secs(40))
        );
        // Another peer is not refused for it.
        assert_eq!(failed.refused_for(peer(2), at), None);
        // The window over, the count starts again.
        assert_eq!(failed.refused_for(peer(1), t0 + WINDOW), None);
        failed.failed(peer(1), t0 + WINDOW);
        assert_eq!(failed.refused_for(peer(1), t0 + WINDOW), None);
    }

    #[test]
    fn failures_spread_over_windows_never_refuse() {
        let mut failed = FailedLogins::default();
        let mut now = Instant::now();
        for _ in 0..100 {
            for _ in 0..LIMIT - 1 {
                failed.failed(peer(1), now);
            }
            assert_eq!(failed.refused_for(peer(1), now), None);
            now += WINDOW;
        }
    }

    #[test]
    fn a_flood_of_peers_is_bounded_and_slows_only_itself() {
        let mut failed = FailedLogins::default();
        let now = Instant::now();
        for _ in 0..LIMIT {
            failed.failed(peer(0), now);
        }
        for n in 1..=(MAX_PEERS as u32 * 2) {
            failed.failed(peer(n), now);
        }
        assert_eq!(failed.len(), MAX_PEERS);
        // The peers past the table are counted together, and refused together.
        assert!(failed.refused_for(peer(u32::MAX), now).is_some());
        // The peer known first keeps its own count.
        assert!(failed.refused_for(peer(0), now).is_some());
        // Once their windows are over, room is made for new peers.
        let later = now + WINDOW;
        failed.failed(peer(u32::MAX - 1), later);
        assert_eq!(failed.len(), 1);
    }
}
