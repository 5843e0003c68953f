//! `recourse debug llm`: the model exchanges a debug directory holds.
//!
//! With `RECOURSE_LLM_DEBUG_DIR` set, every prompt/reply pair a correction
//! layer made is written there (redacted), one JSON file each. This lists
//! them, oldest first: when, which layer, for which target endpoint, the
//! tokens, and whether the model answered, with the file to open for the
//! whole exchange.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use recourse::correction::{LlmDebugDir, LlmDebugEntry};
use serde_json::{Value, json};

use crate::settings::Settings;

/// `recourse debug …`.
#[derive(Debug, Args)]
pub(crate) struct DebugArgs {
    #[command(subcommand)]
    command: DebugCommand,
}

#[derive(Debug, Subcommand)]
enum DebugCommand {
    /// List the model exchanges written to the LLM debug directory, oldest first.
    #[command(after_help = r#"Example: recourse debug llm --dir ./llm-debug --json"#)]
    Llm {
        /// The directory [env: RECOURSE_LLM_DEBUG_DIR].
        #[arg(long, value_name = "PATH", value_parser = crate::settings::path)]
        dir: Option<PathBuf>,
        /// Print a JSON array.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(args: &DebugArgs, settings: &Settings) -> Result<i32> {
    match &args.command {
        DebugCommand::Llm { dir, json } => {
            let Some(dir) = dir.as_ref().or(settings.executor.llm_debug_dir.as_ref()) else {
                bail!("no debug directory: give --dir PATH or set RECOURSE_LLM_DEBUG_DIR");
            };
            let entries = LlmDebugDir::list(dir)
                .with_context(|| format!("reading the LLM debug directory {}", dir.display()))?;
            list(&entries, dir, *json)
        }
    }
}

fn list(entries: &[LlmDebugEntry], dir: &std::path::Path, as_json: bool) -> Result<i32> {
    if as_json {
        let all: Vec<Value> = entries.iter().map(entry_json).collect();
        outln!("{}", serde_json::to_string_pretty(&all)?);
        return Ok(0);
    }
    if entries.is_empty() {
        outln!("no model exchanges in {}", dir.display());
    }
    for entry in entries {
        let file = file_name(entry);
        match &entry.record {
            Ok(r) => {
                let answer = if r.answered { "answered" } else { "no answer" };
                outln!(
                    "{}  {:<8}  attempt {}  {:<9}  {}+{} tokens  {}  {file}",
                    r.at,
                    printable(&r.layer),
                    r.attempt,
                    answer,
                    r.prompt_tokens,
                    r.completion_tokens,
                    printable(&r.target),
                );
            }
            Err(why) => outln!("{file}  unreadable: {}", printable(why)),
        }
    }
    Ok(0)
}

/// An entry as `debug llm --json` shows it: the summary, and the file holding the rest.
fn entry_json(entry: &LlmDebugEntry) -> Value {
    let file = entry.file.display().to_string();
    match &entry.record {
        Ok(r) => json!({
            "file": file,
            "at": r.at,
            "layer": r.layer,
            "target": r.target,
            "attempt": r.attempt,
            "answered": r.answered,
            "prompt_tokens": r.prompt_tokens,
            "completion_tokens": r.completion_tokens,
            "error": r.error,
        }),
        Err(why) => json!({"file": file, "unreadable": why}),
    }
}

fn file_name(entry: &LlmDebugEntry) -> String {
    entry
        .file
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// `text` without control characters, so a file cannot steer the terminal.
fn printable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}
