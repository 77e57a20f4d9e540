//! The planner as a flow of nodes (the PocketFlow pattern): each node reads the shared store
//! (`prep`), does its one piece of work (`exec`, the only part that talks to the LLM or runs
//! anything), writes its results back and names an action (`post`). The action picks the next
//! node:
//!
//! ```text
//! context -> generator -> validator -metadata_generation-> metadata -> runtime_validation
//!                ^            |-retry---------^                            |-default-> parameter_preparation -> result
//!                |            '-failed-> result                            |-failed_runtime-> result
//!                '-----------------------runtime_fix-----------------------'
//! ```

use crate::events::PlannerEvent;
use crate::library::WorkflowLibrary;
use crate::nodes::{
    ContextNode, GeneratorNode, MetadataNode, ParameterPreparationNode, ResultNode,
    RuntimeValidationNode, ValidatorNode,
};
use crate::shared::Shared;
use pflow_llm::Client;
use pflow_runtime::CancelToken;
use pflow_runtime::Host;

pub(crate) type Action = &'static str;

/// What nodes need from outside the store.
pub(crate) struct Env<'a> {
    pub host: &'a Host,
    pub llm: &'a Client,
    pub library: &'a WorkflowLibrary,
    pub cancel: &'a CancelToken,
    pub on_event: &'a mut dyn FnMut(&PlannerEvent),
}

impl Env<'_> {
    pub fn emit(&mut self, event: PlannerEvent) {
        (self.on_event)(&event);
    }
}

pub(crate) trait PlannerNode {
    const NAME: &'static str;
    type Prep;
    type Exec;
    fn prep(&self, shared: &Shared) -> Self::Prep;
    fn exec(&self, env: &mut Env<'_>, prep: Self::Prep) -> Self::Exec;
    fn post(&self, shared: &mut Shared, env: &mut Env<'_>, exec: Self::Exec) -> Action;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Context,
    Generator,
    Validator,
    Metadata,
    RuntimeValidation,
    ParameterPreparation,
    Result,
}

impl Step {
    fn name(self) -> &'static str {
        match self {
            Step::Context => ContextNode::NAME,
            Step::Generator => GeneratorNode::NAME,
            Step::Validator => ValidatorNode::NAME,
            Step::Metadata => MetadataNode::NAME,
            Step::RuntimeValidation => RuntimeValidationNode::NAME,
            Step::ParameterPreparation => ParameterPreparationNode::NAME,
            Step::Result => ResultNode::NAME,
        }
    }

    /// The edges of the flow.
    fn next(self, action: Action) -> Option<Step> {
        match (self, action) {
            (Step::Context, "default") => Some(Step::Generator),
            (Step::Generator, "default") => Some(Step::Validator),
            (Step::Validator, "metadata_generation") => Some(Step::Metadata),
            (Step::Validator, "retry") => Some(Step::Generator),
            (Step::Metadata, "default") => Some(Step::RuntimeValidation),
            (Step::RuntimeValidation, "default") => Some(Step::ParameterPreparation),
            (Step::RuntimeValidation, "runtime_fix") => Some(Step::Generator),
            (Step::ParameterPreparation, "default") => Some(Step::Result),
            (Step::Result, _) => None,
            // `failed`, `failed_runtime`, and a cancellation anywhere.
            _ => Some(Step::Result),
        }
    }
}

fn run_node<N: PlannerNode>(node: &N, env: &mut Env<'_>, shared: &mut Shared) -> Action {
    let prep = node.prep(shared);
    let exec = node.exec(env, prep);
    node.post(shared, env, exec)
}

/// Runs the flow from `context` until `result` has written `planner_output`.
pub(crate) fn run(env: &mut Env<'_>, shared: &mut Shared) {
    let mut step = Some(Step::Context);
    while let Some(current) = step {
        if current != Step::Result && env.cancel.is_cancelled() {
            shared.cancelled = true;
            step = Some(Step::Result);
            continue;
        }
        env.emit(PlannerEvent::Step {
            node: current.name(),
        });
        let action = match current {
            Step::Context => run_node(&ContextNode, env, shared),
            Step::Generator => run_node(&GeneratorNode, env, shared),
            Step::Validator => run_node(&ValidatorNode, env, shared),
            Step::Metadata => run_node(&MetadataNode, env, shared),
            Step::RuntimeValidation => run_node(&RuntimeValidationNode, env, shared),
            Step::ParameterPreparation => run_node(&ParameterPreparationNode, env, shared),
            Step::Result => run_node(&ResultNode, env, shared),
        };
        step = current.next(action);
        env.emit(PlannerEvent::Route {
            from: current.name(),
            action,
            to: step.map(Step::name),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_routes_are_the_seeds_routes() {
        assert_eq!(Step::Validator.next("retry"), Some(Step::Generator));
        assert_eq!(Step::Validator.next("failed"), Some(Step::Result));
        assert_eq!(
            Step::RuntimeValidation.next("runtime_fix"),
            Some(Step::Generator)
        );
        assert_eq!(
            Step::RuntimeValidation.next("failed_runtime"),
            Some(Step::Result)
        );
        assert_eq!(Step::Generator.next("failed"), Some(Step::Result));
        assert_eq!(Step::Result.next("default"), None);
    }
}
