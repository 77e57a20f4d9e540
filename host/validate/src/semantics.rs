//! Checks on a structurally sound workflow: node types, params, templates, data flow, inputs.

use crate::{Issue, IssueKind, NodeCatalog, Port};
use pflow_ir::template::{malformed, Fallback, Reference, Segment, Template};
use pflow_ir::{closest, json_kind, Node, Workflow};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// What a batched node writes: pflow's batch outputs, and `error` when it fails.
const BATCH_OUTPUTS: &[&str] = &[
    "results",
    "count",
    "success_count",
    "error_count",
    "errors",
    "batch_metadata",
    "error",
];

pub(crate) fn check(
    workflow: &Workflow,
    catalog: &dyn NodeCatalog,
    given_inputs: Option<&Map<String, Value>>,
    issues: &mut Vec<Issue>,
) {
    let graph = Graph::new(workflow);
    node_types_and_params(workflow, catalog, issues);
    unsupported(workflow, issues);
    let used_inputs = Templates {
        workflow,
        catalog,
        graph: &graph,
    }
    .check(issues);
    data_flow(workflow, &graph, issues);
    inputs(workflow, &used_inputs, given_inputs, issues);
}

/// Above this many nodes, "runs before" is judged by topological order rather than exact
/// reachability, whose table grows with the square of the node count.
const EXACT_REACHABILITY_NODES: usize = 4096;

/// The edges as a graph over node indexes, with what runs before what. Everything here is
/// linear in nodes and edges, but for the exact reachability table of small workflows.
struct Graph {
    index: HashMap<String, usize>,
    successors: Vec<Vec<usize>>,
    /// Position in a topological order (nodes on a cycle last, in document order).
    position: Vec<usize>,
    /// `reaches[a]` as a bit set over nodes: an edge path leads from a to them.
    reaches: Option<Vec<Vec<u64>>>,
    /// Whether an edge path leads from the start node to each node.
    reached_from_start: Vec<bool>,
    start: usize,
}

impl Graph {
    fn new(workflow: &Workflow) -> Self {
        let count = workflow.nodes.len();
        let index: HashMap<String, usize> = workflow
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.clone(), i))
            .collect();
        let mut successors = vec![Vec::new(); count];
        for edge in &workflow.edges {
            if let (Some(&from), Some(&to)) = (index.get(&edge.from), index.get(&edge.to)) {
                successors[from].push(to);
            }
        }
        for list in &mut successors {
            list.sort_unstable();
            list.dedup();
        }
        let order = topological_order(&successors);
        let mut position = vec![0; count];
        for (at, &node) in order.iter().enumerate() {
            position[node] = at;
        }
        let reaches = (count <= EXACT_REACHABILITY_NODES).then(|| {
            let words = count.div_ceil(64);
            let mut reaches = vec![vec![0u64; words]; count];
            // Successors first, so each node ORs finished sets (exact on the acyclic part;
            // cycles are reported on their own).
            for &node in order.iter().rev() {
                let mut set = vec![0u64; words];
                for &next in &successors[node] {
                    set[next / 64] |= 1 << (next % 64);
                    for (word, theirs) in set.iter_mut().zip(&reaches[next]) {
                        *word |= theirs;
                    }
                }
                reaches[node] = set;
            }
            reaches
        });
        let start = workflow
            .start_node
            .as_ref()
            .and_then(|id| index.get(id).copied())
            .unwrap_or(0);
        let mut reached_from_start = vec![false; count];
        let mut stack = vec![start];
        while let Some(node) = stack.pop() {
            for &next in &successors[node] {
                if !std::mem::replace(&mut reached_from_start[next], true) {
                    stack.push(next);
                }
            }
        }
        Graph {
            index,
            successors,
            position,
            reaches,
            reached_from_start,
            start,
        }
    }

    fn runs_before(&self, earlier: usize, later: usize) -> bool {
        match &self.reaches {
            Some(reaches) => reaches[earlier][later / 64] & (1 << (later % 64)) != 0,
            None => self.position[earlier] < self.position[later],
        }
    }
}

