//! Who can reach a gateway: a server bound beyond loopback needs a token,
//! unless its operator says, knowingly, that it may go without.

use std::fmt;
use std::net::IpAddr;

/// Whether serving on `bind` is allowed: on loopback always; beyond it only
/// with a token (`has_token`) or when told `insecure_no_auth` — then with
/// [`Exposure::Unauthenticated`], a warning to give.
///
/// ```
/// use recourse_gateway::{Exposure, check_exposure};
///
/// let anywhere = "0.0.0.0".parse().unwrap();
/// assert!(check_exposure(anywhere, false, false).is_err());
/// assert_eq!(check_exposure(anywhere, true, false), Ok(Exposure::Authenticated));
/// assert_eq!(check_exposure("127.0.0.1".parse().unwrap(), false, false), Ok(Exposure::Loopback));
/// ```
///
/// # Errors
/// Beyond loopback without a token and without `insecure_no_auth`.
pub fn check_exposure(
    bind: IpAddr,
    has_token: bool,
    insecure_no_auth: bool,
) -> Result<Exposure, ExposureRefused> {
    match (bind.is_loopback(), has_token, insecure_no_auth) {
        (true, _, _) => Ok(Exposure::Loopback),
        (false, true, _) => Ok(Exposure::Authenticated),
        (false, false, true) => Ok(Exposure::Unauthenticated(UnauthenticatedWarning(bind))),
        (false, false, false) => Err(ExposureRefused(bind)),
    }
}

/// How a gateway allowed to serve is exposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Only this machine can reach it.
    Loopback,
    /// Beyond loopback, behind the token.
    Authenticated,
    /// Beyond loopback without a token, as its operator asked: the warning to give.
    Unauthenticated(UnauthenticatedWarning),
}

/// The warning for a gateway exposed without a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnauthenticatedWarning(IpAddr);

impl fmt::Display for UnauthenticatedWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "warning: bound to {} without RECOURSE_GATEWAY_TOKEN (--insecure-no-auth): \
             anyone who can reach it can make calls",
            self.0
        )
    }
}

/// Binding beyond loopback without a token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExposureRefused(IpAddr);

impl fmt::Display for ExposureRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "refusing to bind {} without RECOURSE_GATEWAY_TOKEN: set a token, bind 127.0.0.1, \
             or pass --insecure-no-auth to expose the gateway without authentication",
            self.0
        )
    }
}

impl std::error::Error for ExposureRefused {}
