//! Sending the battery to each tool, one request at a time, and scoring it.

use std::time::{SystemTime, UNIX_EPOCH};

use recourse::target::Url;
use serde_json::json;

use super::answer::{Answer, Reply};
use super::battery::{Body, Over, Probe, ProbeKind, battery};
use super::check::{CheckId, CheckResult};
use super::http::HttpChannel;
use super::mcp::McpChannel;
use super::report::ToolCard;
use super::subject::{Address, Subject};
use super::{replay, score};

/// How the battery reaches the tools.
pub(crate) enum Channel {
    Http(HttpChannel),
    Mcp(McpChannel),
}

impl Channel {
    pub(crate) fn over(&self) -> Over {
        match self {
            Self::Http(_) => Over::Http,
            Self::Mcp(_) => Over::Mcp,
        }
    }

    async fn send(&self, subject: &Subject, body: &Body, key: Option<&str>) -> Reply {
        match (self, &subject.address) {
            (Self::Http(c), Address::Http { method, url }) => c.send(method, url, body, key).await,
            (Self::Mcp(c), Address::Mcp(tool)) => c.send(tool, body, key).await,
            _ => Reply::NoAnswer("this tool is not reachable over this transport".to_owned()),
        }
    }
}

/// Runs batteries and counts what it sent.
pub(crate) struct Runner {
    channel: Channel,
    allow_writes: bool,
    key_prefix: String,
    keys_issued: u64,
    /// Requests sent so far.
    pub(crate) sent: usize,
}

impl Runner {
    pub(crate) fn new(channel: Channel, allow_writes: bool) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Self {
            channel,
            allow_writes,
            key_prefix: format!("recourse-probe-{:x}-{nanos:x}", std::process::id()),
            keys_issued: 0,
            sent: 0,
        }
    }

    pub(crate) fn over(&self) -> Over {
        self.channel.over()
    }

    /// The scorecard of one tool: every check skipped when it is not probed
    /// (one that may write without `--allow-writes`, or an endpoint the
    /// battery cannot use).
    pub(crate) async fn probe(&mut self, subject: &Subject) -> ToolCard {
        let not_probed = subject.not_probed.clone().or_else(|| {
            let why = subject.may_write.as_ref().filter(|_| !self.allow_writes)?;
            Some(format!(
                "it may write ({why}): probed only with --allow-writes"
            ))
        });
        if let Some(why) = not_probed {
            let checks = CheckId::ALL
                .iter()
                .map(|&c| CheckResult::skipped(c, format!("not probed: {why}")))
                .collect();
            return ToolCard::new(subject, Some(why), checks, Vec::new());
        }
        let mut answers = Vec::new();
        for probe in battery(&subject.schema, &subject.baseline, self.over()) {
            answers.push(self.send(subject, &probe).await);
        }
        let replay = if !subject.idempotent {
            let sequence = self.replay(subject).await;
            let verdict = replay::judge(&sequence);
            answers.extend(sequence);
            verdict
        } else {
            CheckResult::skipped(
                CheckId::Replay,
                "declared idempotent (or read-only): a repeat is harmless by its own account",
            )
        };
        let checks = score::score(&answers, self.over(), replay);
        ToolCard::new(subject, None, checks, answers)
    }

    /// The replay sequence, cut short when the first write does not succeed.
    async fn replay(&mut self, subject: &Subject) -> Vec<Answer> {
        let key = self.fresh_key();
        let mut answers = Vec::new();
        for probe in replay::probes(&subject.schema, &subject.baseline) {
            let reply = self.channel.send(subject, &probe.body, Some(&key)).await;
            self.sent += 1;
            let answer = Answer::new(&probe, reply);
            let succeeded = answer.response().is_some_and(|r| r.parsed.success);
            answers.push(answer);
            if probe.kind == ProbeKind::ReplayFirst && !succeeded {
                break;
            }
        }
        answers
    }

    /// A route the tool server does not have, `POST`ed a JSON object.
    pub(crate) async fn probe_unknown_route(&mut self, url: Url) -> ToolCard {
        let subject = Subject {
            name: "(unknown route)".to_owned(),
            address: Address::Http {
                method: reqwest::Method::POST,
                url,
            },
            schema: json!({}),
            may_write: None,
            idempotent: true,
            not_probed: None,
            baseline: json!({}),
        };
        let probe = Probe {
            kind: ProbeKind::UnknownRoute,
            field: None,
            body: Body::Json(json!({})),
        };
        let answers = vec![self.send(&subject, &probe).await];
        let replay = CheckResult::skipped(CheckId::Replay, "not a tool");
        let checks = score::score(&answers, self.over(), replay);
        ToolCard::new(&subject, None, checks, answers)
    }

    /// Sends one probe; a write tool's probes each carry a fresh key, as
    /// recourse's own calls to it would.
    async fn send(&mut self, subject: &Subject, probe: &Probe) -> Answer {
        let key = subject.writes().then(|| self.fresh_key());
        let reply = self
            .channel
            .send(subject, &probe.body, key.as_deref())
            .await;
        self.sent += 1;
        Answer::new(probe, reply)
    }

    fn fresh_key(&mut self) -> String {
        self.keys_issued += 1;
        format!("{}-{}", self.key_prefix, self.keys_issued)
    }
}
