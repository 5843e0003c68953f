//! A `recourse serve` process for tests — the one spawner every test of the
//! binary's gateway uses — and the reference tools' export call
//! (`#[path]`-included; each file uses a part).
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// `recourse serve` on a free loopback port, killed on drop: the one
/// spawner of the CLI's gateway tests.
pub(crate) struct Gateway {
    pub(crate) child: Child,
    pub(crate) url: String,
    /// What the gateway wrote on stderr, when kept ([`Spawn::keep_stderr`]).
    pub(crate) stderr: Arc<Mutex<String>>,
    /// The gateway's own `XDG_STATE_HOME`, when it was not given one.
    _state: Option<tempfile::TempDir>,
}

/// How to start a gateway: its flags, its environment, where its state
/// lives, and whether its stderr is kept.
#[derive(Default)]
pub(crate) struct Spawn<'a> {
    args: Vec<&'a str>,
    env: Vec<(&'a str, &'a str)>,
    remove: Vec<&'a str>,
    state: Option<&'a std::path::Path>,
    keep_stderr: bool,
}

impl<'a> Spawn<'a> {
    pub(crate) fn args(mut self, args: &[&'a str]) -> Self {
        self.args.extend_from_slice(args);
        self
    }

    pub(crate) fn env(mut self, env: &[(&'a str, &'a str)]) -> Self {
        self.env.extend_from_slice(env);
        self
    }

    /// Unsets `name` (besides the token and journal variables, always unset).
    pub(crate) fn env_remove(mut self, name: &'a str) -> Self {
        self.remove.push(name);
        self
    }

    /// The gateway's `XDG_STATE_HOME` (its default journal's place); a
    /// fresh temporary one otherwise.
    pub(crate) fn state(mut self, state: &'a std::path::Path) -> Self {
        self.state = Some(state);
        self
    }

    pub(crate) fn keep_stderr(mut self) -> Self {
        self.keep_stderr = true;
        self
    }

    pub(crate) fn start(self) -> Gateway {
        let owned = match self.state {
            Some(_) => None,
            None => Some(tempfile::tempdir().unwrap()),
        };
        let state = self.state.unwrap_or_else(|| owned.as_ref().unwrap().path());
        let mut command = Command::new(env!("CARGO_BIN_EXE_recourse"));
        command
            .args(["serve", "--port", "0"])
            .args(&self.args)
            .env("XDG_STATE_HOME", state)
            .env("RECOURSE_BACKOFF_MS", "0")
            .env_remove("RECOURSE_JOURNAL")
            .env_remove("RECOURSE_GATEWAY_TOKEN");
        for name in &self.remove {
            command.env_remove(name);
        }
        let mut child = command
            .envs(self.env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(if self.keep_stderr {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(pipe) = child.stderr.take() {
            let sink = Arc::clone(&stderr);
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let mut text = sink.lock().unwrap();
                    text.push_str(&line);
                    text.push('\n');
                }
            });
        }
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim().rsplit(' ').next().unwrap().to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{line}");
        Gateway {
            child,
            url,
            stderr,
            _state: owned,
        }
    }
}

impl Gateway {
    /// How to start one.
    pub(crate) fn spawn<'a>() -> Spawn<'a> {
        Spawn::default()
    }

    /// A gateway whose state (and default journal) lives under `state`.
    pub(crate) fn start(state: &std::path::Path, args: &[&str]) -> Self {
        Self::spawn().state(state).args(args).start()
    }

    /// The same, with `env` set on top (a token, a journal URL…).
    pub(crate) fn start_with_env(
        state: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        Self::spawn().state(state).args(args).env(env).start()
    }

    /// What it has written on stderr so far (with [`Spawn::keep_stderr`]).
    pub(crate) fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub(crate) async fn post(&self, body: &Value) -> (u16, Value) {
        self.post_with(body, &[]).await.0
    }

    /// POSTs `body` to `/v1/calls` with `headers`; the status, the body and
    /// the `Retry-After` header.
    pub(crate) async fn post_with(
        &self,
        body: &Value,
        headers: &[(&str, &str)],
    ) -> ((u16, Value), Option<String>) {
        let mut req = reqwest::Client::new()
            .post(format!("{}/v1/calls", self.url))
            .json(body);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let resp = req.send().await.unwrap();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_owned());
        let status = resp.status().as_u16();
        (
            (status, resp.json().await.unwrap_or(Value::Null)),
            retry_after,
        )
    }

    pub(crate) async fn get(&self, path: &str) -> (u16, Value) {
        let resp = reqwest::get(format!("{}{path}", self.url)).await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    /// Polls `path` until `done` holds of its body, for at most 15 s.
    pub(crate) async fn wait_for(&self, path: &str, done: impl Fn(&Value) -> bool) -> Value {
        let started = Instant::now();
        loop {
            let (status, body) = self.get(path).await;
            if status == 200 && done(&body) {
                return body;
            }
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "{path} never got there: {status} {body}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    pub(crate) fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
