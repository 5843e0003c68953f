//! Validation: a plan runs only when every step, dependency, capability and
//! reference makes sense, and the dependencies form no cycle. An invalid plan
//! dispatches nothing.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::catalogue::join;
use super::reference::references_in;
use super::{Catalogue, Plan, PlanError, PlanStep};
use crate::{Method, validate_pointer};

/// A validated plan, each step bound to its tool: ready to run.
///
/// ```
/// use recourse::{Catalogue, Plan, PlanError, Workflow};
///
/// let plan = Plan::from_json(br#"{"plan_id": "p", "steps": [
///   {"step_id": "a", "url": "http://127.0.0.1:8700/api/x", "depends_on": ["b"]},
///   {"step_id": "b", "url": "http://127.0.0.1:8700/api/y", "depends_on": ["a"]}
/// ]}"#).unwrap();
/// let err = Workflow::new(plan, &Catalogue::new()).unwrap_err();
/// assert_eq!(err, PlanError::Cycle(vec!["a".into(), "b".into(), "a".into()]));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Workflow {
    pub(crate) plan: Plan,
    pub(crate) targets: Vec<StepTarget>,
}

impl Workflow {
    /// Validates `plan`, resolving capabilities against `catalogue`.
    ///
    /// # Errors
    /// No steps, a duplicate step id, an unknown dependency, a cycle (named),
    /// an unknown capability, a step with neither or both of `url` and
    /// `capability`, parameters that are not an object, a malformed `exact`
    /// pointer or reconcile template, or a reference that is malformed or
    /// names a step this one does not depend on.
    pub fn new(plan: Plan, catalogue: &Catalogue) -> Result<Self, PlanError> {
        let targets = validate(&plan, catalogue)?;
        Ok(Self { plan, targets })
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The URL step `step_id` calls.
    pub fn target_of(&self, step_id: &str) -> Option<&str> {
        let i = self.plan.steps.iter().position(|s| s.step_id == step_id)?;
        Some(&self.targets[i].url)
    }
}

/// Where and how a validated step calls its tool.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StepTarget {
    pub(crate) url: String,
    pub(crate) schema: Option<Value>,
    pub(crate) method: Method,
    /// What the plan says of the step's idempotency (the caller's word).
    pub(crate) idempotent: Option<bool>,
    /// What the catalogue (the tool's manifest) declares.
    pub(crate) declared: Option<bool>,
    pub(crate) reconcile: Option<String>,
    pub(crate) capability: Option<String>,
}

/// Checks `plan` against `catalogue`, returning each step's target in plan order.
pub(crate) fn validate(plan: &Plan, catalogue: &Catalogue) -> Result<Vec<StepTarget>, PlanError> {
    if plan.steps.is_empty() {
        return Err(PlanError::NoSteps);
    }
    let mut ids = HashSet::new();
    for step in &plan.steps {
        if step.step_id.trim().is_empty() {
            return Err(PlanError::step(&step.step_id, "the step id is empty"));
        }
        if !ids.insert(step.step_id.as_str()) {
            return Err(PlanError::DuplicateStep(step.step_id.clone()));
        }
    }
    for step in &plan.steps {
        if let Some(missing) = step.depends_on.iter().find(|d| !ids.contains(d.as_str())) {
            return Err(PlanError::UnknownDependency {
                step: step.step_id.clone(),
                dependency: missing.clone(),
            });
        }
    }
    if let Some(cycle) = find_cycle(plan) {
        return Err(PlanError::Cycle(cycle));
    }
    let targets = plan
        .steps
        .iter()
        .map(|step| target(step, catalogue))
        .collect::<Result<Vec<_>, _>>()?;
    for step in &plan.steps {
        check_inputs(plan, step)?;
    }
    Ok(targets)
}

