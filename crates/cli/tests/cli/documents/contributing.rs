//! `CONTRIBUTING.md` names every step `.ci/run` takes, in order.
//!
//! `.ci/run` announces each step with a `step "NAME"` line; CONTRIBUTING's
//! *What CI runs* is a numbered list whose items open with the step's
//! `**NAME**`. The two lists must be equal. So that a new command cannot hide
//! under an older step, each command of the kinds CI is made of — a cargo
//! subcommand, a `.ci/` script, `docker compose`, `maturin build`, `pytest
//! DIR`, `node --test` — must run under a step whose NAME says it (`cargo
//! deny` under a step named `cargo clippy …` fails). Set-up commands
//! (`python3 -m venv`, `pip install`, `npm ci`, `apt-get`) are part of the
//! step they prepare.
//!
//! The list is kept by hand rather than generated from `.ci/run`: each item
//! says why the step is there, which a step's name alone does not, and this
//! test fails the moment the two disagree.

use regex::Regex;

/// The script CI runs, and the page that lists its steps.
const CI_RUN: &str = include_str!("../../../../../.ci/run");
const CONTRIBUTING: &str = include_str!("../../../../../CONTRIBUTING.md");

/// The heading of CONTRIBUTING's list of steps.
const HEADING: &str = "## What CI runs";

/// The steps `script` announces, in order, each with its line and the
/// commands of the guarded kinds that run under it (as `(line, command)`).
#[derive(Debug)]
struct Step {
    name: String,
    line: usize,
    commands: Vec<(usize, String)>,
}

/// The commands of the guarded kinds on one line of the script.
fn commands(line: &str) -> Vec<String> {
    let kinds = Regex::new(
        r#"\bcargo\s+[a-z][a-z-]*|(?:^|[\s;(])(\.ci/[A-Za-z0-9_-]+)|\bdocker\s+compose\b|\bmaturin"?\s+build\b|-m\s+pytest(?:\s+-\S+)*\s+[^\s;)]+|\bnode\s+--test\b"#,
    )
    .unwrap();
    kinds
        .captures_iter(line)
        .map(|c| {
            let whole = c.get(1).unwrap_or_else(|| c.get(0).unwrap()).as_str();
            let command = whole.split_whitespace().collect::<Vec<_>>().join(" ");
            // `-m pytest -q DIR` is named `pytest DIR`; `maturin" build`, `maturin build`.
            match command.strip_prefix("-m ") {
                Some(pytest) => {
                    let words: Vec<&str> = pytest.split(' ').collect();
                    format!("pytest {}", words.last().unwrap())
                }
                None => command.replace('"', ""),
            }
        })
        .collect()
}

