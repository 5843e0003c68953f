//! The soak's load: clients sending keyed exports and idempotent reads
//! round-robin through the replicas, as an agent with a retry loop would.
//!
//! A keyed export is one logical call under one key: a retryable refusal
//! (409 `CALL_IN_PROGRESS`, 503 `JOURNAL_UNAVAILABLE`, 429) or no answer at
//! all (a replica that is down, or killed mid-request) sends the same
//! request with the same key again, to the next replica, until a record
//! comes back. Anything else is the load's answer, lost unless a record.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long a client waits between logical calls.
const THINK: Duration = Duration::from_millis(100);
/// How long one request may take before the client sends it again.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a logical call is retried before the client gives it up (lost).
const GIVE_UP: Duration = Duration::from_secs(180);
/// The longest wait between two sends of one logical call.
const MAX_WAIT: Duration = Duration::from_secs(1);
/// Of every ten logical calls, how many are exports (the rest are reads).
const EXPORTS_IN_TEN: u64 = 7;

/// The replicas' URLs, one slot each; a restarted replica takes its slot's new URL.
pub(super) type Routes = Arc<Vec<RwLock<String>>>;

/// What one HTTP answer (or its absence) was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum What {
    /// 200 with a fresh record whose outcome is `succeeded`.
    Succeeded,
    /// 200 with a record of another outcome, or a replayed one.
    Record,
    /// A retryable refusal, sent again.
    Refused(u16),
    /// Another status: the load's final answer, and lost.
    Rejected(u16),
    /// No answer (refused connection, reset, timeout), sent again.
    Unreachable,
}

/// One answer, its times in seconds since the load started.
#[derive(Debug, Clone, Copy)]
pub(super) struct Answer {
    pub(super) sent: f64,
    pub(super) answered: f64,
    pub(super) what: What,
}

/// How one logical export ended, as the client saw it.
#[derive(Debug, Clone)]
pub(super) struct Export {
    pub(super) key: String,
    /// The record's `outcome`, or `None` when no record came (lost).
    pub(super) outcome: Option<String>,
    /// Whether the record was a replay of the key's first call.
    pub(super) replayed: bool,
    /// What each send of it was answered, in order.
    pub(super) answers: Vec<What>,
}

/// What the load did: every export, the reads' outcomes and every answer.
#[derive(Debug, Default)]
pub(super) struct Ledger {
    pub(super) exports: Vec<Export>,
    /// Read outcomes (`succeeded`, `failed`, `unknown`, `lost`) and their counts.
    pub(super) reads: std::collections::BTreeMap<String, usize>,
    pub(super) answers: Vec<Answer>,
}

/// The running load.
pub(super) struct Load {
    stop: Arc<AtomicBool>,
    clients: Vec<tokio::task::JoinHandle<Ledger>>,
}

/// What every client shares.
struct Shared {
    routes: Routes,
    next: AtomicUsize,
    tools: String,
    started: Instant,
    http: reqwest::Client,
}

