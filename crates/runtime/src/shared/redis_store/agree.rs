//! The fleet's scripts decide as the core machines do: the same random
//! sequence of deposits, withdrawals, admissions, failures and healthy
//! answers, at the same random times, fed to
//! [`RetryTokens`](recourse_core::budget::RetryTokens) and
//! [`BreakerTable`](recourse_core::breaker::BreakerTable) and to the Lua
//! scripts on a real Redis (`RECOURSE_TEST_REDIS_URL`), gets the same
//! answer at every step.
//!
//! The scripts run as shipped, but for their clock: `now_ms()` reads the
//! time the test hands in (the last argument) instead of the server's.
//! Every timing the scripts decide comes from that reading, so the times
//! may jump far past a breaker's or a budget's keeping time, though the
//! test takes milliseconds.

use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use recourse_core::breaker::{BreakerState, BreakerTable, forgotten_after};
use recourse_core::budget::RetryTokens;
use redis::Script;
use redis::aio::MultiplexedConnection;

use super::scripts::{ADMIT, BUDGET, FAILURE, SERVER_CLOCK};

/// The test's clock: the time handed in as the script's last argument.
const HANDED_IN_CLOCK: &str = "
local function now_ms()
  return tonumber(ARGV[#ARGV])
end
";

/// Where the test's time starts, in ms since the epoch (any would do).
const EPOCH_MS: u64 = 1_800_000_000_000;

/// Endpoints the sequence names.
const ENDPOINTS: usize = 3;

#[derive(Debug, Clone, Copy)]
struct Settings {
    ratio: f64,
    per_sec: f64,
    ttl_ms: u64,
    threshold: u32,
    open_for_ms: u64,
}

#[derive(Debug, Clone, Copy)]
enum Event {
    Deposit,
    Withdraw,
    Admit(usize),
    Failure(usize),
    Healthy(usize),
}

fn settings() -> impl Strategy<Value = Settings> {
    (
        prop::sample::select(vec![0.0, 0.1, 0.2, 0.5, 1.0, 2.5, 300.0, 1000.0]),
        prop::sample::select(vec![0.0, 0.5, 1.0, 2.0, 10.0]),
        1_000u64..=20_000,
        1u32..=5,
        1_000u64..=10_000,
    )
        .prop_map(
            |(ratio, per_sec, ttl_ms, threshold, open_for_ms)| Settings {
                ratio,
                per_sec,
                ttl_ms,
                threshold,
                open_for_ms,
            },
        )
}

/// Mostly steps of up to two seconds, some of none, a few past every
/// keeping time.
fn gap() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => Just(0u64),
        12 => 0u64..=2_000,
        4 => 2_000u64..=12_000,
        1 => 60_000u64..=400_000,
    ]
}

fn event() -> impl Strategy<Value = Event> {
    let endpoint = 0..ENDPOINTS;
    prop_oneof![
        3 => Just(Event::Deposit),
        3 => Just(Event::Withdraw),
        4 => endpoint.clone().prop_map(Event::Admit),
        4 => endpoint.clone().prop_map(Event::Failure),
        1 => endpoint.prop_map(Event::Healthy),
    ]
}

/// The scripts with the handed-in clock.
struct Scripts {
    budget: Script,
    admit: Script,
    failure: Script,
}

impl Scripts {
    fn new() -> Self {
        let clocked = |script: &str| {
            assert_eq!(script.matches(SERVER_CLOCK).count(), 1);
            Script::new(&script.replace(SERVER_CLOCK, HANDED_IN_CLOCK))
        };
        Self {
            budget: clocked(BUDGET),
            admit: clocked(ADMIT),
            failure: clocked(FAILURE),
        }
    }
}

/// A call of the budget's script.
struct BudgetOp<'a> {
    key: &'a str,
    op: &'static str,
    ratio: f64,
    per_sec: f64,
    ttl_ms: u64,
    kept_ms: u64,
    at: u64,
}

impl BudgetOp<'_> {
    async fn run(
        &self,
        conn: &mut MultiplexedConnection,
        script: &Script,
    ) -> redis::RedisResult<i64> {
        script
            .key(self.key)
            .arg(self.op)
            .arg(self.ratio)
            .arg(self.per_sec)
            .arg(self.ttl_ms)
            .arg(self.kept_ms)
            .arg(self.at)
            .invoke_async(conn)
            .await
    }
}

