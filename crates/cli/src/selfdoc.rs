//! The command describing itself: `recourse completions SHELL` writes a
//! completion script, `recourse man` a man page — both from the same clap
//! definitions that parse the command line, so they never drift from it.

use std::io::Write;

use clap::{CommandFactory, ValueEnum};

/// The shells `recourse completions` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Shell {
    Bash,
    Zsh,
    Fish,
    Powershell,
}

/// Writes the completion script for `shell` to stdout.
pub(crate) fn completions<C: CommandFactory>(shell: Shell) -> anyhow::Result<i32> {
    let mut command = C::command();
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
        Shell::Powershell => clap_complete::Shell::PowerShell,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "recourse", &mut script);
    emit(&script)
}

/// Writes the man page, recourse(1), in roff to stdout: the command, its
/// options, its subcommands (`recourse SUBCOMMAND --help` has each one's
/// options and example) and its version.
pub(crate) fn man<C: CommandFactory>() -> anyhow::Result<i32> {
    let mut page = Vec::new();
    clap_mangen::Man::new(C::command()).render(&mut page)?;
    emit(&page)
}

fn emit(bytes: &[u8]) -> anyhow::Result<i32> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(0),
        // Read partly (`| head`): done.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
        Err(e) => Err(e.into()),
    }
}
