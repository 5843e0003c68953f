use super::*;

const OPS: &str = r#"{"name": "ops", "token": "ops-token-0123456789", "admin": true}"#;

fn file(entries: &[&str]) -> String {
    format!(r#"{{"callers": [{}]}}"#, entries.join(","))
}

#[test]
fn roles_decide_what_a_caller_sees() {
    let callers = Callers::parse(&file(&[
        OPS,
        r#"{"name": "lead", "token": "lead-token-0123456789", "approver": true}"#,
        r#"{"name": "agent", "token": "agent-token-0123456789"}"#,
    ]))
    .unwrap();
    let ops = callers.identify("ops-token-0123456789").unwrap();
    assert!(ops.is_admin() && ops.is_approver());
    assert_eq!(ops.seen(), Seen::All);
    let lead = callers.identify("lead-token-0123456789").unwrap();
    assert_eq!(lead.seen(), Seen::OwnAndInDoubt("lead".into()));
    let agent = callers.identify("agent-token-0123456789").unwrap();
    assert!(!agent.is_approver());
    assert_eq!(agent.seen(), Seen::Own("agent".into()));
    assert_eq!(callers.key_scope(), KeyScope::PerCaller);
    assert_eq!(Callers::single("t").key_scope(), KeyScope::Shared);
}

#[test]
fn a_file_that_is_not_exactly_right_is_refused() {
    let refusals = [
        (r#"{"callers": []}"#.to_owned(), "no callers"),
        (r#"{"callers": [], "extra": 1}"#.to_owned(), "extra"),
        (file(&[OPS, OPS]), "named twice"),
        (
            file(&[OPS, r#"{"name": "ops2", "token": "ops-token-0123456789"}"#]),
            "same token",
        ),
        (
            file(&[r#"{"name": "a b", "token": "x-token-0123456789"}"#]),
            "caller name",
        ),
        (
            file(&[r#"{"name": "a:b", "token": "x-token-0123456789"}"#]),
            "caller name",
        ),
        (file(&[r#"{"name": "a", "token": "short"}"#]), "at least 16"),
        (file(&[r#"{"name": "a"}"#]), "exactly one"),
        (
            file(&[r#"{"name": "a", "token": "x-token-0123456789", "token_sha256": "00"}"#]),
            "exactly one",
        ),
        (file(&[r#"{"name": "a", "token_sha256": "zz"}"#]), "64 hex"),
        (
            file(&[r#"{"name": "a", "token": "x-token-0123456789", "admin": "yes"}"#]),
            "admin",
        ),
        ("not json".to_owned(), "the file is"),
    ];
    for (text, says) in refusals {
        let e = Callers::parse(&text).unwrap_err().to_string();
        assert!(e.contains(says), "{text}: {e}");
    }
}

#[test]
fn the_one_token_joins_as_default_unless_taken() {
    let callers = Callers::parse(&file(&[OPS])).unwrap();
    let both = callers.clone().with_default("single-token").unwrap();
    assert_eq!(
        both.identify("single-token").unwrap().name(),
        DEFAULT_CALLER
    );
    assert!(
        callers
            .clone()
            .with_default("ops-token-0123456789")
            .is_err()
    );
    // `default` is the one token's caller, and whose calls recorded
    // without a caller are: no tokens file may name it.
    let named_default = Callers::parse(&file(&[
        r#"{"name": "default", "token": "d-token-0123456789"}"#,
    ]));
    assert!(named_default.unwrap_err().to_string().contains("reserved"));
}

#[test]
fn beyond_loopback_every_plain_token_is_long() {
    let short = Callers::parse(&file(&[OPS])).unwrap();
    let e = short.check_exposed().unwrap_err().to_string();
    assert!(e.contains("at least 32") && e.contains("has 20"), "{e}");
    let long = format!(
        r#"{{"name": "ops", "token": "{}", "admin": true}}"#,
        "x".repeat(MIN_EXPOSED_TOKEN)
    );
    let callers = Callers::parse(&file(&[&long])).unwrap();
    assert!(callers.check_exposed().is_ok());
    // The one token counts too; a digest cannot be measured.
    assert!(
        callers
            .clone()
            .with_default("abc")
            .unwrap()
            .check_exposed()
            .is_err()
    );
    assert!(Callers::single("abc").check_exposed().is_err());
    assert!(Callers::single(&"y".repeat(32)).check_exposed().is_ok());
    let digest_only = Callers::parse(&file(&[&format!(
        r#"{{"name": "agent", "token_sha256": "{}"}}"#,
        "ab".repeat(32)
    )]))
    .unwrap();
    assert!(digest_only.check_exposed().is_ok());
}

#[test]
fn an_approver_besides_the_asker_is_found_by_role() {
    let callers = Callers::parse(&file(&[
        r#"{"name": "lead", "token": "lead-token-0123456789", "approver": true}"#,
        r#"{"name": "agent", "token": "agent-token-0123456789"}"#,
    ]))
    .unwrap();
    assert!(callers.has_approver_besides("agent"));
    assert!(!callers.has_approver_besides("lead"));
    assert!(!Callers::single("one-token-0123456789").has_approver_besides(DEFAULT_CALLER));
}

#[cfg(unix)]
#[test]
fn a_tokens_file_others_may_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens.json");
    let digest_only = file(&[&format!(
        r#"{{"name": "agent", "token_sha256": "{}"}}"#,
        "ab".repeat(32)
    )]);
    std::fs::write(&path, digest_only).unwrap();
    for mode in [0o664, 0o646, 0o666] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let e = Callers::from_file(&path).unwrap_err().to_string();
        assert!(e.contains("may write"), "{mode:o}: {e}");
    }
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(Callers::from_file(&path).is_ok());
}

#[cfg(unix)]
#[test]
fn a_plain_token_file_others_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens.json");
    std::fs::write(&path, file(&[OPS])).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = Callers::from_file(&path).unwrap_err().to_string();
    assert!(e.contains("chmod 600"), "{e}");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(Callers::from_file(&path).unwrap().len(), 1);
    // Digests only: anyone may read it.
    let digest_only = file(&[&format!(
        r#"{{"name": "agent", "token_sha256": "{}"}}"#,
        "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"
    )]);
    std::fs::write(&path, digest_only).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(
        Callers::from_file(&path)
            .unwrap()
            .identify("test")
            .unwrap()
            .name(),
        "agent"
    );
}
