//! A PostgreSQL cluster of the test's own, to stop and start mid-run.
//!
//! Tests that restart PostgreSQL must not restart the shared one other tests
//! use: [`OwnedPostgres`] makes a fresh cluster (`initdb`, trust
//! authentication) in a temporary directory and runs it on a free loopback
//! port, its socket in that directory too; it is stopped and removed when
//! dropped. PostgreSQL refuses to run as root, so under root its programs
//! run as the `postgres` user (`runuser -u postgres --`), which then owns
//! the directory.

use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// How a server is stopped (`pg_ctl stop -m …`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// Disconnects every client and shuts down cleanly (`fast`).
    Fast,
    /// Stops at once, without a checkpoint, as a crash would; the next start
    /// recovers from the write-ahead log (`immediate`).
    Immediate,
}

impl Shutdown {
    fn mode(self) -> &'static str {
        match self {
            Self::Fast => "fast",
            Self::Immediate => "immediate",
        }
    }
}

/// A PostgreSQL cluster of the test's own, on a free loopback port.
#[derive(Debug)]
pub struct OwnedPostgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    running: bool,
}

impl OwnedPostgres {
    /// Makes a cluster and starts it. The programs are those in
    /// `RECOURSE_TEST_PG_BIN` when set, else in the newest
    /// `/usr/lib/postgresql/*/bin` (Debian's layout), else on `PATH`.
    ///
    /// # Panics
    /// When `initdb` or the first start fails.
    pub fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("recourse-pg-")
            .tempdir()
            .expect("a temporary directory");
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free loopback port");
        let mut pg = Self {
            dir,
            bin: programs(),
            port,
            running: false,
        };
        if is_root() {
            let chown = Command::new("chown")
                .args(["postgres:postgres"])
                .arg(pg.dir.path())
                .output()
                .expect("chown");
            assert!(chown.status.success(), "chown: {}", stderr(&chown));
        }
        let data = pg.data();
        pg.run(
            "initdb",
            &["-D", &data, "-U", "postgres", "-A", "trust", "--no-sync"],
        );
        pg.resume();
        pg
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Stops the server and waits until it has.
    ///
    /// # Panics
    /// When `pg_ctl` fails.
    pub fn stop(&mut self, how: Shutdown) {
        let data = self.data();
        self.run("pg_ctl", &["-D", &data, "-m", how.mode(), "-w", "stop"]);
        self.running = false;
    }

    /// Starts the stopped server again, on the same port, and waits until it
    /// accepts connections.
    ///
    /// # Panics
    /// When `pg_ctl` fails; its log is in the message.
    pub fn resume(&mut self) {
        let (data, dir) = (self.data(), self.dir.path().display().to_string());
        let log = format!("{dir}/server.log");
        let options = format!(
            "-p {} -k {dir} -c listen_addresses=127.0.0.1 -c max_connections=200",
            self.port
        );
        let started = self.try_run(
            "pg_ctl",
            &["-D", &data, "-l", &log, "-o", &options, "-w", "start"],
        );
        assert!(
            started.status.success(),
            "pg_ctl start: {}\n{}",
            stderr(&started),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        self.running = true;
    }

    /// Stops the server `how`, and starts it again.
    ///
    /// # Panics
    /// As [`stop`](Self::stop) and [`resume`](Self::resume).
    pub fn restart(&mut self, how: Shutdown) {
        self.stop(how);
        self.resume();
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn run(&self, program: &str, args: &[&str]) {
        let out = self.try_run(program, args);
        assert!(out.status.success(), "{program} {args:?}: {}", stderr(&out));
    }

    fn try_run(&self, program: &str, args: &[&str]) -> Output {
        let program = self.bin.join(program);
        let mut command = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&program);
            c
        } else {
            Command::new(&program)
        };
        command
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", program.display()))
    }
}

impl Drop for OwnedPostgres {
    fn drop(&mut self) {
        if self.running {
            let data = self.data();
            let _ = self.try_run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]);
        }
    }
}

/// Where `initdb` and `pg_ctl` are.
fn programs() -> PathBuf {
    if let Some(dir) = std::env::var_os("RECOURSE_TEST_PG_BIN").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    // Empty: the programs are looked up on `PATH`.
    found.pop().map_or_else(PathBuf::new, |(_, bin)| bin)
}

/// Whether this process runs as root (it owns `/proc/self`).
fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    Path::new("/proc/self")
        .metadata()
        .is_ok_and(|m| m.uid() == 0)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
