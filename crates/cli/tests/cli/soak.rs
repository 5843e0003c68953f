//! A soak you can rerun: three `recourse serve` replicas sharing one
//! PostgreSQL journal and one Redis, under a mixed-fault load through the
//! reference tools, for minutes — while PostgreSQL is restarted twice (once
//! cleanly, once as a crash), Redis once, and one replica is SIGKILLed
//! mid-call and started again. Then every call is audited: each ends
//! `succeeded` or `failed` (an `unknown` only until it is settled), none is
//! lost, none ran twice, the journal agrees with what the tool committed and
//! with what the client was told, and no replica's memory grew.
//!
//! It is ignored by default (ten minutes). Run it with
//!
//! ```text
//! RECOURSE_SOAK_SECS=600 cargo test -p recourse-cli --test cli soak:: -- --ignored --nocapture
//! ```
//!
//! `RECOURSE_SOAK_SECS` shortens it (60 is a quick look; memory is judged
//! only over a minute or more after warm-up). It needs PostgreSQL's server
//! programs (`initdb`, `pg_ctl`: `/usr/lib/postgresql/*/bin`, or
//! `RECOURSE_TEST_PG_BIN`) and `redis-server`, and starts its own of each on
//! free ports, never touching a shared one.

mod audit;
mod chaos;
mod fleet;
mod load;
mod report;

use std::time::{Duration, Instant};

use recourse_reference_tools::{RunningTools, ToolsConfig};
use recourse_test_support::{OwnedPostgres, OwnedRedis};

use audit::audit;
use chaos::{SCHEDULE, Services};
use fleet::Fleet;
use load::Load;
use report::{Figures, Recovery, Rss};

/// The faults the reference tools inject, `TOOL:KIND:RATE`.
const FAULTS: [&str; 6] = [
    "exports:crash_after_commit:0.1",
    "exports:unavailable:0.1",
    "exports:slow:0.05",
    "stock:rate_limit:0.1",
    "stock:unavailable:0.05",
    "stock:slow:0.02",
];
const REPLICAS: usize = 3;
const CLIENTS: usize = 16;
/// The replicas' lease: how long a killed replica's calls wait to be settled.
const LEASE: Duration = Duration::from_secs(5);
/// How often the replicas' memory is read.
const SAMPLE_EVERY: Duration = Duration::from_secs(5);
/// The most a replica's memory may grow from warm-up to the end.
const MAX_GROWTH: f64 = 0.20;
/// The shortest watch after warm-up over which growth is judged, in seconds.
const JUDGED_OVER: f64 = 60.0;

/// How long the soak runs: `RECOURSE_SOAK_SECS`, ten minutes by default.
fn soak_secs() -> f64 {
    std::env::var("RECOURSE_SOAK_SECS")
        .ok()
        .filter(|s| !s.is_empty())
        .map_or(600.0, |s| {
            s.parse()
                .expect("RECOURSE_SOAK_SECS is a number of seconds")
        })
}

async fn reference_tools() -> RunningTools {
    let mut config = ToolsConfig::default()
        .with_slow_latency(Duration::from_secs(1))
        .with_retry_after(Duration::from_millis(200));
    for fault in FAULTS {
        config = config.with_fault(fault.parse().unwrap());
    }
    recourse_reference_tools::spawn(config).await.unwrap()
}

/// Reads the replicas' memory every [`SAMPLE_EVERY`] until `at` seconds into the soak.
async fn run_until(fleet: &mut Fleet, started: Instant, at: f64) {
    loop {
        let now = started.elapsed().as_secs_f64();
        fleet.sample_rss(now);
        if now >= at {
            return;
        }
        tokio::time::sleep(SAMPLE_EVERY.min(Duration::from_secs_f64(at - now))).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a soak of minutes (RECOURSE_SOAK_SECS, default 600); run by hand for BENCHMARKS.md"]
async fn soak_three_replicas_through_restarts_and_a_kill() {
    let secs = soak_secs();
    let warm_up = (secs / 10.0).clamp(20.0, 60.0);
    let mut postgres = OwnedPostgres::start();
    let mut redis = OwnedRedis::start();
    let tools = reference_tools().await;
    let lease_ms = u64::try_from(LEASE.as_millis()).unwrap();
    let mut fleet = Fleet::start(REPLICAS, &postgres.url(), &redis.url(), lease_ms);
    let started = Instant::now();
    let load = Load::start(fleet.routes(), &tools.base_url(), CLIENTS, started);

    let mut services = Services {
        postgres: &mut postgres,
        redis: &mut redis,
        fleet: &mut fleet,
        started,
        lease: LEASE,
    };
    let mut windows = Vec::new();
    for (share, fault) in SCHEDULE {
        run_until(services.fleet, started, secs * share).await;
        windows.push(services.inflict(fault).await);
    }
    run_until(services.fleet, started, secs).await;
    let ledger = load.stop().await;
    fleet.sample_rss(started.elapsed().as_secs_f64());

    let settle_within = LEASE * 2 + Duration::from_secs(10);
    let audit = audit(
        &ledger.exports,
        &postgres.url(),
        &tools,
        &fleet.url(0),
        settle_within,
    )
    .await;
    let rss: Vec<Rss> = fleet
        .lives()
        .iter()
        .filter_map(|l| Rss::of(l, warm_up))
        .collect();
    let figures = Figures {
        secs,
        clients: CLIENTS,
        faults: &FAULTS,
        ledger: &ledger,
        audit: &audit,
        recoveries: windows
            .iter()
            .map(|w| Recovery::of(w, &ledger.answers))
            .collect(),
        rss,
    };
    eprintln!("{figures}");

    judge(&figures, &fleet);
}

/// The soak's verdict, once its figures are out: each check in turn.
fn judge(f: &Figures<'_>, fleet: &Fleet) {
    let a = f.audit;
    assert!(f.ledger.exports.len() > 100, "the load hardly ran");
    assert!(
        f.ledger.exports.len() < 100_000,
        "more exports than the reference tools remember: their lookups cannot be trusted"
    );
    assert_eq!(a.in_flight, 0, "calls left in flight");
    assert!(
        a.lost.is_empty(),
        "lost: {:?}",
        &a.lost[..a.lost.len().min(20)]
    );
    assert_eq!(a.duplicates, 0, "duplicates");
    assert!(
        a.wrong.is_empty(),
        "wrong: {:?}",
        &a.wrong[..a.wrong.len().min(20)]
    );
    for r in &f.recoveries {
        assert!(
            r.first_success.is_some(),
            "no call succeeded after: {}",
            r.window.what
        );
    }
    for r in f.rss.iter().filter(|r| r.watched() >= JUDGED_OVER) {
        assert!(
            r.growth() <= MAX_GROWTH,
            "replica {}'s memory grew {:.1} % ({} → {} KiB)\n{}",
            r.replica + 1,
            r.growth() * 100.0,
            r.first.1,
            r.last.1,
            fleet.stderr(r.replica)
        );
    }
    assert!(
        a.resent_never_ran.is_empty(),
        "refused 503 JOURNAL_UNAVAILABLE (\"nothing was sent\"), sent again with the same key as \
         told, and never run: the key stayed claimed by the refused request: {:?}",
        a.resent_never_ran
    );
}
