//! `CHANGELOG.md` keeps Keep a Changelog's shape: `## [Unreleased]` first,
//! then the releases newest first (`## [X.Y.Z] - YYYY-MM-DD`, versions
//! strictly descending, dates never increasing), each with at most one
//! section of each kind (`### Added`, `Changed`, `Deprecated`, `Removed`,
//! `Fixed`, `Security`, `Performance`), and the newest release is the
//! workspace's version.

/// The file, as it is in the repository.
const CHANGELOG: &str = include_str!("../../../../../CHANGELOG.md");

/// The kinds of section a release may have, each at most once.
const KINDS: [&str; 7] = [
    "Added",
    "Changed",
    "Deprecated",
    "Removed",
    "Fixed",
    "Security",
    "Performance",
];

/// A release heading: `Unreleased`, or a version and its date.
#[derive(Debug, PartialEq)]
enum Release {
    Unreleased,
    Version {
        version: (u64, u64, u64),
        date: String,
    },
}

/// One `## ` heading and the `### ` kinds under it, with their lines.
#[derive(Debug)]
struct Section {
    line: usize,
    release: Release,
    kinds: Vec<(usize, String)>,
}

/// `X.Y.Z` as three numbers.
fn version(text: &str) -> Option<(u64, u64, u64)> {
    let mut parts = text.split('.').map(|p| p.parse::<u64>().ok());
    let v = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(v)
}

/// `YYYY-MM-DD`, digits where digits belong.
fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

fn release(heading: &str) -> Result<Release, String> {
    if heading == "[Unreleased]" {
        return Ok(Release::Unreleased);
    }
    let (name, date) = heading
        .split_once(" - ")
        .ok_or("a release is `## [X.Y.Z] - YYYY-MM-DD` or `## [Unreleased]`")?;
    let version = name
        .strip_prefix('[')
        .and_then(|n| n.strip_suffix(']'))
        .and_then(version)
        .ok_or("a release's version is `[X.Y.Z]`")?;
    if !is_date(date) {
        return Err("a release's date is YYYY-MM-DD".to_owned());
    }
    Ok(Release::Version {
        version,
        date: date.to_owned(),
    })
}

/// The sections of `text`, or what is wrong with its headings (line numbers
/// from 1). Fenced blocks are skipped.
fn sections(text: &str) -> (Vec<Section>, Vec<String>) {
    let (mut found, mut problems): (Vec<Section>, _) = (Vec::new(), Vec::new());
    let mut fenced = false;
    for (n, line) in text.lines().enumerate() {
        let n = n + 1;
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if fenced {
            continue;
        }
        if let Some(heading) = line.strip_prefix("## ") {
            match release(heading.trim()) {
                Ok(release) => found.push(Section {
                    line: n,
                    release,
                    kinds: Vec::new(),
                }),
                Err(why) => problems.push(format!("line {n}: `{line}`: {why}")),
            }
        } else if let Some(kind) = line.strip_prefix("### ") {
            match found.last_mut() {
                Some(section) => section.kinds.push((n, kind.trim().to_owned())),
                None => problems.push(format!("line {n}: `{line}` before any release")),
            }
        } else if (line.starts_with("# ") && n != 1) || line.starts_with("####") {
            problems.push(format!(
                "line {n}: `{line}`: only the title, releases (##) and kinds (###)"
            ));
        }
    }
    (found, problems)
}

