//! Who calls the gateway: named callers, each with its own token, its own
//! calls and its own idempotency keys, and two roles — `admin` (sees and
//! settles every call) and `approver` (sees every call in doubt, to settle
//! it).
//!
//! A tokens file (`serve --tokens FILE`, `RECOURSE_GATEWAY_TOKENS`) names
//! them, each token given as itself or as its SHA-256:
//!
//! ```
//! use recourse_door::Callers;
//!
//! let callers = Callers::parse(r#"{"callers": [
//!     {"name": "ops", "token": "a-long-operator-token", "admin": true},
//!     {"name": "agent", "token_sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
//! ]}"#).unwrap();
//! assert_eq!(callers.len(), 2);
//! assert_eq!(callers.identify("test").unwrap().name(), "agent");
//! assert!(callers.identify("guess").is_none());
//!
//! let refused = Callers::parse(r#"{"callers": [{"name": "ops", "token": "a-long-operator-token", "root": true}]}"#);
//! assert!(refused.unwrap_err().to_string().contains("root"));
//! ```
//!
//! One `RECOURSE_GATEWAY_TOKEN` is caller [`DEFAULT_CALLER`] with both
//! roles, as is everyone on a gateway without a token (loopback only).

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use recourse::call::KeyScope;
use recourse::journal::{DEFAULT_CALLER, Seen};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::throttle::FailedLogins;

/// The largest tokens file read.
const MAX_FILE: u64 = 1024 * 1024;
/// The longest caller name: it prefixes the caller's idempotency keys.
const MAX_NAME: usize = 64;
/// The shortest token a file may hold as itself.
const MIN_TOKEN: usize = 16;
/// The shortest token given as itself on a server reachable beyond loopback.
pub const MIN_EXPOSED_TOKEN: usize = 32;

/// One caller: a name and its roles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    name: String,
    admin: bool,
    approver: bool,
}

impl Caller {
    /// The caller of a gateway with one token, or none: both roles.
    pub fn default_caller() -> Self {
        Self {
            name: DEFAULT_CALLER.to_owned(),
            admin: true,
            approver: true,
        }
    }

    /// The caller's name, as its calls record it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sees and settles every call.
    pub fn is_admin(&self) -> bool {
        self.admin
    }

    /// Sees every call in doubt and may settle it (an admin is one too).
    pub fn is_approver(&self) -> bool {
        self.approver || self.admin
    }

    /// Which calls the caller sees.
    pub fn seen(&self) -> Seen {
        if self.admin {
            Seen::All
        } else if self.approver {
            Seen::OwnAndInDoubt(self.name.clone())
        } else {
            Seen::Own(self.name.clone())
        }
    }
}

/// The callers a gateway knows, by their tokens' SHA-256.
#[derive(Clone)]
pub struct Callers {
    by_digest: HashMap<[u8; 32], Arc<Caller>>,
    keys: KeyScope,
    /// The length of the shortest token given as itself (a digest's token
    /// is not known), if any was.
    shortest_plain: Option<usize>,
    /// Failed authentications by peer, shared by every clone: one server's
    /// routers all count into it.
    failed: Arc<Mutex<FailedLogins>>,
}

impl fmt::Debug for Callers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.by_digest.values().map(|c| c.name()).collect();
        names.sort_unstable();
        f.debug_struct("Callers")
            .field("names", &names)
            .field("keys", &self.keys)
            .finish()
    }
}

/// A tokens file that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallersError(String);

impl fmt::Display for CallersError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CallersError {}

fn refused(message: impl Into<String>) -> CallersError {
    CallersError(message.into())
}

/// The file, exactly: unknown keys are refused.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokensFile {
    callers: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    token: Option<String>,
    token_sha256: Option<String>,
    #[serde(default)]
    admin: bool,
    #[serde(default)]
    approver: bool,
}

impl Callers {
    /// The one caller of a gateway with one token: [`DEFAULT_CALLER`], both
    /// roles, its keys as given.
    pub fn single(token: &str) -> Self {
        let mut by_digest = HashMap::with_capacity(1);
        by_digest.insert(digest(token), Arc::new(Caller::default_caller()));
        Self {
            by_digest,
            keys: KeyScope::Shared,
            shortest_plain: Some(token.chars().count()),
            failed: Arc::default(),
        }
    }

