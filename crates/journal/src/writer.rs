//! The SQLite journal's writer: one thread owns the connection and commits
//! the operations waiting for it together.
//!
//! A durable commit costs an `fsync`, which takes the same time for one
//! operation as for fifty. Operations queue while a commit runs; the next
//! batch takes them all and runs them in one transaction, each inside a
//! savepoint of its own, so one that fails is undone alone and the others
//! stand. Nobody hears back before the commit: an operation reported done is
//! on disk, as when each committed by itself; when the commit fails, every
//! operation in the batch reports that failure. A batch of reads alone takes
//! no write lock, so other processes' readers and writers are not held up.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;

use rusqlite::Connection;

use recourse_core::journal::{JournalError, JournalErrorKind, JournalResult};

/// The most operations one transaction takes (a bound on its size and on
/// how long the first of them waits for the last).
const MAX_BATCH: usize = 256;

/// How many prepared statements the connection keeps.
const STATEMENT_CACHE: usize = 32;

/// Whether an operation may write. A batch of reads alone takes no write
/// lock, so another process reading the journal (`recourse journal list`)
/// never waits for this one's writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    Read,
    Write,
}

/// One operation for the writer.
struct Job {
    access: Access,
    /// Runs on the connection inside the batch's transaction, or is told why
    /// there is none (`Err`); hands back whether its changes stand, and how
    /// to answer once the batch's commit is known.
    run: Run,
}

/// A job's work: on the connection, or told why there is none.
type Run = Box<dyn FnOnce(Result<&Connection, &str>) -> Ran + Send>;

/// A job's answer to its caller, given the commit's failure if it failed.
type Answer = Box<dyn FnOnce(Option<&str>) + Send>;

/// What a job did: `ok` keeps its changes; `answer` is called with the
/// commit's failure, if it failed.
struct Ran {
    ok: bool,
    answer: Answer,
}

/// The sending side of the writer; the thread ends when every clone is gone.
#[derive(Debug, Clone)]
pub(super) struct Writer {
    jobs: mpsc::Sender<Job>,
}

impl Writer {
    /// Starts the thread that owns `conn`.
    pub(super) fn start(conn: Connection) -> JournalResult<Self> {
        // Room for every statement the writer and the journal's operations
        // cache (about fifteen), so none is parsed again for want of a slot.
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("recourse-journal".into())
            .spawn(move || {
                while let Ok(first) = queue.recv() {
                    let mut batch = vec![first];
                    while batch.len() < MAX_BATCH {
                        match queue.try_recv() {
                            Ok(job) => batch.push(job),
                            Err(_) => break,
                        }
                    }
                    commit(&conn, batch);
                }
            })
            .map_err(|e| {
                JournalError::caused(JournalErrorKind::Open, "starting the journal's writer", e)
            })?;
        Ok(Self { jobs })
    }

    /// Runs `f` in the next batch; its result once the batch is committed.
    pub(super) async fn run<T: Send + 'static>(
        &self,
        access: Access,
        context: &'static str,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> JournalResult<T> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.jobs
            .send(job(access, context, f, reply))
            .map_err(|_| {
                JournalError::new(
                    JournalErrorKind::Stopped,
                    context,
                    "the journal's writer has stopped",
                )
            })?;
        answer.await.map_err(|_| {
            JournalError::new(
                JournalErrorKind::Stopped,
                context,
                "the journal's writer stopped mid-operation",
            )
        })?
    }
}

/// `f` as a job whose result goes to `reply` after the commit.
/// What kind of failure `e` is: a write the database refused for what it
/// holds (a constraint: a key taken) is a conflict; any other, an operation
/// that failed.
fn refused_as(e: &rusqlite::Error) -> JournalErrorKind {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::ConstraintViolation) => JournalErrorKind::Conflict,
        _ => JournalErrorKind::Operation,
    }
}

