//! The PostgreSQL journal: one record shared by several replicas.

use std::time::Duration;

use serde_json::Value;
use tokio_postgres::{Client, NoTls, Row};

use recourse_core::journal::{
    AttemptResult, CallState, Claimed, Journal, JournalEntry, JournalError, JournalErrorKind,
    JournalResult, KeyClaim, ListQuery, MAX_LIST, NewCall, RecordJson, lease_until, rfc3339_now,
};
use recourse_core::transport::BoxFuture;

use crate::schema::{ENTRY_COLUMNS, MIGRATIONS, list_sql};

/// A journal in a PostgreSQL database (no TLS; use a local socket or a trusted network).
pub struct PostgresJournal {
    client: Client,
}

impl std::fmt::Debug for PostgresJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresJournal").finish_non_exhaustive()
    }
}

impl PostgresJournal {
    /// Connects to `url` (`postgres://user@host:port/db`) and migrates the schema.
    ///
    /// # Errors
    /// When the server is unreachable or the migration fails.
    pub async fn connect(url: &str) -> JournalResult<Self> {
        let (client, connection) = tokio_postgres::connect(url, NoTls).await.map_err(|e| {
            JournalError::caused(JournalErrorKind::Open, "connecting to PostgreSQL", e)
        })?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(error = %e, "PostgreSQL journal connection closed");
            }
        });
        let journal = Self { client };
        journal.migrate().await?;
        Ok(journal)
    }

    async fn migrate(&self) -> JournalResult<()> {
        let c = &self.client;
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

fn entry(row: &Row) -> JournalEntry {
    let payload: String = row.get(6);
    let state: String = row.get(7);
    let attempts: i32 = row.get(8);
    let record: Option<String> = row.get(15);
    let verification: Option<String> = row.get(16);
    JournalEntry {
        call_id: row.get(0),
        target: row.get(1),
        capability: row.get(2),
        idempotency_key: row.get(3),
        operation_id: row.get(4),
        reconcile: row.get(5),
        verification: verification.and_then(|v| serde_json::from_str(&v).ok()),
        payload: serde_json::from_str(&payload).unwrap_or(Value::Null),
        state: CallState::parse(&state).unwrap_or(CallState::Unknown),
        attempts: u32::try_from(attempts).unwrap_or(0),
        started_at: row.get(9),
        updated_at: row.get(10),
        caller_key: row.get(11),
        request_hash: row.get(12),
        owner: row.get(13),
        lease_until: row.get(14),
        record: record.and_then(|r| serde_json::from_str(&r).ok()),
    }
}

fn n_i32(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

impl PostgresJournal {
    async fn get_by(&self, column: &str, value: &str) -> JournalResult<Option<JournalEntry>> {
        let sql = format!("SELECT {ENTRY_COLUMNS} FROM recourse_calls WHERE {column} = $1");
        let row =
            self.client.query_opt(&sql, &[&value]).await.map_err(|e| {
                JournalError::caused(JournalErrorKind::Operation, "reading a call", e)
            })?;
        Ok(row.as_ref().map(entry))
    }
}

impl Journal for PostgresJournal {
    fn claim_key<'a>(&'a self, claim: &'a KeyClaim) -> BoxFuture<'a, JournalResult<Claimed>> {
        Box::pin(async move {
            let now = rfc3339_now();
            let inserted = self
                .client
                .query_opt(
                    "INSERT INTO recourse_calls (call_id, target, idempotency_key, payload, state, attempts, started_at, updated_at, caller_key, request_hash, owner, lease_until)
                     VALUES ($1, $2, $3, 'null', 'in_flight', 0, $4, $4, $3, $5, $6, $7)
                     ON CONFLICT (caller_key) DO NOTHING RETURNING call_id",
                    &[&claim.call_id, &claim.target, &claim.caller_key, &now, &claim.request_hash, &claim.owner, &lease_until(claim.lease)],
                )
                .await
                .map_err(|e| JournalError::caused(JournalErrorKind::Operation, "claiming the idempotency key", e))?;
            if inserted.is_some() {
                return Ok(Claimed::New);
            }
            let existing = self
                .get_by("caller_key", &claim.caller_key)
                .await?
                .ok_or_else(|| {
                    JournalError::new(
                        JournalErrorKind::Inconsistent,
                        "claiming the idempotency key",
                        "the key's call vanished",
                    )
                })?;
            Ok(Claimed::Exists(Box::new(existing)))
        })
    }

    fn begin_call<'a>(&'a self, call: &'a NewCall) -> BoxFuture<'a, JournalResult<()>> {
        Box::pin(async move {
            let now = rfc3339_now();
            self.client
                .execute(
                    "INSERT INTO recourse_calls (call_id, target, capability, idempotency_key, reconcile, payload, state, attempts, started_at, updated_at, owner, lease_until, verification)
                     VALUES ($1, $2, $3, $4, $5, $6, 'in_flight', 0, $7, $7, $8, $9, $10)
                     ON CONFLICT (call_id) DO UPDATE SET target = excluded.target, capability = excluded.capability,
                       idempotency_key = excluded.idempotency_key, reconcile = excluded.reconcile, payload = excluded.payload,
                       updated_at = excluded.updated_at, owner = excluded.owner, lease_until = excluded.lease_until,
                       verification = excluded.verification",
                    &[&call.call_id, &call.target, &call.capability, &call.idempotency_key, &call.reconcile, &call.payload.to_string(), &now, &call.owner, &lease_until(call.lease), &call.verification.as_ref().map(Value::to_string)],
                )
                .await
                .map(drop)
                .map_err(|e| JournalError::caused(JournalErrorKind::Operation, "recording call", e))
        })
    }

    fn begin_attempt<'a>(
        &'a self,
        call_id: &'a str,
        n: u32,
        payload: &'a Value,
    ) -> BoxFuture<'a, JournalResult<()>> {
        Box::pin(async move {
            let now = rfc3339_now();
            let n = n_i32(n);
            self.client
                .execute(
                    "INSERT INTO recourse_attempts (call_id, n, payload, started_at) VALUES ($1, $2, $3, $4)",
                    &[&call_id, &n, &payload.to_string(), &now],
                )
                .await
                .map_err(|e| JournalError::caused(JournalErrorKind::Operation, "recording attempt", e))?;
            self.client
                .execute(
                    "UPDATE recourse_calls SET attempts = $2, updated_at = $3 WHERE call_id = $1",
                    &[&call_id, &n, &now],
                )
                .await
                .map(drop)
                .map_err(|e| {
                    JournalError::caused(JournalErrorKind::Operation, "recording attempt", e)
                })
        })
    }

    fn finish_attempt<'a>(
        &'a self,
        call_id: &'a str,
        n: u32,
        result: &'a AttemptResult,
    ) -> BoxFuture<'a, JournalResult<()>> {
        Box::pin(async move {
            let status = result.status.map(i32::from);
            let failure = result.transport_error_text();
            self.client
                .execute(
                    "UPDATE recourse_attempts SET status = $3, transport_error = $4, action = $5, finished_at = $6 WHERE call_id = $1 AND n = $2",
                    &[&call_id, &n_i32(n), &status, &failure, &result.action.name(), &rfc3339_now()],
                )
                .await
                .map(drop)
                .map_err(|e| JournalError::caused(JournalErrorKind::Operation, "completing attempt", e))
        })
    }

    fn finish_call<'a>(
        &'a self,
        call_id: &'a str,
        state: CallState,
        operation_id: Option<&'a str>,
        record: Option<&'a RecordJson>,
    ) -> BoxFuture<'a, JournalResult<()>> {
        Box::pin(async move {
            let record = record.map(RecordJson::as_str);
            self.client
                .execute(
                    "UPDATE recourse_calls SET state = $2, operation_id = COALESCE($3, operation_id),
                       record = COALESCE($4, record), lease_until = NULL, updated_at = $5 WHERE call_id = $1",
                    &[&call_id, &state.as_str(), &operation_id, &record, &rfc3339_now()],
                )
                .await
                .map(drop)
                .map_err(|e| JournalError::caused(JournalErrorKind::Operation, "updating call", e))
        })
    }

    fn renew_lease<'a>(
        &'a self,
        call_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, JournalResult<bool>> {
        Box::pin(async move {
            let n = self
                .client
                .execute(
                    "UPDATE recourse_calls SET lease_until = $3 WHERE call_id = $1 AND owner = $2 AND lease_until IS NOT NULL",
                    &[&call_id, &owner, &lease_until(lease)],
                )
                .await
                .map_err(|e| JournalError::caused(JournalErrorKind::Operation, "renewing a lease", e))?;
            Ok(n == 1)
        })
    }

    fn take_over<'a>(
        &'a self,
        call_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, JournalResult<bool>> {
        Box::pin(async move {
            let now = rfc3339_now();
            let n = self
                .client
                .execute(
                    "UPDATE recourse_calls SET owner = $2, lease_until = $3, updated_at = $4
                     WHERE call_id = $1 AND (lease_until IS NULL OR lease_until < $4)",
                    &[&call_id, &owner, &lease_until(lease), &now],
                )
                .await
                .map_err(|e| {
                    JournalError::caused(JournalErrorKind::Operation, "taking a call over", e)
                })?;
            Ok(n == 1)
        })
    }

    fn get<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, JournalResult<Option<JournalEntry>>> {
        Box::pin(self.get_by("call_id", call_id))
    }

    fn list<'a>(&'a self, query: &'a ListQuery) -> BoxFuture<'a, JournalResult<Vec<JournalEntry>>> {
        Box::pin(async move {
            let state = query.state.map(CallState::as_str);
            let limit = i64::from(query.limit.unwrap_or(MAX_LIST).min(MAX_LIST));
            let sql = list_sql(query, |n| format!("${n}"));
            let mut bound: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = Vec::with_capacity(3);
            bound.extend(
                state
                    .as_ref()
                    .map(|s| s as &(dyn tokio_postgres::types::ToSql + Sync)),
            );
            bound.extend(
                query
                    .before
                    .as_ref()
                    .map(|b| b as &(dyn tokio_postgres::types::ToSql + Sync)),
            );
            bound.push(&limit);
            let rows = self.client.query(&sql, &bound).await.map_err(|e| {
                JournalError::caused(JournalErrorKind::Operation, "listing calls", e)
            })?;
            Ok(rows.iter().map(entry).collect())
        })
    }
}
