//! The library's success path against raw reqwest, in CPU time per call.
//!
//! The client runs on a current-thread runtime on this thread (reqwest's
//! connection tasks included), the tool on a thread of its own, so the
//! calling thread's CPU time is the client's work alone: what the executor
//! adds to a call, however busy the machine is. Rounds alternate which side
//! goes first; the medians and their ratio are printed.

use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::post;
use recourse::{Call, Executor, HttpTransport};
use serde_json::{Value, json};

use crate::cpu::thread_cpu;

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let calls: u32 = crate::flag(args, "--calls", 20_000)?;
    let rounds: u32 = crate::flag(args, "--rounds", 5)?;
    let url = match crate::flag(args, "--url", String::new())? {
        url if url.is_empty() => tool_server()?,
        url => url,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let bench = runtime.block_on(Bench::new(url))?;
    let only = crate::flag(args, "--only", String::new())?;
    if !only.is_empty() {
        return one_side(&runtime, &bench, &only, calls);
    }
    println!("library success path: {calls} calls per round, {rounds} rounds");
    runtime.block_on(bench.measure(Side::Raw, calls.min(2_000)))?;
    runtime.block_on(bench.measure(Side::Executor, calls.min(2_000)))?;
    let (mut raw, mut executor) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let order = match round % 2 {
            0 => [Side::Raw, Side::Executor],
            _ => [Side::Executor, Side::Raw],
        };
        for side in order {
            let (cpu, wall) = runtime.block_on(bench.measure(side, calls))?;
            println!(
                "round {round} {:<8} {:>7.2} us CPU/call  {:>7.2} us wall/call",
                side.name(),
                per_call_us(cpu, calls),
                per_call_us(wall, calls)
            );
            match side {
                Side::Raw => raw.push(per_call_us(cpu, calls)),
                Side::Executor => executor.push(per_call_us(cpu, calls)),
            }
        }
    }
    let (raw, executor) = (median(&mut raw), median(&mut executor));
    println!(
        "LIBRARY raw_cpu_us={raw:.2} executor_cpu_us={executor:.2} ratio={:.3}",
        executor / raw
    );
    Ok(())
}

/// `--only reqwest|executor`: one side alone (warm-up, then `calls` calls),
/// to count its instructions under callgrind, where the other would blur them.
fn one_side(
    runtime: &tokio::runtime::Runtime,
    bench: &Bench,
    only: &str,
    calls: u32,
) -> Result<(), String> {
    let side = match only {
        "reqwest" => Side::Raw,
        "executor" => Side::Executor,
        other => return Err(format!("--only {other:?}: expected reqwest or executor")),
    };
    runtime.block_on(bench.measure(side, calls.min(2_000)))?;
    let (cpu, _) = runtime.block_on(bench.measure(side, calls))?;
    println!(
        "LIBRARY side={} calls={calls} cpu_us={:.2}",
        side.name(),
        per_call_us(cpu, calls)
    );
    Ok(())
}

#[derive(Debug, Clone, Copy)]
enum Side {
    Raw,
    Executor,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Raw => "reqwest",
            Side::Executor => "executor",
        }
    }
}

struct Bench {
    url: String,
    payload: Value,
    client: reqwest::Client,
    executor: Executor,
}

impl Bench {
    async fn new(url: String) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string())?;
        let transport = HttpTransport::builder()
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self {
            url,
            payload: json!({"symbol": "TSLA"}),
            client,
            executor: Executor::builder(transport).build(),
        })
    }

    /// CPU time of this thread and wall time for `calls` calls of `side`.
    async fn measure(&self, side: Side, calls: u32) -> Result<(Duration, Duration), String> {
        let (cpu, wall) = (thread_cpu()?, Instant::now());
        for _ in 0..calls {
            match side {
                Side::Raw => self.raw().await?,
                Side::Executor => self.executed().await?,
            }
        }
        Ok((thread_cpu()? - cpu, wall.elapsed()))
    }

    async fn raw(&self) -> Result<(), String> {
        let response = self
            .client
            .post(&self.url)
            .json(&self.payload)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let body: Value = response.json().await.map_err(|e| e.to_string())?;
        match body["success"].as_bool() {
            Some(true) => Ok(()),
            _ => Err(format!("the tool did not succeed: {body}")),
        }
    }

    async fn executed(&self) -> Result<(), String> {
        let call = Call::builder(self.url.as_str(), self.payload.clone())
            .build()
            .map_err(|e| e.to_string())?;
        let report = self.executor.execute(call).await;
        match report.outcome.name() {
            "succeeded" => Ok(()),
            other => Err(format!("the call {other}: {}", report.to_json())),
        }
    }
}

/// A loopback tool answering a quote envelope, on its own thread and runtime.
fn tool_server() -> Result<String, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(e) => return drop(tx.send(Err(e.to_string()))),
        };
        runtime.block_on(async move {
            let app = Router::new().route(
                "/api/stock/quote",
                post(|axum::Json(_payload): axum::Json<Value>| async {
                    axum::Json(
                        json!({"success": true, "data": {"symbol": "TSLA", "price": 468.285}}),
                    )
                }),
            );
            let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
                Ok(listener) => listener,
                Err(e) => return drop(tx.send(Err(e.to_string()))),
            };
            let url = listener
                .local_addr()
                .map(|a| format!("http://{a}/api/stock/quote"))
                .map_err(|e| e.to_string());
            let _ = tx.send(url);
            let _ = axum::serve(listener, app).await;
        });
    });
    rx.recv().map_err(|e| e.to_string())?
}

fn per_call_us(total: Duration, calls: u32) -> f64 {
    total.as_secs_f64() * 1e6 / f64::from(calls.max(1))
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}
