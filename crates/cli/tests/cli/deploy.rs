//! The deployment example, `deploy/compose.yaml`: its services are the ones
//! the README describes, and every recourse command line in it is one the
//! real binary accepts (`--check`: parsed and validated, nothing served).
//!
//! The file keeps to a plain subset of YAML — block maps, `KEY: VALUE`
//! lines, one-line JSON-style `command` arrays, `- NAME=VALUE` environment
//! lists, no anchors — so it is read here line by line; anything outside
//! that subset fails this test rather than being skipped. Where
//! `docker compose` exists, `.ci/run` also runs `docker compose config`.

use std::collections::BTreeMap;
use std::process::Command;

const COMPOSE: &str = include_str!("../../../../deploy/compose.yaml");

/// The image the recourse services run: its entrypoint is `recourse`.
const RECOURSE_IMAGE: &str = "recourse:local";

#[derive(Debug, Default)]
struct Service {
    image: Option<String>,
    command: Option<Vec<String>>,
    environment: Vec<(String, String)>,
    healthcheck: Option<Vec<String>>,
}

/// The services, read by the subset's rules.
fn services(text: &str) -> Result<BTreeMap<String, Service>, String> {
    let mut services = BTreeMap::new();
    let mut in_services = false;
    let mut current: Option<String> = None;
    let mut section = String::new();
    for (n, line) in text.lines().enumerate() {
        let n = n + 1;
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if line.contains('\t') || line.contains('&') || line.contains("<<:") {
            return Err(format!(
                "line {n}: tabs, anchors and merges are outside the subset"
            ));
        }
        let indent = line.len() - trimmed.len();
        match indent {
            0 => {
                in_services = trimmed == "services:";
                current = None;
            }
            2 if in_services => {
                let name = trimmed
                    .strip_suffix(':')
                    .ok_or_else(|| format!("line {n}: a service is `  NAME:`"))?;
                services.insert(name.to_owned(), Service::default());
                current = Some(name.to_owned());
            }
            4 if in_services => {
                let service = current
                    .as_ref()
                    .and_then(|c| services.get_mut(c))
                    .ok_or_else(|| format!("line {n}: a key outside any service"))?;
                let (key, value) = trimmed
                    .split_once(':')
                    .ok_or_else(|| format!("line {n}: expected `KEY: VALUE`"))?;
                let value = value.trim();
                section = key.to_owned();
                match key {
                    "image" => service.image = Some(value.to_owned()),
                    "command" | "entrypoint" => {
                        let args: Vec<String> = serde_json::from_str(value).map_err(|e| {
                            format!("line {n}: {key} must be a one-line array of strings: {e}")
                        })?;
                        if key == "entrypoint" {
                            return Err(format!("line {n}: the image's entrypoint is recourse"));
                        }
                        service.command = Some(args);
                    }
                    _ => {}
                }
            }
            6 if in_services && section == "healthcheck" && trimmed.starts_with("test:") => {
                let test: Vec<String> = serde_json::from_str(trimmed["test:".len()..].trim())
                    .map_err(|e| {
                        format!("line {n}: a health check's test is a one-line array: {e}")
                    })?;
                let service = services.get_mut(current.as_ref().unwrap()).unwrap();
                service.healthcheck = Some(test);
            }
            6 if in_services && section == "environment" => {
                let entry = trimmed
                    .strip_prefix("- ")
                    .ok_or_else(|| format!("line {n}: environment is a list of NAME=VALUE"))?;
                let (name, value) = entry
                    .split_once('=')
                    .ok_or_else(|| format!("line {n}: expected NAME=VALUE"))?;
                let service = services.get_mut(current.as_ref().unwrap()).unwrap();
                service
                    .environment
                    .push((name.to_owned(), value.to_owned()));
            }
            _ => {}
        }
    }
    Ok(services)
}

/// An environment value as a test stands it in: `${…}` interpolations
/// (the operator's secrets) become a placeholder.
fn stand_in(value: &str) -> String {
    if value.contains("${") {
        "stand-in-for-an-interpolated-secret".to_owned()
    } else {
        value.to_owned()
    }
}