fn job<T: Send + 'static>(
    access: Access,
    context: &'static str,
    f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    reply: tokio::sync::oneshot::Sender<JournalResult<T>>,
) -> Job {
    let run: Run = Box::new(move |conn: Result<&Connection, &str>| {
        let result = match conn {
            Ok(conn) => f(conn).map_err(|e| JournalError::caused(refused_as(&e), context, e)),
            Err(why) => Err(JournalError::new(JournalErrorKind::Operation, context, why)),
        };
        Ran {
            ok: result.is_ok(),
            answer: Box::new(move |commit_failed| {
                let result = match commit_failed {
                    Some(why) if result.is_ok() => {
                        Err(JournalError::new(JournalErrorKind::Operation, context, why))
                    }
                    _ => result,
                };
                // The caller may have stopped waiting; its loss.
                let _ = reply.send(result);
            }),
        }
    });
    Job { access, run }
}

/// Runs `batch` in one transaction, each job in a savepoint, commits, and
/// answers every job.
fn commit(conn: &Connection, batch: Vec<Job>) {
    // A writing batch takes the write lock up front, where SQLite's busy
    // timeout can wait for it; a deferred one could only fail on upgrading.
    let begin = if batch.iter().any(|job| job.access == Access::Write) {
        "BEGIN IMMEDIATE"
    } else {
        "BEGIN"
    };
    if let Err(e) = exec(conn, begin) {
        let why = format!("no transaction: {e}");
        for job in batch {
            ((job.run)(Err(&why)).answer)(None);
        }
        return;
    }
    let mut answers = Vec::with_capacity(batch.len());
    let mut jobs = batch.into_iter();
    while let Some(job) = jobs.next() {
        if let Err(e) = exec(conn, "SAVEPOINT job") {
            let why = format!("no savepoint: {e}");
            answers.push((job.run)(Err(&why)).answer);
            continue;
        }
        // A job that panics is undone like one that failed; its caller hears
        // that the writer stopped mid-operation.
        let ran = catch_unwind(AssertUnwindSafe(|| (job.run)(Ok(conn))));
        let ok = matches!(&ran, Ok(ran) if ran.ok);
        let undone = if ok {
            exec(conn, "RELEASE job")
        } else {
            exec(conn, "ROLLBACK TO job").and_then(|()| exec(conn, "RELEASE job"))
        };
        if let Ok(ran) = ran {
            answers.push(ran.answer);
        }
        if let Err(e) = undone {
            // The transaction is in a state we cannot vouch for: nothing in
            // it may count as written.
            let _ = exec(conn, "ROLLBACK");
            let why = format!("savepoint not closed: {e}");
            for answer in answers {
                answer(Some(&why));
            }
            for job in jobs {
                ((job.run)(Err(&why)).answer)(None);
            }
            return;
        }
    }
    let failed = exec(conn, "COMMIT").err().map(|e| {
        let _ = exec(conn, "ROLLBACK");
        format!("not committed: {e}")
    });
    for answer in answers {
        answer(failed.as_deref());
    }
}