/// Everything wrong with the changelog's shape; empty when it is right.
fn problems(text: &str) -> Vec<String> {
    let (sections, mut problems) = sections(text);
    match sections.first() {
        Some(first) if first.release == Release::Unreleased => {}
        Some(first) => problems.push(format!(
            "line {}: the first release is `## [Unreleased]`",
            first.line
        )),
        None => problems.push("no release at all".to_owned()),
    }
    for section in sections.iter().skip(1) {
        if section.release == Release::Unreleased {
            problems.push(format!(
                "line {}: `[Unreleased]` comes once, first",
                section.line
            ));
        }
    }
    for section in &sections {
        for (i, (line, kind)) in section.kinds.iter().enumerate() {
            if !KINDS.contains(&kind.as_str()) {
                problems.push(format!("line {line}: `### {kind}` is none of {KINDS:?}"));
            }
            if let Some((first, _)) = section.kinds[..i].iter().find(|(_, k)| k == kind) {
                problems.push(format!(
                    "line {line}: a second `### {kind}` in the release of line {} (the first is line {first}): merge them",
                    section.line
                ));
            }
        }
    }
    let versions: Vec<_> = sections
        .iter()
        .filter_map(|s| match &s.release {
            Release::Version { version, date } => Some((s.line, *version, date)),
            Release::Unreleased => None,
        })
        .collect();
    for pair in versions.windows(2) {
        let ((_, newer, newer_date), (line, older, older_date)) = (pair[0], pair[1]);
        if older >= newer {
            problems.push(format!(
                "line {line}: {older:?} follows {newer:?}: releases go newest first"
            ));
        }
        if older_date > newer_date {
            problems.push(format!(
                "line {line}: dated {older_date}, after the release above it ({newer_date})"
            ));
        }
    }
    problems
}

#[test]
fn the_changelog_has_unreleased_first_then_releases_newest_first_each_kind_once() {
    let problems = problems(CHANGELOG);
    assert!(
        problems.is_empty(),
        "CHANGELOG.md:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_newest_release_is_the_workspaces_version() {
    let (sections, _) = sections(CHANGELOG);
    let newest = sections.iter().find_map(|s| match &s.release {
        Release::Version { version, .. } => Some(*version),
        Release::Unreleased => None,
    });
    let workspace = version(env!("CARGO_PKG_VERSION")).expect("the workspace's version");
    assert_eq!(
        newest,
        Some(workspace),
        "CHANGELOG.md's newest release is not the workspace's version: cut the release in the changelog when the version moves"
    );
}

#[test]
fn each_broken_rule_is_found_and_named() {
    let good = "# Changelog\n\n## [Unreleased]\n\n### Added\n\n## [0.2.0] - 2026-12-09\n\n### Added\n- a\n### Fixed\n- b\n\n## [0.1.0] - 2026-12-07\n\n### Added\n- c\n";
    assert_eq!(problems(good), Vec::<String>::new());
    let cases = [
        (
            "# C\n## [Unreleased]\n### Changed\n- a\n### Changed\n- b\n",
            "a second `### Changed`",
        ),
        (
            "# C\n## [0.1.0] - 2026-12-07\n## [Unreleased]\n",
            "the first release is `## [Unreleased]`",
        ),
        (
            "# C\n## [Unreleased]\n## [0.1.0] - 2026-12-07\n## [0.2.0] - 2026-12-09\n",
            "releases go newest first",
        ),
        (
            "# C\n## [Unreleased]\n## [0.2.0] - 2026-12-01\n## [0.1.0] - 2026-12-07\n",
            "after the release above it",
        ),
        (
            "# C\n## [Unreleased]\n### Performance history\n",
            "is none of",
        ),
        ("# C\n## Unreleased\n", "a release is"),
        ("# C\n## [Unreleased]\n## [0.1] - 2026-12-07\n", "`[X.Y.Z]`"),
        (
            "# C\n## [Unreleased]\n## [0.1.0] - 7 Dec 2026\n",
            "YYYY-MM-DD",
        ),
        ("# C\n### Added\n## [Unreleased]\n", "before any release"),
        (
            "# C\n## [Unreleased]\n## [Unreleased]\n",
            "`[Unreleased]` comes once",
        ),
    ];
    for (text, expected) in cases {
        let found = problems(text);
        assert!(
            found.iter().any(|p| p.contains(expected)),
            "{text:?}: expected a problem saying {expected:?}, found {found:?}"
        );
    }
    // A heading inside a fenced block is text, not a heading.
    assert_eq!(
        problems("# C\n## [Unreleased]\n```md\n### Added\n### Added\n```\n"),
        Vec::<String>::new()
    );
}
