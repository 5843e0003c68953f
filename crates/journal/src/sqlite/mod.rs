//! The SQLite journal: embedded, one file (or memory), the default.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, params};
use serde_json::Value;

use recourse_core::hex::lower_hex;
use recourse_core::journal::{
    ApprovalDecision, AttemptResult, AwaitingCall, CallState, Claimed, Journal, JournalEntry,
    JournalError, JournalErrorKind, JournalResult, KeyClaim, ListQuery, MAX_LIST, NewCall,
    RecordJson, Seen, StateCounts, lease_until, rfc3339_now,
};
use recourse_core::transport::BoxFuture;

use crate::private_file::create_private;
use crate::schema::{
    MIGRATIONS, await_sql, count_sql, decide_sql, decided_columns, keep_secret_sql, list_sql,
    prune_sql, secret_bytes, secret_sql, seen_name, take_over_sql,
};
use crate::writer::{Access, Writer};
use rows::{AttemptEnd, entry, finish, get, list_params};

mod rows;

/// A journal in a SQLite database. Writes are durable (WAL mode,
/// `synchronous=FULL`): an operation reports done once it is on disk. One
/// thread owns the connection and commits the operations waiting for it in
/// one transaction (one `fsync` for them all), each in a savepoint of its
/// own, so a failing one is undone alone.
#[derive(Debug, Clone)]
pub struct SqliteJournal {
    writer: Writer,
}

impl SqliteJournal {
    /// Opens (creating if needed) the database at `path` and migrates it.
    ///
    /// # Errors
    /// When the file cannot be opened or migrated.
    pub fn open(path: impl AsRef<Path>) -> JournalResult<Self> {
        create_private(path.as_ref()).map_err(|e| {
            JournalError::caused(JournalErrorKind::Open, "creating SQLite journal", e)
        })?;
        Self::opened(Connection::open(path.as_ref()))
    }

    /// Opens the database at `path`, which must exist (nothing is created
    /// where there was no journal), and migrates it: for a reader.
    ///
    /// # Errors
    /// When there is no file at `path`, or it cannot be opened or migrated.
    pub fn open_existing(path: impl AsRef<Path>) -> JournalResult<Self> {
        let flags = rusqlite::OpenFlags::default() - rusqlite::OpenFlags::SQLITE_OPEN_CREATE;
        Self::opened(Connection::open_with_flags(path.as_ref(), flags))
    }

    fn opened(conn: rusqlite::Result<Connection>) -> JournalResult<Self> {
        let conn = conn.map_err(|e| {
            JournalError::caused(JournalErrorKind::Open, "opening SQLite journal", e)
        })?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| JournalError::caused(JournalErrorKind::Open, "busy timeout", e))?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;",
        )
        .map_err(|e| JournalError::caused(JournalErrorKind::Open, "configuring SQLite", e))?;
        Self::migrated(conn)
    }

    /// An in-memory journal (lost with the process; for tests and dry runs).
    ///
    /// # Errors
    /// When SQLite cannot allocate the database.
    pub fn in_memory() -> JournalResult<Self> {
        let conn = Connection::open_in_memory().map_err(|e| {
            JournalError::caused(JournalErrorKind::Open, "opening SQLite journal", e)
        })?;
        Self::migrated(conn)
    }

    fn migrated(mut conn: Connection) -> JournalResult<Self> {
        let tx = conn
            .transaction()
            .map_err(|e| JournalError::caused(JournalErrorKind::Open, "migration", e))?;
        tx.execute_batch("CREATE TABLE IF NOT EXISTS recourse_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
            .map_err(|e| JournalError::caused(JournalErrorKind::Open, "migration table", e))?;
        let current: i64 = tx
            .query_row(
                "SELECT COALESCE(MAX(version), 0) FROM recourse_migrations",
                [],
                |r| r.get(0),
            )
            .map_err(|e| JournalError::caused(JournalErrorKind::Open, "migration version", e))?;
        for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > current) {
            tx.execute_batch(sql).map_err(|e| {
                JournalError::caused(JournalErrorKind::Open, format!("migration {version}"), e)
            })?;
            tx.execute(
                "INSERT INTO recourse_migrations VALUES (?1, ?2)",
                params![version, rfc3339_now()],
            )
            .map_err(|e| JournalError::caused(JournalErrorKind::Open, "migration record", e))?;
        }
        tx.commit()
            .map_err(|e| JournalError::caused(JournalErrorKind::Open, "migration commit", e))?;
        Ok(Self {
            writer: Writer::start(conn)?,
        })
    }
}

