//! `docs/architecture.md` held to `cargo metadata`: its table of crates has a
//! row for every workspace member, at its directory, under its package name,
//! marked "not published" exactly when it is; each row's "depends on" names
//! every workspace crate the package depends on and no other, and each outside
//! crate it names (in backticks) is a dependency; the drawing above the table
//! names every published crate, and its `A ← B, C` arrows are the workspace
//! dependencies (`recourse-protocol` aside, which the drawing leaves out).
//!
//! Dependencies are the normal ones (`[dependencies]`, optional included);
//! dev-dependencies are not an architecture.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::ROOT;

/// The page, as it is in the repository.
const ARCHITECTURE: &str = include_str!("../../../../../docs/architecture.md");

/// The crate every other uses, which the drawing's arrows leave out.
const PROTOCOL: &str = "recourse-protocol";

/// A workspace member as `cargo metadata` tells it.
#[derive(Debug, Default)]
struct Member {
    /// Its directory from the repository's root (`crates/core`).
    dir: String,
    published: bool,
    /// Workspace crates among its normal dependencies.
    workspace: BTreeSet<String>,
    /// Its other normal dependencies.
    outside: BTreeSet<String>,
}

/// The workspace's members by package name, from `cargo metadata --no-deps`.
fn members() -> BTreeMap<String, Member> {
    // The cargo running this test (set at run time), else the one that built it.
    let cargo = std::env::var("CARGO")
        .ok()
        .or(option_env!("CARGO").map(str::to_owned))
        .unwrap_or_else(|| "cargo".to_owned());
    let output = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(ROOT)
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let root = Path::new(ROOT).canonicalize().unwrap();
    let packages = metadata["packages"].as_array().expect("packages");
    let names: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    packages
        .iter()
        .map(|package| {
            let manifest = Path::new(package["manifest_path"].as_str().unwrap());
            let dir = manifest.parent().unwrap().strip_prefix(&root).unwrap();
            let mut member = Member {
                dir: dir.to_string_lossy().into_owned(),
                // `publish = false` is `"publish": []`.
                published: package["publish"]
                    .as_array()
                    .is_none_or(|registries| !registries.is_empty()),
                ..Member::default()
            };
            for dependency in package["dependencies"].as_array().unwrap() {
                if !dependency["kind"].is_null() {
                    continue;
                }
                let name = dependency["name"].as_str().unwrap().to_owned();
                if names.contains(&name) {
                    member.workspace.insert(name);
                } else {
                    member.outside.insert(name);
                }
            }
            (package["name"].as_str().unwrap().to_owned(), member)
        })
        .collect()
}

/// One row of the page's crate table.
#[derive(Debug)]
struct Row {
    line: usize,
    dir: String,
    package: String,
    not_published: bool,
    /// Every backticked name in the "depends on" cell.
    depends_on: BTreeSet<String>,
}

/// The spans between backticks in `text`.
fn backticked(text: &str) -> impl Iterator<Item = &str> {
    text.split('`').skip(1).step_by(2)
}

/// The rows of the table headed `| directory | package | … | depends on |`.
fn rows(page: &str) -> Vec<Row> {
    page.lines()
        .enumerate()
        .skip_while(|(_, line)| !line.starts_with("| directory | package |"))
        .skip(2)
        .take_while(|(_, line)| line.starts_with('|'))
        .map(|(n, line)| {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
            assert_eq!(
                cells.len(),
                4,
                "docs/architecture.md:{}: a row has four cells",
                n + 1
            );
            Row {
                line: n + 1,
                dir: backticked(cells[0]).next().unwrap_or_default().to_owned(),
                package: backticked(cells[1]).next().unwrap_or_default().to_owned(),
                not_published: cells[1].contains("not published"),
                depends_on: backticked(cells[3]).map(str::to_owned).collect(),
            }
        })
        .collect()
}

/// The first ```text block after `## The crates`: the drawing.
fn drawing(page: &str) -> &str {
    let after = &page[page.find("## The crates").expect("a section on the crates")..];
    let start = after.find("```text\n").expect("a drawing") + "```text\n".len();
    let end = after[start..].find("```").unwrap();
    &after[start..start + end]
}

/// The drawing's arrows: `recourse-A ← B, C (…)` as A and its full names.
fn arrows(drawing: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut found = BTreeMap::new();
    for line in drawing.lines() {
        let mut rest = line;
        while let Some(at) = rest.find(" ← ") {
            let name = rest[..at].split_whitespace().last().unwrap_or_default();
            let after = &rest[at + " ← ".len()..];
            // The list runs to two spaces (the next column) or the line's end.
            let list = after.split("  ").next().unwrap_or_default();
            let deps = list
                .split(',')
                .map(|d| d.split('(').next().unwrap().trim())
                .filter(|d| !d.is_empty())
                .map(|d| match d {
                    "recourse" => d.to_owned(),
                    _ => format!("recourse-{d}"),
                })
                .collect();
            found.insert(name.to_owned(), deps);
            rest = &after[list.len()..];
        }
    }
    found
}

