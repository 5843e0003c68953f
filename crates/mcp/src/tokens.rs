//! Where OAuth tokens are kept: one file per server URL, readable by its
//! owner only ([`TokenStore`], [`TokenFile`]).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use recourse_protocol::mcp::McpError;
use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The largest token file read.
const MAX_TOKEN_FILE_BYTES: u64 = 1024 * 1024;

/// A directory of token files, one per server URL (by default
/// `$XDG_STATE_HOME/recourse/oauth/`, `~/.local/state/recourse/oauth/`
/// without `XDG_STATE_HOME`).
///
/// ```
/// use recourse_mcp::oauth::TokenStore;
///
/// let store = TokenStore::new("/home/a/.local/state/recourse/oauth");
/// let file = store.file_for("https://mcp.example.com/mcp");
/// assert!(file.path().starts_with("/home/a/.local/state/recourse/oauth"));
/// assert_eq!(file, store.file_for("https://mcp.example.com/mcp"));
/// assert_ne!(file, store.file_for("https://mcp.example.com/other"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenStore {
    dir: PathBuf,
}

impl TokenStore {
    /// The token files in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The store at `$XDG_STATE_HOME/recourse/oauth`, or
    /// `$HOME/.local/state/recourse/oauth` without `XDG_STATE_HOME`.
    ///
    /// # Errors
    /// Neither variable is set (or both are empty).
    pub fn default_location() -> Result<Self, McpError> {
        let set = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        let state = match (set("XDG_STATE_HOME"), set("HOME")) {
            (Some(state), _) => PathBuf::from(state),
            (None, Some(home)) => Path::new(&home).join(".local").join("state"),
            (None, None) => {
                return Err(McpError::config(
                    "neither XDG_STATE_HOME nor HOME is set: there is nowhere to keep OAuth tokens",
                ));
            }
        };
        Ok(Self::new(state.join("recourse").join("oauth")))
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of the server at `url` (named by a digest of the URL, which
    /// it also holds).
    pub fn file_for(&self, url: &str) -> TokenFile {
        let digest = Sha256::digest(url.as_bytes());
        let name: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        TokenFile::at(self.dir.join(format!("{name}.json")), url)
    }
}

/// The tokens of one server, in one file only its owner may read (`0600`,
/// in a `0700` directory), written whole or not at all. The file holds the
/// server's URL, the OAuth client it registered as, and the token response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenFile {
    path: PathBuf,
    url: String,
}

/// The file's contents.
#[derive(Serialize, Deserialize)]
struct Kept {
    /// The server the tokens are for.
    url: String,
    /// rmcp's record of the client and its tokens.
    credentials: StoredCredentials,
}

impl TokenFile {
    /// The tokens of the server at `url`, kept at `path`.
    pub fn at(path: PathBuf, url: impl Into<String>) -> Self {
        Self {
            path,
            url: url.into(),
        }
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The server the tokens are for.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether the file exists.
    pub fn exists(&self) -> bool {
        self.path.is_file()
    }

    /// Removes the file: `true` when there was one.
    ///
    /// # Errors
    /// It exists and cannot be removed.
    pub fn remove(&self) -> Result<bool, McpError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(
                McpError::config(format!("{} cannot be removed", self.path.display())).caused_by(e),
            ),
        }
    }

