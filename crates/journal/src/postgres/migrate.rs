//! The schema brought up to date, by one replica at a time.

use recourse_core::journal::{JournalError, JournalErrorKind, JournalResult, rfc3339_now};

use super::PostgresJournal;
use crate::schema::MIGRATIONS;

impl PostgresJournal {
    /// Applies the migrations the database has not had, under an advisory
    /// lock so that replicas starting together migrate once.
    pub(super) async fn migrate(&self) -> JournalResult<()> {
        // The advisory lock is a session's: every step on one connection.
        let c = self
            .client("connecting to PostgreSQL", JournalErrorKind::Open)
            .await?;
        let err = |ctx: &'static str| {
            move |e: tokio_postgres::Error| JournalError::caused(JournalErrorKind::Open, ctx, e)
        };
        // One migrator at a time across replicas.
        c.batch_execute("SELECT pg_advisory_lock(7262001)")
            .await
            .map_err(err("migration lock"))?;
        let result = async {
            c.batch_execute("CREATE TABLE IF NOT EXISTS recourse_migrations (version BIGINT PRIMARY KEY, applied_at TEXT NOT NULL)")
                .await
                .map_err(err("migration table"))?;
            let current: i64 = c
                .query_one("SELECT COALESCE(MAX(version), 0)::BIGINT FROM recourse_migrations", &[])
                .await
                .map_err(err("migration version"))?
                .get(0);
            for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
                c.batch_execute(sql).await.map_err(err("migration"))?;
                c.execute("INSERT INTO recourse_migrations VALUES ($1, $2)", &[version, &rfc3339_now()])
                    .await
                    .map_err(err("migration record"))?;
            }
            Ok(())
        }
        .await;
        c.batch_execute("SELECT pg_advisory_unlock(7262001)")
            .await
            .map_err(err("migration unlock"))?;
        result
    }
}
