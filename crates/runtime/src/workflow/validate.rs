//! Validation: a plan runs only when every step, dependency, capability and
//! reference makes sense, and the dependencies form no cycle. An invalid plan
//! dispatches nothing.
//!
//! A plan is input, possibly a planner's or an attacker's, so validation is
//! linear in its size: steps are indexed once, cycles are found by peeling
//! (Kahn's algorithm, no recursion to overflow the stack), and a reference to
//! a step that is not a direct dependency walks the ancestors only as far as
//! it must, under a fixed budget of visits for the whole plan.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::catalogue::join;
use super::reference::references_in;
use super::{Catalogue, Plan, PlanError, PlanStep};
use recourse_core::method::Method;
use recourse_core::protect::validate_pointer;

/// A validated plan, each step bound to its tool: ready to run.
///
/// ```
/// use recourse::workflow::{Catalogue, Plan, PlanError, Workflow};
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
    pub(crate) verify: Option<crate::verify::VerifySpec>,
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
    let graph = Graph::new(plan)?;
    if let Some(cycle) = graph.find_cycle() {
        return Err(PlanError::Cycle(cycle));
    }
    let targets = plan
        .steps
        .iter()
        .map(|step| target(step, catalogue))
        .collect::<Result<Vec<_>, _>>()?;
    let mut walk_budget = REFERENCE_WALK_BUDGET;
    for (i, step) in plan.steps.iter().enumerate() {
        check_inputs(&graph, i, step, &mut walk_budget)?;
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
                verify: None,
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
                verify: None,
                capability: Some(name.clone()),
            }
        }
    };
    target.idempotent = step.idempotent;
    if let Some(template) = &step.reconcile {
        let full = join(origin(&target.url), template);
        crate::reconcile::HttpReconciler::new(full.clone())
            .map_err(|e| PlanError::step(id, format!("reconcile: {e}")))?;
        target.reconcile = Some(full);
    }
    if let Some(spec) = &step.verify {
        target.verify = Some(verification(id, &target.url, spec, &step.parameters)?);
    }
    Ok(target)
}

/// A step's verification, its URL made absolute and checked against the
/// step's parameters (a field a template names must be there).
fn verification(
    id: &str,
    url: &str,
    spec: &crate::verify::VerifySpec,
    parameters: &Value,
) -> Result<crate::verify::VerifySpec, PlanError> {
    let mut spec = spec.clone();
    match &spec.url {
        Some(read) if read.starts_with('/') => spec.url = Some(join(origin(url), read)),
        Some(_) => {}
        None => {
            return Err(PlanError::step(
                id,
                "verify: a plan step reads back over HTTP: give url",
            ));
        }
    }
    crate::verify::Verifier::new(spec.clone(), parameters)
        .map_err(|e| PlanError::step(id, e.to_string()))?;
    Ok(spec)
}

/// `scheme://host:port` of `url`.
fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    url[after_scheme..]
        .find('/')
        .map_or(url, |slash| &url[..after_scheme + slash])
}

/// How many ancestor visits checking indirect references may cost, for the
/// whole plan. Far above any real plan (a 100,000-step chain whose every step
/// names its grandparent costs about 100,000); an adversarial plan stops here with
/// an error instead of taking quadratic time.
const REFERENCE_WALK_BUDGET: usize = 1_000_000;

