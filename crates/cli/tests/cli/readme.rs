//! Every shell example in the README and in the pages of `docs/` runs as
//! written, with the built binary.
//!
//! The rules, so a documentation author knows what is checked:
//!
//! - The files read are `README.md` and every `*.md` directly in `docs/`,
//!   listed when the test runs: a new page is covered without editing this
//!   test. A failure names the example as `FILE:LINE` (`docs/cli.md:120`).
//! - Fenced blocks marked `sh`, `console` or `text` are read. In a block with
//!   `$ ` lines, each `$ ` line is a command (a trailing `\` continues it on the
//!   next line) and the lines after it, up to the next command, are its
//!   expected output. In an `sh` block without `$ ` lines every line is a
//!   command with no output shown. Other blocks are illustrations.
//! - Commands run in `bash`, in a scratch directory that links the
//!   repository's `examples/` and `docs/`, with `recourse` on the
//!   `PATH` being the binary under test; `cargo run --release -p recourse-cli
//!   --` means `recourse`. Other `cargo` commands are not run (this test is one).
//! - Expected output is matched with all whitespace removed, `…` standing for
//!   anything: the pieces between `…` must appear in the output (stdout, then
//!   stderr), in order.
//! - A command's exit code is 0 unless its line says otherwise with a trailing
//!   comment `# exit N`.
//! - A command ending in `&`, or one that serves (`recourse serve`, `recourse
//!   tools serve` without `--mcp`), starts in the background: its first output
//!   lines are matched, and it runs until the end of its block.
//! - `<!-- readme-test: skip REASON -->` on the line before a block skips it
//!   (benchmarks, fuzzing, compose). `<!-- readme-test: needs PATH -->` runs
//!   it with the repository's `PATH` (say `target/mcp-servers`, which `.ci/run`
//!   installs) linked into the scratch directory, and skips it, saying so,
//!   when that path is missing — a failure under `RECOURSE_TEST_NO_SKIP=1`.
//!   `<!-- readme-test: background COMMAND -->` starts `COMMAND` in the
//!   background for the block: what the text asks the reader to keep
//!   running in another terminal (the reference tools, say). Markers stack
//!   on consecutive lines.
//! - `RECOURSE_README_LINE=FILE:N` runs only the block around line `N` of
//!   `FILE`, named as a failure names it (`docs/gateway.md:17`);
//!   `RECOURSE_README_LINE=N` means line `N` of `README.md`, and
//!   `RECOURSE_README_LINE=FILE` every block of `FILE`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
/// How long one command may run.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Debug)]
struct Example {
    /// 1-based line of the command in its file.
    line: usize,
    command: String,
    expected: Vec<String>,
    exit: i32,
}

#[derive(Debug)]
struct Block {
    /// The file, from the repository's root (`README.md`, `docs/cli.md`).
    file: String,
    /// A repository path the block needs (`<!-- readme-test: needs PATH -->`).
    needs: Option<String>,
    /// A command to start in the background before the block's own
    /// (`<!-- readme-test: background COMMAND -->`): what the text asks
    /// the reader to keep running in another terminal.
    before: Option<String>,
    /// The block's fence lines (1-based), for `RECOURSE_README_LINE`.
    first_line: usize,
    last_line: usize,
    examples: Vec<Example>,
}

/// The documents read: `README.md`, then every `*.md` file directly in
/// `docs/` by name, each as its path from the repository's root and its text.
fn documents() -> Vec<(String, String)> {
    let docs = Path::new(ROOT).join("docs");
    let mut names: Vec<String> = std::fs::read_dir(&docs)
        .unwrap_or_else(|e| panic!("{}: {e}", docs.display()))
        .map(|entry| entry.expect("an entry of docs/"))
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    names.sort();
    names.insert(0, "README.md".to_owned());
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(Path::new(ROOT).join(&name))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, text)
        })
        .collect()
}

/// The blocks `RECOURSE_README_LINE` selects: `FILE:N`, `N` (a line of
/// `README.md`) or `FILE` (all of its blocks).
#[derive(Debug, PartialEq)]
struct Selection {
    file: String,
    line: Option<usize>,
}