    /// The callers `text` (a tokens file's JSON) names; each caller's keys
    /// are its own.
    ///
    /// # Errors
    /// Unknown keys, a name that is not 1–64 of `A–Z a–z 0–9 . _ -`, a
    /// caller with neither or both of `token` and `token_sha256`, a token
    /// shorter than 16 characters or with spaces or control characters, a
    /// digest that is not 64 hex digits, duplicate names or tokens, no callers.
    pub fn parse(text: &str) -> Result<Self, CallersError> {
        let file: TokensFile = serde_json::from_str(text).map_err(|e| {
            refused(format!(
                "{e}; the file is {{\"callers\": [{{\"name\", \"token\" or \"token_sha256\", \"admin\"?, \"approver\"?}}]}}"
            ))
        })?;
        if file.callers.is_empty() {
            return Err(refused("the file names no callers"));
        }
        let mut by_digest = HashMap::with_capacity(file.callers.len());
        let mut names = std::collections::HashSet::with_capacity(file.callers.len());
        let mut shortest_plain: Option<usize> = None;
        for entry in file.callers {
            check_name(&entry.name)?;
            if entry.name == DEFAULT_CALLER {
                return Err(refused(format!(
                    "caller name {DEFAULT_CALLER:?} is reserved (the one RECOURSE_GATEWAY_TOKEN's \
                     caller, and whose calls recorded without a caller are): choose another"
                )));
            }
            if !names.insert(entry.name.clone()) {
                return Err(refused(format!("caller {:?} is named twice", entry.name)));
            }
            let key = match (&entry.token, &entry.token_sha256) {
                (Some(token), None) => {
                    check_token(&entry.name, token)?;
                    let length = token.chars().count();
                    shortest_plain = Some(shortest_plain.map_or(length, |s| s.min(length)));
                    digest(token)
                }
                (None, Some(hex)) => parse_digest(hex).ok_or_else(|| {
                    refused(format!(
                        "caller {:?}: token_sha256 is 64 hex digits (the SHA-256 of the token)",
                        entry.name
                    ))
                })?,
                _ => {
                    return Err(refused(format!(
                        "caller {:?} needs exactly one of token and token_sha256",
                        entry.name
                    )));
                }
            };
            let caller = Caller {
                name: entry.name,
                admin: entry.admin,
                approver: entry.approver,
            };
            if by_digest.insert(key, Arc::new(caller)).is_some() {
                return Err(refused("two callers have the same token"));
            }
        }
        Ok(Self {
            by_digest,
            keys: KeyScope::PerCaller,
            shortest_plain,
            failed: Arc::default(),
        })
    }

    /// The callers the tokens file at `path` names ([`parse`](Self::parse)).
    ///
    /// # Errors
    /// As `parse`; a file that cannot be read or is over 1 MiB; a file its
    /// group or others may write (whoever may write it may add a caller);
    /// and — when it holds a token as itself — a file that its group or
    /// others may read.
    pub fn from_file(path: &Path) -> Result<Self, CallersError> {
        let at = |e: &dyn fmt::Display| refused(format!("{}: {e}", path.display()));
        let meta = std::fs::metadata(path).map_err(|e| at(&e))?;
        if meta.len() > MAX_FILE {
            return Err(at(&"larger than 1 MiB"));
        }
        if writable_by_others(&meta) {
            return Err(at(
                &"its group or others may write it, and so name themselves a caller: chmod 600 it",
            ));
        }
        let text = std::fs::read_to_string(path).map_err(|e| at(&e))?;
        let callers = Self::parse(&text).map_err(|e| at(&e))?;
        if holds_plain_token(&text) && readable_by_others(&meta) {
            return Err(at(
                &"it holds a plain token and its group or others may read it: chmod 600 it, or \
                  give each token as token_sha256",
            ));
        }
        Ok(callers)
    }