/// Kahn's algorithm; nodes on a cycle come last, in document order.
fn topological_order(successors: &[Vec<usize>]) -> Vec<usize> {
    let mut incoming = vec![0usize; successors.len()];
    for list in successors {
        for &next in list {
            incoming[next] += 1;
        }
    }
    let mut ready: Vec<usize> = (0..successors.len())
        .rev()
        .filter(|&n| incoming[n] == 0)
        .collect();
    let mut order = Vec::with_capacity(successors.len());
    let mut placed = vec![false; successors.len()];
    while let Some(node) = ready.pop() {
        order.push(node);
        placed[node] = true;
        for &next in successors[node].iter().rev() {
            incoming[next] -= 1;
            if incoming[next] == 0 {
                ready.push(next);
            }
        }
    }
    order.extend((0..successors.len()).filter(|&n| !placed[n]));
    order
}

fn node_types_and_params(workflow: &Workflow, catalog: &dyn NodeCatalog, issues: &mut Vec<Issue>) {
    let types = catalog.types();
    for (i, node) in workflow.nodes.iter().enumerate() {
        let Some(params) = catalog.params(&node.type_name) else {
            let close = closest(&node.type_name, types.iter().copied());
            issues.push(Issue::error(
                IssueKind::NodeType,
                &format!("nodes[{i}].type"),
                format!("Unknown node type: '{}'", node.type_name),
                Some(match close.is_empty() {
                    false => format!(
                        "Did you mean: {}? Known types: {}",
                        close.join(", "),
                        types.join(", ")
                    ),
                    true => format!("Known types: {}", types.join(", ")),
                }),
            ));
            continue;
        };
        if params.iter().any(|p| p.name == "*") {
            continue;
        }
        for port in params.iter().filter(|p| p.required) {
            if !node.params.contains_key(&port.name) {
                issues.push(Issue::error(
                    IssueKind::Params,
                    &format!("nodes[{i}].params"),
                    format!(
                        "Node '{}' (type: {}) is missing required parameter '{}' ({})",
                        node.id, node.type_name, port.name, port.description
                    ),
                    Some(format!(
                        "Parameters of {}: {}",
                        node.type_name,
                        port_names(params)
                    )),
                ));
            }
        }
        for name in node.params.keys() {
            // `inputs` names values for the other params on any node type, as in pflow.
            if name != "inputs" && !params.iter().any(|p| &p.name == name) {
                let close = closest(name, params.iter().map(|p| p.name.as_str()));
                issues.push(Issue::warning(
                    IssueKind::Params,
                    &format!("nodes[{i}].params.{name}"),
                    format!(
                        "Node type '{}' has no parameter '{name}'; it is ignored",
                        node.type_name
                    ),
                    Some(match close.first() {
                        Some(best) => {
                            format!("Did you mean '{best}'? Parameters: {}", port_names(params))
                        }
                        None => format!("Parameters: {}", port_names(params)),
                    }),
                ));
            }
        }
    }
}

/// pflow 0.16 features this host does not run: refused rather than silently skipped.
fn unsupported(workflow: &Workflow, issues: &mut Vec<Issue>) {
    for (i, node) in workflow.nodes.iter().enumerate() {
        if node.approval.is_some() {
            issues.push(Issue::error(
                IssueKind::Structure,
                &format!("nodes[{i}].approval"),
                format!(
                    "Node '{}' asks for a human approval gate, which pflow-host does not run yet; it would run without asking",
                    node.id
                ),
                Some("Remove `approval`, or split the workflow where the approval belongs".to_string()),
            ));
        }
    }
}