impl Selection {
    fn parse(selector: &str) -> Self {
        let selector = selector.trim();
        if let Ok(line) = selector.parse() {
            return Self {
                file: "README.md".to_owned(),
                line: Some(line),
            };
        }
        match selector.rsplit_once(':') {
            Some((file, line)) if line.parse::<usize>().is_ok() => Self {
                file: file.to_owned(),
                line: line.parse().ok(),
            },
            _ => Self {
                file: selector.to_owned(),
                line: None,
            },
        }
    }

    fn takes(&self, file: &str, first_line: usize, last_line: usize) -> bool {
        file == self.file
            && self
                .line
                .is_none_or(|n| n >= first_line && n <= last_line + 1)
    }
}

/// A skipped block: its file, its line, and why.
type Skipped = (String, usize, String);

/// The runnable blocks of `text` (the contents of `file`), and the skipped
/// blocks with why.
fn blocks(file: &str, text: &str) -> (Vec<Block>, Vec<Skipped>) {
    let lines: Vec<&str> = text.lines().collect();
    let (mut found, mut skipped) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < lines.len() {
        let Some(lang) = lines[i].strip_prefix("```") else {
            i += 1;
            continue;
        };
        let start = i + 1;
        let mut end = start;
        while end < lines.len() && !lines[end].starts_with("```") {
            end += 1;
        }
        let body = &lines[start..end.min(lines.len())];
        // The marker lines right above the fence.
        let markers: Vec<&str> = lines[..i]
            .iter()
            .rev()
            .map_while(|l| l.trim().strip_prefix("<!-- readme-test: "))
            .map(|rest| rest.trim_end_matches("-->").trim())
            .collect();
        let marker = |name: &str| {
            markers
                .iter()
                .find_map(|m| m.strip_prefix(name))
                .map(|rest| rest.trim().to_owned())
        };
        let (skip, needs) = (marker("skip"), marker("needs"));
        let before = marker("background");
        i = end + 1;
        let has_prompt = body.iter().any(|l| l.starts_with("$ "));
        let runnable = match lang.trim() {
            "sh" | "console" => true,
            "text" => has_prompt,
            _ => false,
        };
        if !runnable {
            continue;
        }
        if let Some(why) = skip {
            skipped.push((file.to_owned(), start, why));
            continue;
        }
        found.push(Block {
            file: file.to_owned(),
            needs,
            before,
            first_line: start,
            last_line: end,
            examples: examples(body, start + 1, has_prompt),
        });
    }
    (found, skipped)
}

fn examples(body: &[&str], first_line: usize, prompts: bool) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    let mut continuing = false;
    for (n, raw) in body.iter().enumerate() {
        let line = first_line + n;
        if continuing {
            let example = out.last_mut().expect("a command to continue");
            continuing = raw.trim_end().ends_with('\\');
            example.command.push('\n');
            example.command.push_str(raw);
            continue;
        }
        let command = if prompts {
            raw.strip_prefix("$ ")
        } else {
            Some(*raw).filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        };
        match command {
            Some(command) => {
                continuing = command.trim_end().ends_with('\\');
                out.push(Example {
                    line,
                    command: command.to_owned(),
                    expected: Vec::new(),
                    exit: 0,
                });
            }
            // Without `$ ` prompts no output is shown: a comment or blank
            // line between commands is not expected output.
            None if !prompts => {}
            None => {
                if let Some(example) = out.last_mut() {
                    example.expected.push((*raw).to_owned());
                }
            }
        }
    }
    for example in &mut out {
        example.exit = exit_code(&example.command);
    }
    out
}

