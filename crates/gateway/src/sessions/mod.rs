//! The console's sessions: who is logged in, in memory, each under a random
//! id, for a bounded time, and a bounded number of them. The gateway holds
//! the table (a session outlives the request that made it); the console's
//! pages log in, look up and log out through it.
//!
//! An id is known to the browser alone: the table is keyed by its SHA-256,
//! so neither a look-up's timing nor the table itself gives an id away. A
//! session ends when it has been idle for [`IDLE`], when it is [`LIFETIME`]
//! old, on logout, or when the gateway stops. The table holds at most
//! [`MAX_SESSIONS`], [`PER_CALLER`] per caller: a caller logging in once
//! more ends its own oldest session, never another caller's, and a full
//! table refuses a login rather than log someone out.
//!
//! A gateway without a token has no logins: every visitor is caller
//! `default`. Its visitors' sessions are kept nowhere — a session id is a
//! random token in the visitor's cookie, and its forms' token is derived
//! from it under a key of this gateway's ([`Sessions::anonymous`]) — so
//! no number of anonymous page loads can end another visitor's session.

mod secret;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

pub(crate) use secret::{NoRandomness, random_token, same};

use recourse_door::Caller;

/// A session unused this long has ended.
pub(crate) const IDLE: Duration = Duration::from_secs(30 * 60);
/// A session this old has ended, however busy.
pub(crate) const LIFETIME: Duration = Duration::from_secs(8 * 60 * 60);
/// The most sessions the gateway keeps.
const MAX_SESSIONS: usize = 1024;
/// The most sessions one caller keeps.
const PER_CALLER: usize = 16;

/// The console's sessions (one table per gateway).
#[derive(Debug)]
pub(crate) struct Sessions {
    by_key: Mutex<HashMap<[u8; 32], Session>>,
    max: usize,
    per_caller: usize,
    /// What anonymous visitors' form tokens are derived under; `None` when
    /// no randomness could be had (then no anonymous session is made).
    anonymous_key: Option<String>,
}

#[derive(Debug)]
struct Session {
    caller: Arc<Caller>,
    csrf: String,
    created: Instant,
    seen: Instant,
}

impl Session {
    fn has_ended(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.created) >= LIFETIME
            || now.saturating_duration_since(self.seen) >= IDLE
    }
}

/// A session just made: the id for the cookie and its CSRF token.
#[derive(Debug)]
pub(crate) struct Created {
    pub(crate) id: String,
    pub(crate) csrf: String,
}

/// An anonymous visitor's session ([`Sessions::anonymous`]).
#[derive(Debug)]
pub(crate) struct Anonymous {
    pub(crate) id: String,
    pub(crate) csrf: String,
    /// Made for this request: its cookie is to be set.
    pub(crate) fresh: bool,
}

/// A live session: whose it is, and the token its forms carry.
#[derive(Debug, Clone)]
pub(crate) struct Opened {
    pub(crate) caller: Arc<Caller>,
    pub(crate) csrf: String,
}

/// Why no session was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// No random id could be made.
    NoRandomness,
    /// The table is full of live sessions.
    Full,
}

impl From<NoRandomness> for Refused {
    fn from(_: NoRandomness) -> Self {
        Self::NoRandomness
    }
}

impl Default for Sessions {
    fn default() -> Self {
        Self::with_limits(MAX_SESSIONS, PER_CALLER)
    }
}

impl Sessions {
    /// A table of at most `max` sessions, `per_caller` for each caller.
    pub(crate) fn with_limits(max: usize, per_caller: usize) -> Self {
        Self {
            by_key: Mutex::default(),
            max: max.max(1),
            per_caller: per_caller.max(1),
            anonymous_key: random_token().ok(),
        }
    }

