use url::Url;

use super::*;

fn allow(patterns: &[&str]) -> TargetAllowlist {
    TargetAllowlist::new(patterns).unwrap()
}

fn kind(allow: &TargetAllowlist, target: &str) -> Option<TargetErrorKind> {
    allow.check(target).err().map(|e| e.kind())
}

const NOT_ALLOWED: Option<TargetErrorKind> = Some(TargetErrorKind::NotAllowed);
const INVALID: Option<TargetErrorKind> = Some(TargetErrorKind::Invalid);

#[test]
fn a_backslash_ends_the_host_as_the_http_client_reads_it() {
    let loopback = TargetAllowlist::loopback_only();
    for target in [
        r"http://192.0.2.2:9101\@127.0.0.1:9101/ok",
        r"http://host.invalid\@127.0.0.1/ok",
        "http://192.0.2.2:9101\\@localhost/ok",
    ] {
        assert_eq!(kind(&loopback, target), NOT_ALLOWED, "{target}");
    }
    let parsed = TargetUrl::parse(r"http://192.0.2.2:9101\@127.0.0.1:9101/ok").unwrap();
    assert_eq!(parsed.host(), "192.0.2.2");
    assert_eq!(parsed.url().port(), Some(9101));
}

#[test]
fn user_info_is_refused() {
    let loopback = TargetAllowlist::loopback_only();
    for target in [
        "http://u:p@127.0.0.1/",
        "http://u@127.0.0.1/",
        "http://:p@127.0.0.1/",
        "http://127.0.0.1@192.0.2.2/",
    ] {
        let err = loopback.check(target).unwrap_err();
        assert_eq!(err.kind(), TargetErrorKind::Invalid, "{target}");
        assert!(!err.to_string().contains("p@"), "{err}");
    }
}

#[test]
fn loopback_is_recognised_in_every_spelling_the_parser_normalises() {
    let loopback = TargetAllowlist::loopback_only();
    for target in [
        "http://127.0.0.1:8700/x",
        "http://127.1/",
        "http://0x7f000001/",
        "http://2130706433/",
        "http://0177.0.0.1/",
        "http://127.9.9.9/",
        "https://LOCALHOST/",
        "http://[::1]:80/x",
        "http://[::ffff:127.0.0.1]/",
        "http://[0:0:0:0:0:ffff:7f00:1]/",
        "http://127.0.0.1\t/x",
    ] {
        assert_eq!(kind(&loopback, target), None, "{target}");
    }
    for target in [
        "http://0.0.0.0/",
        "http://[::]/",
        "http://[::127.0.0.1]/",
        "http://localhost./",
        "http://foo.localhost/",
        "http://127.0.0.1.host.invalid/",
        "http://192.0.2.1/",
        "http://[::ffff:192.0.2.1]/",
    ] {
        assert_eq!(kind(&loopback, target), NOT_ALLOWED, "{target}");
    }
    for target in [
        "ftp://127.0.0.1/",
        "file:///etc/passwd",
        "127.0.0.1:80",
        "",
        "http://",
    ] {
        assert_eq!(kind(&loopback, target), INVALID, "{target:?}");
    }
}

#[test]
fn a_host_pattern_matches_the_host_alone() {
    let a = allow(&["*.example.com"]);
    for target in [
        "http://api.example.com/x",
        "https://a.b.example.com:8443/",
        "https://API.Example.COM",
    ] {
        assert_eq!(kind(&a, target), None, "{target}");
    }
    for target in [
        "http://192.0.2.2:9101/.example.com",
        "http://192.0.2.2:9101/x?q=.example.com",
        "http://192.0.2.2:9101/x#.example.com",
        "http://evil.invalid/a.example.com",
        "http://example.com/",
        "http://example.com.evil.invalid/",
        "http://evilexample.com/",
        r"http://192.0.2.2\.example.com/",
    ] {
        assert_eq!(kind(&a, target), NOT_ALLOWED, "{target}");
    }
}

#[test]
fn a_path_prefix_is_matched_after_dot_segments_are_resolved() {
    let a = allow(&["https://api.other.invalid/v1/*"]);
    assert_eq!(kind(&a, "https://api.other.invalid/v1/quote"), None);
    // `/v1/` is sent as `/v1` (no trailing slash): the prefix's own path.
    assert_eq!(kind(&a, "https://api.other.invalid/v1/"), None);
    assert_eq!(kind(&a, "https://api.other.invalid/v1"), None);
    assert_eq!(kind(&a, "https://api.other.invalid/v1/a/./b?x=/../"), None);
    for target in [
        "https://api.other.invalid/v1/../../admin",
        "https://api.other.invalid/v1/%2e%2e/admin",
        "https://api.other.invalid/v1/.%2E/admin",
        r"https://api.other.invalid/v1\..\admin",
        "https://api.other.invalid/v10/x",
        "http://api.other.invalid/v1/x",
        "https://api.other.invalid:8443/v1/x",
    ] {
        assert_eq!(kind(&a, target), NOT_ALLOWED, "{target}");
    }
}