fn check_inputs(
    graph: &Graph<'_>,
    index: usize,
    step: &PlanStep,
    walk_budget: &mut usize,
) -> Result<(), PlanError> {
    let id = &step.step_id;
    if !step.parameters.is_object() {
        return Err(PlanError::step(id, "parameters must be a JSON object"));
    }
    for pointer in &step.exact {
        validate_pointer(pointer).map_err(|e| PlanError::step(id, format!("exact: {e}")))?;
    }
    for reference in references_in(&step.parameters).map_err(|e| PlanError::step(id, e))? {
        if reference.optional {
            return Err(PlanError::step(
                id,
                format!(
                    "reference {} is optional ('?'), which only a verification's templates may be",
                    reference.raw
                ),
            ));
        }
        let Some(&referenced) = graph.index.get(reference.root.as_str()) else {
            return Err(PlanError::step(
                id,
                format!("reference {} names no step of this plan", reference.raw),
            ));
        };
        match graph.depends_on(index, referenced, walk_budget) {
            Some(true) => {}
            Some(false) => {
                return Err(PlanError::step(
                    id,
                    format!(
                        "reference {} needs step {:?} in depends_on (directly or through another step)",
                        reference.raw, reference.root
                    ),
                ));
            }
            None => {
                return Err(PlanError::step(
                    id,
                    format!(
                        "reference {}: checking indirect references would visit more than \
                         {REFERENCE_WALK_BUDGET} steps; list {:?} in depends_on directly",
                        reference.raw, reference.root
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The plan's dependencies as indices into its steps.
struct Graph<'a> {
    ids: Vec<&'a str>,
    index: HashMap<&'a str, usize>,
    deps: Vec<Vec<usize>>,
}

impl<'a> Graph<'a> {
    /// Indexes `plan`, whose step ids are unique already.
    ///
    /// # Errors
    /// A dependency that names no step.
    fn new(plan: &'a Plan) -> Result<Self, PlanError> {
        let ids: Vec<&str> = plan.steps.iter().map(|s| s.step_id.as_str()).collect();
        let index: HashMap<&str, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        let deps =
            plan.steps
                .iter()
                .map(|step| {
                    step.depends_on
                        .iter()
                        .map(|d| {
                            index.get(d.as_str()).copied().ok_or_else(|| {
                                PlanError::UnknownDependency {
                                    step: step.step_id.clone(),
                                    dependency: d.clone(),
                                }
                            })
                        })
                        .collect::<Result<Vec<_>, _>>()
                })
                .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { ids, index, deps })
    }

    /// A cycle of dependencies, first step repeated last, if there is one.
    ///
    /// Peels off steps whose dependencies are all peeled (Kahn, O(steps +
    /// dependencies)); every step left depends on another step left, so
    /// following dependencies from the first of them, in plan order, must come
    /// back around within as many steps as are left.
    fn find_cycle(&self) -> Option<Vec<String>> {
        let n = self.ids.len();
        let mut pending: Vec<usize> = self.deps.iter().map(Vec::len).collect();
        let mut dependents = vec![Vec::new(); n];
        for (step, deps) in self.deps.iter().enumerate() {
            for &d in deps {
                dependents[d].push(step);
            }
        }
        let mut ready: Vec<usize> = (0..n).filter(|&s| pending[s] == 0).collect();
        while let Some(done) = ready.pop() {
            for &s in &dependents[done] {
                pending[s] -= 1;
                if pending[s] == 0 {
                    ready.push(s);
                }
            }
        }
        let start = (0..n).find(|&s| pending[s] > 0)?;
        let mut on_path = vec![None; n];
        let mut path: Vec<usize> = Vec::new();
        let mut at = start;
        loop {
            if let Some(i) = on_path[at] {
                let mut cycle: Vec<String> =
                    path[i..].iter().map(|&s| self.ids[s].to_owned()).collect();
                cycle.push(self.ids[at].to_owned());
                return Some(cycle);
            }
            on_path[at] = Some(path.len());
            path.push(at);
            at = self.deps[at].iter().copied().find(|&d| pending[d] > 0)?;
        }
    }

    /// Whether step `from` depends on `on`, directly or not; `None` when
    /// finding out would spend more than `budget` visits (which it is charged).
    fn depends_on(&self, from: usize, on: usize, budget: &mut usize) -> Option<bool> {
        if self.deps[from].contains(&on) {
            return Some(true);
        }
        let mut seen = HashSet::new();
        let mut todo = self.deps[from].clone();
        while let Some(next) = todo.pop() {
            if next == on {
                return Some(true);
            }
            if seen.insert(next) {
                *budget = budget.checked_sub(1)?;
                todo.extend_from_slice(&self.deps[next]);
            }
        }
        Some(false)
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
        let optional = check(json!([url_step("a", &[]), {"step_id": "b", "url": "http://t", "depends_on": ["a"], "parameters": {"x": "{{a.data?}}"}}]))
            .unwrap_err();
        assert!(optional.to_string().contains("is optional"), "{optional}");
    }

    #[test]
    fn reconcile_templates_resolve_against_the_origin() {
        let t = check(json!([{"step_id": "a", "url": "http://t:9/api/x", "idempotent": false, "reconcile": "/api/x/{key}"}]))
            .unwrap();
        assert_eq!(t[0].reconcile.as_deref(), Some("http://t:9/api/x/{key}"));
        assert_eq!(t[0].idempotent, Some(false));
    }

    #[test]
    fn a_verify_block_resolves_against_the_origin_and_is_checked_against_the_parameters() {
        let step = |verify: Value| {
            json!([{"step_id": "a", "url": "http://t:9/api/orders/cancel", "idempotent": false,
                    "parameters": {"order_id": "W1"}, "verify": verify}])
        };
        let t = check(step(
            json!({"url": "/api/orders/get", "args": {"order_id": "{{payload.order_id}}"},
                                   "expect": ["/status == \"cancelled\""], "always": true}),
        ))
        .unwrap();
        let spec = t[0].verify.as_ref().unwrap();
        assert_eq!(spec.url.as_deref(), Some("http://t:9/api/orders/get"));
        assert!(spec.always);
        for (bad, why) in [
            (
                json!({"url": "/g", "expect": ["/z == {{payload.zip}}"]}),
                "\"zip\"",
            ),
            (json!({"url": "/g", "expect": ["z exists"]}), "JSON Pointer"),
            (json!({"tool": "get", "expect": ["/z exists"]}), "give url"),
        ] {
            let err = check(step(bad)).unwrap_err().to_string();
            assert!(err.contains(why), "{err}");
        }
        let plan = serde_json::from_value::<Plan>(
            json!({"plan_id": "p", "steps": [{"step_id": "a", "url": "http://t", "verify": {"url": "/g", "expect": ["/a exists"], "headers": {}}}]}),
        );
        assert!(plan.is_err(), "a verify block has no headers");
    }

    /// A 100,000-step chain, closed into a cycle when `closed`.
    fn long_chain(n: usize, closed: bool) -> Plan {
        let steps = (0..n)
            .map(|i| {
                let dep = if i > 0 {
                    Some(i - 1)
                } else {
                    closed.then_some(n - 1)
                };
                let mut step = url_step(&format!("s{i}"), &[]);
                if let Some(d) = dep {
                    step["depends_on"] = json!([format!("s{d}")]);
                }
                step
            })
            .collect();
        plan(Value::Array(steps))
    }

    #[test]
    fn a_hundred_thousand_step_cycle_is_named_in_linear_time() {
        let started = std::time::Instant::now();
        let err = validate(&long_chain(100_000, true), &Catalogue::new()).unwrap_err();
        let PlanError::Cycle(cycle) = &err else {
            panic!("{err}");
        };
        assert_eq!(cycle.len(), 100_001);
        assert_eq!(cycle.first(), cycle.last());
        let text = err.to_string();
        assert!(text.len() < 400, "a bounded message: {text}");
        assert!(text.contains("more step(s)"), "{text}");
        eprintln!("100,000-step cycle named in {:?}", started.elapsed());
    }

    #[test]
    fn a_hundred_thousand_step_chain_with_references_validates() {
        let mut plan = long_chain(100_000, false);
        for i in 2..plan.steps.len() {
            plan.steps[i].parameters = json!({"x": format!("{{{{s{}.data}}}}", i - 2)});
        }
        let started = std::time::Instant::now();
        assert_eq!(validate(&plan, &Catalogue::new()).unwrap().len(), 100_000);
        eprintln!(
            "100,000-step chain with references validated in {:?}",
            started.elapsed()
        );
    }

    #[test]
    fn references_across_long_distances_stop_at_the_walk_budget() {
        // Every step names the root: quadratic to check, so the budget ends it.
        let mut plan = long_chain(5_000, false);
        for i in 2..plan.steps.len() {
            plan.steps[i].parameters = json!({"x": "{{s0.data}}"});
        }
        let err = validate(&plan, &Catalogue::new()).unwrap_err();
        assert!(err.to_string().contains("in depends_on directly"), "{err}");
        plan.steps.iter_mut().skip(2).for_each(|s| {
            s.depends_on.push("s0".into());
        });
        assert!(validate(&plan, &Catalogue::new()).is_ok());
    }
}
