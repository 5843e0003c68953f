//! A gateway as one replica of a fleet: the retry budget and the circuit
//! breakers shared through Redis, and what it says when that changes.

use std::sync::Arc;

use recourse::shared::{RedisSharedState, RedisSharedStateBuilder, SharedMode};

/// Connects the shared state (an unreachable Redis is fallback, not an
/// error) and tells `report`, now and on every change, which state decides
/// (never the URL, which may carry a password).
pub async fn connect_shared_state(
    builder: RedisSharedStateBuilder,
    report: impl Fn(String) + Send + Sync + 'static,
) -> Arc<RedisSharedState> {
    let state = builder.connect().await;
    let mut changes = state.subscribe();
    let mut last = *changes.borrow_and_update();
    report(describe(&state, last));
    let watched = Arc::downgrade(&state);
    tokio::spawn(async move {
        while changes.changed().await.is_ok() {
            let now = *changes.borrow_and_update();
            let Some(state) = watched.upgrade() else {
                return;
            };
            if now != last {
                report(describe(&state, now));
                last = now;
            }
        }
    });
    state
}

/// The log line for a mode: never the URL, which may carry a password.
fn describe(state: &RedisSharedState, mode: SharedMode) -> String {
    match mode {
        SharedMode::Shared => format!(
            "shared state: shared — the fleet's retry budget and breakers decide (keys {}*)",
            state.prefix()
        ),
        SharedMode::Fallback => format!(
            "shared state: fallback — Redis does not answer ({}); this gateway decides on its \
             own budget and breakers until it does",
            state.last_cause()
        ),
    }
}
