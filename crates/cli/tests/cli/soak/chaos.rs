//! What goes wrong during the soak, and when: PostgreSQL restarted twice
//! (once cleanly, once as a crash), Redis once, and a replica SIGKILLed
//! mid-call and started again.

use std::time::{Duration, Instant};

use recourse_test_support::{OwnedPostgres, OwnedRedis, Shutdown};
use tokio_postgres::NoTls;

use super::fleet::Fleet;

/// How long each service stays down before it is started again.
const DOWN: Duration = Duration::from_secs(3);
/// The replica the soak kills.
pub(super) const VICTIM: usize = 1;

/// One thing that goes wrong.
#[derive(Debug, Clone, Copy)]
pub(super) enum Fault {
    Postgres(Shutdown),
    Redis,
    Replica,
}

/// When each fault happens, as a share of the soak's duration.
pub(super) const SCHEDULE: [(f64, Fault); 4] = [
    (0.15, Fault::Postgres(Shutdown::Fast)),
    (0.35, Fault::Redis),
    (0.55, Fault::Replica),
    (0.75, Fault::Postgres(Shutdown::Immediate)),
];

/// A fault as it happened, in seconds since the soak began.
#[derive(Debug, Clone)]
pub(super) struct Window {
    pub(super) what: String,
    /// When it went down.
    pub(super) began: f64,
    /// When it was back (started again and answering).
    pub(super) back: f64,
    /// For the kill: the calls it left in flight, and how long after the
    /// kill the last of them was settled.
    pub(super) orphans: Option<(usize, f64)>,
}

/// What the faults act on.
pub(super) struct Services<'a> {
    pub(super) postgres: &'a mut OwnedPostgres,
    pub(super) redis: &'a mut OwnedRedis,
    pub(super) fleet: &'a mut Fleet,
    pub(super) started: Instant,
    /// The replicas' lease, for how soon a killed one's calls must be settled.
    pub(super) lease: Duration,
}

impl Services<'_> {
    fn now(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Makes `fault` happen, and reports it.
    pub(super) async fn inflict(&mut self, fault: Fault) -> Window {
        let began = self.now();
        let mut orphans = None;
        let what = match fault {
            Fault::Postgres(how) => {
                tokio::task::block_in_place(|| self.postgres.stop(how));
                tokio::time::sleep(DOWN).await;
                tokio::task::block_in_place(|| self.postgres.resume());
                format!("PostgreSQL stopped ({how:?}) and started")
            }
            Fault::Redis => {
                self.redis.stop();
                tokio::time::sleep(DOWN).await;
                tokio::task::block_in_place(|| self.redis.resume());
                "Redis killed and started".to_owned()
            }
            Fault::Replica => {
                orphans = Some(self.kill_mid_call().await);
                "replica SIGKILLed mid-call and started".to_owned()
            }
        };
        let back = match orphans {
            Some((_, _, back)) => back,
            None => self.now(),
        };
        Window {
            what,
            began,
            back,
            orphans: orphans.map(|(n, settled, _)| (n, settled)),
        }
    }

    /// Kills [`VICTIM`] while it has a call in flight, starts it again, and
    /// waits until every call it left in flight is settled: how many there
    /// were, how long after the kill the last was settled, and when the
    /// replica was back.
    async fn kill_mid_call(&mut self) -> (usize, f64, f64) {
        let url = self.postgres.url();
        let owner = format!("recourse-{}-%", self.fleet.pid(VICTIM));
        let in_flight =
            "SELECT call_id FROM recourse_calls WHERE state = 'in_flight' AND owner LIKE $1";
        let waiting = Instant::now();
        while journal(&url, in_flight, &owner).await.is_empty() {
            assert!(
                waiting.elapsed() < Duration::from_secs(30),
                "replica {VICTIM} never had a call in flight"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let killed = Instant::now();
        self.fleet.kill(VICTIM);
        let orphans = journal(&url, in_flight, &owner).await;
        tokio::time::sleep(DOWN).await;
        let now = self.now();
        self.fleet.restart(VICTIM, now);
        let back = self.now();
        // Settled by a sweeper within a lease and one sweep interval (half a
        // lease, at least a second); the bound allows two seconds more for
        // a busy machine.
        let bound =
            self.lease + (self.lease / 2).max(Duration::from_secs(1)) + Duration::from_secs(2);
        let still =
            "SELECT call_id FROM recourse_calls WHERE state = 'in_flight' AND call_id = ANY($1)";
        loop {
            let left = journal_any(&url, still, &orphans).await;
            if left.is_empty() {
                break;
            }
            assert!(
                killed.elapsed() < bound,
                "{} call(s) of the killed replica still in flight {:.1} s after the kill \
                 (lease {:?}): {left:?}",
                left.len(),
                killed.elapsed().as_secs_f64(),
                self.lease
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        (orphans.len(), killed.elapsed().as_secs_f64(), back)
    }
}

/// The first column of `sql` (one text parameter) in the journal at `url`.
async fn journal(url: &str, sql: &str, param: &str) -> Vec<String> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.unwrap();
    tokio::spawn(connection);
    let rows = client.query(sql, &[&param]).await.unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}

/// The same, with a text-array parameter.
async fn journal_any(url: &str, sql: &str, param: &[String]) -> Vec<String> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.unwrap();
    tokio::spawn(connection);
    let rows = client.query(sql, &[&param]).await.unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}