/// Runs one statement of the batch's own (`BEGIN`, `SAVEPOINT`, `COMMIT`…)
/// from the connection's statement cache: parsed once, not once a job.
fn exec(conn: &Connection, sql: &'static str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (k TEXT PRIMARY KEY)")
            .unwrap();
        conn
    }

    fn insert(k: &'static str) -> impl FnOnce(&Connection) -> rusqlite::Result<()> + Send {
        move |c| c.execute("INSERT INTO t VALUES (?1)", [k]).map(drop)
    }

    fn keys(conn: &Connection) -> Vec<String> {
        let mut stmt = conn.prepare("SELECT k FROM t ORDER BY k").unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn a_failing_job_is_undone_alone_and_told_so() {
        let conn = table();
        let (a, mut a_answer) = tokio::sync::oneshot::channel();
        let (b, mut b_answer) = tokio::sync::oneshot::channel();
        let (c, mut c_answer) = tokio::sync::oneshot::channel();
        let two_then_fail = |c: &Connection| {
            c.execute("INSERT INTO t VALUES ('b')", [])?;
            c.execute("INSERT INTO t VALUES ('a')", []).map(drop)
        };
        commit(
            &conn,
            vec![
                job(Access::Write, "a", insert("a"), a),
                job(Access::Write, "b", two_then_fail, b),
                job(Access::Write, "c", insert("c"), c),
            ],
        );
        assert!(a_answer.try_recv().unwrap().is_ok());
        let failed = b_answer.try_recv().unwrap().unwrap_err().to_string();
        assert!(failed.contains("UNIQUE"), "{failed}");
        assert!(c_answer.try_recv().unwrap().is_ok());
        // b's first insert went with its failure.
        assert_eq!(keys(&conn), ["a", "c"]);
    }

    #[test]
    fn a_failed_commit_fails_every_job() {
        let conn = table();
        // A deferred foreign key fails only at the commit.
        conn.execute_batch(
            "PRAGMA foreign_keys = ON;
             CREATE TABLE p (k TEXT PRIMARY KEY);
             CREATE TABLE ch (k TEXT REFERENCES p (k) DEFERRABLE INITIALLY DEFERRED);",
        )
        .unwrap();
        let (a, mut a_answer) = tokio::sync::oneshot::channel();
        let (b, mut b_answer) = tokio::sync::oneshot::channel();
        let orphan = |c: &Connection| c.execute("INSERT INTO ch VALUES ('none')", []).map(drop);
        commit(
            &conn,
            vec![
                job(Access::Write, "a", insert("a"), a),
                job(Access::Write, "b", orphan, b),
            ],
        );
        for answer in [a_answer.try_recv(), b_answer.try_recv()] {
            let failed = answer.unwrap().unwrap_err().to_string();
            assert!(failed.contains("not committed"), "{failed}");
        }
        assert!(keys(&conn).is_empty(), "nothing of the batch stays");
    }

    #[test]
    fn a_panicking_job_is_undone_and_the_rest_stand() {
        let conn = table();
        let (a, mut a_answer) = tokio::sync::oneshot::channel();
        let (b, mut b_answer) = tokio::sync::oneshot::channel::<JournalResult<()>>();
        let panics = |c: &Connection| -> rusqlite::Result<()> {
            c.execute("INSERT INTO t VALUES ('b')", [])?;
            panic!("a bug in a job");
        };
        commit(
            &conn,
            vec![
                job(Access::Write, "b", panics, b),
                job(Access::Write, "a", insert("a"), a),
            ],
        );
        assert!(a_answer.try_recv().unwrap().is_ok());
        assert!(
            b_answer.try_recv().is_err(),
            "the panicked job has no answer"
        );
        assert_eq!(keys(&conn), ["a"]);
    }

    #[test]
    fn a_batch_of_reads_takes_no_write_lock() {
        let path =
            std::env::temp_dir().join(format!("recourse-writer-{}.db", uuid::Uuid::now_v7()));
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (k TEXT PRIMARY KEY); INSERT INTO t VALUES ('a');")
            .unwrap();
        // Another process's writer holds the write lock; nobody waits for it.
        let other = Connection::open(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        conn.busy_timeout(std::time::Duration::ZERO).unwrap();
        let (read, mut read_answer) = tokio::sync::oneshot::channel();
        commit(
            &conn,
            vec![job(Access::Read, "reading", |c| Ok(keys(c)), read)],
        );
        assert_eq!(read_answer.try_recv().unwrap().unwrap(), ["a"]);
        let (write, mut write_answer) = tokio::sync::oneshot::channel();
        commit(&conn, vec![job(Access::Write, "b", insert("b"), write)]);
        let refused = write_answer.try_recv().unwrap().unwrap_err().to_string();
        assert!(refused.contains("no transaction"), "{refused}");
        other.execute_batch("ROLLBACK").unwrap();
        drop((conn, other));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_operations_all_land() {
        let writer = Writer::start(table()).unwrap();
        let mut tasks = Vec::new();
        for i in 0..200 {
            let writer = writer.clone();
            tasks.push(tokio::spawn(async move {
                writer
                    .run(Access::Write, "inserting", move |c| {
                        c.execute("INSERT INTO t VALUES (?1)", [format!("k{i:03}")])
                            .map(drop)
                    })
                    .await
            }));
        }
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        let n = writer
            .run(Access::Read, "counting", |c| {
                c.query_row("SELECT COUNT(*) FROM t", [], |r| r.get::<_, i64>(0))
            })
            .await
            .unwrap();
        assert_eq!(n, 200);
    }
}
