//! After the soak: what the journal says of every call, checked against what
//! the load was told and against what the tool actually committed.
//!
//! - Every call ends `succeeded` or `failed`: none left `in_flight`; one
//!   left `unknown` is settled through the reconcile route, and counted.
//! - 0 lost: every export the load sent got a record, and the journal holds
//!   a call for its key.
//! - 0 duplicates: one journaled call per key, and every export the tool
//!   committed belongs to a key whose call `succeeded`.
//! - 0 wrong: a call the journal says `succeeded` is committed at the tool,
//!   one it says `failed` is not; and a client told `succeeded` or `failed`
//!   was told what the journal says.
//! - 0 resends that never ran: a 503 says nothing was sent and the same
//!   request may be sent again; a call the client was refused so, sent
//!   again and never saw run (it failed without an attempt) is counted.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use recourse_reference_tools::RunningTools;
use serde_json::Value;
use tokio_postgres::NoTls;

use super::load::{Export, What};

/// What the audit found.
#[derive(Debug, Default)]
pub(super) struct Audit {
    /// The journal's final states of the load's exports.
    pub(super) states: BTreeMap<String, usize>,
    /// Calls still in flight once every lease and sweep had run out.
    pub(super) in_flight: usize,
    /// Calls `unknown` at the end, settled by the reconcile route.
    pub(super) settled_at_end: usize,
    /// Exports whose client got an `unknown` record and whose call the
    /// journal has since settled.
    pub(super) unknown_then_settled: usize,
    /// Exports that got no record, or whose key the journal lacks.
    pub(super) lost: Vec<String>,
    /// Keys with more than one journaled call, and commits no succeeded key accounts for.
    pub(super) duplicates: usize,
    /// Disagreements between the journal, the tool and the client.
    pub(super) wrong: Vec<String>,
    /// Exports the tool committed.
    pub(super) committed: usize,
    /// Why the `failed` exports failed (the record's `reason`, and its
    /// error's code), and how many of them never reached the tool.
    pub(super) failed: BTreeMap<String, (usize, usize)>,
    /// Exports refused with a 503, sent again as told, and never sent to
    /// the tool: the journal says they failed without an attempt.
    pub(super) resent_never_ran: Vec<String>,
    /// Every export the client did not get at once a fresh record for:
    /// what it was answered, and what the journal says of it — those that
    /// did not end `succeeded`, or were answered a replay, first.
    pub(super) eventful: Vec<(bool, String)>,
}

/// A journaled call, as the audit reads it.
struct Call {
    state: String,
    attempts: i32,
    /// Its record, unless it succeeded.
    record: Option<Value>,
}

impl Call {
    /// `reason (CODE)` of an unsuccessful record.
    fn why(&self) -> String {
        let record = self.record.as_ref().unwrap_or(&Value::Null);
        format!(
            "{} ({})",
            record["reason"].as_str().unwrap_or("no reason"),
            record["error"]["code"].as_str().unwrap_or("no error")
        )
    }
}

/// Audits `exports` against the journal at `journal` and the `tools`,
/// settling leftovers through the replica at `replica`.
pub(super) async fn audit(
    exports: &[Export],
    journal: &str,
    tools: &RunningTools,
    replica: &str,
    settle_within: Duration,
) -> Audit {
    let mut audit = Audit::default();
    audit
        .settle_leftovers(journal, replica, settle_within)
        .await;
    let calls = calls_by_key(journal).await;
    let truth = committed_keys(tools, exports).await;
    audit.committed = tools.exports_committed();
    let mut succeeded = 0;
    for export in exports {
        let Some(found) = calls.get(&export.key) else {
            audit
                .lost
                .push(format!("{}: no call in the journal", export.key));
            continue;
        };
        audit.duplicates += found.len() - 1;
        let at_tool = truth.get(&export.key).map_or("(no answer)", String::as_str);
        succeeded += usize::from(audit.check(export, &found[0], at_tool));
    }
    audit.duplicates += audit.committed.saturating_sub(succeeded);
    audit.eventful.sort();
    audit
}

impl Audit {
    /// Waits until no call is in flight (for at most `within`), then
    /// settles every `unknown` one through the replica at `replica`.
    async fn settle_leftovers(&mut self, journal: &str, replica: &str, within: Duration) {
        let waiting = Instant::now();
        while count(journal, "in_flight").await > 0 && waiting.elapsed() < within {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        self.in_flight = count(journal, "in_flight").await;
        let http = reqwest::Client::new();
        for call_id in ids(journal, "unknown").await {
            let resp = http
                .post(format!("{replica}/v1/calls/{call_id}/reconcile"))
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200, "reconciling {call_id}");
            self.settled_at_end += 1;
        }
    }

