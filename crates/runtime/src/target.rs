//! Where calls go, and where they may: a call's [`Target`] (an http(s) URL
//! parsed once, or a tool's name) and the [`TargetAllowlist`] a gateway
//! checks every target, lookup and read against.

pub use recourse_core::allow::{
    TargetAllowlist, TargetError, TargetErrorKind, TargetPattern, TargetUrl,
};
pub use recourse_core::target::Target;
pub use url::Url;
