//! The soak's figures, as BENCHMARKS.md records them.

use std::fmt;

use super::audit::Audit;
use super::chaos::Window;
use super::fleet::Life;
use super::load::{Answer, Ledger, What};

/// A replica process's resident memory: the first sample after warm-up, and the last.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rss {
    pub(super) replica: usize,
    /// When the process started, in seconds since the soak began.
    pub(super) started: f64,
    pub(super) first: (f64, u64),
    pub(super) last: (f64, u64),
}

impl Rss {
    /// `life`'s memory after `warm_up` seconds; `None` if it has no sample then.
    pub(super) fn of(life: &Life, warm_up: f64) -> Option<Self> {
        let first = *life
            .samples
            .iter()
            .find(|(t, _)| *t >= life.started + warm_up)?;
        let last = *life.samples.last()?;
        Some(Self {
            replica: life.replica,
            started: life.started,
            first,
            last,
        })
    }

    /// How much it grew from the first to the last, as a share of the first.
    pub(super) fn growth(&self) -> f64 {
        self.last.1 as f64 / self.first.1 as f64 - 1.0
    }

    /// How long it was watched after warm-up, in seconds.
    pub(super) fn watched(&self) -> f64 {
        self.last.0 - self.first.0
    }
}

/// How the load came back after one fault.
#[derive(Debug, Clone)]
pub(super) struct Recovery {
    pub(super) window: Window,
    /// Seconds from the service being back to the first fresh success of a
    /// request sent after it; `None` if none came.
    pub(super) first_success: Option<f64>,
    /// Answers refused or not given, of requests sent from the fault until that success.
    pub(super) refused: usize,
}

impl Recovery {
    /// `window` as the load's `answers` (sorted by when they were sent) saw it.
    pub(super) fn of(window: &Window, answers: &[Answer]) -> Self {
        let success = answers
            .iter()
            .find(|a| a.sent >= window.back && a.what == What::Succeeded);
        let until = success.map_or(f64::INFINITY, |a| a.answered);
        let refused = answers
            .iter()
            .filter(|a| a.sent >= window.began && a.sent <= until)
            .filter(|a| matches!(a.what, What::Refused(_) | What::Unreachable))
            .count();
        Self {
            window: window.clone(),
            first_success: success.map(|a| a.answered - window.back),
            refused,
        }
    }
}

/// Everything the soak measured.
pub(super) struct Figures<'a> {
    pub(super) secs: f64,
    pub(super) clients: usize,
    pub(super) faults: &'a [&'a str],
    pub(super) ledger: &'a Ledger,
    pub(super) audit: &'a Audit,
    pub(super) recoveries: Vec<Recovery>,
    pub(super) rss: Vec<Rss>,
}

impl fmt::Display for Figures<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (l, a) = (self.ledger, self.audit);
        let count = |what: fn(&What) -> bool| l.answers.iter().filter(|x| what(&x.what)).count();
        writeln!(
            f,
            "soak: {:.0} s, 3 replicas, {} clients, faults {}",
            self.secs,
            self.clients,
            self.faults.join(" ")
        )?;
        writeln!(
            f,
            "- calls: {} keyed exports, {} reads ({:?}); {} HTTP answers, of which {} retryable \
             refusals and {} unanswered, each sent again",
            l.exports.len(),
            l.reads.values().sum::<usize>(),
            l.reads,
            l.answers.len(),
            count(|w| matches!(w, What::Refused(_))),
            count(|w| *w == What::Unreachable),
        )?;
        writeln!(
            f,
            "- exports by final state: {:?}; records answered as replays: {}; unknown to the \
             client, then settled: {}; settled through reconcile at the end: {}; in flight at \
             the end: {}",
            a.states,
            l.exports.iter().filter(|e| e.replayed).count(),
            a.unknown_then_settled,
            a.settled_at_end,
            a.in_flight
        )?;
        writeln!(
            f,
            "- duplicates: {}; lost: {}; wrong: {}; exports committed at the tool: {}",
            a.duplicates,
            a.lost.len(),
            a.wrong.len(),
            a.committed
        )?;
        writeln!(
            f,
            "- failed exports by reason (never sent to the tool): {:?}; refused 503, sent again \
             and never run: {}",
            a.failed,
            a.resent_never_ran.len()
        )?;
        writeln!(
            f,
            "\n| fault | at | back after | first success after back | refused or unanswered meanwhile | killed replica's calls |"
        )?;
        writeln!(f, "|---|---|---|---|---|---|")?;
        for r in &self.recoveries {
            let w = &r.window;
            let success = r
                .first_success
                .map_or_else(|| "never".to_owned(), |s| format!("{s:.2} s"));
            let orphans = w.orphans.map_or_else(
                || "–".to_owned(),
                |(n, settled)| format!("{n} in flight, settled {settled:.1} s after the kill"),
            );
            writeln!(
                f,
                "| {} | {:.0} s | {:.1} s | {success} | {} | {orphans} |",
                w.what,
                w.began,
                w.back - w.began,
                r.refused
            )?;
        }
        writeln!(
            f,
            "\n| replica (process started) | RSS after warm-up | RSS at the end | growth |"
        )?;
        writeln!(f, "|---|---|---|---|")?;
        for r in &self.rss {
            writeln!(
                f,
                "| {} (from {:.0} s) | {:.1} MiB at {:.0} s | {:.1} MiB at {:.0} s | {:+.1} % |",
                r.replica + 1,
                r.started,
                r.first.1 as f64 / 1024.0,
                r.first.0,
                r.last.1 as f64 / 1024.0,
                r.last.0,
                r.growth() * 100.0
            )?;
        }
        writeln!(
            f,
            "\n{} exports were not answered a fresh record at once:",
            a.eventful.len()
        )?;
        for (_, line) in a.eventful.iter().take(EVENTFUL_SHOWN) {
            writeln!(f, "  {line}")?;
        }
        Ok(())
    }
}

/// How many of the exports not answered at once are listed.
const EVENTFUL_SHOWN: usize = 60;
