//! What went wrong when a journal could not do its work: a kind a program
//! can act on, the context in words, and the underlying error as a source.

use std::borrow::Cow;
use std::error::Error;
use std::fmt;

/// The journal could not record something. The executor then refuses to
/// dispatch: a call it cannot record is a call it could lose.
///
/// ```
/// use recourse_core::journal::{JournalError, JournalErrorKind};
///
/// let io = std::io::Error::other("disk full");
/// let e = JournalError::caused(JournalErrorKind::Operation, "recording attempt", io);
/// assert_eq!(e.kind(), JournalErrorKind::Operation);
/// assert_eq!(e.to_string(), "journal: recording attempt: disk full");
/// assert!(std::error::Error::source(&e).is_some());
/// ```
#[derive(Debug)]
pub struct JournalError {
    kind: JournalErrorKind,
    context: Cow<'static, str>,
    detail: Detail,
}

#[derive(Debug)]
enum Detail {
    Source(Box<dyn Error + Send + Sync>),
    Text(String),
}

/// What kind of failure a [`JournalError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum JournalErrorKind {
    /// The location names no journal this build can open (empty, or a
    /// database whose feature is off).
    Location,
    /// The database could not be opened, reached, configured or migrated.
    Open,
    /// A read or a write failed: the database refused it, or the connection broke.
    Operation,
    /// The journal's writer has stopped: nothing more can be recorded.
    Stopped,
    /// The journal holds something it should not (a claimed key whose call vanished).
    Inconsistent,
    /// The database refused a write that conflicts with what it holds: an
    /// attempt of the call recorded already, by another run of it (one
    /// that took the call over when this one's lease had run out).
    Conflict,
    /// This journal cannot do it (a journal of a test, or of an older
    /// kind, that keeps no approvals).
    Unsupported,
}

impl JournalError {
    /// A failure of `kind` while `context`, described by `detail`.
    pub fn new(
        kind: JournalErrorKind,
        context: impl Into<Cow<'static, str>>,
        detail: impl fmt::Display,
    ) -> Self {
        Self {
            kind,
            context: context.into(),
            detail: Detail::Text(detail.to_string()),
        }
    }

    /// A failure of `kind` while `context`, caused by `source`.
    pub fn caused(
        kind: JournalErrorKind,
        context: impl Into<Cow<'static, str>>,
        source: impl Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            kind,
            context: context.into(),
            detail: Detail::Source(Box::new(source)),
        }
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> JournalErrorKind {
        self.kind
    }
}

impl fmt::Display for JournalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "journal: {}: ", self.context)?;
        match &self.detail {
            Detail::Source(source) => write!(f, "{source}"),
            Detail::Text(text) => f.write_str(text),
        }
    }
}

impl Error for JournalError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match &self.detail {
            Detail::Source(source) => Some(source.as_ref()),
            Detail::Text(_) => None,
        }
    }
}