#[test]
fn paths_a_decoding_server_would_read_differently_are_refused_under_a_path_pattern() {
    let a = allow(&["https://api.other.invalid/v1/*"]);
    for target in [
        "https://api.other.invalid/v1/..%2fadmin",
        "https://api.other.invalid/v1/..%2Fadmin",
        "https://api.other.invalid/v1/x%2f..%2f..%2fadmin",
        "https://api.other.invalid/v1/..;/admin",
        "https://api.other.invalid/v1/x%5c..%5cadmin",
    ] {
        assert_eq!(kind(&a, target), NOT_ALLOWED, "{target}");
    }
    assert_eq!(kind(&a, "https://api.other.invalid/v1/a%2Fb"), None);
    assert_eq!(kind(&a, "https://api.other.invalid/v1/..x"), None);
    let any_path = allow(&["https://api.other.invalid"]);
    assert_eq!(
        kind(&any_path, "https://api.other.invalid/v1/..%2fadmin"),
        None
    );
}

#[test]
fn ports_schemes_and_exact_paths() {
    let a = allow(&[
        "https://api.example.invalid",
        "http://192.0.2.7:*",
        "https://[2001:db8::1]:8443/status",
    ]);
    assert_eq!(kind(&a, "https://api.example.invalid/any/path"), None);
    assert_eq!(kind(&a, "https://api.example.invalid:443/"), None);
    assert_eq!(kind(&a, "https://api.example.invalid:8443/"), NOT_ALLOWED);
    assert_eq!(kind(&a, "http://api.example.invalid/"), NOT_ALLOWED);
    assert_eq!(kind(&a, "http://192.0.2.7:9101/x"), None);
    assert_eq!(kind(&a, "http://192.0.2.7/x"), None);
    assert_eq!(kind(&a, "https://192.0.2.7/x"), NOT_ALLOWED);
    assert_eq!(kind(&a, "https://[2001:DB8:0::1]:8443/status"), None);
    assert_eq!(kind(&a, "https://[2001:db8::1]:8443/status?x=1"), None);
    // A trailing slash is not part of the path that is sent.
    assert_eq!(kind(&a, "https://[2001:db8::1]:8443/status/"), None);
    assert_eq!(kind(&a, "https://[2001:db8::1]:8443/"), NOT_ALLOWED);
}

#[test]
fn hosts_are_normalised_in_patterns_as_in_targets() {
    let a = allow(&["*.bücher.invalid", "HTTP://192.0.2.1", "[::ffff:192.0.2.9]"]);
    assert_eq!(kind(&a, "http://shop.BÜCHER.invalid/"), None);
    assert_eq!(kind(&a, "http://shop.xn--bcher-kva.invalid/"), None);
    assert_eq!(
        kind(&a, "http://3221225985/"),
        None,
        "192.0.2.1 as one number"
    );
    assert_eq!(kind(&a, "http://[::ffff:c000:201]/"), None);
    assert_eq!(kind(&a, "http://192.0.2.9:1234/"), None);
}

#[test]
fn the_star_rules_are_enforced_at_parse_time() {
    for good in [
        "*",
        "*.example.com",
        "http://*:8080",
        "https://*.example.com/v1/*",
        "http://127.0.0.1:*",
        "https://example.com/*",
        "https://example.com/",
        "[::1]",
        "https://[::1]:8443/a/b",
    ] {
        assert!(TargetPattern::parse(good).is_ok(), "{good}");
    }
    for (bad, why) in [
        ("", "empty"),
        ("api.*.com", "`*` may stand only"),
        ("*example.com", "`*` may stand only"),
        ("**.example.com", "`*` may stand only"),
        ("*.example.*", "`*` may stand only"),
        ("https://example.com/v1*", "last path segment"),
        ("https://example.com/*/x", "last path segment"),
        ("https://example.com/v1/**", "last path segment"),
        ("https://example.com/a/../b/*", "`.` or `..`"),
        ("https://example.com/%2e/b", "`.` or `..`"),
        ("https://example.com:8*", "port"),
        ("https://example.com:0", "port"),
        ("https://example.com:65536", "port"),
        ("https://example.com:+80", "port"),
        ("ftp://example.com", "scheme"),
        ("example.com:8080", "needs a scheme"),
        ("example.com/v1", "needs a scheme"),
        ("https://u:p@example.com", "'@'"),
        ("https://example.com/?q=1", "'?'"),
        ("https://example.com/#f", "'#'"),
        (r"https://example.com\x", "'\\\\'"),
        ("https://exa mple.com", "' '"),
        ("::1", "brackets"),
        ("https://[::1", "unclosed"),
        ("https://[::1]x", "':port'"),
        ("*.192.0.2.1", "domain name"),
        ("https://", "empty"),
        ("exa%00mple.com", "not a host"),
    ] {
        let err = TargetPattern::parse(bad).unwrap_err();
        assert_eq!(err.kind(), TargetErrorKind::Pattern, "{bad}");
        assert_eq!(err.code(), "INVALID_TARGET_PATTERN");
        assert!(err.to_string().contains(why), "{bad:?}: {err}");
    }
}