/// The steps of `script`, and the guarded commands that run before any step.
fn steps(script: &str) -> (Vec<Step>, Vec<(usize, String)>) {
    let announce = Regex::new(r#"^\s*step\s+"([^"]+)"\s*$"#).unwrap();
    let (mut steps, mut before): (Vec<Step>, Vec<(usize, String)>) = (Vec::new(), Vec::new());
    for (n, line) in script.lines().enumerate() {
        let n = n + 1;
        if line.trim_start().starts_with('#') {
            continue;
        }
        if let Some(name) = announce.captures(line) {
            steps.push(Step {
                name: name[1].to_owned(),
                line: n,
                commands: Vec::new(),
            });
            continue;
        }
        for command in commands(line) {
            match steps.last_mut() {
                Some(step) => step.commands.push((n, command)),
                None => before.push((n, command)),
            }
        }
    }
    (steps, before)
}

/// The `**NAME**` of each numbered item under the heading, in order.
fn listed(page: &str) -> Vec<String> {
    let item = Regex::new(r"^\d+\.\s+\*\*(.+?)\*\*").unwrap();
    page.lines()
        .skip_while(|line| line.trim() != HEADING)
        .skip(1)
        .take_while(|line| !line.starts_with("## "))
        .filter_map(|line| item.captures(line).map(|c| c[1].to_owned()))
        .collect()
}

/// What is wrong between `script` and `page`; empty when they agree.
fn problems(script: &str, page: &str) -> Vec<String> {
    let (steps, before) = steps(script);
    let mut problems: Vec<String> = before
        .iter()
        .map(|(n, command)| format!(".ci/run:{n}: `{command}` runs before any `step`"))
        .collect();
    for step in &steps {
        for (n, command) in &step.commands {
            if !step.name.contains(command.as_str()) {
                problems.push(format!(
                    ".ci/run:{n}: `{command}` runs under the step \"{}\" (line {}), whose name does not say it: give it a `step` of its own, and CONTRIBUTING.md an item",
                    step.name, step.line
                ));
            }
        }
    }
    let names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
    let listed = listed(page);
    let listed: Vec<&str> = listed.iter().map(String::as_str).collect();
    for name in names.iter().filter(|n| !listed.contains(n)) {
        problems.push(format!(
            "CONTRIBUTING.md's \"{HEADING}\" does not name the step \"{name}\" of .ci/run"
        ));
    }
    for name in listed.iter().filter(|n| !names.contains(n)) {
        problems.push(format!(
            "CONTRIBUTING.md's \"{HEADING}\" names \"{name}\", which .ci/run does not announce"
        ));
    }
    if problems.is_empty() && names != listed {
        problems.push(format!(
            "CONTRIBUTING.md lists the steps in another order than .ci/run takes them:\n  .ci/run: {names:?}\n  CONTRIBUTING.md: {listed:?}"
        ));
    }
    problems
}

#[test]
fn contributing_names_every_step_ci_runs_in_order() {
    let (steps, _) = steps(CI_RUN);
    assert!(
        steps.len() >= 10,
        "the steps of .ci/run were found: {steps:?}"
    );
    let problems = problems(CI_RUN, CONTRIBUTING);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_step_contributing_leaves_out_or_a_command_hidden_under_another_step_is_found() {
    let page = "# C\n## What CI runs\n\n1. **cargo fmt --check** — formatting.\n2. **pytest py** — the client.\n\n## Next\n3. **not a step**\n";
    let script = "set -e\nstep \"cargo fmt --check\"\ncargo fmt --check\n# cargo deny in a comment is not a command\nstep \"pytest py\"\n\"$V/bin/python\" -m pytest -q py\n";
    assert_eq!(problems(script, page), Vec::<String>::new());

    let added = format!("{script}step \"cargo doc\"\ncargo doc\n");
    let found = problems(&added, page);
    assert!(
        found.len() == 1 && found[0].contains("does not name the step \"cargo doc\""),
        "{found:?}"
    );

    let hidden = format!("{script}cargo deny check\n");
    let found = problems(&hidden, page);
    assert!(
        found.len() == 1 && found[0].contains("`cargo deny`"),
        "{found:?}"
    );

    let early = "cargo build\nstep \"cargo fmt --check\"\nstep \"pytest py\"\n";
    let found = problems(early, page);
    assert!(
        found.iter().any(|p| p.contains("before any `step`")),
        "{found:?}"
    );

    let swapped = "step \"pytest py\"\nstep \"cargo fmt --check\"\n";
    let found = problems(swapped, page);
    assert!(
        found.len() == 1 && found[0].contains("another order"),
        "{found:?}"
    );

    let stale = "step \"cargo fmt --check\"\n";
    let found = problems(stale, page);
    assert!(
        found.len() == 1 && found[0].contains("names \"pytest py\""),
        "{found:?}"
    );

    assert_eq!(
        commands("if cargo tree -p x | grep y; then"),
        ["cargo tree"]
    );
    assert_eq!(commands("  .ci/module-cycles"), [".ci/module-cycles"]);
    assert_eq!(
        commands(r#"(cd c && "$M/bin/maturin" build --quiet)"#),
        ["maturin build"]
    );
    assert_eq!(
        commands(r#"RECOURSE_BIN=x node --test "$D"/*.test.mjs"#),
        ["node --test"]
    );
    assert_eq!(
        commands(r#""$V/bin/python" -m pytest -q tests/mcp-clients/python"#),
        ["pytest tests/mcp-clients/python"]
    );
}
