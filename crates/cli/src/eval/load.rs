//! Finding scenarios: the built-in suite (embedded in the binary, so `recourse
//! eval` works from any directory), or every `*.json` file of `--suite DIR`,
//! narrowed by `--scenario` globs.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::builtin::BUILTIN;
use super::scenario::Scenario;
use crate::glob::Glob;

/// Parses one scenario file, naming the file in every error.
fn parse(name: &str, text: &str) -> Result<Scenario> {
    Scenario::from_json(text).map_err(|e| anyhow::anyhow!("invalid scenario file {name}: {e}"))
}

/// The scenarios shipped with recourse.
pub(crate) fn builtin() -> Result<Vec<Scenario>> {
    let scenarios = BUILTIN
        .iter()
        .map(|(name, text)| parse(name, text))
        .collect::<Result<Vec<_>>>()?;
    unique(scenarios)
}

/// Every `*.json` scenario in `dir`, by file name.
pub(crate) fn from_dir(dir: &Path) -> Result<Vec<Scenario>> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the suite directory {}", dir.display()))?;
    let mut paths = Vec::new();
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot list the suite directory {}", dir.display()))?
            .path();
        if path.extension().is_some_and(|e| e == "json") && path.is_file() {
            paths.push(path);
        }
    }
    if paths.is_empty() {
        bail!("no scenario files (*.json) in {}", dir.display());
    }
    paths.sort();
    let scenarios = paths
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read scenario file {}", path.display()))?;
            parse(&path.display().to_string(), &text)
        })
        .collect::<Result<Vec<_>>>()?;
    unique(scenarios)
}

fn unique(scenarios: Vec<Scenario>) -> Result<Vec<Scenario>> {
    let mut seen = BTreeSet::new();
    for s in &scenarios {
        if !seen.insert(s.id.as_str()) {
            bail!("two scenarios share the id {:?}", s.id);
        }
    }
    Ok(scenarios)
}

/// The scenarios whose id matches any of `patterns` (all when there are none).
///
/// # Errors
/// A malformed glob, or globs that match no scenario.
pub(crate) fn select(scenarios: Vec<Scenario>, patterns: &[String]) -> Result<Vec<Scenario>> {
    if patterns.is_empty() {
        return Ok(scenarios);
    }
    let globs = patterns
        .iter()
        .map(|p| Glob::new(p).map_err(|e| anyhow::anyhow!("bad --scenario glob {p:?}: {e}")))
        .collect::<Result<Vec<_>>>()?;
    let chosen: Vec<Scenario> = scenarios
        .into_iter()
        .filter(|s| globs.iter().any(|g| g.matches(&s.id)))
        .collect();
    if chosen.is_empty() {
        bail!(
            "no scenario matches --scenario {}",
            patterns.join(" --scenario ")
        );
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use strum::IntoEnumIterator;

    use super::*;
    use crate::eval::failure::ScenarioCategory;

    #[test]
    fn the_builtin_suite_loads_and_is_large_enough() {
        let suite = builtin().unwrap();
        assert!(suite.len() >= 30, "{} scenarios", suite.len());
        for category in ScenarioCategory::iter() {
            assert!(
                suite.iter().any(|s| s.category == category),
                "no scenario for {category}"
            );
        }
    }

    #[test]
    fn the_embedded_list_matches_the_scenarios_folder() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json"))
            .collect();
        on_disk.sort();
        let embedded: Vec<&str> = BUILTIN.iter().map(|(name, _)| *name).collect();
        assert_eq!(on_disk, embedded);
    }

    #[test]
    fn globs_select_and_bad_ones_are_usage_errors() {
        let all = builtin().unwrap();
        let chosen = select(all.clone(), &["export_*".to_owned()]).unwrap();
        assert!(chosen.iter().all(|s| s.id.starts_with("export_")));
        assert!(select(all.clone(), &["[x".to_owned()]).is_err());
        assert!(select(all, &["zzz*".to_owned()]).is_err());
    }

    #[test]
    fn errors_name_the_file() {
        let err = parse("broken.json", "{\"id\": 1}").unwrap_err().to_string();
        assert!(err.contains("broken.json"), "{err}");
    }
}