fn port_names(ports: &[Port]) -> String {
    ports
        .iter()
        .map(|p| p.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the root of a template names.
enum Root {
    /// A name the node itself gives (batch item, loop iteration, `inputs:` mapping).
    Local,
    Input,
    Node(usize),
    Unknown,
}

struct Templates<'a> {
    workflow: &'a Workflow,
    catalog: &'a dyn NodeCatalog,
    graph: &'a Graph,
}

/// Where a template stands: its path in the document and the node whose params hold it.
struct Site<'a> {
    path: String,
    node: Option<(usize, &'a Node)>,
}

impl Templates<'_> {
    /// Checks every template; returns the inputs they use.
    fn check(&self, issues: &mut Vec<Issue>) -> HashSet<String> {
        let mut used = HashSet::new();
        for (i, node) in self.workflow.nodes.iter().enumerate() {
            let mut strings = Vec::new();
            collect_strings(
                &Value::Object(node.params.clone()),
                format!("nodes[{i}].params"),
                &mut strings,
            );
            if let Some(batch) = &node.batch {
                collect_strings(
                    &batch.items,
                    format!("nodes[{i}].batch.items"),
                    &mut strings,
                );
            }
            for (path, text) in strings {
                let site = Site {
                    path,
                    node: Some((i, node)),
                };
                self.check_text(&text, &site, &mut used, issues);
            }
            // A loop's settings read the node's own latest output: only their roots are
            // checked (and the inputs they use counted).
            if let Some(config) = &node.loop_config {
                let max = config.max_iterations.as_ref().and_then(Value::as_str);
                let texts = config
                    .while_condition
                    .iter()
                    .chain(&config.until_condition)
                    .chain(config.carry.values())
                    .map(String::as_str)
                    .chain(max);
                for text in texts {
                    let site = Site {
                        path: format!("nodes[{i}].loop"),
                        node: Some((i, node)),
                    };
                    for reference in Template::parse(text).references() {
                        self.check_root(reference, &site, &mut used, issues);
                    }
                }
            }
        }
        for (name, output) in &self.workflow.outputs {
            if let Some(source) = &output.source {
                let site = Site {
                    path: format!("outputs.{name}.source"),
                    node: None,
                };
                self.check_text(source, &site, &mut used, issues);
            }
        }
        used
    }

    fn check_text(
        &self,
        text: &str,
        site: &Site<'_>,
        used: &mut HashSet<String>,
        issues: &mut Vec<Issue>,
    ) {
        for problem in malformed(text) {
            issues.push(Issue::error(
                IssueKind::Template,
                &site.path,
                format!("Malformed template: {problem}"),
                Some("Templates look like ${input} or ${node.field[0].sub}; write $${ for a literal ${".to_string()),
            ));
        }
        let template = Template::parse(text);
        for reference in template.top_references() {
            if reference.fallback.is_none() {
                for nested in Template::nested_references(reference) {
                    self.check_reference(nested, site, used, issues);
                }
                continue;
            }
            // `a ?? b ?? "x"` expects operands to be missing: each needs only to name
            // something that exists.
            let mut operand = Some(reference);
            while let Some(current) = operand {
                self.check_root(current, site, used, issues);
                operand = match current.fallback.as_deref() {
                    Some(Fallback::Reference(next)) => Some(next),
                    _ => None,
                };
            }
        }
    }

    /// Names a node's params may use besides inputs and nodes: its batch item and index, its
    /// loop's iteration, and the names its `inputs:` mapping (and loop `carry`) gives.
    fn local_name(node: &Node, root: &str, path: &str) -> bool {
        if let Some(batch) = &node.batch {
            if root == batch.alias || root == "__index__" {
                return true;
            }
        }
        if let Some(config) = &node.loop_config {
            if root == "__iteration__" || config.carry.contains_key(root) {
                return true;
            }
        }
        // The mapping's names serve the node's other params, not the mapping itself.
        let in_mapping = path.contains(".params.inputs");
        !in_mapping
            && matches!(node.params.get("inputs"), Some(Value::Object(names)) if names.contains_key(root))
    }

    /// Only that the root names an input, a node or a local name.
    fn check_root(
        &self,
        reference: &Reference,
        site: &Site<'_>,
        used: &mut HashSet<String>,
        issues: &mut Vec<Issue>,
    ) {
        if let Root::Unknown = self.root_of(reference, site, used) {
            issues.push(self.unknown_root(reference, site));
        }
    }

    /// What a reference's root names, counting the inputs used.
    fn root_of(&self, reference: &Reference, site: &Site<'_>, used: &mut HashSet<String>) -> Root {
        let root = reference.root.as_str();
        if site
            .node
            .is_some_and(|(_, node)| Self::local_name(node, root, &site.path))
        {
            return Root::Local;
        }
        if self.workflow.inputs.contains_key(root) {
            used.insert(root.to_string());
            return Root::Input;
        }
        match self.graph.index.get(root) {
            Some(&node) => Root::Node(node),
            None => Root::Unknown,
        }
    }

    fn unknown_root(&self, reference: &Reference, site: &Site<'_>) -> Issue {
        let root = reference.root.as_str();
        let names: Vec<&str> = self
            .workflow
            .inputs
            .keys()
            .map(String::as_str)
            .chain(self.workflow.nodes.iter().map(|n| n.id.as_str()))
            .collect();
        let close = closest(root, names.iter().copied());
        Issue::error(
            IssueKind::Template,
            &site.path,
            format!("Template {reference} references '{root}', which is neither a declared input nor a node"),
            Some(match close.first() {
                Some(best) => format!("Did you mean '{best}'? Or declare '{root}' under inputs."),
                None => format!(
                    "Declare '{root}' under inputs, or use a node id. A shell variable is written ${root} without braces, or $${{{root}}}."
                ),
            }),
        )
    }

    fn check_reference(
        &self,
        reference: &Reference,
        site: &Site<'_>,
        used: &mut HashSet<String>,
        issues: &mut Vec<Issue>,
    ) {
        let target = match self.root_of(reference, site, used) {
            Root::Node(target) => target,
            Root::Local | Root::Input => return,
            Root::Unknown => {
                issues.push(self.unknown_root(reference, site));
                return;
            }
        };
        let target_node = &self.workflow.nodes[target];
        if let Some((current, node)) = site.node {
            if current == target {
                issues.push(Issue::error(
                    IssueKind::Template,
                    &site.path,
                    format!("Node '{}' references its own output {reference}", node.id),
                    Some("A node can only use outputs of nodes that ran before it".to_string()),
                ));
                return;
            }
            if !self.graph.runs_before(target, current) {
                issues.push(Issue::error(
                    IssueKind::Template,
                    &site.path,
                    format!(
                        "Template {reference} in node '{}' uses node '{}', which does not run before it",
                        node.id, target_node.id
                    ),
                    Some(format!(
                        "Add an edge path from '{}' to '{}', or take the value from a node that runs earlier",
                        target_node.id, node.id
                    )),
                ));
                return;
            }
        }
        if let Some(issue) = self.check_output_path(target_node, reference, &site.path) {
            issues.push(issue);
        }
    }

    /// Whether `node` writes what `reference` reads, as far as its declared outputs tell.
    fn check_output_path(&self, node: &Node, reference: &Reference, path: &str) -> Option<Issue> {
        if node.batch.is_some() {
            return self.check_batch_path(node, reference, path);
        }
        self.check_fields(node, reference, &reference.path, &node.id, path)
    }

    /// A batched node writes pflow's batch outputs; `results[i]` holds one item's outputs.
    fn check_batch_path(&self, node: &Node, reference: &Reference, path: &str) -> Option<Issue> {
        let error = |message: String, suggestion: Option<String>| {
            Some(Issue::error(IssueKind::Template, path, message, suggestion))
        };
        match reference.path.split_first() {
            None => None,
            Some((Segment::Field(name), rest)) if name == "results" => match rest.split_first() {
                None => None,
                Some((Segment::Index(_) | Segment::NestedIndex(_), item)) => {
                    // Each result also carries its item and its place in the list.
                    if let Some(Segment::Field(field)) = item.first() {
                        if field == "item" || field == "original_index" {
                            return None;
                        }
                    }
                    let at = format!("{}.results[0]", node.id);
                    self.check_fields(node, reference, item, &at, path)
                }
                Some(_) => error(
                    format!("Template {reference}: '{}.results' is a list, one entry per item; use an index such as [0]", node.id),
                    Some(format!("${{{}.results[0]...}}", node.id)),
                ),
            },
            Some((Segment::Field(name), _)) if BATCH_OUTPUTS.contains(&name.as_str()) => None,
            Some((Segment::Field(name), _)) => {
                let listed: Vec<String> = BATCH_OUTPUTS
                    .iter()
                    .map(|output| format!("${{{}.{output}}}", node.id))
                    .collect();
                error(
                    format!(
                        "Node '{}' runs as a batch and does not output '{name}'; a batch outputs {}",
                        node.id,
                        listed.join(", ")
                    ),
                    Some(format!(
                        "One item's '{name}' is ${{{}.results[0].{name}}}",
                        node.id
                    )),
                )
            }
            Some(_) => error(
                format!("Template {reference}: a node's outputs are named, not numbered"),
                None,
            ),
        }
    }

    /// `segments` read from what `node` writes, checked against its declared outputs; `at` is
    /// how a template reaches them (`fetch`, or `fetch.results[0]` for a batch item).
    fn check_fields(
        &self,
        node: &Node,
        reference: &Reference,
        segments: &[Segment],
        at: &str,
        path: &str,
    ) -> Option<Issue> {
        let outputs = self.catalog.outputs(&node.type_name)?;
        if outputs.iter().any(|p| p.name == "*") {
            return None;
        }
        let (first, rest) = segments.split_first()?;
        let Segment::Field(name) = first else {
            return Some(Issue::error(
                IssueKind::Template,
                path,
                format!("Template {reference}: a node's outputs are named, not numbered"),
                None,
            ));
        };
        // Every node writes `error` when it fails; a loop adds why it stopped.
        if name == "error" || (name == "loop_stopped" && node.loop_config.is_some()) {
            return None;
        }
        let Some(port) = outputs.iter().find(|p| &p.name == name) else {
            let mut message = format!(
                "Node '{}' (type: {}) does not output '{name}'\nAvailable outputs from '{}':",
                node.id, node.type_name, node.id
            );
            for port in outputs {
                message.push_str(&format!("\n  ${{{at}.{}}} ({})", port.name, port.type_name));
            }
            let close = closest(name, outputs.iter().map(|p| p.name.as_str()));
            return Some(Issue::error(
                IssueKind::Template,
                path,
                message,
                close
                    .first()
                    .map(|best| format!("Did you mean: ${{{at}.{best}}}?")),
            ));
        };
        walk_schema(node, port, reference, rest, path)
    }
}

