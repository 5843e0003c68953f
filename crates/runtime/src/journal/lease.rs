//! Holding a journaled call's lease: renewed on a clock while the process
//! works on the call, so no sweeper or retry takes it over.

use std::sync::Arc;
use std::time::Duration;

use recourse_core::clock::Clock;
use recourse_core::timing::renew_every;

use super::{Journal, process_owner};

/// Renews this process's lease on a call every
/// [`renew_every`](recourse_core::timing::renew_every) of it, waiting on
/// the given clock, until dropped — or until the journal says the process
/// no longer holds it (another took the call over). A renewal the journal
/// does not answer is logged, and tried again a turn later.
///
/// The executor holds one for every journaled call it runs; a server holds
/// one for a call it works on before the executor runs it (the gateway, for
/// an approved call it builds again before dispatching it).
///
/// ```no_run
/// use std::sync::Arc;
/// use std::time::Duration;
/// use recourse::journal::{LeaseKeeper, SqliteJournal};
/// use recourse::SystemClock;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let journal = Arc::new(SqliteJournal::open("recourse.db")?);
/// let held = LeaseKeeper::start(journal, "c-1".into(), Duration::from_secs(30), Arc::new(SystemClock));
/// // … work on call c-1; its lease holds …
/// drop(held);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct LeaseKeeper(tokio::task::JoinHandle<()>);

impl LeaseKeeper {
    /// Starts renewing `call_id`'s lease for `lease` at a time, on `clock`.
    ///
    /// # Panics
    /// Outside a Tokio runtime.
    pub fn start(
        journal: Arc<dyn Journal>,
        call_id: String,
        lease: Duration,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let every = renew_every(lease);
        Self(tokio::spawn(async move {
            loop {
                clock.sleep_in_background(every).await;
                match journal.renew_lease(&call_id, process_owner(), lease).await {
                    Ok(true) => {}
                    Ok(false) => return,
                    Err(e) => tracing::warn!(error = %e, "could not renew a journal lease"),
                }
            }
        }))
    }
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        self.0.abort();
    }
}
