//! The workspace's source keeps the shape a reader can hold: no file over
//! 500 lines (its test module aside), no struct over 15 fields, and no two
//! public types of one name. A struct that grows past 15 fields is a group
//! waiting to be named; a file past 500 lines, a second concept; two public
//! `Verdict`s, a reader asking which one.
//!
//! Read from the source text as rustfmt writes it (no parser): items start
//! a line, a struct's fields are its lines one level inside its braces, and
//! a file's test module is what follows its `#[cfg(test)] mod tests`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

const MAX_LINES: usize = 500;
const MAX_FIELDS: usize = 15;

/// A file's test module: `#[cfg(test)]` (other attributes after it) then `mod tests`.
static TESTS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^#\[cfg\(test\)\]\s*\n(#\[.*\]\s*\n)*mod tests\b").unwrap());
/// The line opening a struct with named fields.
static STRUCT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?struct\s+(\w+)[^;{(]*\{\s*$").unwrap()
});
/// A field's line inside a struct's braces.
static FIELD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:r#)?\w+\s*:").unwrap());
/// A public type's declaration.
static PUBLIC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^\s*pub\s+(?:struct|enum|trait|type)\s+(\w+)").unwrap());

/// The workspace's library and binary sources: every `.rs` under a crate's
/// `src/`, test files (`tests.rs`, anything under a `tests/` directory) aside.
fn sources() -> Vec<PathBuf> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&crates)
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "tests" {
                    dirs.push(path);
                }
            } else if name.ends_with(".rs") && name != "tests.rs" {
                found.push(path);
            }
        }
    }
    found.sort();
    assert!(found.len() > 100, "the crates' sources were not found");
    found
}

/// `text` without its test module (`#[cfg(test)]` then `mod tests`).
fn without_tests(text: &str) -> &str {
    TESTS.find(text).map_or(text, |m| &text[..m.start()])
}

/// The lines of `text` past [`MAX_LINES`], its test module aside.
fn too_long(text: &str) -> Option<usize> {
    let lines = without_tests(text).lines().count();
    (lines > MAX_LINES).then_some(lines)
}

/// Each struct with named fields in `text`, with how many it has.
fn struct_fields(text: &str) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for open in STRUCT.captures_iter(text) {
        let body = &text[open.get(0).unwrap().end()..];
        let (mut depth, mut fields) = (1_i32, 0);
        for line in body.lines() {
            let code = line.split("//").next().unwrap_or("");
            if depth == 1 && FIELD.is_match(code) {
                fields += 1;
            }
            depth += code.matches(['{', '(', '[', '<']).count() as i32;
            depth -= code.matches(['}', ')', ']', '>']).count() as i32;
            // `->` and `=>` are not brackets.
            depth += (code.matches("->").count() + code.matches("=>").count()) as i32;
            if depth <= 0 {
                break;
            }
        }
        found.push((open[1].to_owned(), fields));
    }
    found
}

/// Each public type `text` declares (`pub struct|enum|trait|type NAME`).
fn public_types(text: &str) -> Vec<String> {
    PUBLIC
        .captures_iter(without_tests(text))
        .map(|c| c[1].to_owned())
        .collect()
}

#[test]
fn no_file_is_long_no_struct_wide_and_no_public_name_taken_twice() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut problems = Vec::new();
    let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for path in sources() {
        let text = std::fs::read_to_string(&path).unwrap();
        let shown = path
            .strip_prefix(&root)
            .unwrap_or(&path)
            .display()
            .to_string();
        if let Some(lines) = too_long(&text) {
            problems.push(format!(
                "{shown}: {lines} lines besides its tests (at most {MAX_LINES})"
            ));
        }
        for (name, fields) in struct_fields(without_tests(&text)) {
            if fields > MAX_FIELDS {
                problems.push(format!(
                    "{shown}: struct {name} has {fields} fields (at most {MAX_FIELDS})"
                ));
            }
        }
        for name in public_types(&text) {
            names.entry(name).or_default().push(shown.clone());
        }
    }
    for (name, files) in &names {
        if files.len() > 1 {
            problems.push(format!(
                "public type {name} is declared {} times: {}",
                files.len(),
                files.join(", ")
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_reading_finds_what_it_looks_for() {
    let text = "\
/// A wide one.
#[derive(Debug)]
pub struct Wide<'a> {
    /// One.
    pub(crate) a: u32,
    b: Option<Vec<(u8, u8)>>,
    c: Box<dyn Fn(u32) -> u32>,
    #[serde(flatten)]
    d: BTreeMap<String, Vec<u8>>,
    e: [u8; 4],
}

struct Unit;
struct Tuple(u8, u8);
pub(crate) struct Inner {
    x: u8,
}
pub enum Choice { A }
pub trait Act {}
";
    assert_eq!(
        struct_fields(text),
        [("Wide".to_owned(), 5), ("Inner".to_owned(), 1)]
    );
    assert_eq!(public_types(text), ["Wide", "Choice", "Act"]);
    let long = format!(
        "{}#[cfg(test)]\nmod tests {{\n{}}}\n",
        "a\n".repeat(MAX_LINES),
        "b\n".repeat(100)
    );
    assert_eq!(too_long(&long), None);
    assert_eq!(too_long(&format!("c\n{long}")), Some(MAX_LINES + 1));
}
