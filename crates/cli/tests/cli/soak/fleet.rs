//! The soak's three replicas: started, SIGKILLed, started again, and their
//! resident memory read from `/proc/PID/status` as they run.

use std::sync::{Arc, RwLock};

use crate::support::Gateway;

use super::load::Routes;

/// One process's life as a replica: its pid and its memory over time.
#[derive(Debug, Clone)]
pub(super) struct Life {
    pub(super) replica: usize,
    pub(super) pid: u32,
    /// When it started, in seconds since the soak began.
    pub(super) started: f64,
    /// `(seconds since the soak began, VmRSS in KiB)`.
    pub(super) samples: Vec<(f64, u64)>,
}

/// Three `recourse serve` processes on one journal and one Redis.
pub(super) struct Fleet {
    args: Vec<String>,
    replicas: Vec<Gateway>,
    routes: Routes,
    lives: Vec<Life>,
}

impl Fleet {
    /// `n` replicas on the journal at `journal` and the Redis at `redis`,
    /// each holding a call for `lease_ms` unless renewed.
    pub(super) fn start(n: usize, journal: &str, redis: &str, lease_ms: u64) -> Self {
        let args = [
            "--journal",
            journal,
            "--shared-state",
            redis,
            "--shared-state-prefix",
            "recourse-soak:",
            // A busy two-core machine misses a 50 ms bound now and then; the
            // soak measures the fleet, not that bound.
            "--shared-state-timeout-ms",
            "200",
            "--lease-ms",
            &lease_ms.to_string(),
        ]
        .map(str::to_owned)
        .to_vec();
        let mut fleet = Self {
            args,
            replicas: Vec::new(),
            routes: Arc::new(Vec::new()),
            lives: Vec::new(),
        };
        let mut urls = Vec::new();
        for replica in 0..n {
            let gw = fleet.spawn();
            fleet.lives.push(Life {
                replica,
                pid: gw.child.id(),
                started: 0.0,
                samples: Vec::new(),
            });
            urls.push(RwLock::new(gw.url.clone()));
            fleet.replicas.push(gw);
        }
        fleet.routes = Arc::new(urls);
        fleet
    }

    fn spawn(&self) -> Gateway {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        Gateway::spawn()
            .args(&args)
            .env(&[("RECOURSE_BACKOFF_MS", "50")])
            .env_remove("RECOURSE_SHARED_STATE")
            .keep_stderr()
            .start()
    }

    /// The replicas' URLs, as the load reads them.
    pub(super) fn routes(&self) -> Routes {
        Arc::clone(&self.routes)
    }

    /// A replica's URL now.
    pub(super) fn url(&self, replica: usize) -> String {
        self.replicas[replica].url.clone()
    }

    pub(super) fn pid(&self, replica: usize) -> u32 {
        self.replicas[replica].child.id()
    }

    /// What the replica's current process has written on stderr.
    pub(super) fn stderr(&self, replica: usize) -> String {
        self.replicas[replica].stderr()
    }

    /// SIGKILLs the replica's process (no drain, no goodbye) and reaps it.
    pub(super) fn kill(&mut self, replica: usize) {
        let gw = &mut self.replicas[replica];
        gw.child.kill().expect("SIGKILL");
        gw.child.wait().expect("reaping the killed replica");
    }

    /// Starts the replica again (a new process, on a new port), at `now`.
    pub(super) fn restart(&mut self, replica: usize, now: f64) {
        let gw = tokio::task::block_in_place(|| self.spawn());
        *self.routes[replica].write().unwrap() = gw.url.clone();
        self.lives.push(Life {
            replica,
            pid: gw.child.id(),
            started: now,
            samples: Vec::new(),
        });
        self.replicas[replica] = gw;
    }

    /// Reads every running replica's resident memory, at `now`.
    pub(super) fn sample_rss(&mut self, now: f64) {
        for (replica, gw) in self.replicas.iter().enumerate() {
            let pid = gw.child.id();
            let life = self
                .lives
                .iter_mut()
                .rfind(|l| l.replica == replica && l.pid == pid);
            if let (Some(life), Some(kib)) = (life, rss_kib(pid)) {
                life.samples.push((now, kib));
            }
        }
    }

    /// Every process that has been a replica, in the order they started.
    pub(super) fn lives(&self) -> &[Life] {
        &self.lives
    }
}

/// `VmRSS` of process `pid`, in KiB; `None` once it has gone.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}
