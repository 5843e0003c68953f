//! Why a plan cannot run. Every variant names what is wrong, so a planner (or
//! a person) can fix it; an invalid plan dispatches nothing.

use thiserror::Error;

/// A plan that must not run, or a catalogue that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The plan is not valid JSON of the plan's shape.
    #[error("the plan is not valid: {0}")]
    Syntax(String),
    /// The plan has no steps.
    #[error("the plan has no steps")]
    NoSteps,
    /// Two steps share an id.
    #[error("duplicate step id {0:?}")]
    DuplicateStep(String),
    /// A step depends on a step the plan does not have.
    #[error("step {step:?} depends on {dependency:?}, which is not a step of this plan")]
    UnknownDependency {
        /// The dependent step.
        step: String,
        /// The missing step.
        dependency: String,
    },
    /// The steps depend on each other in a circle; `0` lists it, first step
    /// repeated last. The message names at most the first 12 steps of a
    /// long cycle, so a 100,000-step cycle makes a one-line error.
    #[error("the steps depend on each other in a cycle: {}", cycle_text(.0))]
    Cycle(Vec<String>),
    /// A step names a capability no catalogue lists.
    #[error("step {step:?} uses capability {capability:?}, which no catalogue lists{hint}")]
    UnknownCapability {
        /// The step.
        step: String,
        /// The capability it names.
        capability: String,
        /// Which catalogues were read, for the message.
        hint: String,
    },
    /// Something else about one step is wrong (its target, parameters, pointers, references).
    #[error("step {step:?}: {problem}")]
    Step {
        /// The step.
        step: String,
        /// What is wrong.
        problem: String,
    },
    /// A catalogue could not be read.
    #[error("catalogue {url}: {problem}")]
    Catalogue {
        /// The catalogue's URL.
        url: String,
        /// What went wrong.
        problem: String,
    },
}

impl PlanError {
    pub(crate) fn step(step: &str, problem: impl Into<String>) -> Self {
        Self::Step {
            step: step.to_owned(),
            problem: problem.into(),
        }
    }

    pub(crate) fn catalogue(url: &str, problem: impl Into<String>) -> Self {
        Self::Catalogue {
            url: url.to_owned(),
            problem: problem.into(),
        }
    }
}

/// How many steps of a cycle its message names.
const CYCLE_STEPS_SHOWN: usize = 12;

/// `a → b → a`, or for a long cycle its first steps, how many more, and the
/// step it comes back to.
fn cycle_text(cycle: &[String]) -> String {
    if cycle.len() <= CYCLE_STEPS_SHOWN + 1 {
        return cycle.join(" → ");
    }
    let more = cycle.len() - 1 - CYCLE_STEPS_SHOWN;
    format!(
        "{} → … {more} more step(s) … → {}",
        cycle[..CYCLE_STEPS_SHOWN].join(" → "),
        cycle[cycle.len() - 1]
    )
}