#[test]
fn templates_may_vary_only_where_a_pattern_has_a_star() {
    let a = allow(&[
        "https://api.example.invalid/exports/*",
        "https://lookup.example.invalid/status",
    ]);
    let ok = |t: &str| a.check_template(t).map_err(|e| e.kind());
    assert_eq!(
        ok("https://api.example.invalid/exports/{operation_id}"),
        Ok(())
    );
    assert_eq!(ok("https://api.example.invalid/exports/x?k={key}"), Ok(()));
    assert_eq!(
        ok("https://lookup.example.invalid/status?key={key}"),
        Ok(())
    );
    assert_eq!(ok("http://127.0.0.1:8700/{key}"), Ok(()));
    for refused in [
        "https://api.example.invalid/{key}",
        "https://api.example.invalid/exports{key}/x",
        "https://lookup.example.invalid/{key}",
        "https://elsewhere.invalid/exports/{key}",
    ] {
        assert_eq!(ok(refused), Err(TargetErrorKind::NotAllowed), "{refused}");
    }
    for invalid in [
        "https://{key}.example.invalid/",
        "https://api.example.invalid/exports/x#{key}",
        "https://api.example.invalid/exports/x",
        "https://u:{key}@api.example.invalid/exports/x",
        "https://api.example.invalid/exports/%7Bkey%7D/{key}",
    ] {
        assert_eq!(ok(invalid), Err(TargetErrorKind::Invalid), "{invalid}");
    }
}

#[test]
fn the_sent_url_reparses_to_the_checked_one() {
    for input in [
        r"http://192.0.2.2:9101\@127.0.0.1:9101/ok",
        "HTTP://0x7f000001:80/a/./b/../c?q=1#f",
        "http://[::ffff:127.0.0.1]/%2e%2E/x",
        "https://shop.BÜCHER.invalid/ä?ü",
        "http://127.0.0.1/a b/<>\"",
    ] {
        let parsed = TargetUrl::parse(input).unwrap();
        assert_eq!(
            &Url::parse(parsed.as_str()).unwrap(),
            parsed.url(),
            "{input}"
        );
        assert_eq!(TargetUrl::parse(parsed.as_str()).unwrap(), parsed);
    }
}

#[test]
fn errors_become_typed_envelopes_and_quote_little() {
    let loopback = TargetAllowlist::loopback_only();
    let denied = loopback
        .check("http://192.0.2.1/secret?token=t0k3n")
        .unwrap_err();
    let envelope = denied.to_tool_error();
    assert_eq!(envelope.code, "TARGET_NOT_ALLOWED");
    assert_eq!(envelope.http_status(), 403);
    assert!(!denied.to_string().contains("t0k3n"), "{denied}");
    let long = format!("http://192.0.2.1/{}", "x".repeat(10_000));
    let invalid = loopback.check(&format!("{long}\u{0}:bad[")).map(|_| ());
    assert!(invalid.is_ok() || invalid.unwrap_err().to_string().len() < 400);
    let invalid = loopback.check("ftp://x").unwrap_err().to_tool_error();
    assert_eq!(
        (invalid.code.as_str(), invalid.http_status()),
        ("INVALID_TARGET", 400)
    );
}

/// A check reads each part once: a megabyte of URL is answered promptly
/// rather than after a quadratic or exponential search (the time is printed,
/// not asserted).
#[test]
fn a_megabyte_url_is_checked_in_one_pass() {
    let a = allow(&[
        "*.example.invalid",
        "https://api.other.invalid/v1/*",
        "http://192.0.2.9:*/a/b/c",
        "https://*.deep.invalid/x/*",
    ]);
    let mb = 1024 * 1024;
    let inputs = [
        format!("https://api.other.invalid/v1/{}", "a/".repeat(mb / 2)),
        format!("https://api.other.invalid/v1/{}x", "%2e%2E/".repeat(mb / 7)),
        format!(
            "http://192.0.2.2/{}?{}",
            ".example.invalid".repeat(mb / 32),
            "*".repeat(mb / 2)
        ),
        format!("http://{}example.invalid/", "a.".repeat(mb / 2)),
        format!(
            "https://{}.deep.invalid/x/{}",
            "b".repeat(60),
            "..;/".repeat(mb / 4)
        ),
    ];
    let verdicts: Vec<bool> = inputs
        .iter()
        .map(|input| {
            let started = std::time::Instant::now();
            let verdict = a.check(input).is_ok();
            eprintln!(
                "{} bytes: {verdict} in {:?}",
                input.len(),
                started.elapsed()
            );
            verdict
        })
        .collect();
    assert_eq!(verdicts, [true, false, false, true, false]);
}
