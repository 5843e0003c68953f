//! Standard output, where a closed pipe is the reader's choice, not a failure.
//!
//! `recourse journal list | head -1` closes the pipe after one line. `println!`
//! panics on the next write; here every write goes through [`write`], which
//! turns a closed stdout into [`StdoutClosed`], and `main` ends quietly with
//! exit 0 on it, as ripgrep does. Use the `out!` / `outln!` macros (defined in
//! `lib.rs`) instead of `print!` / `println!`.

use std::fmt;
use std::io::{ErrorKind, Write};

/// Standard output was closed by its reader: the command is done.
#[derive(Debug)]
pub(crate) struct StdoutClosed;

impl fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("standard output was closed")
    }
}

impl std::error::Error for StdoutClosed {}

/// Writes `args` to standard output and flushes it.
///
/// # Errors
/// [`StdoutClosed`] when the reader has gone; any other write error as itself.
pub(crate) fn write(args: fmt::Arguments<'_>) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Err(StdoutClosed.into()),
        Err(e) => Err(anyhow::Error::new(e).context("writing to standard output")),
    }
}

/// Whether `error` is (or was caused by) a closed standard output.
pub(crate) fn is_closed(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.is::<StdoutClosed>())
}