/// Follows the rest of a path into an output's schema, as far as the schema knows.
fn walk_schema(
    node: &Node,
    port: &Port,
    reference: &Reference,
    rest: &[Segment],
    path: &str,
) -> Option<Issue> {
    let error = |message: String| Some(Issue::error(IssueKind::Template, path, message, None));
    let mut schema = port.schema.as_ref();
    let mut walked = format!("{}.{}", node.id, port.name);
    for segment in rest {
        let Some(current) = schema else {
            return unschematized(port, reference, &walked, path);
        };
        let schema_type = current.get("type").and_then(Value::as_str);
        match segment {
            Segment::Field(field) => {
                if let Some(param) = current.get("x-keys-from-param").and_then(Value::as_str) {
                    return match node.params.get(param) {
                        Some(Value::Object(keys)) if !keys.contains_key(field) => error(format!(
                            "Template {reference}: '{walked}' only has the keys given in param '{param}' ({}), not '{field}'",
                            keys.keys().cloned().collect::<Vec<_>>().join(", ")
                        )),
                        _ => None,
                    };
                }
                if schema_type == Some("array") {
                    return error(format!(
                        "Template {reference}: '{walked}' is a list; use an index such as [0]"
                    ));
                }
                let properties = current.get("properties").and_then(Value::as_object);
                match properties.and_then(|p| p.get(field)) {
                    Some(next) => schema = Some(next),
                    None if properties.is_some()
                        && current.get("additionalProperties") != Some(&Value::Bool(true)) =>
                    {
                        let known: Vec<&str> = properties
                            .into_iter()
                            .flat_map(|p| p.keys())
                            .map(String::as_str)
                            .collect();
                        return error(format!(
                            "Template {reference}: '{walked}' has no field '{field}'; it has: {}",
                            known.join(", ")
                        ));
                    }
                    None => return None,
                }
            }
            Segment::Index(_) | Segment::NestedIndex(_) => match schema_type {
                Some("array") => schema = current.get("items"),
                Some("object") => {
                    return error(format!(
                        "Template {reference}: '{walked}' is an object, not a list"
                    ))
                }
                _ => return None,
            },
        }
        walked.push_str(&segment.to_string());
    }
    None
}