impl Load {
    /// `clients` clients calling the reference tools at `tools` through `routes`.
    pub(super) fn start(routes: Routes, tools: &str, clients: usize, started: Instant) -> Self {
        let shared = Arc::new(Shared {
            routes,
            next: AtomicUsize::new(0),
            tools: tools.to_owned(),
            started,
            http: reqwest::Client::builder()
                .timeout(REQUEST_TIMEOUT)
                .build()
                .unwrap(),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let clients = (0..clients)
            .map(|c| tokio::spawn(client(c, Arc::clone(&shared), Arc::clone(&stop))))
            .collect();
        Self { stop, clients }
    }

    /// Lets every client finish its logical call, and gathers what they did.
    pub(super) async fn stop(self) -> Ledger {
        self.stop.store(true, Ordering::SeqCst);
        let mut all = Ledger::default();
        for client in self.clients {
            let ledger = client.await.expect("a load client panicked");
            all.exports.extend(ledger.exports);
            for (outcome, n) in ledger.reads {
                *all.reads.entry(outcome).or_default() += n;
            }
            all.answers.extend(ledger.answers);
        }
        all.answers.sort_by(|a, b| a.sent.total_cmp(&b.sent));
        all
    }
}

async fn client(c: usize, shared: Arc<Shared>, stop: Arc<AtomicBool>) -> Ledger {
    let mut ledger = Ledger::default();
    let mut n: u64 = 0;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        if n % 10 < EXPORTS_IN_TEN {
            let key = format!("soak-{c}-{n}");
            let format = ["pdf", "docx", "csv"][(n % 3) as usize];
            let body = json!({
                "url": format!("{}/api/exports", shared.tools),
                "payload": {"source_id": "sales-2024", "format": format},
                "idempotency_key": key,
            });
            let sent = ledger.answers.len();
            let record = shared.send(&body, &mut ledger.answers).await;
            ledger.exports.push(Export {
                key,
                outcome: record.as_ref().map(outcome),
                replayed: record.as_ref().is_some_and(|r| r["replayed"] == true),
                answers: ledger.answers[sent..].iter().map(|a| a.what).collect(),
            });
        } else {
            let symbol = ["TSLA", "MSFT", "AAPL"][(n % 3) as usize];
            let body = json!({
                "url": format!("{}/api/stock/quote", shared.tools),
                "payload": {"symbol": symbol},
                "idempotent": true,
            });
            let record = shared.send(&body, &mut ledger.answers).await;
            let outcome = record.as_ref().map_or_else(|| "lost".to_owned(), outcome);
            *ledger.reads.entry(outcome).or_default() += 1;
        }
        tokio::time::sleep(THINK).await;
    }
    ledger
}

fn outcome(record: &Value) -> String {
    record["outcome"].as_str().unwrap_or("(none)").to_owned()
}

impl Shared {
    /// The next replica's URL, round-robin.
    fn next_replica(&self) -> String {
        let slot = self.next.fetch_add(1, Ordering::Relaxed) % self.routes.len();
        self.routes[slot].read().unwrap().clone()
    }

    fn now(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Sends `body` until a record comes back (`Some`) or a final refusal,
    /// or [`GIVE_UP`] passes (`None`).
    async fn send(&self, body: &Value, answers: &mut Vec<Answer>) -> Option<Value> {
        let first = Instant::now();
        loop {
            let sent = self.now();
            let resp = self
                .http
                .post(format!("{}/v1/calls", self.next_replica()))
                .json(body)
                .send()
                .await;
            let (what, wait, record) = match resp {
                Ok(resp) => read(resp).await,
                Err(_) => (What::Unreachable, Duration::from_millis(100), None),
            };
            answers.push(Answer {
                sent,
                answered: self.now(),
                what,
            });
            match what {
                What::Succeeded | What::Record => return record,
                What::Rejected(_) => return None,
                What::Refused(_) | What::Unreachable if first.elapsed() > GIVE_UP => return None,
                What::Refused(_) | What::Unreachable => tokio::time::sleep(wait).await,
            }
        }
    }
}

/// What an answer was, how long to wait before sending again, and its record.
async fn read(resp: reqwest::Response) -> (What, Duration, Option<Value>) {
    let status = resp.status().as_u16();
    let wait = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok()?.parse().ok())
        .map_or(Duration::from_millis(100), Duration::from_secs)
        .min(MAX_WAIT);
    let body = resp.json::<Value>().await;
    match (status, body) {
        (200, Ok(record)) => {
            let fresh = record["replayed"] != true && record["outcome"] == "succeeded";
            let what = if fresh { What::Succeeded } else { What::Record };
            (what, wait, Some(record))
        }
        // The body was cut off: the replica went away while answering.
        (200, Err(_)) => (What::Unreachable, wait, None),
        (409 | 429 | 502 | 503 | 504, _) => (What::Refused(status), wait, None),
        (status, _) => (What::Rejected(status), wait, None),
    }
}
