//! Every MCP client configuration the documents show starts `recourse` by
//! its full path: clients start servers without the user's shell, so a bare
//! `recourse` is found on their `PATH` only by luck. Read here: the JSON
//! `mcpServers` blocks (Claude Desktop, Cursor), `claude mcp add` command
//! lines (Claude Code), and `command="recourse"` in code (the SDKs).

use std::path::Path;

use regex::Regex;
use serde_json::Value;

use super::ROOT;

/// The documents read: `README.md` and every `*.md` directly in `docs/`.
fn documents() -> Vec<(String, String)> {
    let mut names = vec!["README.md".to_owned()];
    let docs = Path::new(ROOT).join("docs");
    let mut pages: Vec<String> = std::fs::read_dir(&docs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    pages.sort();
    names.extend(pages);
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(Path::new(ROOT).join(&name)).unwrap();
            (name, text)
        })
        .collect()
}

/// Whether `program` starts recourse, and by a bare name rather than a path.
fn bare_recourse(program: &str) -> bool {
    program == "recourse" || program == "recourse.exe"
}

/// Whether `program` starts recourse by its full path.
fn full_recourse(program: &str) -> bool {
    Path::new(program).is_absolute() && program.ends_with("/recourse")
}

/// What one document shows: `(FILE:LINE, program)` for each configuration
/// that starts a program.
fn programs(file: &str, text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let in_code = Regex::new(r#"command\s*[=:]\s*["']([^"']+)["']"#).unwrap();
    let mut block: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        let at = format!("{file}:{}", n + 1);
        if let Some(rest) = line.trim_start().strip_prefix("```") {
            block = match block.take() {
                Some((start, body)) => {
                    found.extend(servers(file, start, &body));
                    None
                }
                None if rest.trim() == "json" => Some((n + 2, String::new())),
                None => None,
            };
            continue;
        }
        if let Some((_, body)) = block.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
        if let Some((_, after)) = line.split_once("claude mcp add")
            && let Some((_, command)) = after.split_once(" -- ")
        {
            let program = command.split_whitespace().next().unwrap_or_default();
            found.push((at.clone(), program.to_owned()));
        }
        for capture in in_code.captures_iter(line) {
            found.push((at.clone(), capture[1].to_owned()));
        }
    }
    found
}

/// The `command` of each server of a JSON block with `mcpServers`.
fn servers(file: &str, start: usize, body: &str) -> Vec<(String, String)> {
    let Ok(config) = serde_json::from_str::<Value>(body) else {
        return Vec::new();
    };
    let Some(servers) = config.get("mcpServers").and_then(Value::as_object) else {
        return Vec::new();
    };
    servers
        .values()
        .filter_map(|server| server.get("command").and_then(Value::as_str))
        .map(|program| (format!("{file}:{start}"), program.to_owned()))
        .collect()
}

#[test]
fn every_client_configuration_starts_recourse_by_its_full_path() {
    let mut bare = Vec::new();
    let mut full = 0;
    for (file, text) in documents() {
        for (at, program) in programs(&file, &text) {
            if bare_recourse(&program) {
                bare.push(format!("{at}: `{program}`: give its full path"));
            } else if full_recourse(&program) {
                full += 1;
            }
        }
    }
    assert!(bare.is_empty(), "{bare:#?}");
    assert!(
        full >= 2,
        "the documents show {full} configuration(s) starting recourse"
    );
}

#[test]
fn every_kind_of_configuration_is_read() {
    let text = "```json\n{\"mcpServers\": {\"a\": {\"command\": \"recourse\", \"args\": []}}}\n```\n\
                claude mcp add files -- recourse mcp proxy -- npx server\n\
                t = StdioTransport(command=\"recourse\", args=proxy)\n\
                {command: 'recourse', args}\n\
                claude mcp add files -- /usr/local/bin/recourse mcp proxy -- x\n";
    let found: Vec<String> = programs("x.md", text)
        .into_iter()
        .map(|(at, program)| format!("{at} {program}"))
        .collect();
    assert_eq!(
        found,
        [
            "x.md:2 recourse",
            "x.md:4 recourse",
            "x.md:5 recourse",
            "x.md:6 recourse",
            "x.md:7 /usr/local/bin/recourse"
        ]
    );
}
