//! The journal's file, created readable by its owner only: it holds
//! payloads and keys.

use std::path::Path;

/// Creates the journal's file, readable and writable by its owner only
/// (0600), unless it exists: it holds payloads and keys. SQLite creates its
/// `-wal` and `-shm` files with the database file's mode, so they are the
/// owner's only too. A `file:` URI is left to SQLite.
#[cfg(unix)]
pub(crate) fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    if path.to_str().is_some_and(|p| p.starts_with("file:")) {
        return Ok(());
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(not(unix))]
pub(crate) fn create_private(_path: &Path) -> std::io::Result<()> {
    Ok(())
}