    /// Checks one export against its journaled `call` and the tool's word
    /// `at_tool`: whether it succeeded and the tool committed it.
    fn check(&mut self, export: &Export, call: &Call, at_tool: &str) -> bool {
        let (key, state) = (&export.key, call.state.as_str());
        *self.states.entry(state.to_owned()).or_default() += 1;
        if state == "failed" {
            let tally = self.failed.entry(call.why()).or_default();
            tally.0 += 1;
            tally.1 += usize::from(call.attempts == 0);
            if call.attempts == 0 && export.answers.contains(&What::Refused(503)) {
                self.resent_never_ran.push(key.clone());
            }
        }
        if export.answers.len() != 1 || export.replayed {
            let usual = state == "succeeded" && !export.replayed;
            self.eventful.push((usual, eventful(export, call)));
        }
        match export.outcome.as_deref() {
            None => self.lost.push(format!("{key}: no record came back")),
            Some("unknown") if state != "unknown" => self.unknown_then_settled += 1,
            Some(told) if told != state => self.wrong.push(format!(
                "{key}: the client was told {told}, the journal says {state}"
            )),
            Some(_) => {}
        }
        match (state, at_tool) {
            ("succeeded", "committed") => true,
            ("failed", "not_committed") => false,
            _ => {
                let wrong = format!("{key}: the journal says {state}, the tool {at_tool}");
                self.wrong.push(wrong);
                false
            }
        }
    }
}

/// What an export not answered at once was answered, and what the journal says.
fn eventful(export: &Export, call: &Call) -> String {
    format!(
        "{}: answered {:?} → {:?}{}; the journal: {} after {} attempt(s){}",
        export.key,
        export.answers,
        export.outcome,
        if export.replayed { " (replayed)" } else { "" },
        call.state,
        call.attempts,
        if call.state == "succeeded" {
            String::new()
        } else {
            format!(", {}", call.why())
        },
    )
}

async fn client(journal: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(journal, NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

async fn count(journal: &str, state: &str) -> usize {
    let n: i64 = client(journal)
        .await
        .query_one(
            "SELECT count(*) FROM recourse_calls WHERE state = $1",
            &[&state],
        )
        .await
        .unwrap()
        .get(0);
    usize::try_from(n).unwrap()
}

async fn ids(journal: &str, state: &str) -> Vec<String> {
    client(journal)
        .await
        .query(
            "SELECT call_id FROM recourse_calls WHERE state = $1",
            &[&state],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Every keyed call, by key.
async fn calls_by_key(journal: &str) -> HashMap<String, Vec<Call>> {
    let rows = client(journal)
        .await
        .query(
            "SELECT caller_key, state, attempts, CASE WHEN state <> 'succeeded' THEN record END
             FROM recourse_calls WHERE caller_key IS NOT NULL",
            &[],
        )
        .await
        .unwrap();
    let mut calls: HashMap<String, Vec<Call>> = HashMap::new();
    for row in rows {
        let record: Option<String> = row.get(3);
        calls.entry(row.get(0)).or_default().push(Call {
            state: row.get(1),
            attempts: row.get(2),
            record: record.and_then(|r| serde_json::from_str(&r).ok()),
        });
    }
    calls
}

/// What the tool's lookup says of each export's key (`committed`,
/// `pending`, `not_committed`), asked eight at a time.
async fn committed_keys(tools: &RunningTools, exports: &[Export]) -> HashMap<String, String> {
    let keys: Vec<String> = exports.iter().map(|e| e.key.clone()).collect();
    let mut tasks = tokio::task::JoinSet::new();
    for chunk in keys.chunks(keys.len().div_ceil(8).max(1)) {
        let (chunk, base) = (chunk.to_vec(), tools.base_url());
        tasks.spawn(async move {
            let http = reqwest::Client::new();
            let mut found = Vec::with_capacity(chunk.len());
            for key in chunk {
                let seen: Value = http
                    .get(format!("{base}/api/exports/{key}"))
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                let state = seen["data"]["state"].as_str().unwrap_or("?").to_owned();
                found.push((key, state));
            }
            found
        });
    }
    let mut truth = HashMap::new();
    while let Some(found) = tasks.join_next().await {
        truth.extend(found.unwrap());
    }
    truth
}
