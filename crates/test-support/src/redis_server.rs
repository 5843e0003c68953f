//! A Redis of the test's own, to stop and start, and a bare `PING`.
//!
//! Tests that take Redis away mid-run must not stop the shared one other
//! tests use: [`OwnedRedis`] runs `redis-server` on a free loopback port,
//! keeping nothing on disk, and stops it when dropped.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a started server has to answer its first `PING`.
const START_WITHIN: Duration = Duration::from_secs(10);

/// The shared Redis `RECOURSE_TEST_REDIS_URL` names, checked: unset, `None`
/// (the test skips, visibly — a failure under `RECOURSE_TEST_NO_SKIP=1`);
/// set but silent, the test fails.
///
/// # Panics
/// When the variable is set and Redis does not answer.
pub fn shared_redis() -> Option<String> {
    let url = crate::service_var("RECOURSE_TEST_REDIS_URL")?;
    if let Err(e) = redis_ping(&url) {
        panic!("RECOURSE_TEST_REDIS_URL is set but Redis does not answer: {e}");
    }
    Some(url)
}

/// A key prefix of `test`'s own on a shared Redis: nothing another test (or
/// an earlier run) wrote is read.
pub fn redis_prefix(test: &str) -> String {
    format!("recourse-test:{test}:{}:", uuid::Uuid::now_v7())
}

/// Sends `PING` to the Redis at `url` (`redis://[:PASSWORD@]HOST:PORT[/DB]`;
/// the password, if any, is not used) and waits up to two seconds for `PONG`.
///
/// # Errors
/// Why no `PONG` came: the address, the connection, or the answer.
pub fn redis_ping(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("redis://")
        .ok_or_else(|| "not a redis:// URL".to_owned())?;
    let authority = rest.split('/').next().unwrap_or(rest);
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    let host_port = if host_port.contains(':') {
        host_port.to_owned()
    } else {
        format!("{host_port}:6379")
    };
    let addr: SocketAddr = std::net::ToSocketAddrs::to_socket_addrs(&host_port)
        .map_err(|e| format!("resolving the Redis address: {e}"))?
        .next()
        .ok_or_else(|| "the Redis address resolves to nothing".to_owned())?;
    ping_addr(addr, Duration::from_secs(2))
}

fn ping_addr(addr: SocketAddr, within: Duration) -> Result<(), String> {
    let mut stream =
        TcpStream::connect_timeout(&addr, within).map_err(|e| format!("connecting: {e}"))?;
    stream
        .set_read_timeout(Some(within))
        .and_then(|()| stream.set_write_timeout(Some(within)))
        .map_err(|e| e.to_string())?;
    stream
        .write_all(b"*1\r\n$4\r\nPING\r\n")
        .map_err(|e| format!("sending PING: {e}"))?;
    let mut answer = [0u8; 7];
    stream
        .read_exact(&mut answer)
        .map_err(|e| format!("reading the answer: {e}"))?;
    if &answer == b"+PONG\r\n" {
        Ok(())
    } else {
        Err(format!(
            "answered {:?}, not PONG",
            String::from_utf8_lossy(&answer)
        ))
    }
}

/// A `redis-server` process of the test's own, on a free loopback port.
#[derive(Debug)]
pub struct OwnedRedis {
    port: u16,
    child: Option<Child>,
}

impl OwnedRedis {
    /// Starts `redis-server` (from `PATH`) on a free port and waits until it
    /// answers.
    ///
    /// # Panics
    /// When `redis-server` cannot be started or does not answer within 10 s.
    pub fn start() -> Self {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free loopback port");
        let mut redis = Self { port, child: None };
        redis.resume();
        redis
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stops the server (SIGKILL: no goodbye to its clients) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Freezes the server (SIGSTOP): connections stay open and nothing answers,
    /// as with a Redis that hangs.
    ///
    /// # Panics
    /// When the server is not running or `kill` fails.
    pub fn freeze(&self) {
        self.signal("-STOP");
    }

    /// Lets a frozen server go on (SIGCONT).
    ///
    /// # Panics
    /// As [`freeze`](Self::freeze).
    pub fn thaw(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("redis-server is running").id();
        let status = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill {signal} {pid}");
    }

    /// Starts the server again on the same port, empty, and waits until it answers.
    ///
    /// # Panics
    /// As [`start`](Self::start).
    pub fn resume(&mut self) {
        self.stop();
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server on PATH (Debian's redis-server package)");
        self.child = Some(child);
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let started = Instant::now();
        while let Err(e) = ping_addr(addr, Duration::from_millis(500)) {
            assert!(
                started.elapsed() < START_WITHIN,
                "redis-server on port {} did not answer: {e}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for OwnedRedis {
    fn drop(&mut self) {
        self.stop();
    }
}
