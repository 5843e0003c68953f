//! The skip rule for tests that need an outside service.
//!
//! A test that needs PostgreSQL, Redis or a third-party MCP server learns where
//! it is from a variable (`RECOURSE_TEST_POSTGRES_URL`, …). On a fresh machine
//! that variable is unset, and `cargo test --workspace` should still pass — but
//! say, visibly, what it did not run. In CI the same absence is a mistake, so
//! [`NO_SKIP_VAR`] turns it into a failure.
//!
//! The notice is written to the process's standard error directly, not with
//! `eprintln!`: libtest captures only the `print!`/`eprint!` family, so a
//! direct write shows even when the test passes and its output is captured.
//!
//! A set variable naming an unreachable service is not this module's business:
//! the test uses the value and fails when it cannot connect.

use std::ffi::OsString;
use std::io::Write;

/// When this variable is `1` (or `true`/`yes`), a missing service variable
/// fails the test instead of skipping it. `.ci/run` sets it.
pub const NO_SKIP_VAR: &str = "RECOURSE_TEST_NO_SKIP";

/// The value of `var`, which tells a test where its outside service is.
///
/// When `var` is unset (or empty) this writes a `SKIPPED` notice naming the
/// test and the variable to standard error, past libtest's capture, and
/// returns `None`: the caller returns without running.
///
/// ```no_run
/// # fn postgres_suite(_: &str) {}
/// let Some(url) = recourse_test_support::service_var("RECOURSE_TEST_DOC_EXAMPLE_URL") else {
///     return; // skipped, and said so on stderr
/// };
/// postgres_suite(&url);
/// ```
///
/// # Panics
/// When `var` is unset and [`NO_SKIP_VAR`] is on; when `var` is not valid
/// UTF-8; when [`NO_SKIP_VAR`] is neither on nor off.
#[track_caller]
#[must_use]
pub fn service_var(var: &str) -> Option<String> {
    let test = std::thread::current()
        .name()
        .filter(|name| *name != "main")
        .map_or_else(|| "a test".to_owned(), str::to_owned);
    match decide(var, std::env::var_os(var), std::env::var_os(NO_SKIP_VAR)) {
        Ok(Need::Run(value)) => Some(value),
        Ok(Need::Skip) => {
            let _ = writeln!(
                std::io::stderr().lock(),
                "SKIPPED {test}: {var} is not set ({NO_SKIP_VAR}=1 makes this a failure)"
            );
            None
        }
        Err(message) => panic!("{test}: {message}"),
    }
}

/// What a test should do, given its variable.
#[derive(Debug, PartialEq, Eq)]
enum Need {
    /// Run against this service.
    Run(String),
    /// Skip, and say so.
    Skip,
}

/// The rule, from the two variables' values; `Err` is why the test fails.
fn decide(var: &str, value: Option<OsString>, no_skip: Option<OsString>) -> Result<Need, String> {
    let no_skip = match no_skip.as_ref().map(|v| v.to_str()) {
        None => false,
        Some(Some(v)) => match v.trim().to_ascii_lowercase().as_str() {
            "" | "0" | "false" | "no" => false,
            "1" | "true" | "yes" => true,
            _ => return Err(format!("{NO_SKIP_VAR} must be 1 or 0, not {v:?}")),
        },
        Some(None) => return Err(format!("{NO_SKIP_VAR} is not valid UTF-8")),
    };
    match value.filter(|v| !v.is_empty()) {
        Some(v) => v
            .into_string()
            .map(Need::Run)
            .map_err(|_| format!("{var} is not valid UTF-8")),
        None if no_skip => Err(format!(
            "{var} is not set, and {NO_SKIP_VAR} forbids skipping: set it to the service this test needs"
        )),
        None => Ok(Need::Skip),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> Option<OsString> {
        Some(OsString::from(s))
    }

    #[test]
    fn a_set_variable_runs_the_test_whatever_no_skip_says() {
        for no_skip in [None, os("1"), os("0")] {
            assert_eq!(
                decide("V", os("postgres://x"), no_skip),
                Ok(Need::Run("postgres://x".into()))
            );
        }
    }

    #[test]
    fn an_unset_or_empty_variable_skips_unless_no_skip_is_on() {
        for value in [None, os("")] {
            for off in [None, os(""), os("0"), os("false"), os("NO")] {
                assert_eq!(decide("V", value.clone(), off), Ok(Need::Skip));
            }
            for on in [os("1"), os("true"), os(" Yes ")] {
                let err = decide("V", value.clone(), on).unwrap_err();
                assert!(
                    err.contains("V is not set") && err.contains(NO_SKIP_VAR),
                    "{err}"
                );
            }
        }
    }

    #[test]
    fn an_unreadable_no_skip_is_a_failure_not_a_guess() {
        let err = decide("V", None, os("sometimes")).unwrap_err();
        assert!(err.contains("\"sometimes\""), "{err}");
        let err = decide("V", os("x"), os("2")).unwrap_err();
        assert!(err.contains(NO_SKIP_VAR), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn a_variable_that_is_not_utf8_is_a_failure() {
        use std::os::unix::ffi::OsStringExt;
        let bad = Some(OsString::from_vec(vec![0xff, 0xfe]));
        assert!(
            decide("V", bad.clone(), None)
                .unwrap_err()
                .contains("V is not valid UTF-8")
        );
        assert!(decide("V", None, bad).is_err());
    }
}
