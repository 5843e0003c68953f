//! The LLM debug directory: one JSON file per model exchange, for a person
//! (or `recourse debug llm`) to read after the process that made it is gone.
//!
//! `RECOURSE_LLM_DEBUG_DIR` names it. Each file holds one exchange already
//! redacted by the store, with every message and the reply cut to
//! [`MAX_TEXT_CHARS`], so no file grows past a few hundred kilobytes. Names
//! are recourse's own (`llm-<uuid v7>.json`, time-ordered), never taken from
//! a prompt or a target. The directory is created owner-only (0700) and each
//! file owner-only (0600), written under a temporary name and renamed, so a
//! reader never sees half a file. At most [`MAX_FILES`] exchanges are kept:
//! the oldest of recourse's files beyond that are removed.
//!
//! Writes are small and synchronous: a model call takes far longer than
//! writing its record, and a short-lived process must not exit before the
//! file is on disk.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use recourse_protocol::truncate_chars;
use serde::{Deserialize, Serialize};

use super::LlmExchange;

/// The version of the file format: bumped only by an incompatible change.
pub const LLM_DEBUG_VERSION: u32 = 1;

/// The most characters of one message or reply a file keeps.
const MAX_TEXT_CHARS: usize = 32_000;

/// The most exchange files a directory keeps.
const MAX_FILES: usize = 1000;

/// The largest file [`LlmDebugDir::list`] reads.
const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

/// How often (in files written) the directory is pruned to [`MAX_FILES`].
const PRUNE_EVERY: u64 = 50;

const PREFIX: &str = "llm-";
const SUFFIX: &str = ".json";

/// One exchange as its file holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmDebugRecord {
    /// [`LLM_DEBUG_VERSION`].
    pub debug_version: u32,
    /// When the model was asked, as RFC 3339 (UTC).
    pub at: String,
    /// The same instant in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The layer: `llm` (L3) or `semantic` (L4).
    pub layer: String,
    /// The call's target endpoint (no query), redacted.
    pub target: String,
    /// The correction attempt within the call.
    pub attempt: u32,
    /// Whether the model answered (its reply may still have held no fix).
    pub answered: bool,
    /// Prompt tokens the model reported.
    pub prompt_tokens: u64,
    /// Completion tokens the model reported.
    pub completion_tokens: u64,
    /// The messages sent, redacted.
    pub prompt: Vec<DebugMessage>,
    /// The reply text, redacted, when the model answered.
    pub reply: Option<String>,
    /// Why there was no reply, redacted, when it did not.
    pub error: Option<String>,
}

/// One message of a recorded prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DebugMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// What was said, redacted.
    pub content: String,
}

/// One file of a debug directory, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmDebugEntry {
    /// The file.
    pub file: PathBuf,
    /// Its exchange, or why it could not be read.
    pub record: Result<LlmDebugRecord, String>,
}

/// A directory of exchange files.
#[derive(Debug)]
pub struct LlmDebugDir {
    path: PathBuf,
    written: AtomicU64,
}

impl LlmDebugDir {
    /// The directory at `path` (created when first written, or by
    /// [`prepare`](Self::prepare)).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            written: AtomicU64::new(0),
        }
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates the directory (owner-only) if it is missing, and checks that
    /// a file can be written in it.
    ///
    /// # Errors
    /// When the directory cannot be created or written.
    pub fn prepare(&self) -> io::Result<()> {
        create_private_dir(&self.path)?;
        refuse_shared_dir(&self.path)?;
        let probe = self.path.join(format!(".probe-{}", uuid::Uuid::now_v7()));
        write_private(&probe, b"")?;
        fs::remove_file(&probe)
    }

    /// Writes `exchange` (redacted already) as a file of its own.
    pub(crate) fn write(&self, exchange: &LlmExchange) -> io::Result<PathBuf> {
        create_private_dir(&self.path)?;
        let record = LlmDebugRecord::of(exchange);
        let json = serde_json::to_vec_pretty(&record).map_err(io::Error::other)?;
        let id = uuid::Uuid::now_v7();
        let file = self.path.join(format!("{PREFIX}{id}{SUFFIX}"));
        let partial = self.path.join(format!(".{PREFIX}{id}{SUFFIX}.partial"));
        write_private(&partial, &json)?;
        if let Err(e) = fs::rename(&partial, &file) {
            let _ = fs::remove_file(&partial);
            return Err(e);
        }
        if self
            .written
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(PRUNE_EVERY)
        {
            prune(&self.path, MAX_FILES)?;
        }
        Ok(file)
    }

    /// Every exchange file in `path`, oldest first. Files that are not
    /// recourse's are ignored; one that cannot be read is listed with why.
    ///
    /// # Errors
    /// When the directory cannot be read.
    pub fn list(path: &Path) -> io::Result<Vec<LlmDebugEntry>> {
        Ok(exchange_files(path)?
            .into_iter()
            .map(|file| {
                let record = read_record(&file);
                LlmDebugEntry { file, record }
            })
            .collect())
    }
}

impl LlmDebugRecord {
    fn of(exchange: &LlmExchange) -> Self {
        let since = exchange
            .at
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        let (reply, error) = match &exchange.reply {
            Ok(text) => (Some(truncate_chars(text, MAX_TEXT_CHARS)), None),
            Err(why) => (None, Some(truncate_chars(why, MAX_TEXT_CHARS))),
        };
        Self {
            debug_version: LLM_DEBUG_VERSION,
            at: recourse_core::journal::rfc3339(exchange.at),
            at_ms: u64::try_from(since.as_millis()).unwrap_or(u64::MAX),
            layer: exchange.layer.to_owned(),
            target: exchange.target.clone(),
            attempt: exchange.attempt,
            answered: exchange.reply.is_ok(),
            prompt_tokens: exchange.tokens.prompt,
            completion_tokens: exchange.tokens.completion,
            prompt: exchange
                .prompt
                .iter()
                .map(|m| DebugMessage {
                    role: m.role.as_str().to_owned(),
                    content: truncate_chars(&m.content, MAX_TEXT_CHARS),
                })
                .collect(),
            reply,
            error,
        }
    }

