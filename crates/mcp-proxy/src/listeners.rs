//! [`Listeners`]: the clients the proxy tells when a list changes, each as
//! its protocol version wants to be told.
//!
//! # Why two kinds of listener
//!
//! Up to 2025-11-25 a server may send `notifications/tools/list_changed`
//! to any client whose session is open, so every such session is a
//! listener from its `notifications/initialized` on. 2026-07-28 has no
//! session to send on: a client that wants list changes opens a
//! `subscriptions/listen` request, the server acknowledges what it will
//! send, and sends it on that request's stream, marked with its id, until
//! the client cancels it. So each open stream is a listener, for the lists
//! its acknowledgment names. A listener whose session or stream ended is
//! forgotten the next time it would be told (or a session joins).

use std::sync::{Mutex, PoisonError};

use recourse_mcp::ListChange;
use rmcp::service::{Peer, RoleServer, SubscriptionSendError, SubscriptionSink};

/// The clients to tell when a list changes.
#[derive(Default)]
pub(crate) struct Listeners {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Each listener, by a number of its own.
    listening: Vec<(u64, Listener)>,
    next: u64,
}

/// One client to tell.
#[derive(Clone)]
enum Listener {
    /// A session of a protocol version up to 2025-11-25.
    Session(Peer<RoleServer>),
    /// A 2026-07-28 `subscriptions/listen` stream.
    Stream(SubscriptionSink),
}

/// A listener's session or stream ended: it is forgotten.
struct Gone;

impl Listener {
    async fn tell(&self, change: ListChange) -> Result<(), Gone> {
        match self {
            Self::Session(peer) => {
                let sent = match change {
                    ListChange::Tools => peer.notify_tool_list_changed().await,
                    ListChange::Resources => peer.notify_resource_list_changed().await,
                    ListChange::Prompts => peer.notify_prompt_list_changed().await,
                    _ => Ok(()),
                };
                sent.map_err(|_| Gone)
            }
            Self::Stream(sink) => {
                let sent = match change {
                    ListChange::Tools => sink.notify_tool_list_changed().await,
                    ListChange::Resources => sink.notify_resource_list_changed().await,
                    ListChange::Prompts => sink.notify_prompt_list_changed().await,
                    _ => Ok(()),
                };
                match sent {
                    // The client did not ask for this list's changes.
                    Ok(()) | Err(SubscriptionSendError::NotificationNotAccepted(_)) => Ok(()),
                    Err(_) => Err(Gone),
                }
            }
        }
    }

    fn is_gone(&self) -> bool {
        match self {
            Self::Session(peer) => peer.is_transport_closed(),
            Self::Stream(_) => false,
        }
    }
}

impl Listeners {
    /// Tells the session of `peer` (a protocol version up to 2025-11-25) of
    /// every change from now on.
    pub(crate) fn add_session(&self, peer: Peer<RoleServer>) {
        let mut inner = self.lock();
        inner.listening.retain(|(_, l)| !l.is_gone());
        inner.add(Listener::Session(peer));
    }

    /// Tells the `subscriptions/listen` stream of `sink` of the changes it
    /// accepted, until [`remove`](Self::remove)d with the number returned.
    pub(crate) fn add_stream(&self, sink: SubscriptionSink) -> u64 {
        self.lock().add(Listener::Stream(sink))
    }

    /// Forgets listener `number`.
    pub(crate) fn remove(&self, number: u64) {
        self.lock().listening.retain(|(n, _)| *n != number);
    }

    /// Tells every listener of `change`.
    pub(crate) async fn tell(&self, change: ListChange) {
        // Told outside the lock: a slow client holds no one else.
        let listening = self.lock().listening.clone();
        for (number, listener) in listening {
            if listener.tell(change).await.is_err() {
                self.remove(number);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Inner {
    fn add(&mut self, listener: Listener) -> u64 {
        self.next += 1;
        self.listening.push((self.next, listener));
        self.next
    }
}