fn target(step: &PlanStep, catalogue: &Catalogue) -> Result<StepTarget, PlanError> {
    let id = &step.step_id;
    let mut target = match (&step.url, &step.capability) {
        (Some(_), Some(_)) => {
            return Err(PlanError::step(
                id,
                "give either url or capability, not both",
            ));
        }
        (None, None) => return Err(PlanError::step(id, "give a url or a capability")),
        (Some(url), None) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(PlanError::step(
                    id,
                    format!("url {url:?} must start with http:// or https://"),
                ));
            }
            StepTarget {
                url: url.clone(),
                schema: None,
                method: step.method.unwrap_or_default(),
                idempotent: None,
                declared: None,
                reconcile: None,
                capability: None,
            }
        }
        (None, Some(name)) => {
            let Some(entry) = catalogue.get(name) else {
                return Err(PlanError::UnknownCapability {
                    step: id.clone(),
                    capability: name.clone(),
                    hint: match catalogue.sources() {
                        [] => " (no catalogue was given: pass --catalog URL)".to_owned(),
                        read => format!(" (read: {})", read.join(", ")),
                    },
                });
            };
            let listed: Method = entry.method.parse().map_err(|_| {
                PlanError::step(
                    id,
                    format!(
                        "capability {name:?} has method {:?}, which recourse does not send",
                        entry.method
                    ),
                )
            })?;
            if step.method.is_some_and(|m| m != listed) {
                return Err(PlanError::step(
                    id,
                    format!(
                        "capability {name:?} is called with {listed}, not {}",
                        step.method.unwrap_or_default()
                    ),
                ));
            }
            StepTarget {
                url: entry.url.clone(),
                schema: entry.input_schema.clone(),
                method: listed,
                idempotent: None,
                declared: Some(entry.idempotent),
                reconcile: entry.reconcile.clone(),
                capability: Some(name.clone()),
            }
        }
    };
    target.idempotent = step.idempotent;
    if let Some(template) = &step.reconcile {
        let full = join(origin(&target.url), template);
        crate::HttpReconciler::new(full.clone())
            .map_err(|e| PlanError::step(id, format!("reconcile: {e}")))?;
        target.reconcile = Some(full);
    }
    Ok(target)
}

/// `scheme://host:port` of `url`.
fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    url[after_scheme..]
        .find('/')
        .map_or(url, |slash| &url[..after_scheme + slash])
}

fn check_inputs(plan: &Plan, step: &PlanStep) -> Result<(), PlanError> {
    let id = &step.step_id;
    if !step.parameters.is_object() {
        return Err(PlanError::step(id, "parameters must be a JSON object"));
    }
    for pointer in &step.exact {
        validate_pointer(pointer).map_err(|e| PlanError::step(id, format!("exact: {e}")))?;
    }
    let upstream = ancestors(plan, id);
    for reference in references_in(&step.parameters).map_err(|e| PlanError::step(id, e))? {
        if plan.step(&reference.step).is_none() {
            return Err(PlanError::step(
                id,
                format!("reference {} names no step of this plan", reference.raw),
            ));
        }
        if !upstream.contains(reference.step.as_str()) {
            return Err(PlanError::step(
                id,
                format!(
                    "reference {} needs step {:?} in depends_on (directly or through another step)",
                    reference.raw, reference.step
                ),
            ));
        }
    }
    Ok(())
}

/// Every step `id` depends on, directly or not.
fn ancestors<'a>(plan: &'a Plan, id: &str) -> HashSet<&'a str> {
    let mut seen = HashSet::new();
    let mut todo: Vec<&str> = plan
        .step(id)
        .map(|s| s.depends_on.iter().map(String::as_str).collect())
        .unwrap_or_default();
    while let Some(next) = todo.pop() {
        if seen.insert(next)
            && let Some(step) = plan.step(next)
        {
            todo.extend(step.depends_on.iter().map(String::as_str));
        }
    }
    seen
}

