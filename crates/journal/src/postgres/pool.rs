//! The journal's connections: a pool whose connections carry the lock and
//! statement timeouts, and the one read every operation shares.

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;

use recourse_core::journal::{JournalEntry, JournalError, JournalErrorKind, JournalResult};

use super::PostgresJournal;
use super::rows::entry;
use super::statement::run_opt;
use crate::schema::ENTRY_COLUMNS;

/// The most connections one journal holds.
const MAX_CONNECTIONS: usize = 16;
/// How long a statement may wait for a lock before it fails.
const LOCK_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a statement may run before the server cancels it.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long connecting, or waiting for a free connection, may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

impl PostgresJournal {
    /// Connects to `url` (`postgres://user@host:port/db`) and migrates the schema.
    ///
    /// # Errors
    /// When the server is unreachable or the migration fails.
    pub async fn connect(url: &str) -> JournalResult<Self> {
        let location = |detail: String| {
            JournalError::new(
                JournalErrorKind::Location,
                "reading the PostgreSQL URL",
                detail,
            )
        };
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e: tokio_postgres::Error| location(e.to_string()))?;
        let timeouts = format!(
            "-c lock_timeout={} -c statement_timeout={}",
            LOCK_TIMEOUT.as_millis(),
            STATEMENT_TIMEOUT.as_millis()
        );
        let options = match config.get_options() {
            Some(theirs) if !theirs.trim().is_empty() => format!("{theirs} {timeouts}"),
            _ => timeouts,
        };
        config.options(&options);
        config.connect_timeout(CONNECT_TIMEOUT);
        if config.get_application_name().is_none() {
            config.application_name("recourse");
        }
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(MAX_CONNECTIONS)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(CONNECT_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .recycle_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| location(e.to_string()))?;
        let journal = Self { pool };
        journal.migrate().await?;
        Ok(journal)
    }

    /// A connection from the pool: a live one, or a new one.
    pub(super) async fn client(
        &self,
        doing: &'static str,
        kind: JournalErrorKind,
    ) -> JournalResult<Object> {
        self.pool
            .get()
            .await
            .map_err(|e| JournalError::caused(kind, doing, e))
    }
}

impl PostgresJournal {
    /// A connection for an operation (`doing`, for the error).
    pub(super) async fn op(&self, doing: &'static str) -> JournalResult<Object> {
        self.client(doing, JournalErrorKind::Operation).await
    }

    pub(super) async fn get_by(
        &self,
        column: &str,
        value: &str,
    ) -> JournalResult<Option<JournalEntry>> {
        let sql = format!("SELECT {ENTRY_COLUMNS} FROM recourse_calls WHERE {column} = $1");
        let row = run_opt(self.op("reading a call").await?, &sql, &[&value])
            .await
            .map_err(|e| JournalError::caused(JournalErrorKind::Operation, "reading a call", e))?;
        Ok(row.as_ref().map(entry))
    }
}
