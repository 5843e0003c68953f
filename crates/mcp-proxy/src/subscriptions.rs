//! Resource subscriptions through the proxy, in front of one upstream that
//! offers them: [`Subscriptions`] knows which clients asked for updates of
//! which resource, and the upstream is subscribed to a resource while at
//! least one client is.
//!
//! # Who is a subscriber
//!
//! Up to 2025-11-25 a client session subscribes with `resources/subscribe`
//! and is told on its session; from 2026-07-28 a client names the resources
//! in the filter of a `subscriptions/listen` stream and is told on that
//! stream, until it cancels it. Either way the proxy subscribes the upstream
//! (`resources/subscribe` on the upstream's session, kept across its
//! restarts by the transport) when the first client asks for a resource,
//! and unsubscribes it when the last one stops asking — or is found gone
//! the next time an update comes. An update is told only to the clients
//! that asked for that resource: another caller's resources are not
//! another caller's business.

use std::sync::{Arc, Weak};

use rmcp::model::{ErrorData, ResourceUpdatedNotificationParam};
use rmcp::service::{Peer, RoleServer, SubscriptionSink};
use tokio::sync::broadcast::{Receiver, error::RecvError};

use crate::proxy::{McpProxy, Shared};
use crate::server::passed_on;
use crate::subscribers::{Subscriber, Told};

impl McpProxy {
    /// Subscribes the session `peer` to `uri` (`resources/subscribe`).
    pub(crate) async fn subscribe_session(
        &self,
        uri: String,
        peer: Peer<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscribe(uri, Subscriber::Session(self.session), Told::Session(peer))
            .await
    }

    /// Ends the session's subscription to `uri` (`resources/unsubscribe`).
    pub(crate) async fn unsubscribe_session(&self, uri: &str) -> Result<(), ErrorData> {
        self.unsubscribe(uri, Subscriber::Session(self.session))
            .await
    }

    /// Subscribes listen stream `number` to every resource in `uris`; a
    /// resource the upstream refuses is warned of and left out.
    pub(crate) async fn subscribe_stream(
        &self,
        number: u64,
        sink: &SubscriptionSink,
        uris: &[String],
    ) {
        for uri in uris {
            let told = Told::Stream(sink.clone());
            if let Err(e) = self
                .subscribe(uri.clone(), Subscriber::Stream(number), told)
                .await
            {
                (self.shared.warn)(format!(
                    "a listen stream asked for updates of {uri}, which the upstream refused: {}",
                    e.message
                ));
            }
        }
    }

    /// Ends every subscription of listen stream `number`.
    pub(crate) async fn unsubscribe_stream(&self, number: u64, uris: &[String]) {
        for uri in uris {
            let _ = self.unsubscribe(uri, Subscriber::Stream(number)).await;
        }
    }

    async fn subscribe(&self, uri: String, who: Subscriber, told: Told) -> Result<(), ErrorData> {
        let shared = &self.shared;
        let subscriptions = &shared.subscriptions;
        let _upstream = subscriptions.upstream().lock().await;
        if !subscriptions.is_watched(&uri) {
            let upstream = &shared.upstreams[0];
            let timeout = upstream.executor.config().request_timeout;
            passed_on(upstream.transport.subscribe(&uri, timeout).await)?;
        }
        subscriptions.add(uri, who, told);
        Ok(())
    }

    async fn unsubscribe(&self, uri: &str, who: Subscriber) -> Result<(), ErrorData> {
        let shared = &self.shared;
        let _upstream = shared.subscriptions.upstream().lock().await;
        if shared.subscriptions.remove(uri, who) {
            unsubscribe_upstream(shared, uri).await?;
        }
        Ok(())
    }

    /// Tells the clients subscribed to a resource of the upstream's updates
    /// of it, in the background.
    pub(crate) fn follow_updates(&self, updates: Receiver<String>) {
        let shared = Arc::downgrade(&self.shared);
        tokio::spawn(follow_updates(shared, updates));
    }
}

async fn unsubscribe_upstream(shared: &Shared, uri: &str) -> Result<(), ErrorData> {
    let upstream = &shared.upstreams[0];
    let timeout = upstream.executor.config().request_timeout;
    passed_on(upstream.transport.unsubscribe(uri, timeout).await)
}

async fn follow_updates(shared: Weak<Shared>, mut updates: Receiver<String>) {
    loop {
        let uri = match updates.recv().await {
            Ok(uri) => uri,
            // Updates were missed; which resources they were of is lost.
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => return,
        };
        let Some(shared) = shared.upgrade() else {
            return;
        };
        tell(&shared, &uri).await;
    }
}

/// Tells `uri`'s subscribers it was updated; one found gone is forgotten,
/// and the upstream unsubscribed once none is left.
async fn tell(shared: &Shared, uri: &str) {
    let subscriptions = &shared.subscriptions;
    let subscribers = subscriptions.of(uri);
    let mut gone = Vec::new();
    // Told outside the lock: a slow client holds no one else.
    for (who, told) in subscribers {
        let sent = match &told {
            Told::Session(peer) => peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await
                .is_ok(),
            Told::Stream(sink) => sink.notify_resource_updated(uri).await.is_ok(),
        };
        if !sent {
            gone.push(who);
        }
    }
    if gone.is_empty() {
        return;
    }
    let _upstream = subscriptions.upstream().lock().await;
    let mut none_left = false;
    for who in gone {
        none_left |= subscriptions.remove(uri, who);
    }
    if none_left
        && !subscriptions.is_watched(uri)
        && let Err(e) = unsubscribe_upstream(shared, uri).await
    {
        (shared.warn)(format!(
            "the last client subscribed to {uri} is gone, but unsubscribing the upstream failed: {}",
            e.message
        ));
    }
}
