//! A statement on a pooled connection: prepared once per connection,
//! cancelled on the server when its caller gives up on it.

use deadpool_postgres::Object;
use recourse_core::journal::JournalErrorKind;
use tokio_postgres::{NoTls, Row};

/// Runs `sql` with `params` on `client`, the statement prepared once per
/// connection (a round trip and a parse saved on every later use). Given
/// up on before it ends, the statement is cancelled ([`Running`]).
pub(super) async fn run(
    client: Object,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<u64, tokio_postgres::Error> {
    let running = Running(Some(client));
    let client = running.client();
    let statement = client.prepare_cached(sql).await?;
    let done = client.execute(&statement, params).await;
    running.finished();
    done
}

/// As [`run`], for a query of at most one row.
pub(super) async fn run_opt(
    client: Object,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Option<Row>, tokio_postgres::Error> {
    let running = Running(Some(client));
    let client = running.client();
    let statement = client.prepare_cached(sql).await?;
    let done = client.query_opt(&statement, params).await;
    running.finished();
    done
}

/// A pooled connection with a statement under way. Dropped before it
/// [`finished`](Running::finished) — the caller gave up, as when a call's
/// deadline passes on a locked table — the statement is cancelled on the
/// server, and the connection leaves the pool rather than carry the
/// cancellation (or the statement's late answer) to its next user.
struct Running(Option<Object>);

impl Running {
    fn client(&self) -> &Object {
        self.0
            .as_ref()
            .expect("a running statement holds its connection")
    }

    /// The statement ended: the connection goes back to the pool.
    fn finished(mut self) {
        drop(self.0.take());
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(object) = self.0.take() else {
            return;
        };
        let client = Object::take(object);
        let cancel = client.cancel_token();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _cancelled = cancel.cancel_query(NoTls).await;
                drop(client);
            });
        }
    }
}

/// What kind of failure `e` is: a write the database refused for what it
/// holds (a unique key taken) is a conflict; any other, an operation that
/// failed.
pub(super) fn refused_as(e: &tokio_postgres::Error) -> JournalErrorKind {
    if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) {
        JournalErrorKind::Conflict
    } else {
        JournalErrorKind::Operation
    }
}

pub(super) fn n_i32(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}