/// One sequence, on both sides, under a prefix of its own.
async fn agree(
    conn: &mut MultiplexedConnection,
    scripts: &Scripts,
    s: Settings,
    events: &[(u64, Event)],
) -> Result<(), TestCaseError> {
    let prefix = recourse_test_support::redis_prefix("agree");
    let budget_key = format!("{prefix}budget");
    let breaker = |e: usize| (format!("{prefix}breaker:{e}"), format!("{prefix}probe:{e}"));
    let open_for = Duration::from_millis(s.open_for_ms);
    let keep_ms = forgotten_after(open_for).as_millis() as u64;
    let mut tokens = RetryTokens::new(s.ratio, s.per_sec, Duration::from_millis(s.ttl_ms));
    let (ratio, per_sec) = (tokens.ratio(), tokens.min_per_sec());
    let kept_ms = tokens.kept_for().as_millis() as u64;
    let mut table = BreakerTable::new(s.threshold, open_for);
    let (t0, mut ms) = (Instant::now(), 0u64);
    for (step, &(gap, event)) in events.iter().enumerate() {
        ms += gap;
        let now = t0 + Duration::from_millis(ms);
        let at = EPOCH_MS + ms;
        let budget = |op| BudgetOp {
            key: &budget_key,
            op,
            ratio,
            per_sec,
            ttl_ms: s.ttl_ms,
            kept_ms,
            at,
        };
        let why = || format!("step {step}: {event:?} at {ms} ms");
        match event {
            Event::Deposit => {
                tokens.deposit(now);
                let granted = budget("deposit")
                    .run(conn, &scripts.budget)
                    .await
                    .map_err(|e| TestCaseError::fail(format!("{}: {e}", why())))?;
                prop_assert_eq!(granted, 1, "{}", why());
            }
            Event::Withdraw => {
                let core = tokens.withdraw(now);
                let granted = budget("withdraw")
                    .run(conn, &scripts.budget)
                    .await
                    .map_err(|e| TestCaseError::fail(format!("{}: {e}", why())))?;
                prop_assert_eq!(granted == 1, core, "{}", why());
            }
            Event::Admit(e) => {
                let core = table.admit(&e.to_string(), now);
                let (key, probe) = breaker(e);
                let admitted: i64 = scripts
                    .admit
                    .key(&key)
                    .key(&probe)
                    .arg(s.open_for_ms)
                    .arg(keep_ms)
                    .arg(at)
                    .invoke_async(conn)
                    .await
                    .map_err(|e| TestCaseError::fail(format!("{}: {e}", why())))?;
                prop_assert_eq!(admitted == 1, core, "{}", why());
            }
            Event::Failure(e) => {
                table.record_transient_failure(&e.to_string(), now);
                let (key, probe) = breaker(e);
                let failures: i64 = scripts
                    .failure
                    .key(&key)
                    .key(&probe)
                    .arg(s.threshold)
                    .arg(s.open_for_ms)
                    .arg(keep_ms)
                    .arg(at)
                    .invoke_async(conn)
                    .await
                    .map_err(|e| TestCaseError::fail(format!("{}: {e}", why())))?;
                if let BreakerState::Closed { failures: core } = table.state(&e.to_string(), now) {
                    prop_assert_eq!(failures, i64::from(core), "{}", why());
                }
            }
            Event::Healthy(e) => {
                table.record_healthy(&e.to_string());
                let (key, probe) = breaker(e);
                let _: i64 = redis::cmd("DEL")
                    .arg(&key)
                    .arg(&probe)
                    .query_async(conn)
                    .await
                    .map_err(|e| TestCaseError::fail(format!("{}: {e}", why())))?;
            }
        }
    }
    let mut keys = vec![budget_key.clone()];
    for e in 0..ENDPOINTS {
        let (key, probe) = breaker(e);
        keys.extend([key, probe]);
    }
    let _: i64 = redis::cmd("DEL")
        .arg(&keys)
        .query_async(conn)
        .await
        .unwrap_or_default();
    Ok(())
}

/// A runtime and a connection to the shared Redis; `None` (the test
/// skips, and says so) when `RECOURSE_TEST_REDIS_URL` is unset.
fn connect() -> Option<(tokio::runtime::Runtime, MultiplexedConnection)> {
    let url = recourse_test_support::shared_redis()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = redis::Client::open(url.as_str()).unwrap();
    let conn = runtime
        .block_on(client.get_multiplexed_async_connection())
        .unwrap();
    Some((runtime, conn))
}

/// The sequences random ones seldom reach, each where the two sides once
/// disagreed or could: a budget unused for its keeping time with more
/// earned than ten decay constants take away, a breaker whose failures are
/// a long time apart, one forgotten while its probes never report, a probe
/// presumed lost.
#[test]
fn the_scripts_agree_on_the_edges() {
    use Event::{Admit, Deposit, Failure, Withdraw};
    let Some((runtime, mut conn)) = connect() else {
        return;
    };
    let scripts = Scripts::new();
    let settings = |ratio, threshold| Settings {
        ratio,
        per_sec: 0.0,
        ttl_ms: 1_000,
        threshold,
        open_for_ms: 1_000,
    };
    let mut rich = vec![(0, Deposit); 60];
    rich.extend([(10_000, Withdraw), (0, Withdraw), (0, Withdraw)]);
    let edges: [(Settings, Vec<(u64, Event)>); 4] = [
        (settings(1000.0, 3), rich),
        (
            settings(0.0, 3),
            vec![
                (0, Failure(0)),
                (0, Failure(0)),
                (62_000, Failure(0)),
                (0, Admit(0)),
            ],
        ),
        (
            settings(0.0, 1),
            vec![
                (0, Failure(0)),
                (1_000, Admit(0)),
                (1_000, Admit(0)),
                (59_999, Admit(0)),
                (1, Admit(0)),
                (0, Admit(0)),
            ],
        ),
        (
            settings(0.0, 1),
            vec![
                (0, Failure(0)),
                (1_000, Admit(0)),
                (999, Admit(0)),
                (1, Admit(0)),
                (0, Admit(0)),
            ],
        ),
    ];
    for (s, events) in edges {
        if let Err(e) = runtime.block_on(agree(&mut conn, &scripts, s, &events)) {
            panic!("{s:?}: {e}");
        }
    }
}

/// The same events at the same times get the same decisions, from the core
/// machines and from the scripts.
#[test]
fn the_scripts_decide_as_the_core_machines_do() {
    let Some((runtime, conn)) = connect() else {
        return;
    };
    let scripts = Scripts::new();
    let mut runner = TestRunner::new(Config {
        cases: 96,
        ..Config::default()
    });
    let sequences = (settings(), prop::collection::vec((gap(), event()), 1..160));
    runner
        .run(&sequences, |(s, events)| {
            let mut conn = conn.clone();
            runtime.block_on(agree(&mut conn, &scripts, s, &events))
        })
        .unwrap();
}