/// A path into an output whose structure is not declared: an error for numbers and booleans,
/// a warning for `any` and text (checked when the workflow runs), nothing for dicts and lists.
fn unschematized(port: &Port, reference: &Reference, walked: &str, path: &str) -> Option<Issue> {
    let types: Vec<&str> = port.type_name.split('|').map(str::trim).collect();
    let scalar = |t: &&str| {
        matches!(
            *t,
            "int" | "integer" | "float" | "number" | "bool" | "boolean" | "null"
        )
    };
    if types.iter().all(scalar) {
        return Some(Issue::error(
            IssueKind::Template,
            path,
            format!(
                "Template {reference}: '{walked}' is {}, which has no fields or items",
                port.type_name
            ),
            None,
        ));
    }
    let text = |t: &&str| matches!(*t, "str" | "string");
    if types.contains(&"any") || types.iter().all(|t| text(t) || scalar(t)) {
        return Some(Issue::warning(
            IssueKind::Template,
            path,
            format!(
                "Template {reference}: the structure of '{walked}' ({}) is not declared; the path is checked when the workflow runs",
                port.type_name
            ),
            None,
        ));
    }
    None
}

fn collect_strings(value: &Value, path: String, out: &mut Vec<(String, String)>) {
    match value {
        Value::String(text) if text.contains("${") => out.push((path, text.clone())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                collect_strings(item, format!("{path}[{i}]"), out);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                collect_strings(item, format!("{path}.{key}"), out);
            }
        }
        _ => {}
    }
}