impl SqliteJournal {
    /// One job that ends a call — and, given its end, its last attempt.
    fn finish_job<'a>(
        &'a self,
        end: Option<(u32, AttemptEnd)>,
        call_id: &'a str,
        state: CallState,
        operation_id: Option<&'a str>,
        record: Option<&'a RecordJson>,
    ) -> impl Future<Output = JournalResult<()>> + Send + 'a {
        let (id, op) = (call_id.to_owned(), operation_id.map(str::to_owned));
        let record = record.map(|r| r.as_str().to_owned());
        self.writer.run(Access::Write, "updating call", move |c| {
            // A failed statement undoes only itself in SQLite: the call is
            // still finished in this job.
            if let Some((n, end)) = end
                && let Err(e) = end.write(c, &id, n)
            {
                tracing::warn!(error = %e, "could not complete the attempt in the journal");
            }
            finish(c, &id, state, op.as_deref(), record.as_deref())
        })
    }
}

impl Journal for SqliteJournal {
    fn claim_key<'a>(&'a self, claim: &'a KeyClaim) -> BoxFuture<'a, JournalResult<Claimed>> {
        let claim = claim.clone();
        Box::pin(self.writer.run(Access::Write, "claiming the idempotency key", move |c| {
            let now = rfc3339_now();
            let inserted = c.prepare_cached("INSERT INTO recourse_calls (call_id, target, idempotency_key, payload, state, attempts, started_at, updated_at, caller_key, request_hash, owner, lease_until, caller)
                 VALUES (?1, ?2, ?3, 'null', 'in_flight', 0, ?4, ?4, ?3, ?5, ?6, ?7, ?8)
                 ON CONFLICT (caller_key) DO NOTHING")?.execute(params![claim.call_id, claim.target, claim.caller_key, now, claim.request_hash, claim.owner, lease_until(claim.lease), claim.caller])?;
            if inserted == 1 {
                return Ok(Claimed::New);
            }
            let existing = get(c, "caller_key", &claim.caller_key)?
                .ok_or(rusqlite::Error::QueryReturnedNoRows)?;
            Ok(Claimed::Exists(Box::new(existing)))
        }))
    }

    fn begin_call<'a>(&'a self, call: &'a NewCall) -> BoxFuture<'a, JournalResult<()>> {
        let call = call.clone();
        Box::pin(self.writer.run(Access::Write, "recording call", move |c| {
            let now = rfc3339_now();
            // A call that ended `failed` is begun again only when it sent
            // nothing (a run taking it over): the attempts its first run
            // recorded and never sent are forgotten with its count.
            c.prepare_cached("DELETE FROM recourse_attempts WHERE call_id = ?1
                AND EXISTS (SELECT 1 FROM recourse_calls WHERE call_id = ?1 AND state = 'failed')")?
                .execute(params![call.call_id])?;
            c.prepare_cached("INSERT INTO recourse_calls (call_id, target, capability, idempotency_key, reconcile, payload, state, attempts, started_at, updated_at, owner, lease_until, verification, caller)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'in_flight', 0, ?7, ?7, ?8, ?9, ?10, ?11)
                 ON CONFLICT (call_id) DO UPDATE SET target = excluded.target, capability = excluded.capability,
                   idempotency_key = excluded.idempotency_key, reconcile = excluded.reconcile, payload = excluded.payload,
                   updated_at = excluded.updated_at, owner = excluded.owner, lease_until = excluded.lease_until,
                   verification = excluded.verification, caller = excluded.caller, state = 'in_flight', record = NULL,
                   attempts = CASE WHEN recourse_calls.state = 'failed' THEN 0 ELSE recourse_calls.attempts END")?.execute(params![call.call_id, call.target, call.capability, call.idempotency_key, call.reconcile, call.payload.to_string(), now, call.owner, lease_until(call.lease), call.verification.as_ref().map(Value::to_string), call.caller])
            .map(drop)
        }))
    }
    fn begin_attempt<'a>(
        &'a self,
        call_id: &'a str,
        n: u32,
        payload: Option<&'a Value>,
    ) -> BoxFuture<'a, JournalResult<()>> {
        let (id, payload) = (call_id.to_owned(), payload.map(Value::to_string));
        Box::pin(self.writer.run(Access::Write, "recording attempt", move |c| {
            let now = rfc3339_now();
            c.prepare_cached("INSERT INTO recourse_attempts (call_id, n, payload, started_at) VALUES (?1, ?2, ?3, ?4)")?.execute(params![id, n, payload, now])?;
            c.prepare_cached("UPDATE recourse_calls SET attempts = ?2, updated_at = ?3 WHERE call_id = ?1")?.execute(params![id, n, now])
            .map(drop)
        }))
    }

    fn finish_attempt<'a>(
        &'a self,
        call_id: &'a str,
        n: u32,
        result: &'a AttemptResult,
    ) -> BoxFuture<'a, JournalResult<()>> {
        let id = call_id.to_owned();
        let end = AttemptEnd::of(result);
        Box::pin(
            self.writer
                .run(Access::Write, "completing attempt", move |c| {
                    end.write(c, &id, n)
                }),
        )
    }

    fn finish_call<'a>(
        &'a self,
        call_id: &'a str,
        state: CallState,
        operation_id: Option<&'a str>,
        record: Option<&'a RecordJson>,
    ) -> BoxFuture<'a, JournalResult<()>> {
        Box::pin(self.finish_job(None, call_id, state, operation_id, record))
    }

    fn finish_attempt_and_call<'a>(
        &'a self,
        (n, result): (u32, &'a AttemptResult),
        call_id: &'a str,
        state: CallState,
        operation_id: Option<&'a str>,
        record: Option<&'a RecordJson>,
    ) -> BoxFuture<'a, JournalResult<()>> {
        let end = Some((n, AttemptEnd::of(result)));
        Box::pin(self.finish_job(end, call_id, state, operation_id, record))
    }

    fn renew_lease<'a>(
        &'a self,
        call_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, JournalResult<bool>> {
        let (id, owner) = (call_id.to_owned(), owner.to_owned());
        Box::pin(self.writer.run(Access::Write, "renewing a lease", move |c| {
            let n = c.prepare_cached("UPDATE recourse_calls SET lease_until = ?3 WHERE call_id = ?1 AND owner = ?2 AND lease_until IS NOT NULL")?.execute(params![id, owner, lease_until(lease)])?;
            Ok(n == 1)
        }))
    }

    fn take_over<'a>(
        &'a self,
        call_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, JournalResult<bool>> {
        let (id, owner) = (call_id.to_owned(), owner.to_owned());
        Box::pin(
            self.writer
                .run(Access::Write, "taking a call over", move |c| {
                    let now = rfc3339_now();
                    let n = c
                        .prepare_cached(&take_over_sql(|n| format!("?{n}")))?
                        .execute(params![id, owner, lease_until(lease), now])?;
                    Ok(n == 1)
                }),
        )
    }

    fn prune<'a>(&'a self, before: &'a str, limit: u32) -> BoxFuture<'a, JournalResult<u64>> {
        let before = before.to_owned();
        Box::pin(
            self.writer
                .run(Access::Write, "pruning finished calls", move |c| {
                    let [attempts, calls] = prune_sql(|n| format!("?{n}"));
                    c.prepare_cached(&attempts)?
                        .execute(params![before, limit])?;
                    let n = c.prepare_cached(&calls)?.execute(params![before, limit])?;
                    Ok(n as u64)
                }),
        )
    }

    fn get<'a>(&'a self, call_id: &'a str) -> BoxFuture<'a, JournalResult<Option<JournalEntry>>> {
        let id = call_id.to_owned();
        Box::pin(self.writer.run(Access::Read, "reading a call", move |c| {
            get(c, "call_id", &id)
        }))
    }

    fn get_by_key<'a>(
        &'a self,
        caller_key: &'a str,
    ) -> BoxFuture<'a, JournalResult<Option<JournalEntry>>> {
        let key = caller_key.to_owned();
        Box::pin(self.writer.run(Access::Read, "reading a call", move |c| {
            get(c, "caller_key", &key)
        }))
    }

    fn get_by_approval<'a>(
        &'a self,
        approval_id: &'a str,
    ) -> BoxFuture<'a, JournalResult<Option<JournalEntry>>> {
        let id = approval_id.to_owned();
        Box::pin(
            self.writer
                .run(Access::Read, "reading an approval", move |c| {
                    get(c, "approval_id", &id)
                }),
        )
    }

    fn await_approval<'a>(&'a self, call: &'a AwaitingCall) -> BoxFuture<'a, JournalResult<()>> {
        let call = call.clone();
        Box::pin(self.writer.run(
            Access::Write,
            "recording a call awaiting approval",
            move |c| {
                let n = c
                    .prepare_cached(&await_sql(|n| format!("?{n}")))?
                    .execute(params![
                        call.call_id,
                        call.target,
                        call.capability,
                        call.payload.to_string(),
                        rfc3339_now(),
                        call.request_hash,
                        call.caller,
                        call.approval_id,
                        call.reason,
                        call.expires_at,
                        call.request.to_string(),
                        call.dispatcher,
                    ])?;
                // The key's call sent something already: it cannot wait for approval now.
                if n == 1 {
                    Ok(())
                } else {
                    Err(rusqlite::Error::QueryReturnedNoRows)
                }
            },
        ))
    }

    fn secret<'a>(
        &'a self,
        name: &'a str,
        fresh: &'a [u8],
    ) -> BoxFuture<'a, JournalResult<Vec<u8>>> {
        let (name, fresh) = (name.to_owned(), lower_hex(fresh));
        Box::pin(async move {
            let kept: String = self
                .writer
                .run(Access::Write, "keeping a secret", move |c| {
                    c.prepare_cached(&keep_secret_sql(|n| format!("?{n}")))?
                        .execute(params![name, fresh, rfc3339_now()])?;
                    c.prepare_cached(&secret_sql(|n| format!("?{n}")))?
                        .query_row(params![name], |row| row.get(0))
                })
                .await?;
            secret_bytes(&kept)
        })
    }

    fn decide_approval<'a>(
        &'a self,
        decision: &'a ApprovalDecision,
    ) -> BoxFuture<'a, JournalResult<bool>> {
        let d = decision.clone();
        Box::pin(
            self.writer
                .run(Access::Write, "deciding an approval", move |c| {
                    let (owner, lease, record) = decided_columns(&d.to);
                    let n = c
                        .prepare_cached(&decide_sql(&d.to, |n| format!("?{n}")))?
                        .execute(params![
                            d.approval_id,
                            d.to.approval_state().as_str(),
                            d.by,
                            d.at,
                            d.note,
                            d.to.call_state().as_str(),
                            owner,
                            lease,
                            record,
                            rfc3339_now(),
                        ])?;
                    Ok(n == 1)
                }),
        )
    }

    fn list<'a>(&'a self, query: &'a ListQuery) -> BoxFuture<'a, JournalResult<Vec<JournalEntry>>> {
        let query = query.clone();
        Box::pin(self.writer.run(Access::Read, "listing calls", move |c| {
            let mut stmt = c.prepare_cached(&list_sql(&query, |n| format!("?{n}")))?;
            let limit = query.limit.unwrap_or(MAX_LIST).min(MAX_LIST);
            let state = query.state.map(CallState::as_str);
            let rows = stmt.query_map(list_params(&state, &query, &limit).as_slice(), entry)?;
            rows.collect()
        }))
    }

    fn count<'a>(&'a self, seen: &'a Seen) -> BoxFuture<'a, JournalResult<StateCounts>> {
        let seen = seen.clone();
        Box::pin(self.writer.run(Access::Read, "counting calls", move |c| {
            let mut stmt = c.prepare_cached(&count_sql(&seen, |n| format!("?{n}")))?;
            let name: Vec<&dyn rusqlite::ToSql> = seen_name(&seen)
                .map(|n| n as &dyn rusqlite::ToSql)
                .into_iter()
                .collect();
            let rows = stmt.query_map(name.as_slice(), |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
            })?;
            let mut counts = StateCounts::default();
            for row in rows {
                let (state, n) = row?;
                counts.add_stored(&state, u64::try_from(n).unwrap_or(0));
            }
            Ok(counts)
        }))
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::{Connection, StatementStatus};

    use super::list_params;
    use crate::schema::{MIGRATIONS, list_sql};
    use recourse_core::journal::{CallState, ListQuery};

    /// A journal of many finished calls and one in flight, migrated as the
    /// journal migrates.
    fn journal_of(finished: usize) -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        for (_, sql) in MIGRATIONS {
            conn.execute_batch(sql).unwrap();
        }
        let mut insert = conn
            .prepare("INSERT INTO recourse_calls (call_id, target, payload, state, started_at, updated_at) VALUES (?1, 't', '{}', ?2, 'now', 'now')")
            .unwrap();
        for i in 0..finished {
            insert.execute((format!("c{i:06}"), "succeeded")).unwrap();
        }
        insert.execute(("c000500-left", "in_flight")).unwrap();
        drop(insert);
        conn
    }

    /// How many rows a list found, and the steps its statement took.
    fn cost(conn: &Connection, query: &ListQuery) -> (usize, i32) {
        let mut stmt = conn.prepare(&list_sql(query, |n| format!("?{n}"))).unwrap();
        let state = query.state.map(CallState::as_str);
        let rows = stmt
            .query_map(list_params(&state, query, &10).as_slice(), |_| Ok(()))
            .unwrap()
            .count();
        (rows, stmt.get_status(StatementStatus::VmStep))
    }

    #[test]
    fn a_list_reads_its_rows_from_an_index_however_big_the_journal() {
        let conn = journal_of(5_000);
        let queries = [
            (None, None, 10),
            (Some(CallState::InFlight), None, 1),
            (Some(CallState::Succeeded), None, 10),
            (None, Some("c000400"), 10),
            (Some(CallState::InFlight), Some("c000600"), 1),
            (Some(CallState::Succeeded), Some("c000400"), 10),
        ];
        for (state, before, expected) in queries {
            let query = ListQuery {
                state,
                limit: Some(10),
                before: before.map(str::to_owned),
                ..ListQuery::default()
            };
            let (rows, steps) = cost(&conn, &query);
            assert_eq!(rows, expected, "{query:?}");
            // Ten rows' worth of work, not five thousand rows'.
            assert!(steps < 500, "{query:?} took {steps} steps");
        }
    }
}
