//! The small test runner of the `harness = false` test binaries, whose
//! stdout also carries a scripted MCP server's protocol (libtest would
//! write to it): it lists, filters (`--exact`) and runs the tests, each on
//! one runtime, and reports in libtest's words.

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;

/// A test: an async function run to its end (a panic fails it).
pub type Test = fn() -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// Runs the `tests` that `args` (the binary's arguments) choose.
pub fn run(tests: &[(&str, Test)], args: &[String]) -> ExitCode {
    if args.iter().any(|a| a == "--list") {
        for (name, _) in tests {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    let exact = args.iter().any(|a| a == "--exact");
    let filters: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(String::as_str)
        .collect();
    let chosen: Vec<_> = tests
        .iter()
        .filter(|(name, _)| {
            filters.is_empty()
                || filters
                    .iter()
                    .any(|f| if exact { name == f } else { name.contains(f) })
        })
        .collect();
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    println!("\nrunning {} tests", chosen.len());
    let mut failed = Vec::new();
    for (name, test) in &chosen {
        // A panic ends the spawned task, not the runner.
        match runtime.block_on(async { tokio::spawn(test()).await }) {
            Ok(()) => println!("test {name} ... ok"),
            Err(_) => {
                println!("test {name} ... FAILED");
                failed.push(*name);
            }
        }
    }
    let verdict = if failed.is_empty() { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {verdict}. {} passed; {} failed{}",
        chosen.len() - failed.len(),
        failed.len(),
        failed
            .iter()
            .map(|n| format!("\n    {n}"))
            .collect::<String>()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
