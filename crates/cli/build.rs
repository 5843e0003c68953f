//! The long version `recourse --version` prints: `0.1.0 (commit 1a2b3c4d5e6f,
//! features: otel)` — the commit of the checkout it was built from (`commit
//! unknown` outside one, or `RECOURSE_COMMIT` when set, as a package build
//! sets it) and the optional features it was built with.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_owned())
}

fn main() {
    println!("cargo:rerun-if-env-changed=RECOURSE_COMMIT");
    let commit = std::env::var("RECOURSE_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| {
            // Rebuilt when the checkout moves to another commit.
            for path in ["HEAD", "packed-refs"] {
                if let Some(file) = git(&["rev-parse", "--git-path", path]) {
                    println!("cargo:rerun-if-changed={file}");
                }
            }
            if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"])
                && let Some(file) = git(&["rev-parse", "--git-path", &branch])
            {
                println!("cargo:rerun-if-changed={file}");
            }
            git(&["rev-parse", "--short=12", "HEAD"])
        })
        .unwrap_or_else(|| "unknown".to_owned());
    let features: Vec<&str> = [("otel", "CARGO_FEATURE_OTEL")]
        .into_iter()
        .filter(|(_, var)| std::env::var_os(var).is_some())
        .map(|(name, _)| name)
        .collect();
    let features = if features.is_empty() {
        "none".to_owned()
    } else {
        features.join(", ")
    };
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    println!(
        "cargo:rustc-env=RECOURSE_LONG_VERSION={version} (commit {commit}, features: {features})"
    );
}
