//! `--stop-when-stdin-closes`: a server started by a program stops when
//! that program is gone, however it went.
//!
//! # Why standard input
//!
//! A program that starts `recourse serve` for itself (`Gateway.spawn()` in
//! Python) stops it on exit — unless it is killed outright (`kill -9`, the
//! OOM killer), when nothing of it runs to say so and the gateway would
//! serve on, orphaned. The parent holds the write end of the gateway's
//! standard input; the operating system closes it whenever the parent ends,
//! so the gateway reads the end of its input at once, on every system, with
//! no process id to poll (and reuse) and no Linux-only `PR_SET_PDEATHSIG`
//! (which fires when the spawning *thread* ends, not the process). The
//! gateway then stops as on SIGTERM: it drains, and in-flight calls finish.
//!
//! The input is read on a thread of its own, never on the async runtime's
//! blocking pool: a read that never ends (the parent lives on) must not keep
//! the runtime from shutting down after SIGTERM.

use std::io::Read;

/// The flag.
#[derive(Debug, Clone, Copy, clap::Args)]
pub(crate) struct StdinWatchArg {
    /// Stop (as on SIGTERM: drain, let in-flight calls finish) once standard input closes: for a
    /// program that starts the gateway and holds its input open, so the gateway ends when that
    /// program does, even when it is killed.
    #[arg(long = "stop-when-stdin-closes")]
    pub(crate) enabled: bool,
}

/// Resolves on SIGTERM or Ctrl-C, or — with `watch` — once standard input
/// closes (saying so on stderr).
pub(crate) async fn stop_requested(watch: StdinWatchArg) {
    if !watch.enabled {
        return recourse_gateway::shutdown_signal().await;
    }
    tokio::select! {
        () = recourse_gateway::shutdown_signal() => {}
        () = closed() => eprintln!("standard input closed: stopping"),
    }
}

/// Resolves once standard input reaches its end (or cannot be read).
fn closed() -> impl Future<Output = ()> {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let mut input = std::io::stdin().lock();
        let mut discarded = [0u8; 512];
        while matches!(input.read(&mut discarded), Ok(n) if n > 0) {}
        let _ = tx.send(());
    });
    async move {
        let _ = rx.await;
    }
}