/// A cycle of dependencies, first step repeated last, if there is one.
///
/// Peels off steps whose dependencies are all peeled (Kahn); every step left
/// depends on another step left, so following dependencies from any of them
/// must come back around.
fn find_cycle(plan: &Plan) -> Option<Vec<String>> {
    let deps: HashMap<&str, Vec<&str>> = plan
        .steps
        .iter()
        .map(|s| {
            (
                s.step_id.as_str(),
                s.depends_on.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    let mut left: HashSet<&str> = deps.keys().copied().collect();
    loop {
        let ready: Vec<&str> = left
            .iter()
            .copied()
            .filter(|s| deps[s].iter().all(|d| !left.contains(d)))
            .collect();
        if ready.is_empty() {
            break;
        }
        ready.iter().for_each(|s| {
            left.remove(s);
        });
    }
    let start = plan
        .steps
        .iter()
        .map(|s| s.step_id.as_str())
        .find(|s| left.contains(s))?;
    let mut path = vec![start];
    loop {
        let at = path[path.len() - 1];
        let next = deps[at].iter().copied().find(|d| left.contains(d))?;
        if let Some(i) = path.iter().position(|p| *p == next) {
            let mut cycle: Vec<String> = path[i..].iter().map(|s| (*s).to_owned()).collect();
            cycle.push(next.to_owned());
            return Some(cycle);
        }
        path.push(next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan(steps: Value) -> Plan {
        serde_json::from_value(json!({"plan_id": "p", "steps": steps})).unwrap()
    }

    fn url_step(id: &str, deps: &[&str]) -> Value {
        json!({"step_id": id, "url": "http://t/x", "depends_on": deps})
    }

    fn check(steps: Value) -> Result<Vec<StepTarget>, PlanError> {
        validate(&plan(steps), &Catalogue::new())
    }

    #[test]
    fn cycles_are_named() {
        let err = check(json!([
            url_step("a", &[]),
            url_step("b", &["a", "d"]),
            url_step("c", &["b"]),
            url_step("d", &["c"])
        ]))
        .unwrap_err();
        assert_eq!(
            err,
            PlanError::Cycle(vec!["b".into(), "d".into(), "c".into(), "b".into()])
        );
        assert_eq!(
            err.to_string(),
            "the steps depend on each other in a cycle: b → d → c → b"
        );
        let own = check(json!([url_step("a", &["a"])])).unwrap_err();
        assert_eq!(own, PlanError::Cycle(vec!["a".into(), "a".into()]));
    }

    #[test]
    fn structural_errors_are_named() {
        assert_eq!(check(json!([])).unwrap_err(), PlanError::NoSteps);
        assert_eq!(
            check(json!([url_step("a", &[]), url_step("a", &[])])).unwrap_err(),
            PlanError::DuplicateStep("a".into())
        );
        assert_eq!(
            check(json!([url_step("a", &["ghost"])])).unwrap_err(),
            PlanError::UnknownDependency {
                step: "a".into(),
                dependency: "ghost".into()
            }
        );
        let err = check(json!([{"step_id": "a", "capability": "nope"}])).unwrap_err();
        assert!(matches!(err, PlanError::UnknownCapability { .. }));
        assert!(err.to_string().contains("\"nope\""), "{err}");
        let err = check(json!([{"step_id": "a"}])).unwrap_err();
        assert!(
            err.to_string().contains("give a url or a capability"),
            "{err}"
        );
        let err =
            check(json!([{"step_id": "a", "url": "http://t", "exact": ["amount"]}])).unwrap_err();
        assert!(err.to_string().contains("JSON Pointer"), "{err}");
    }

    #[test]
    fn references_must_name_an_upstream_step() {
        let err = check(json!([url_step("a", &[]), {"step_id": "b", "url": "http://t", "parameters": {"x": "{{a.data}}"}}]))
            .unwrap_err();
        assert!(
            err.to_string().contains("needs step \"a\" in depends_on"),
            "{err}"
        );
        let ok = check(json!([
            url_step("a", &[]),
            url_step("b", &["a"]),
            {"step_id": "c", "url": "http://t", "depends_on": ["b"], "parameters": {"x": "{{a.data}}"}}
        ]));
        assert!(ok.is_ok(), "transitive dependencies count");
    }

    #[test]
    fn reconcile_templates_resolve_against_the_origin() {
        let t = check(json!([{"step_id": "a", "url": "http://t:9/api/x", "idempotent": false, "reconcile": "/api/x/{key}"}]))
            .unwrap();
        assert_eq!(t[0].reconcile.as_deref(), Some("http://t:9/api/x/{key}"));
        assert_eq!(t[0].idempotent, Some(false));
    }
}