/// The `# exit N` a command's last line declares, else 0.
fn exit_code(command: &str) -> i32 {
    let last = command.lines().last().unwrap_or_default();
    last.rsplit_once('#')
        .and_then(|(_, comment)| comment.trim().strip_prefix("exit "))
        .and_then(|n| n.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// What is run: `cargo run --release -p recourse-cli --` is the binary, and
/// other cargo commands are not run.
fn runnable(command: &str) -> Option<String> {
    let command = command.replace("cargo run --release -p recourse-cli --", "recourse");
    (!command.trim_start().starts_with("cargo ")).then_some(command)
}

fn serves(command: &str) -> bool {
    // Leading `NAME=value` words set the command's environment.
    let words: Vec<&str> = command
        .split_whitespace()
        .skip_while(|w| is_assignment(w))
        .collect();
    let serve = matches!(words.as_slice(), ["recourse", "serve", ..])
        || matches!(words.as_slice(), ["recourse", "tools", "serve", ..]);
    command.trim_end().ends_with('&') || (serve && !words.contains(&"--mcp"))
}

/// Whether `word` is a shell `NAME=value` assignment.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
    })
}

/// Whether `expected` (with `…` as anything) is in `actual`, whitespace ignored.
fn matches(expected: &[String], actual: &str) -> bool {
    let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let actual = squash(actual);
    let expected = squash(&expected.join("\n"));
    let mut from = 0;
    for piece in expected.split('…').filter(|p| !p.is_empty()) {
        match actual[from..].find(piece) {
            Some(at) => from += at + piece.len(),
            None => return false,
        }
    }
    true
}

/// A scratch directory with the binary on a `bin/` to put first on `PATH`.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_recourse"), bin.join("recourse")).unwrap();
        for linked in ["examples", "docs"] {
            let target = Path::new(ROOT).join(linked).canonicalize().unwrap();
            std::os::unix::fs::symlink(target, dir.path().join(linked)).unwrap();
        }
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn command(&self, script: &str) -> Command {
        let mut path = self.path().join("bin").into_os_string();
        path.push(":");
        path.push(std::env::var_os("PATH").unwrap_or_default());
        let mut command = Command::new("bash");
        command
            .arg("-c")
            .arg(script)
            .current_dir(self.path())
            .env("PATH", path)
            .env("XDG_STATE_HOME", self.path().join("state"))
            .env("NO_COLOR", "1");
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy().into_owned();
            if name.starts_with("RECOURSE_") || name.starts_with("OPENAI_") {
                command.env_remove(name);
            }
        }
        command
    }
}

/// Runs `example` in the foreground; a problem, if any.
fn run(scratch: &Scratch, example: &Example, command: &str) -> Option<String> {
    let mut child = scratch
        .command(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (done, finished) = mpsc::channel();
    let pid = child.id();
    std::thread::spawn(move || {
        if finished.recv_timeout(COMMAND_TIMEOUT).is_err() {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    });
    let out = {
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let err = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
        let out = std::io::read_to_string(stdout).unwrap_or_default();
        (out, err.join().unwrap_or_default())
    };
    let status = child.wait().unwrap();
    let _ = done.send(());
    let text = format!("{}{}", out.0, out.1);
    let code = status.code().unwrap_or(-1);
    if code != example.exit {
        return Some(format!(
            "exit {code}, expected {}:\n{}",
            example.exit,
            tail(&text)
        ));
    }
    (!matches(&example.expected, &text)).then(|| {
        format!(
            "output differs.\nexpected:\n{}\ngot:\n{}",
            example.expected.join("\n"),
            tail(&text)
        )
    })
}

/// Starts `example` in the background; its first output lines must match.
fn start(scratch: &Scratch, example: &Example, command: &str) -> (Option<Child>, Option<String>) {
    let command = command.trim_end().trim_end_matches('&');
    // `exec` keeps the server's pid the child's; `env` takes leading
    // `NAME=value` words, which `exec` would read as the program.
    let exec = if is_assignment(command.split_whitespace().next().unwrap_or_default()) {
        "exec env"
    } else {
        "exec"
    };
    // Its stderr goes to a file, to show when it never starts (a port in use, say).
    let errors = scratch.path().join(format!("stderr-{}.txt", example.line));
    let mut child = scratch
        .command(&format!("{exec} {command}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&errors).unwrap())
        .spawn()
        .unwrap();
    let wanted = example.expected.len().max(1);
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        for _ in 0..wanted {
            match lines.next() {
                Some(Ok(line)) => {
                    if tx.send(line).is_err() {
                        return;
                    }
                }
                _ => return,
            }
        }
        // Keep draining so the server never blocks on a full pipe.
        for _ in lines {}
    });
    let mut seen = Vec::new();
    for _ in 0..wanted {
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(line) => seen.push(line),
            Err(_) => break,
        }
    }
    let problem = if seen.is_empty() {
        let said = std::fs::read_to_string(&errors).unwrap_or_default();
        Some(format!(
            "it never printed its first line; stderr:\n{}",
            tail(&said)
        ))
    } else if !matches(&example.expected, &seen.join("\n")) {
        Some(format!(
            "first lines differ.\nexpected:\n{}\ngot:\n{}",
            example.expected.join("\n"),
            seen.join("\n")
        ))
    } else {
        None
    };
    (Some(child), problem)
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(120)..].join("\n")
}

