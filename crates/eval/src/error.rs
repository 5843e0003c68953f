//! Why an evaluation could not be made: a suite that cannot be read, or a
//! run that cannot be set up. How a call *ends* is never an error: it is
//! what the scorecard judges.

use std::error::Error;
use std::fmt;

/// A suite that cannot be loaded, or a run that cannot start.
///
/// Its text says what went wrong and names the file or scenario; the
/// underlying cause, when there is one, is its [`source`](Error::source).
///
/// ```
/// let refused = recourse_eval::from_dir(std::path::Path::new("/nonexistent/suite"));
/// assert!(refused.unwrap_err().to_string().contains("/nonexistent/suite"));
/// ```
#[derive(Debug)]
pub struct EvalError {
    what: String,
    cause: Option<Box<dyn Error + Send + Sync>>,
}

impl EvalError {
    /// An error that `what` says all of.
    pub(crate) fn new(what: impl Into<String>) -> Self {
        Self {
            what: what.into(),
            cause: None,
        }
    }

    /// `what` went wrong because of `cause`.
    pub(crate) fn caused(
        what: impl Into<String>,
        cause: impl Into<Box<dyn Error + Send + Sync>>,
    ) -> Self {
        Self {
            what: what.into(),
            cause: Some(cause.into()),
        }
    }
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

impl Error for EvalError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.cause.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}
