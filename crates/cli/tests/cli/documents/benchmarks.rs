//! `BENCHMARKS.md` states, per benchmark, what it measures, the command, the
//! latest figures and the goal; a machine is described by what it is (its
//! cores, its system), never by the order it was used in ("the eighth
//! machine"), which tells a reader nothing. The story of how figures moved
//! belongs to the changelog, which this test does not read.

use regex::Regex;

use super::ROOT;

/// The file, as it is in the repository.
const BENCHMARKS: &str = include_str!("../../../../../BENCHMARKS.md");

/// What each benchmark's section must say, by these words (any case).
const PARTS: [&str; 4] = ["what it measures", "command", "latest figures", "goal"];

/// Where a machine is named by an ordinal: "the eighth machine", "the 3rd
/// machine", "machine 9", "machine #2".
fn ordinals() -> Regex {
    Regex::new(
        r"(?i)\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|\d+(?:st|nd|rd|th))\s+machine\b|\bmachine\s+(?:no\.?\s*|#)?\d+\b",
    )
    .unwrap()
}

/// Each line of `text` that names a machine by an ordinal, as `LINE: text`;
/// a number that is a share ("the machine 9 % idle") is none.
fn ordinal_lines(text: &str) -> Vec<String> {
    let ordinals = ordinals();
    let names_one = |line: &str| {
        ordinals
            .find_iter(line)
            .any(|m| !line[m.end()..].trim_start().starts_with('%'))
    };
    text.lines()
        .enumerate()
        .filter(|(_, line)| names_one(line))
        .map(|(n, line)| format!("{}: {line}", n + 1))
        .collect()
}

/// Each `## ` section of `text` that leaves out one of the parts, with what
/// it leaves out.
fn incomplete_sections(text: &str) -> Vec<String> {
    let mut sections: Vec<(&str, String)> = Vec::new();
    for line in text.lines() {
        match line.strip_prefix("## ") {
            Some(title) => sections.push((title, String::new())),
            None => {
                if let Some((_, body)) = sections.last_mut() {
                    body.push_str(&line.to_lowercase());
                    body.push('\n');
                }
            }
        }
    }
    sections
        .into_iter()
        .filter_map(|(title, body)| {
            let missing: Vec<&str> = PARTS.into_iter().filter(|p| !body.contains(p)).collect();
            (!missing.is_empty()).then(|| format!("`## {title}` says nothing of: {missing:?}"))
        })
        .collect()
}

#[test]
fn no_document_names_a_machine_by_an_ordinal() {
    let docs = std::path::Path::new(ROOT).join("docs");
    let mut files: Vec<(String, String)> = std::fs::read_dir(&docs)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|x| x == "md"))
        .map(|path| {
            let name = format!("docs/{}", path.file_name().unwrap().to_string_lossy());
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect();
    for name in ["BENCHMARKS.md", "README.md", "CONTRIBUTING.md"] {
        let text = std::fs::read_to_string(std::path::Path::new(ROOT).join(name)).unwrap();
        files.push((name.to_owned(), text));
    }
    let found: Vec<String> = files
        .iter()
        .flat_map(|(name, text)| {
            ordinal_lines(text)
                .into_iter()
                .map(move |line| format!("{name}:{line}"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "a machine named by an ordinal; describe it by what it is (cores, system, load):\n{}",
        found.join("\n")
    );
}

#[test]
fn each_benchmark_says_what_it_measures_its_command_its_latest_figures_and_its_goal() {
    let incomplete = incomplete_sections(BENCHMARKS);
    assert!(
        incomplete.is_empty(),
        "BENCHMARKS.md:\n{}",
        incomplete.join("\n")
    );
}

#[test]
fn the_checks_find_what_they_look_for() {
    let text = "On the eighth machine it ran.\nThe 3rd machine, too.\nmachine 9 and machine #2\n\
                a 2-core Linux machine\nthe state machine decides\nthe first machines were slow\n\
                the machine 9 % idle\n";
    let found = ordinal_lines(text);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].starts_with("1: ") && found[2].starts_with("3: "));

    let sections = "# B\n## One\n**What it measures.** x\n**The command.** y\n**Latest figures** z\n**Goal.** w\n\
                    ## Two\n**What it measures.** x\n**Latest figures** z\n";
    let incomplete = incomplete_sections(sections);
    assert_eq!(incomplete.len(), 1, "{incomplete:?}");
    assert!(
        incomplete[0].contains("Two")
            && incomplete[0].contains("command")
            && incomplete[0].contains("goal")
    );
}