    /// The session of an anonymous visitor (a gateway without a token)
    /// whose cookie gave `id`, if it is one such a session could have: its
    /// id, its forms' token, and whether it was made now (a cookie to set).
    /// Nothing is stored: the forms' token is the SHA-256 of this gateway's
    /// key and the id.
    pub(crate) fn anonymous<'a>(
        &self,
        ids: impl IntoIterator<Item = &'a str>,
    ) -> Result<Anonymous, Refused> {
        let key = self.anonymous_key.as_deref().ok_or(Refused::NoRandomness)?;
        let (id, fresh) = match ids.into_iter().find(|id| is_token(id)) {
            Some(id) => (id.to_owned(), false),
            None => (random_token()?, true),
        };
        let mut hasher = Sha256::new();
        hasher.update(key.as_bytes());
        hasher.update(b":");
        hasher.update(id.as_bytes());
        let csrf = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(Anonymous { id, csrf, fresh })
    }

    /// A new session for `caller`, under a new id.
    pub(crate) fn create(&self, caller: Arc<Caller>, now: Instant) -> Result<Created, Refused> {
        let created = Created {
            id: random_token()?,
            csrf: random_token()?,
        };
        let mut table = self.lock();
        table.retain(|_, s| !s.has_ended(now));
        let theirs = table
            .iter()
            .filter(|(_, s)| s.caller.name() == caller.name());
        if theirs.clone().count() >= self.per_caller
            && let Some(oldest) = theirs.min_by_key(|(_, s)| s.created).map(|(k, _)| *k)
        {
            table.remove(&oldest);
        }
        if table.len() >= self.max {
            return Err(Refused::Full);
        }
        let session = Session {
            caller,
            csrf: created.csrf.clone(),
            created: now,
            seen: now,
        };
        table.insert(key(&created.id), session);
        Ok(created)
    }

    /// The live session under `id`, marked as used now; `None` for an id
    /// that is unknown or whose session has ended.
    pub(crate) fn open(&self, id: &str, now: Instant) -> Option<Opened> {
        let key = key(id);
        let mut table = self.lock();
        let session = table.get_mut(&key)?;
        if session.has_ended(now) {
            table.remove(&key);
            return None;
        }
        session.seen = now;
        Some(Opened {
            caller: Arc::clone(&session.caller),
            csrf: session.csrf.clone(),
        })
    }

    /// Ends the session under `id`, if there is one.
    pub(crate) fn close(&self, id: &str) {
        self.lock().remove(&key(id));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Session>> {
        self.by_key.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether `id` is what [`random_token`] makes: 64 lowercase hex digits.
fn is_token(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn key(id: &str) -> [u8; 32] {
    Sha256::digest(id.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use recourse_door::Callers;

    fn caller(name: &str) -> Arc<Caller> {
        let token = format!("{name}-token-0123456789");
        Callers::parse(&format!(
            r#"{{"callers": [{{"name": "{name}", "token": "{token}"}}]}}"#
        ))
        .unwrap()
        .identify(&token)
        .unwrap()
    }

    #[test]
    fn an_anonymous_session_is_kept_nowhere_and_its_token_is_its_own() {
        let sessions = Sessions::default();
        let first = sessions.anonymous([]).unwrap();
        assert!(first.fresh && is_token(&first.id));
        // A thousand other visitors later, the same id has the same token.
        for _ in 0..1000 {
            assert!(sessions.anonymous(["not-a-session"]).unwrap().fresh);
        }
        let again = sessions.anonymous([first.id.as_str()]).unwrap();
        assert!(!again.fresh);
        assert_eq!(again.csrf, first.csrf);
        assert!(sessions.lock().is_empty(), "nothing stored");
        // Another gateway's key gives another token for the same id.
        let other = Sessions::default().anonymous([first.id.as_str()]).unwrap();
        assert_ne!(other.csrf, first.csrf);
    }

    #[test]
    fn a_session_is_found_by_its_id_only() {
        let sessions = Sessions::default();
        let now = Instant::now();
        let made = sessions.create(caller("ops"), now).unwrap();
        assert_ne!(made.id, made.csrf);
        let opened = sessions.open(&made.id, now).unwrap();
        assert_eq!(opened.caller.name(), "ops");
        assert_eq!(opened.csrf, made.csrf);
        assert!(
            sessions.open(&made.csrf, now).is_none(),
            "the CSRF token is no id"
        );
        assert!(sessions.open("", now).is_none());
        assert!(sessions.open(&made.id[..63], now).is_none());
        sessions.close(&made.id);
        assert!(sessions.open(&made.id, now).is_none(), "logged out");
    }

    #[test]
    fn a_session_ends_when_idle_and_when_old() {
        let sessions = Sessions::default();
        let start = Instant::now();
        let idle = sessions.create(caller("a"), start).unwrap();
        assert!(sessions.open(&idle.id, start + IDLE / 2).is_some());
        assert!(
            sessions.open(&idle.id, start + IDLE).is_some(),
            "used at IDLE/2"
        );
        assert!(sessions.open(&idle.id, start + IDLE * 5 / 2).is_none());

        let busy = sessions.create(caller("b"), start).unwrap();
        let mut now = start;
        while now < start + LIFETIME - IDLE / 2 {
            now += IDLE / 2;
            assert!(sessions.open(&busy.id, now).is_some());
        }
        assert!(sessions.open(&busy.id, start + LIFETIME).is_none());
    }

    #[test]
    fn a_caller_over_its_share_loses_its_oldest_session_only() {
        let sessions = Sessions::with_limits(4, 2);
        let now = Instant::now();
        let other = sessions.create(caller("other"), now).unwrap();
        let first = sessions.create(caller("ops"), now).unwrap();
        let second = sessions
            .create(caller("ops"), now + Duration::from_secs(1))
            .unwrap();
        let third = sessions
            .create(caller("ops"), now + Duration::from_secs(2))
            .unwrap();
        let later = now + Duration::from_secs(3);
        assert!(sessions.open(&first.id, later).is_none(), "the oldest went");
        assert!(sessions.open(&second.id, later).is_some());
        assert!(sessions.open(&third.id, later).is_some());
        assert!(sessions.open(&other.id, later).is_some(), "never another's");
    }

    #[test]
    fn a_full_table_refuses_until_a_session_ends() {
        let sessions = Sessions::with_limits(2, 2);
        let now = Instant::now();
        sessions.create(caller("a"), now).unwrap();
        sessions.create(caller("b"), now).unwrap();
        assert_eq!(
            sessions.create(caller("c"), now).unwrap_err(),
            Refused::Full
        );
        assert!(
            sessions.create(caller("c"), now + IDLE).is_ok(),
            "ended ones go"
        );
    }
}