/// What the page gets wrong about `members`; empty when it is true.
fn problems(page: &str, members: &BTreeMap<String, Member>) -> Vec<String> {
    let mut problems = Vec::new();
    let rows = rows(page);
    let known_outside: BTreeSet<&String> = members.values().flat_map(|m| &m.outside).collect();
    for (name, member) in members {
        let Some(row) = rows.iter().find(|r| r.dir == member.dir) else {
            problems.push(format!(
                "the crate table has no row for `{name}` ({}): add one saying what it is and what it depends on",
                member.dir
            ));
            continue;
        };
        let at = format!("docs/architecture.md:{}", row.line);
        if row.package != *name {
            problems.push(format!(
                "{at}: `{}` holds the package `{name}`, not `{}`",
                member.dir, row.package
            ));
        }
        if row.not_published == member.published {
            problems.push(format!(
                "{at}: `{name}` is {}published, which its row does not say",
                if member.published { "" } else { "not " }
            ));
        }
        let named: BTreeSet<String> = row
            .depends_on
            .iter()
            .filter(|d| members.contains_key(*d))
            .cloned()
            .collect();
        for missing in member.workspace.difference(&named) {
            problems.push(format!(
                "{at}: `{name}` depends on `{missing}` (its Cargo.toml), which its row does not name"
            ));
        }
        for invented in named.difference(&member.workspace) {
            problems.push(format!(
                "{at}: `{name}`'s row names `{invented}`, which is not among its dependencies"
            ));
        }
        for outside in row.depends_on.iter().filter(|d| known_outside.contains(d)) {
            if !member.outside.contains(outside) {
                problems.push(format!(
                    "{at}: `{name}`'s row names `{outside}`, which is not among its dependencies"
                ));
            }
        }
    }
    for row in &rows {
        let is_member = members.values().any(|m| m.dir == row.dir);
        if !is_member && Path::new(ROOT).join(&row.dir).join("Cargo.toml").exists() {
            problems.push(format!(
                "docs/architecture.md:{}: `{}` has a Cargo.toml but is no workspace member",
                row.line, row.dir
            ));
        }
    }
    let drawing = drawing(page);
    let arrows = arrows(drawing);
    for (name, member) in members.iter().filter(|(_, m)| m.published) {
        if !drawing.split_whitespace().any(|word| word == name) {
            problems.push(format!(
                "the drawing above the crate table does not show `{name}`"
            ));
            continue;
        }
        let real: BTreeSet<String> = member
            .workspace
            .iter()
            .filter(|d| *d != PROTOCOL)
            .cloned()
            .collect();
        let drawn = arrows.get(name).cloned().unwrap_or_default();
        if drawn != real {
            problems.push(format!(
                "the drawing gives `{name}` the arrows {drawn:?}; its workspace dependencies but `{PROTOCOL}` are {real:?}"
            ));
        }
    }
    for drawn in arrows.keys().filter(|a| !members.contains_key(*a)) {
        problems.push(format!(
            "the drawing draws `{drawn}`, which is no workspace crate"
        ));
    }
    problems
}

#[test]
fn the_crate_table_and_drawing_are_the_workspaces_crates_and_dependencies() {
    let members = members();
    assert!(
        members.len() >= 10 && members.contains_key("recourse-core"),
        "cargo metadata lists the workspace: {:?}",
        members.keys().collect::<Vec<_>>()
    );
    let problems = problems(ARCHITECTURE, &members);
    assert!(
        problems.is_empty(),
        "docs/architecture.md disagrees with cargo metadata:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_missing_crate_a_missing_edge_and_an_invented_one_are_each_named() {
    let member = |dir: &str, workspace: &[&str], outside: &[&str]| Member {
        dir: dir.to_owned(),
        published: true,
        workspace: workspace.iter().map(|s| (*s).to_owned()).collect(),
        outside: outside.iter().map(|s| (*s).to_owned()).collect(),
    };
    let mut members = BTreeMap::new();
    members.insert(
        "recourse-protocol".to_owned(),
        member("crates/protocol", &[], &["serde"]),
    );
    members.insert(
        "recourse-core".to_owned(),
        member("crates/core", &["recourse-protocol"], &["url"]),
    );
    members.insert(
        "recourse".to_owned(),
        member(
            "crates/runtime",
            &["recourse-core", "recourse-protocol"],
            &["tokio"],
        ),
    );
    let page = "## The crates\n\n```text\nrecourse-protocol\nrecourse-core\nrecourse ← core\n```\n\n\
        | directory | package | what it is | depends on |\n|---|---|---|---|\n\
        | `crates/protocol` | `recourse-protocol` | wire | `serde` |\n\
        | `crates/core` | `recourse-core` | decisions | `recourse-protocol`, `url` |\n\
        | `crates/runtime` | `recourse` | runtime | `recourse-core`, `recourse-protocol`, `tokio` |\n";
    assert_eq!(problems(page, &members), Vec::<String>::new());

    let mut added = members;
    added.insert(
        "recourse-door".to_owned(),
        member("crates/door", &["recourse"], &[]),
    );
    let found = problems(page, &added);
    assert!(
        found
            .iter()
            .any(|p| p.contains("no row for `recourse-door` (crates/door)")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|p| p.contains("does not show `recourse-door`")),
        "{found:?}"
    );

    let wrong = page
        .replace(
            "| `recourse-core`, `recourse-protocol`, `tokio` |",
            "| `recourse-protocol`, `recourse-journal`, `tokio`, `serde` |",
        )
        .replace("recourse ← core", "recourse ← core, journal");
    let mut with_journal = added;
    with_journal.remove("recourse-door");
    with_journal.insert(
        "recourse-journal".to_owned(),
        Member {
            published: false,
            ..member("crates/journal", &[], &[])
        },
    );
    let found = problems(&wrong, &with_journal);
    for expected in [
        "`recourse` depends on `recourse-core` (its Cargo.toml), which its row does not name",
        "`recourse`'s row names `recourse-journal`, which is not among its dependencies",
        "`recourse`'s row names `serde`, which is not among its dependencies",
        "the drawing gives `recourse` the arrows",
        "no row for `recourse-journal`",
    ] {
        assert!(
            found.iter().any(|p| p.contains(expected)),
            "{expected}: {found:?}"
        );
    }
}
