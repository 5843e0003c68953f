//! The PostgreSQL journal: one record shared by several replicas.
//!
//! # Why a pool, and fixed timeouts
//!
//! A database restarts — a failover, an upgrade, an operator terminating a
//! backend — and a journal holding one connection would answer every call
//! after that with an error until its process restarted: a fleet would drop
//! out of its load balancer over a blip. So the journal takes a connection
//! from a pool (`deadpool-postgres`) for each operation; a connection found
//! closed is dropped and a new one made, so once the database is back the
//! journal is too, without a restart. Each connection carries a
//! `lock_timeout` and a `statement_timeout`, so a locked table fails a call
//! in seconds (and `/readyz` says so) rather than holding it for as long as
//! the lock lasts.

mod migrate;
mod pool;
mod rows;
mod statement;

use std::time::Duration;

use deadpool_postgres::Pool;
use serde_json::Value;

use recourse_core::hex::lower_hex;
use recourse_core::journal::{
    ApprovalDecision, AttemptResult, AwaitingCall, CallState, Claimed, Journal, JournalEntry,
    JournalError, JournalErrorKind, JournalResult, KeyClaim, ListQuery, MAX_LIST, NewCall,
    RecordJson, Seen, StateCounts, lease_until, rfc3339_now,
};
use recourse_core::transport::BoxFuture;

use rows::entry;
use statement::{n_i32, refused_as, run, run_opt};

use crate::schema::{
    await_sql, count_sql, decide_sql, decided_columns, keep_secret_sql, list_sql, prune_sql,
    secret_bytes, secret_sql, seen_name, take_over_sql, viewer,
};

/// A journal in a PostgreSQL database (no TLS; use a local socket or a trusted network).
pub struct PostgresJournal {
    pool: Pool,
}

impl std::fmt::Debug for PostgresJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresJournal").finish_non_exhaustive()
    }
}

