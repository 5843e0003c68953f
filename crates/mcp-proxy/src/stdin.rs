//! This process's stdin, read on a thread of its own.
//!
//! # Why not `tokio::io::stdin`
//!
//! Tokio reads stdin on its blocking pool, and a runtime that shuts down
//! waits for every blocking read to return. A proxy told to stop (SIGTERM,
//! Ctrl-C) by a client that keeps its end of the pipe open would then never
//! exit: the read returns only when the client writes or closes. So stdin
//! is read by a plain thread into an in-memory pipe the proxy reads; the
//! thread, blocked in its read, is left behind when the process exits.

use std::io::Read;

use tokio::io::{AsyncWriteExt, DuplexStream};

/// How many bytes of stdin are held ahead of the proxy's reading.
const BUFFERED: usize = 64 * 1024;

/// Stdin, as a stream whose reading never holds up the runtime's shutdown.
pub(crate) fn stdin() -> std::io::Result<DuplexStream> {
    let (reader, mut writer) = tokio::io::duplex(BUFFERED);
    let runtime = tokio::runtime::Handle::current();
    std::thread::Builder::new()
        .name("recourse-stdin".to_owned())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buffer = vec![0; BUFFERED];
            loop {
                let read = match stdin.read(&mut buffer) {
                    Ok(0) | Err(_) => return,
                    Ok(read) => read,
                };
                // The proxy stopped reading: nothing more to pass on.
                if runtime.block_on(writer.write_all(&buffer[..read])).is_err() {
                    return;
                }
            }
        })?;
    Ok(reader)
}
