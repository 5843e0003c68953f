//! Finding scenarios: the built-in suite (embedded in the crate, so an
//! evaluation runs from any directory), or every `*.json` file of a folder.

use std::collections::BTreeSet;
use std::path::Path;

use super::builtin::BUILTIN;
use super::error::EvalError;
use super::scenario::Scenario;

/// Parses one scenario file, naming the file in every error.
fn parse(name: &str, text: &str) -> Result<Scenario, EvalError> {
    Scenario::from_json(text)
        .map_err(|e| EvalError::new(format!("invalid scenario file {name}: {e}")))
}

/// The scenarios shipped with recourse (53 of them, every category).
///
/// ```
/// let suite = recourse_eval::builtin().unwrap();
/// assert!(suite.iter().any(|s| s.id() == "export_unknown_outcome"));
/// ```
///
/// # Errors
/// Never for the suite as shipped (a test checks every file).
pub fn builtin() -> Result<Vec<Scenario>, EvalError> {
    let scenarios = BUILTIN
        .iter()
        .map(|(name, text)| parse(name, text))
        .collect::<Result<Vec<_>, _>>()?;
    unique(scenarios)
}

/// Every `*.json` scenario in `dir`, in the order of their file names.
///
/// # Errors
/// A folder that cannot be read or holds no scenario file, a file that is
/// not a valid scenario (the error names the file and the field), or two
/// scenarios with the same id.
pub fn from_dir(dir: &Path) -> Result<Vec<Scenario>, EvalError> {
    let unreadable = |e| {
        EvalError::caused(
            format!("cannot read the suite directory {}", dir.display()),
            e,
        )
    };
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(unreadable)? {
        let path = entry
            .map_err(|e| {
                EvalError::caused(
                    format!("cannot list the suite directory {}", dir.display()),
                    e,
                )
            })?
            .path();
        if path.extension().is_some_and(|e| e == "json") && path.is_file() {
            paths.push(path);
        }
    }
    if paths.is_empty() {
        return Err(EvalError::new(format!(
            "no scenario files (*.json) in {}",
            dir.display()
        )));
    }
    paths.sort();
    let scenarios = paths
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).map_err(|e| {
                EvalError::caused(format!("cannot read scenario file {}", path.display()), e)
            })?;
            parse(&path.display().to_string(), &text)
        })
        .collect::<Result<Vec<_>, _>>()?;
    unique(scenarios)
}

fn unique(scenarios: Vec<Scenario>) -> Result<Vec<Scenario>, EvalError> {
    let mut seen = BTreeSet::new();
    for s in &scenarios {
        if !seen.insert(s.id.as_str()) {
            return Err(EvalError::new(format!(
                "two scenarios share the id {:?}",
                s.id
            )));
        }
    }
    Ok(scenarios)
}

#[cfg(test)]
mod tests {
    use strum::IntoEnumIterator;

    use super::*;
    use crate::failure::ScenarioCategory;

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
    fn errors_name_the_file() {
        let err = parse("broken.json", "{\"id\": 1}").unwrap_err().to_string();
        assert!(err.contains("broken.json"), "{err}");
    }
}