    /// When the model was asked.
    pub fn time(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.at_ms)
    }
}

/// recourse's exchange files in `dir`, oldest first (the names are time-ordered).
fn exchange_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with(PREFIX) && name.ends_with(SUFFIX) && entry.file_type()?.is_file() {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}

fn read_record(file: &Path) -> Result<LlmDebugRecord, String> {
    let mut text = Vec::new();
    fs::File::open(file)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut text))
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("larger than {MAX_FILE_BYTES} bytes"));
    }
    let record: LlmDebugRecord = serde_json::from_slice(&text).map_err(|e| e.to_string())?;
    if record.debug_version != LLM_DEBUG_VERSION {
        return Err(format!(
            "debug_version {} (this recourse reads {LLM_DEBUG_VERSION})",
            record.debug_version
        ));
    }
    Ok(record)
}

/// Removes the oldest of recourse's files beyond `keep`.
fn prune(dir: &Path, keep: usize) -> io::Result<()> {
    let files = exchange_files(dir)?;
    let excess = files.len().saturating_sub(keep);
    for file in &files[..excess] {
        fs::remove_file(file)?;
    }
    Ok(())
}

fn create_private_dir(path: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(path)
}

/// Writes `bytes` to a new file only its owner may read.
fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Refuses a directory others may write to: they could plant or replace
/// exchange files a person later reads as what the model was sent (or read
/// what was), so the trail it keeps could not be trusted.
#[cfg(unix)]
fn refuse_shared_dir(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(path)?.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "it is writable by its group or by everyone (mode {:o}); \
                 make it the owner's only (chmod 700) or name another",
                mode & 0o777
            ),
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn refuse_shared_dir(_path: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ChatMessage;
    use recourse_core::record::TokenUsage;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("recourse-debug-{name}-{}", uuid::Uuid::now_v7()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn exchange(attempt: u32, reply: Result<String, String>) -> LlmExchange {
        LlmExchange {
            layer: "llm",
            target: "http://127.0.0.1:9/tool".into(),
            attempt,
            at: SystemTime::now(),
            tokens: TokenUsage {
                prompt: 10,
                completion: 2,
            },
            prompt: vec![ChatMessage::user("x".repeat(MAX_TEXT_CHARS + 100))],
            reply,
        }
    }

    #[test]
    fn files_are_private_bounded_and_listed_in_order() {
        let dir = scratch("order");
        let sink = LlmDebugDir::new(&dir);
        sink.write(&exchange(1, Ok("{}".into()))).unwrap();
        sink.write(&exchange(2, Err("model down".into()))).unwrap();
        fs::write(dir.join("notes.txt"), "not ours").unwrap();
        let listed = LlmDebugDir::list(&dir).unwrap();
        assert_eq!(listed.len(), 2, "{listed:?}");
        let records: Vec<&LlmDebugRecord> =
            listed.iter().map(|e| e.record.as_ref().unwrap()).collect();
        assert_eq!(records[0].attempt, 1);
        assert!(records[0].answered && !records[1].answered);
        assert_eq!(records[1].error.as_deref(), Some("model down"));
        assert_eq!(
            records[0].prompt[0].content.chars().count(),
            MAX_TEXT_CHARS,
            "cut to the limit"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&dir), 0o700);
            assert_eq!(mode(&listed[0].file), 0o600);
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unreadable_files_are_listed_with_why() {
        let dir = scratch("bad");
        create_private_dir(&dir).unwrap();
        fs::write(dir.join("llm-0000.json"), "{not json").unwrap();
        let listed = LlmDebugDir::list(&dir).unwrap();
        assert_eq!(listed.len(), 1);
        assert!(listed[0].record.is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn pruning_keeps_the_newest() {
        let dir = scratch("prune");
        let sink = LlmDebugDir::new(&dir);
        for n in 1..=5 {
            sink.write(&exchange(n, Ok("{}".into()))).unwrap();
        }
        prune(&dir, 2).unwrap();
        let attempts: Vec<u32> = LlmDebugDir::list(&dir)
            .unwrap()
            .into_iter()
            .map(|e| e.record.unwrap().attempt)
            .collect();
        assert_eq!(attempts, [4, 5]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    #[cfg(unix)]
    fn a_directory_others_may_write_to_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("shared");
        fs::create_dir_all(&dir).unwrap();
        for mode in [0o777, 0o770, 0o702] {
            fs::set_permissions(&dir, fs::Permissions::from_mode(mode)).unwrap();
            let refused = LlmDebugDir::new(&dir).prepare().unwrap_err();
            assert_eq!(refused.kind(), io::ErrorKind::PermissionDenied, "{mode:o}");
        }
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        LlmDebugDir::new(&dir).prepare().unwrap();
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn prepare_fails_where_no_directory_can_be() {
        let dir = scratch("file");
        fs::write(&dir, "a file, not a directory").unwrap();
        assert!(LlmDebugDir::new(&dir).prepare().is_err());
        assert!(LlmDebugDir::new(dir.join("below")).prepare().is_err());
        fs::remove_file(&dir).unwrap();
    }
}
