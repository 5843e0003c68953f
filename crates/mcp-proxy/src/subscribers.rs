//! [`Subscriptions`]: which clients asked for updates of which resource
//! (a session by its number, a listen stream by its), and where each is
//! told. What the proxy does with them is in `subscriptions`.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use rmcp::service::{Peer, RoleServer, SubscriptionSink};

/// Which client asked: a session by its number, or a listen stream by its.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Subscriber {
    Session(u64),
    Stream(u64),
}

/// Where a subscriber is told.
#[derive(Clone)]
pub(crate) enum Told {
    Session(Peer<RoleServer>),
    Stream(SubscriptionSink),
}

/// The clients subscribed to each resource.
#[derive(Default)]
pub(crate) struct Subscriptions {
    by_uri: Mutex<HashMap<String, Vec<(Subscriber, Told)>>>,
    /// Held while the upstream is subscribed or unsubscribed, so that a
    /// first subscriber and a last one leaving do not cross.
    upstream: tokio::sync::Mutex<()>,
}

impl Subscriptions {
    /// Held while the upstream is subscribed or unsubscribed.
    pub(crate) fn upstream(&self) -> &tokio::sync::Mutex<()> {
        &self.upstream
    }

    /// `uri`'s subscribers now.
    pub(crate) fn of(&self, uri: &str) -> Vec<(Subscriber, Told)> {
        self.lock().get(uri).cloned().unwrap_or_default()
    }

    /// Subscribes `who` to `uri` (once however often it asks).
    pub(crate) fn add(&self, uri: String, who: Subscriber, told: Told) {
        let mut by_uri = self.lock();
        let subscribers = by_uri.entry(uri).or_default();
        if !subscribers.iter().any(|(s, _)| *s == who) {
            subscribers.push((who, told));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<(Subscriber, Told)>>> {
        self.by_uri.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn is_watched(&self, uri: &str) -> bool {
        self.lock().get(uri).is_some_and(|s| !s.is_empty())
    }

    /// Forgets `who`'s subscription to `uri`; whether no one is left.
    pub(crate) fn remove(&self, uri: &str, who: Subscriber) -> bool {
        let mut by_uri = self.lock();
        let Some(subscribers) = by_uri.get_mut(uri) else {
            return false;
        };
        subscribers.retain(|(s, _)| *s != who);
        let none_left = subscribers.is_empty();
        if none_left {
            by_uri.remove(uri);
        }
        none_left
    }
}