/// A health check is `recourse healthcheck URL` on the service's own port,
/// and the binary takes it: against a port nobody listens on it says
/// "unhealthy" (1), not "usage" (2).
fn assert_healthcheck(test: &[String], port: &str, what: &str) {
    let [cmd, recourse, healthcheck, url] = test else {
        panic!("{what}: a health check is [CMD, recourse, healthcheck, URL]: {test:?}");
    };
    assert_eq!(
        [cmd, recourse, healthcheck],
        ["CMD", "recourse", "healthcheck"],
        "{what}"
    );
    let prefix = format!("http://127.0.0.1:{port}/");
    assert!(
        url.starts_with(&prefix),
        "{what}: {url} is not on port {port}"
    );
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let here = url.replacen(
        &format!("127.0.0.1:{port}"),
        &closed.local_addr().unwrap().to_string(),
        1,
    );
    drop(closed);
    let out = Command::new(env!("CARGO_BIN_EXE_recourse"))
        .args(["healthcheck", &here])
        .env_clear()
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_images_health_check_asks_the_gateways_readiness() {
    let dockerfile = include_str!("../../../../deploy/Dockerfile");
    let line = dockerfile
        .lines()
        .skip_while(|l| !l.starts_with("HEALTHCHECK"))
        .find(|l| l.trim_start().starts_with("CMD "))
        .expect("a HEALTHCHECK with a CMD");
    let test: Vec<String> = serde_json::from_str(line.trim_start()["CMD ".len()..].trim()).unwrap();
    let mut with_cmd = vec!["CMD".to_owned()];
    with_cmd.extend(test);
    assert_healthcheck(&with_cmd, "8780", "the Dockerfile");
    assert!(dockerfile.contains("USER recourse"), "non-root");
}

#[test]
fn the_compose_file_has_the_fleet_and_each_recourse_command_line_parses() {
    let services = services(COMPOSE).unwrap();
    let names: Vec<&str> = services.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "gateway-1",
            "gateway-2",
            "gateway-3",
            "postgres",
            "redis",
            "tools"
        ]
    );

    let mut checked = 0;
    for (name, service) in &services {
        if service.image.as_deref() != Some(RECOURSE_IMAGE) {
            continue;
        }
        let args = service
            .command
            .as_ref()
            .unwrap_or_else(|| panic!("{name} has no command"));
        if name.starts_with("gateway-") {
            let has = |pair: [&str; 2]| args.windows(2).any(|w| w == pair);
            assert_eq!(args[0], "serve", "{name}");
            assert!(has(["--bind", "0.0.0.0"]), "{name}: {args:?}");
            assert!(has(["--shared-state", "redis://redis:6379"]), "{name}");
            assert!(has(["--allow-target", "http://tools:8700/*"]), "{name}");
            let env: Vec<&str> = service
                .environment
                .iter()
                .map(|(k, _)| k.as_str())
                .collect();
            assert!(env.contains(&"RECOURSE_GATEWAY_TOKEN"), "{name}: {env:?}");
            assert!(env.contains(&"RECOURSE_JOURNAL"), "{name}: {env:?}");
        } else {
            assert_eq!(&args[..2], ["tools", "serve"], "{name}");
            assert!(args.windows(2).any(|w| w == ["--bind", "0.0.0.0"]));
        }
        let out = Command::new(env!("CARGO_BIN_EXE_recourse"))
            .args(args)
            .arg("--check")
            .env_clear()
            .envs(
                service
                    .environment
                    .iter()
                    .map(|(k, v)| (k.clone(), stand_in(v))),
            )
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: recourse {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.starts_with("configuration ok"), "{name}: {said}");
        let port = args
            .windows(2)
            .find(|w| w[0] == "--port")
            .map(|w| w[1].clone())
            .unwrap_or_default();
        let check = service
            .healthcheck
            .as_ref()
            .unwrap_or_else(|| panic!("{name} has no health check"));
        assert_healthcheck(check, &port, name);
        checked += 1;
    }
    assert_eq!(checked, 4, "three gateways and the tools");
}

#[test]
fn the_subset_reader_refuses_what_it_cannot_read() {
    for bad in [
        "services:\n  gw:\n    command: serve --bind 0.0.0.0\n",
        "services:\n  gw:\n    entrypoint: [\"sh\"]\n",
        "x-common: &common\n  image: recourse:local\n",
        "services:\n  gw:\n    environment:\n      RECOURSE_GATEWAY_TOKEN: x\n",
    ] {
        assert!(services(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_gateway_without_its_token_fails_the_check() {
    let out = Command::new(env!("CARGO_BIN_EXE_recourse"))
        .args(["serve", "--bind", "0.0.0.0", "--check"])
        .env_remove("RECOURSE_GATEWAY_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("RECOURSE_GATEWAY_TOKEN"),
        "the check is the real startup check"
    );
}