    /// The credentials kept, `None` when there is no file.
    fn read(&self) -> Result<Option<StoredCredentials>, String> {
        let mut file = match std::fs::File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{} cannot be read: {e}", self.path.display())),
        };
        check_private(&file, &self.path)?;
        let mut bytes = Vec::new();
        Read::by_ref(&mut file)
            .take(MAX_TOKEN_FILE_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("{} cannot be read: {e}", self.path.display()))?;
        // serde's message may quote what it could not read: only the place is told.
        let kept: Kept = serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "{} is not a token file recourse wrote (line {}, column {}); log in again",
                self.path.display(),
                e.line(),
                e.column()
            )
        })?;
        if kept.url != self.url {
            return Err(format!(
                "{} holds the tokens of another server; log in again",
                self.path.display()
            ));
        }
        Ok(Some(kept.credentials))
    }

    /// Writes `credentials` whole: a private temporary file beside the
    /// file, synced, then renamed over it.
    fn write(&self, credentials: StoredCredentials) -> Result<(), String> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        private_dir(dir)?;
        let kept = Kept {
            url: self.url.clone(),
            credentials,
        };
        let bytes = serde_json::to_vec_pretty(&kept)
            .map_err(|e| format!("the tokens could not be written: {e}"))?;
        let name = self
            .path
            .file_name()
            .map_or_else(|| "tokens".into(), |n| n.to_string_lossy().into_owned());
        let temporary = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let written = (|| {
            let mut file = private_file(&temporary)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            std::fs::rename(&temporary, &self.path)
        })();
        written.map_err(|e| {
            let _ = std::fs::remove_file(&temporary);
            format!("{} cannot be written: {e}", self.path.display())
        })
    }
}

#[async_trait::async_trait]
impl CredentialStore for TokenFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.read().map_err(AuthError::CredentialStoreError)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.write(credentials)
            .map_err(AuthError::CredentialStoreError)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.remove()
            .map(|_| ())
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))
    }
}

/// Creates `dir` (and its parents) readable by its owner only.
fn private_dir(dir: &Path) -> Result<(), String> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|e| format!("{} cannot be created: {e}", dir.display()))
}

/// A new file at `path` only its owner may read or write.
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// A token file others may read is refused, as ssh refuses such a key.
#[cfg(unix)]
fn check_private(file: &std::fs::File, path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = file
        .metadata()
        .map_err(|e| format!("{} cannot be read: {e}", path.display()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(format!(
            "{} may be read by others (mode {:o}); make it 0600 (chmod 600), or log in again",
            path.display(),
            mode & 0o777
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_: &std::fs::File, _: &Path) -> Result<(), String> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(token: &str) -> StoredCredentials {
        let response: rmcp::transport::auth::OAuthTokenResponse = serde_json::from_value(
            serde_json::json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}),
        )
        .unwrap();
        StoredCredentials::new("client-1".into(), Some(response), vec![], Some(1))
    }

    fn fresh() -> PathBuf {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("recourse-tokens-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[tokio::test]
    async fn tokens_are_written_private_and_read_back() {
        let dir = fresh();
        let store = TokenStore::new(dir.join("oauth"));
        let file = store.file_for("https://mcp.example/mcp");
        assert!(file.load().await.unwrap().is_none());
        file.save(credentials("at-0123456789")).await.unwrap();
        let back = file.load().await.unwrap().unwrap();
        assert_eq!(back.client_id, "client-1");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(file.path()), 0o600);
            assert_eq!(mode(store.dir()), 0o700);
        }
        // Written again: still one file, no temporary left.
        file.save(credentials("at-9876543210")).await.unwrap();
        assert_eq!(std::fs::read_dir(store.dir()).unwrap().count(), 1);
        assert!(file.remove().unwrap() && !file.remove().unwrap());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn a_file_others_may_read_or_of_another_server_is_refused_without_quoting_it() {
        let dir = fresh();
        let store = TokenStore::new(&dir);
        let file = store.file_for("https://a.example/mcp");
        file.save(credentials("at-secret-0123")).await.unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(file.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
            let refused = file.load().await.unwrap_err().to_string();
            assert!(
                refused.contains("0600") && refused.contains("644"),
                "{refused}"
            );
            std::fs::set_permissions(file.path(), std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let other = TokenFile::at(file.path().to_owned(), "https://b.example/mcp");
        let refused = other.load().await.unwrap_err().to_string();
        assert!(refused.contains("another server"), "{refused}");
        std::fs::write(
            file.path(),
            br#"{"url": 5, "credentials": "at-secret-0123"}"#,
        )
        .unwrap();
        let refused = file.load().await.unwrap_err().to_string();
        assert!(
            refused.contains("line 1") && !refused.contains("at-secret"),
            "{refused}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
