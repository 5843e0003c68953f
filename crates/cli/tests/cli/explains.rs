//! The command explains itself: its version names the commit and features,
//! its completion scripts and man page are valid for their readers, and
//! `recourse healthcheck` answers a container's health check.

use std::process::{Command, Output, Stdio};

fn recourse(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_recourse"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn the_version_names_the_commit_and_the_features() {
    let out = recourse(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    let line = String::from_utf8_lossy(&out.stdout);
    let re = regex::Regex::new(
        r"^recourse \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}|unknown), features: [a-z, ]+\)\n$",
    )
    .unwrap();
    assert!(re.is_match(&line), "{line:?}");
}

#[test]
fn completion_scripts_parse_in_their_shells() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let out = recourse(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(
            script.contains("journal"),
            "{shell}: subcommands are completed"
        );
    }
    let bash = recourse(&["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("recourse.bash");
    std::fs::write(&path, &bash.stdout).unwrap();
    let checked = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    assert_eq!(recourse(&["completions", "tcsh"]).status.code(), Some(2));
}

#[test]
fn the_man_page_renders_without_warnings() {
    let out = recourse(&["man"]);
    assert_eq!(out.status.code(), Some(0));
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(
        page.starts_with(".ie") || page.contains(".TH recourse 1"),
        "{page}"
    );
    let Ok(mut groff) = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        eprintln!("groff is not installed: the page's roff is not rendered");
        return;
    };
    use std::io::Write;
    groff.stdin.take().unwrap().write_all(&out.stdout).unwrap();
    let rendered = groff.wait_with_output().unwrap();
    assert!(rendered.status.success());
    assert!(
        rendered.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthcheck_is_0_for_a_200_and_1_otherwise() {
    use axum::http::StatusCode;
    use axum::routing::get;
    let app = axum::Router::new()
        .route("/ok", get(|| async { "ready" }))
        .route("/down", get(|| async { StatusCode::SERVICE_UNAVAILABLE }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                "late"
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/readyz", l.local_addr().unwrap())
    };
    for (url, code) in [
        (format!("{base}/ok"), 0),
        (format!("{base}/down"), 1),
        (format!("{base}/slow"), 1),
        (closed, 1),
        ("not a url".to_owned(), 1),
    ] {
        let out = tokio::task::spawn_blocking(move || recourse(&["healthcheck", &url]))
            .await
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.is_empty());
    }
}