impl Journal for PostgresJournal {
    fn claim_key<'a>(&'a self, claim: &'a KeyClaim) -> BoxFuture<'a, JournalResult<Claimed>> {
        Box::pin(async move {
            let now = rfc3339_now();
            let inserted = run_opt(self.op("claiming the idempotency key").await?, 
                    "INSERT INTO recourse_calls (call_id, target, idempotency_key, payload, state, attempts, started_at, updated_at, caller_key, request_hash, owner, lease_until, caller)
                     VALUES ($1, $2, $3, 'null', 'in_flight', 0, $4, $4, $3, $5, $6, $7, $8)
                     ON CONFLICT (caller_key) DO NOTHING RETURNING call_id",
                    &[&claim.call_id, &claim.target, &claim.caller_key, &now, &claim.request_hash, &claim.owner, &lease_until(claim.lease), &claim.caller],
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
            // A call that ended `failed` is begun again only when it sent
            // nothing (a run taking it over): the attempts its first run
            // recorded and never sent are forgotten with its count.
            run(self.op("recording call").await?, 
                    "WITH unsent AS (DELETE FROM recourse_attempts WHERE call_id = $1
                                       AND EXISTS (SELECT 1 FROM recourse_calls WHERE call_id = $1 AND state = 'failed'))
                     INSERT INTO recourse_calls (call_id, target, capability, idempotency_key, reconcile, payload, state, attempts, started_at, updated_at, owner, lease_until, verification, caller)
                     VALUES ($1, $2, $3, $4, $5, $6, 'in_flight', 0, $7, $7, $8, $9, $10, $11)
                     ON CONFLICT (call_id) DO UPDATE SET target = excluded.target, capability = excluded.capability,
                       idempotency_key = excluded.idempotency_key, reconcile = excluded.reconcile, payload = excluded.payload,
                       updated_at = excluded.updated_at, owner = excluded.owner, lease_until = excluded.lease_until,
                       verification = excluded.verification, caller = excluded.caller, state = 'in_flight', record = NULL,
                       attempts = CASE WHEN recourse_calls.state = 'failed' THEN 0 ELSE recourse_calls.attempts END",
                    &[&call.call_id, &call.target, &call.capability, &call.idempotency_key, &call.reconcile, &call.payload.to_string(), &now, &call.owner, &lease_until(call.lease), &call.verification.as_ref().map(Value::to_string), &call.caller],
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
        payload: Option<&'a Value>,
    ) -> BoxFuture<'a, JournalResult<()>> {
        Box::pin(async move {
            let now = rfc3339_now();
            let n = n_i32(n);
            let payload = payload.map(Value::to_string);
            // One statement, one commit: the attempt and the call's count.
            run(
                self.op("recording attempt").await?,
                "WITH attempt AS (INSERT INTO recourse_attempts (call_id, n, payload, started_at) VALUES ($1, $2, $3, $4))
                 UPDATE recourse_calls SET attempts = $2, updated_at = $4 WHERE call_id = $1",
                &[&call_id, &n, &payload, &now],
            )
            .await
            .map(drop)
            .map_err(|e| JournalError::caused(refused_as(&e), "recording attempt", e))
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
            run(self.op("completing attempt").await?, 
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
            run(self.op("updating call").await?, 
                    "UPDATE recourse_calls SET state = $2, operation_id = COALESCE($3, operation_id),
                       record = COALESCE($4, record), lease_until = NULL, approval_request = NULL, updated_at = $5
                     WHERE call_id = $1",
                    &[&call_id, &state.as_str(), &operation_id, &record, &rfc3339_now()],
                )
                .await
                .map(drop)
                .map_err(|e| JournalError::caused(JournalErrorKind::Operation, "updating call", e))
        })
    }

    fn finish_attempt_and_call<'a>(
        &'a self,
        (n, result): (u32, &'a AttemptResult),
        call_id: &'a str,
        state: CallState,
        operation_id: Option<&'a str>,
        record: Option<&'a RecordJson>,
    ) -> BoxFuture<'a, JournalResult<()>> {
        Box::pin(async move {
            let status = result.status.map(i32::from);
            let failure = result.transport_error_text();
            let record = record.map(RecordJson::as_str);
            // One statement, one commit: the attempt's end and the call's.
            run(
                self.op("updating call").await?,
                "WITH attempt AS (UPDATE recourse_attempts SET status = $3, transport_error = $4, action = $5, finished_at = $6
                                  WHERE call_id = $1 AND n = $2)
                 UPDATE recourse_calls SET state = $7, operation_id = COALESCE($8, operation_id),
                   record = COALESCE($9, record), lease_until = NULL, approval_request = NULL, updated_at = $6
                 WHERE call_id = $1",
                &[&call_id, &n_i32(n), &status, &failure, &result.action.name(), &rfc3339_now(), &state.as_str(), &operation_id, &record],
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
            let n = run(self.op("renewing a lease").await?, 
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
            let n = run(
                self.op("taking a call over").await?,
                &take_over_sql(|n| format!("${n}")),
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

    fn get_by_key<'a>(
        &'a self,
        caller_key: &'a str,
    ) -> BoxFuture<'a, JournalResult<Option<JournalEntry>>> {
        Box::pin(self.get_by("caller_key", caller_key))
    }

    fn get_by_approval<'a>(
        &'a self,
        approval_id: &'a str,
    ) -> BoxFuture<'a, JournalResult<Option<JournalEntry>>> {
        Box::pin(self.get_by("approval_id", approval_id))
    }

    fn secret<'a>(
        &'a self,
        name: &'a str,
        fresh: &'a [u8],
    ) -> BoxFuture<'a, JournalResult<Vec<u8>>> {
        Box::pin(async move {
            let doing = "keeping a secret";
            let failed = |e| JournalError::caused(JournalErrorKind::Operation, doing, e);
            let fresh = lower_hex(fresh);
            run(
                self.op(doing).await?,
                &keep_secret_sql(|n| format!("${n}")),
                &[&name, &fresh, &rfc3339_now()],
            )
            .await
            .map_err(failed)?;
            let row = run_opt(
                self.op(doing).await?,
                &secret_sql(|n| format!("${n}")),
                &[&name],
            )
            .await
            .map_err(failed)?;
            let kept: Option<String> = row.map(|row| row.get(0));
            secret_bytes(kept.as_deref().unwrap_or_default())
        })
    }

    fn await_approval<'a>(&'a self, call: &'a AwaitingCall) -> BoxFuture<'a, JournalResult<()>> {
        Box::pin(async move {
            let doing = "recording a call awaiting approval";
            let (payload, request) = (call.payload.to_string(), call.request.to_string());
            let n = run(
                self.op(doing).await?,
                &await_sql(|n| format!("${n}")),
                &[
                    &call.call_id,
                    &call.target,
                    &call.capability,
                    &payload,
                    &rfc3339_now(),
                    &call.request_hash,
                    &call.caller,
                    &call.approval_id,
                    &call.reason,
                    &call.expires_at,
                    &request,
                    &call.dispatcher,
                ],
            )
            .await
            .map_err(|e| JournalError::caused(JournalErrorKind::Operation, doing, e))?;
            if n == 1 {
                Ok(())
            } else {
                Err(JournalError::new(
                    JournalErrorKind::Inconsistent,
                    doing,
                    "the key's call has sent an attempt already",
                ))
            }
        })
    }

    fn decide_approval<'a>(
        &'a self,
        decision: &'a ApprovalDecision,
    ) -> BoxFuture<'a, JournalResult<bool>> {
        Box::pin(async move {
            let doing = "deciding an approval";
            let (owner, lease, record) = decided_columns(&decision.to);
            let n = run(
                self.op(doing).await?,
                &decide_sql(&decision.to, |n| format!("${n}")),
                &[
                    &decision.approval_id,
                    &decision.to.approval_state().as_str(),
                    &decision.by,
                    &decision.at,
                    &decision.note,
                    &decision.to.call_state().as_str(),
                    &owner,
                    &lease,
                    &record,
                    &rfc3339_now(),
                ],
            )
            .await
            .map_err(|e| JournalError::caused(JournalErrorKind::Operation, doing, e))?;
            Ok(n == 1)
        })
    }

    fn prune<'a>(&'a self, before: &'a str, limit: u32) -> BoxFuture<'a, JournalResult<u64>> {
        Box::pin(async move {
            let err =
                |e| JournalError::caused(JournalErrorKind::Operation, "pruning finished calls", e);
            let [attempts, calls] = prune_sql(|n| format!("${n}"));
            let limit = i64::from(limit);
            let mut client = self.op("pruning finished calls").await?;
            let tx = client.transaction().await.map_err(err)?;
            tx.execute(&attempts, &[&before, &limit])
                .await
                .map_err(err)?;
            let n = tx.execute(&calls, &[&before, &limit]).await.map_err(err)?;
            tx.commit().await.map_err(err)?;
            Ok(n)
        })
    }

    fn list<'a>(&'a self, query: &'a ListQuery) -> BoxFuture<'a, JournalResult<Vec<JournalEntry>>> {
        Box::pin(async move {
            let state = query.state.map(CallState::as_str);
            let limit = i64::from(query.limit.unwrap_or(MAX_LIST).min(MAX_LIST));
            let sql = list_sql(query, |n| format!("${n}"));
            let mut bound: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = Vec::with_capacity(4);
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
            bound.extend(viewer(query).map(|v| v as &(dyn tokio_postgres::types::ToSql + Sync)));
            bound.push(&limit);
            let rows = self
                .op("listing calls")
                .await?
                .query(&sql, &bound)
                .await
                .map_err(|e| {
                    JournalError::caused(JournalErrorKind::Operation, "listing calls", e)
                })?;
            Ok(rows.iter().map(entry).collect())
        })
    }

    fn count<'a>(&'a self, seen: &'a Seen) -> BoxFuture<'a, JournalResult<StateCounts>> {
        Box::pin(async move {
            let sql = count_sql(seen, |n| format!("${n}"));
            let name: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = seen_name(seen)
                .map(|n| n as &(dyn tokio_postgres::types::ToSql + Sync))
                .into_iter()
                .collect();
            let rows = self
                .op("counting calls")
                .await?
                .query(&sql, &name)
                .await
                .map_err(|e| {
                    JournalError::caused(JournalErrorKind::Operation, "counting calls", e)
                })?;
            let mut counts = StateCounts::default();
            for row in &rows {
                let n: i64 = row.get(1);
                counts.add_stored(row.get(0), u64::try_from(n).unwrap_or(0));
            }
            Ok(counts)
        })
    }
}
