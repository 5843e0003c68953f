//! Fuzzes target parsing, the allowlist and reconcile templates.
//!
//! Input layout: a pattern, a NUL byte, a target (also tried as a reconcile
//! template), a NUL byte, and a placeholder value. Missing parts are empty.
//! Invalid UTF-8 is replaced, so any bytes are an input.

#![no_main]

use libfuzzer_sys::fuzz_target;
use recourse::HttpReconciler;
use recourse::target::{TargetAllowlist, TargetErrorKind, TargetPattern, TargetUrl};

fuzz_target!(|input: &[u8]| {
    let text = String::from_utf8_lossy(input);
    let mut parts = text.splitn(3, '\0');
    let (pattern, target, value) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );

    let allow = match TargetPattern::parse(pattern) {
        Ok(p) => {
            assert_eq!(p.to_string(), pattern);
            Some(TargetAllowlist::new([pattern]).expect("a pattern that parses is a valid allowlist"))
        }
        Err(e) => {
            assert_eq!(e.kind(), TargetErrorKind::Pattern);
            None
        }
    };

    match TargetUrl::parse(target) {
        Ok(t) => {
            // The serialised URL is what gets sent: it must read back as the URL that was checked.
            let again = TargetUrl::parse(t.as_str()).expect("a target's serialisation parses");
            assert_eq!(again, t);
            assert!(matches!(t.url().scheme(), "http" | "https"));
            assert!(t.url().username().is_empty() && t.url().password().is_none());
            assert!(!t.host().is_empty());
            assert_eq!(TargetAllowlist::loopback_only().allows(&t), t.is_loopback());
            if let Some(allow) = &allow {
                let allowed = allow.allows(&t);
                assert_eq!(allowed, allow.check(target).is_ok());
                assert_eq!(allowed, allow.allows(&again));
                assert!(!t.is_loopback() || allowed, "loopback is always allowed");
            }
        }
        Err(e) => assert_eq!(e.kind(), TargetErrorKind::Invalid),
    }

    // A template the allowlist accepts produces lookups that stay on its
    // origin and below its path up to the first placeholder, whatever the value.
    let Some(allow) = &allow else { return };
    if allow.check_template(target).is_err() {
        return;
    }
    let reconciler = HttpReconciler::new(target).expect("an allowed template is a valid one");
    let Some(url) = reconciler.url_for(Some(value), Some(value)) else {
        return;
    };
    let lookup = TargetUrl::parse(&url).expect("a lookup URL parses");
    let template = TargetUrl::parse(target).expect("an allowed template parses");
    assert_eq!(lookup.url().origin(), template.url().origin(), "{target:?} with {value:?}");
    let path = template.url().path();
    let fixed = &path[..path.find("%7B").unwrap_or(path.len())];
    assert!(
        lookup.url().path().starts_with(fixed),
        "{target:?} with {value:?} left {fixed:?}: {url:?}"
    );
});