/// What running the blocks found.
#[derive(Default)]
struct Tally {
    blocks: usize,
    ran: usize,
    missing: usize,
    problems: Vec<String>,
}

#[test]
fn every_documented_example_runs_as_written() {
    let (mut found, mut skipped) = (Vec::new(), Vec::new());
    let documents = documents();
    for (file, text) in &documents {
        let (blocks, skips) = blocks(file, text);
        found.extend(blocks);
        skipped.extend(skips);
    }
    assert!(found.len() >= 10, "the documents' examples were found");
    let only = std::env::var("RECOURSE_README_LINE")
        .ok()
        .map(|s| Selection::parse(&s));
    let no_skip = std::env::var("RECOURSE_TEST_NO_SKIP").is_ok_and(|v| v == "1" || v == "true");
    let mut tally = Tally::default();
    for block in &found {
        if only
            .as_ref()
            .is_none_or(|o| o.takes(&block.file, block.first_line, block.last_line))
        {
            run_block(block, no_skip, &mut tally);
        }
    }
    let mut marked = 0;
    for (file, line, why) in &skipped {
        if only.as_ref().is_none_or(|o| o.takes(file, *line, *line)) {
            eprintln!("{file}:{line}: skipped ({why})");
            marked += 1;
        }
    }
    eprintln!(
        "{} commands run in {} blocks of {} files; {} blocks skipped by a marker, {} for a missing path",
        tally.ran,
        tally.blocks,
        documents.len(),
        marked,
        tally.missing
    );
    assert!(tally.ran > 0, "no block selected by {only:?}");
    assert!(
        tally.problems.is_empty(),
        "{} example(s) do not run as written:\n\n{}",
        tally.problems.len(),
        tally.problems.join("\n\n")
    );
}

/// Runs one block's commands in a scratch directory of its own.
fn run_block(block: &Block, no_skip: bool, tally: &mut Tally) {
    let file = &block.file;
    let scratch = Scratch::new();
    if let Some(needed) = &block.needs {
        let line = block.examples.first().map_or(0, |e| e.line);
        let path = Path::new(ROOT).join(needed);
        if !path.exists() {
            let why =
                format!("{file}:{line}: needs {needed}, which is missing (.ci/run installs it)");
            if no_skip {
                tally.problems.push(why);
            } else {
                eprintln!("SKIPPED {why}");
            }
            tally.missing += 1;
            return;
        }
        let link = scratch.path().join(needed);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(path.canonicalize().unwrap(), link).unwrap();
    }
    tally.blocks += 1;
    let mut background: Vec<Child> = Vec::new();
    if let Some(command) = &block.before {
        let example = Example {
            line: block.first_line,
            command: command.clone(),
            expected: Vec::new(),
            exit: 0,
        };
        let (child, problem) = start(&scratch, &example, command);
        background.extend(child);
        if let Some(problem) = problem {
            let line = block.first_line;
            tally
                .problems
                .push(format!("{file}:{line}: `{command}`: {problem}"));
        }
    }
    for example in &block.examples {
        let Some(command) = runnable(&example.command) else {
            continue;
        };
        tally.ran += 1;
        let problem = if serves(&command) {
            let (child, problem) = start(&scratch, example, &command);
            background.extend(child);
            problem
        } else {
            run(&scratch, example, &command)
        };
        if let Some(problem) = problem {
            let (line, command) = (example.line, &example.command);
            tally
                .problems
                .push(format!("{file}:{line}: `{command}`: {problem}"));
        }
    }
    for mut child in background {
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let _ = child.wait();
    }
}