fn data_flow(workflow: &Workflow, graph: &Graph, issues: &mut Vec<Issue>) {
    let nodes = &workflow.nodes;
    for cycle in workflow.cycles() {
        issues.push(Issue::error(
            IssueKind::DataFlow,
            "edges",
            pflow_ir::cycle_message(&cycle),
            Some(
                "Workflows run as a directed acyclic graph; remove an edge of the cycle"
                    .to_string(),
            ),
        ));
    }
    for (i, node) in nodes.iter().enumerate() {
        if i != graph.start && !graph.reached_from_start[i] {
            let start = &nodes[graph.start].id;
            let hint = if graph.successors.iter().all(Vec::is_empty) {
                "The workflow has no edges: connect the nodes in the order they run, e.g. {\"from\": \"a\", \"to\": \"b\"}".to_string()
            } else {
                format!(
                    "Add an edge to '{}' from a node that runs, or remove it",
                    node.id
                )
            };
            let message = format!(
                "Node '{}' is unreachable: no edge path leads to it from the start node '{start}'",
                node.id
            );
            // With routing written out (`start_node`, `next`, `on-error`, actions), a node that
            // nothing reaches is the author's choice, as pflow allows; without any, edges were
            // forgotten.
            let routed = workflow.start_node.is_some()
                || workflow.edges.iter().any(|e| e.action.is_some())
                || nodes.iter().any(|n| n.routes_to_end);
            let path = format!("nodes[{i}]");
            issues.push(if routed {
                Issue::warning(IssueKind::DataFlow, &path, message, Some(hint))
            } else {
                Issue::error(IssueKind::DataFlow, &path, message, Some(hint))
            });
        }
    }
}

fn inputs(
    workflow: &Workflow,
    used: &HashSet<String>,
    given: Option<&Map<String, Value>>,
    issues: &mut Vec<Issue>,
) {
    let unused: Vec<&str> = workflow
        .inputs
        .keys()
        .filter(|name| !used.contains(*name))
        .map(String::as_str)
        .collect();
    if !unused.is_empty() {
        issues.push(Issue::error(
            IssueKind::Inputs,
            "inputs",
            format!(
                "Declared input(s) never used as template variable: {}",
                unused.join(", ")
            ),
            Some("Use each input in a node's params as ${name}, or remove it".to_string()),
        ));
    }
    let Some(given) = given else { return };
    for (name, spec) in &workflow.inputs {
        if spec.required && spec.default.is_none() && !given.contains_key(name) {
            issues.push(Issue::error(
                IssueKind::Inputs,
                &format!("inputs.{name}"),
                format!("Required input '{name}' has no value"),
                Some(format!("Give it as {name}=... or declare a default")),
            ));
        }
    }
    for (name, value) in given {
        if !workflow.inputs.contains_key(name) {
            let close = closest(name, workflow.inputs.keys().map(String::as_str));
            issues.push(Issue::error(
                IssueKind::Inputs,
                "inputs",
                format!(
                    "A value is given for '{name}' ({}), which is not a declared input",
                    json_kind(value)
                ),
                close.first().map(|best| format!("Did you mean '{best}'?")),
            ));
        }
    }
}