    /// Adds the one `RECOURSE_GATEWAY_TOKEN` as caller [`DEFAULT_CALLER`]
    /// (both roles) beside the file's callers.
    ///
    /// # Errors
    /// When the file names a `default` caller or holds the same token.
    pub fn with_default(mut self, token: &str) -> Result<Self, CallersError> {
        if self.by_digest.values().any(|c| c.name == DEFAULT_CALLER) {
            return Err(refused(format!(
                "RECOURSE_GATEWAY_TOKEN is caller {DEFAULT_CALLER:?}, which the tokens file names too: \
                 unset one of them"
            )));
        }
        let length = token.chars().count();
        self.shortest_plain = Some(self.shortest_plain.map_or(length, |s| s.min(length)));
        if self
            .by_digest
            .insert(digest(token), Arc::new(Caller::default_caller()))
            .is_some()
        {
            return Err(refused(
                "RECOURSE_GATEWAY_TOKEN is also a token in the tokens file",
            ));
        }
        Ok(self)
    }

    /// The caller whose token `token` is, if any.
    pub fn identify(&self, token: &str) -> Option<Arc<Caller>> {
        self.by_digest.get(&digest(token)).cloned()
    }

    /// How many callers there are.
    pub fn len(&self) -> usize {
        self.by_digest.len()
    }

    /// Whether there are none (never, for callers built here).
    pub fn is_empty(&self) -> bool {
        self.by_digest.is_empty()
    }

    /// Whose key space a caller's idempotency key is in.
    pub fn key_scope(&self) -> KeyScope {
        self.keys
    }

    /// The failed authentications counted against these callers' server.
    pub fn failed_logins(&self) -> &Mutex<FailedLogins> {
        &self.failed
    }

    /// Whether a caller other than `name` may decide approvals.
    pub fn has_approver_besides(&self, name: &str) -> bool {
        self.by_digest
            .values()
            .any(|c| c.is_approver() && c.name != name)
    }

    /// Checks the tokens for a server reachable beyond loopback: each given
    /// as itself is at least [`MIN_EXPOSED_TOKEN`] characters (one given as
    /// its SHA-256 cannot be measured, and is taken as its maker chose it).
    ///
    /// # Errors
    /// A shorter token.
    pub fn check_exposed(&self) -> Result<(), CallersError> {
        match self.shortest_plain {
            Some(length) if length < MIN_EXPOSED_TOKEN => Err(refused(format!(
                "a server reachable beyond loopback needs tokens of at least {MIN_EXPOSED_TOKEN} \
                 characters, and one has {length}: use a longer token (openssl rand -hex 32), or \
                 bind 127.0.0.1"
            ))),
            _ => Ok(()),
        }
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn parse_digest(hex: &str) -> Option<[u8; 32]> {
    let bytes = hex.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        let text = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(text, 16).ok()?;
    }
    Some(out)
}

fn check_name(name: &str) -> Result<(), CallersError> {
    let fine = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if fine {
        Ok(())
    } else {
        Err(refused(format!(
            "caller name {:?} is not 1–{MAX_NAME} of A–Z a–z 0–9 . _ -",
            name.chars().take(80).collect::<String>()
        )))
    }
}

fn check_token(name: &str, token: &str) -> Result<(), CallersError> {
    if token.len() < MIN_TOKEN || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(refused(format!(
            "caller {name:?}: a token is at least {MIN_TOKEN} visible ASCII characters (no spaces)"
        )));
    }
    Ok(())
}

/// Whether any caller in `text` (parsed already) gives its token as itself.
fn holds_plain_token(text: &str) -> bool {
    serde_json::from_str::<TokensFile>(text)
        .map(|f| f.callers.iter().any(|c| c.token.is_some()))
        .unwrap_or(true)
}

#[cfg(unix)]
fn readable_by_others(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o044 != 0
}

#[cfg(not(unix))]
fn readable_by_others(_meta: &std::fs::Metadata) -> bool {
    false
}

#[cfg(unix)]
fn writable_by_others(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o022 != 0
}

#[cfg(not(unix))]
fn writable_by_others(_meta: &std::fs::Metadata) -> bool {
    false
}

#[cfg(test)]
mod tests;
