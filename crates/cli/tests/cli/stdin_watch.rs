//! `recourse serve --stop-when-stdin-closes`: the gateway ends when the
//! program holding its standard input does (Python's `Gateway.spawn()`
//! relies on it: `clients/python/tests/test_spawn.py` kills such a program
//! with SIGKILL); without the flag, a closed input changes nothing.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn serve(flags: &[&str], stdin: Stdio) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_recourse"))
        .args(["serve", "--port", "0", "--journal", "none"])
        .args(flags)
        .env_remove("RECOURSE_GATEWAY_TOKEN")
        .env_remove("RECOURSE_JOURNAL")
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    (child, url)
}

async fn ready(url: &str) -> bool {
    reqwest::get(format!("{url}/readyz"))
        .await
        .is_ok_and(|r| r.status() == 200)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_stops_when_its_input_closes() {
    let (mut child, url) = serve(&["--stop-when-stdin-closes"], Stdio::piped());
    assert!(ready(&url).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        child.try_wait().unwrap().is_none(),
        "still serving while its input is open"
    );

    drop(child.stdin.take());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "still running");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("standard input closed: stopping"),
        "{stderr}"
    );
    assert!(!ready(&url).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_flag_a_closed_input_changes_nothing() {
    let (mut child, url) = serve(&[], Stdio::null());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(ready(&url).await);
    assert!(child.try_wait().unwrap().is_none());
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_still_stops_it_while_its_input_is_open() {
    let (mut child, url) = serve(&["--stop-when-stdin-closes"], Stdio::piped());
    assert!(ready(&url).await);
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "a read of its input held it"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(status.code(), Some(0));
    drop(child.stdin.take());
}