#[test]
fn the_rules_read_commands_outputs_and_exit_codes() {
    let text = "intro\n```sh\n$ recourse call http://x \\\n    --payload {}   # exit 1\nfailed … 1 attempt(s)\n$ echo hi\nhi\n```\n<!-- readme-test: skip a benchmark -->\n```sh\ncargo bench\n```\n```json\n{}\n```\n";
    let (found, skipped) = blocks("docs/x.md", text);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].file, "docs/x.md");
    assert_eq!(
        skipped,
        [("docs/x.md".to_owned(), 10, "a benchmark".to_owned())]
    );
    let examples = &found[0].examples;
    assert_eq!(examples.len(), 2);
    assert_eq!(examples[0].line, 3);
    assert!(examples[0].command.contains("--payload {}"));
    assert_eq!(examples[0].exit, 1);
    assert_eq!(examples[0].expected, ["failed … 1 attempt(s)"]);
    assert_eq!(examples[1].exit, 0);
    assert!(matches(
        &examples[0].expected,
        "failed after 1 attempt(s): 0 HTTP call(s)"
    ));
    assert!(!matches(
        &examples[0].expected,
        "succeeded after 1 attempt(s)"
    ));
    assert!(!matches(&["a … b".to_owned()], "b a"), "in order");
    assert_eq!(runnable("cargo test --workspace"), None);
    assert_eq!(
        runnable("cargo run --release -p recourse-cli -- demo").as_deref(),
        Some("recourse demo")
    );
    assert!(serves("recourse serve --port 8780"));
    assert!(serves("recourse tools serve --port 8700 &"));
    assert!(!serves("recourse tools serve --mcp"));
    assert!(serves("OTEL_SERVICE_NAME=gw recourse serve"));

    // In an `sh` block without prompts, comments are not expected output.
    let plain =
        "```sh\n# see it act:\nrecourse demo\n# then ask:\nrecourse explain --status 429\n```\n";
    let (found, _) = blocks("docs/x.md", plain);
    let examples = &found[0].examples;
    assert_eq!(examples.len(), 2);
    assert!(
        examples.iter().all(|e| e.expected.is_empty()),
        "{examples:?}"
    );
    assert_eq!((examples[0].line, examples[1].line), (3, 5));

    let stacked = "<!-- readme-test: needs target/x -->\n<!-- readme-test: background recourse tools serve --port 8700 -->\n```sh\n$ curl -s localhost:8700\n```\n";
    let (found, _) = blocks("README.md", stacked);
    assert_eq!(found[0].needs.as_deref(), Some("target/x"));
    assert_eq!(
        found[0].before.as_deref(),
        Some("recourse tools serve --port 8700")
    );

    // Which blocks `RECOURSE_README_LINE` selects.
    let readme_12 = Selection::parse("12");
    assert_eq!(readme_12.file, "README.md");
    assert!(readme_12.takes("README.md", 10, 14));
    assert!(!readme_12.takes("docs/cli.md", 10, 14));
    let page = Selection::parse("docs/cli.md:40");
    assert_eq!(page.line, Some(40));
    assert!(page.takes("docs/cli.md", 38, 45) && !page.takes("docs/cli.md", 41, 45));
    assert!(Selection::parse("docs/cli.md").takes("docs/cli.md", 200, 210));
}

#[test]
fn every_page_of_docs_is_read() {
    let names: Vec<String> = documents().into_iter().map(|(name, _)| name).collect();
    assert_eq!(names[0], "README.md");
    let pages = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "md")
        })
        .count();
    assert_eq!(names.len(), pages + 1, "{names:?}");
    assert!(names.iter().any(|n| n == "docs/protocol.md"));
}
