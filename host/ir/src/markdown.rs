//! pflow 0.16's `.pflow.md` workflows, read into the same IR as the JSON form.
//!
//! A document is a title (`# `), prose, and sections (`## Inputs`, `## Steps`, `## Outputs`)
//! whose entities are `### id` headings with a prose description, `- key: value` params (YAML
//! values) and tagged fenced blocks (```` ```shell command ````: the last word names the
//! param). Steps run top to bottom; `- next:` and `- on-error:` add the routing edges. The
//! rules, and the words of the errors, follow pflow's `core/markdown_parser.py`; every error
//! names the line.

use crate::workflow::{ParseError, Workflow};
use serde_json::{json, Map, Value};

/// A `.pflow.md` document that could not be read: what is wrong, where, and how to fix it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{message}{}", line.map(|l| format!("line {l}: ")).unwrap_or_default(), suggestion.as_ref().map(|s| format!("\n{s}")).unwrap_or_default())]
pub struct MarkdownError {
    pub line: Option<usize>,
    pub message: String,
    pub suggestion: Option<String>,
}

impl MarkdownError {
    fn at(line: usize, message: impl Into<String>) -> Self {
        MarkdownError {
            line: Some(line),
            message: message.into(),
            suggestion: None,
        }
    }

    fn fix(mut self, suggestion: impl Into<String>) -> Self {
        self.suggestion = Some(suggestion.into());
        self
    }
}

/// A parsed document: its IR, its title and its description (the prose under the title).
#[derive(Debug, Clone)]
pub struct MarkdownWorkflow {
    pub ir: Value,
    pub title: Option<String>,
    pub description: Option<String>,
}

/// Whether `text` is a `.pflow.md` document rather than JSON: JSON starts with `{`.
pub fn looks_like_markdown(text: &str) -> bool {
    !text
        .trim_start_matches('\u{feff}')
        .trim_start()
        .starts_with('{')
}

/// Reads a `.pflow.md` document into a checked [`Workflow`].
pub fn workflow_from_markdown(text: &str) -> Result<Workflow, ParseError> {
    let document = parse_markdown(text).map_err(|e| ParseError::Markdown(Box::new(e)))?;
    let lines = node_lines(&document.ir);
    Workflow::from_value(document.ir).map_err(|error| match error {
        // Name the step's line rather than a JSON position that does not exist.
        ParseError::Shape { path, message, .. } => {
            let line = path
                .strip_prefix("nodes[")
                .and_then(|rest| rest.split(']').next())
                .and_then(|i| i.parse::<usize>().ok())
                .and_then(|i| lines.get(i).copied().flatten());
            ParseError::Markdown(Box::new(MarkdownError {
                line,
                message: format!("{}: {message}", describe_path(&path)),
                suggestion: None,
            }))
        }
        other => other,
    })
}

fn node_lines(ir: &Value) -> Vec<Option<usize>> {
    ir["nodes"]
        .as_array()
        .map(|nodes| {
            nodes
                .iter()
                .map(|n| n["_source_line"].as_u64().map(|l| l as usize))
                .collect()
        })
        .unwrap_or_default()
}

fn describe_path(path: &str) -> String {
    path.replace("nodes[", "step [")
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Section {
    None,
    Inputs,
    Steps,
    Outputs,
    Cache,
    Unknown,
}

impl Section {
    fn of(name: &str) -> Section {
        match name.to_ascii_lowercase().as_str() {
            "inputs" => Section::Inputs,
            "steps" => Section::Steps,
            "outputs" => Section::Outputs,
            "cache" => Section::Cache,
            _ => Section::Unknown,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Section::Inputs => "Inputs",
            Section::Steps => "Steps",
            Section::Outputs => "Outputs",
            Section::Cache => "Cache",
            Section::None | Section::Unknown => "",
        }
    }

    fn holds_entities(self) -> bool {
        matches!(self, Section::Inputs | Section::Steps | Section::Outputs)
    }
}

struct CodeBlock {
    tag: String,
    param: String,
    content: String,
    /// The line of the opening fence.
    line: usize,
    /// `yaml NAME`: the content is YAML, parsed into the param's value.
    is_yaml: bool,
}

struct Entity {
    id: String,
    line: usize,
    section: Section,
    prose: Vec<String>,
    /// Each `- key: value` item with its continuation lines, and the line it starts on.
    items: Vec<(String, usize)>,
    blocks: Vec<CodeBlock>,
}

/// An open multi-line `- key: value` item.
struct OpenItem {
    lines: Vec<String>,
    start: usize,
    /// Lines indented at least this far continue the item.
    indent: usize,
    /// For a `|` or `>` block scalar: the key's column, and the content's once known.
    block_key_column: Option<usize>,
    block_indent: usize,
}

/// Parses the document into IR (a JSON value, not yet checked as a [`Workflow`]).
pub fn parse_markdown(text: &str) -> Result<MarkdownWorkflow, MarkdownError> {
    let lines: Vec<&str> = text.trim_start_matches('\u{feff}').lines().collect();
    let mut body_start = 0;
    if lines.first().map(|l| l.trim_end()) == Some("---") {
        if let Some(close) = lines.iter().skip(1).position(|l| l.trim_end() == "---") {
            body_start = close + 2;
        }
    }

    let mut section = Section::None;
    let mut seen_sections: Vec<(Section, usize)> = Vec::new();
    let mut title = None;
    let mut title_prose: Vec<String> = Vec::new();
    let mut entities: Vec<Entity> = Vec::new();
    let mut current: Option<usize> = None;
    let mut fence: Option<(String, String, usize, Vec<String>)> = None;
    let mut item: Option<OpenItem> = None;
    let mut orphans: Vec<(Section, usize)> = Vec::new();
    let mut steps_found = false;

    fn flush(item: &mut Option<OpenItem>, entities: &mut [Entity], current: Option<usize>) {
        if let Some(mut open) = item.take() {
            while open.lines.last().is_some_and(|l| l.trim().is_empty()) {
                open.lines.pop();
            }
            if let (Some(i), false) = (current, open.lines.is_empty()) {
                entities[i].items.push((open.lines.join("\n"), open.start));
            }
        }
    }

    for (index, &line) in lines.iter().enumerate().skip(body_start) {
        let number = index + 1;

        // Inside a `|` / `>` block scalar everything indented enough is text, even `#` or ```.
        if let Some(open) = item.as_mut() {
            if let Some(key_column) = open.block_key_column {
                let indent = line.len() - line.trim_start_matches(' ').len();
                let blank = indent == line.len();
                if open.block_indent == 0 && !blank && indent > key_column {
                    open.block_indent = open.lines[1..]
                        .iter()
                        .map(|l| l.len())
                        .chain([indent])
                        .max()
                        .unwrap_or(indent);
                }
                if blank || (open.block_indent > 0 && indent >= open.block_indent) {
                    open.lines.push(line.to_string());
                    continue;
                }
                open.block_key_column = None;
                open.block_indent = 0;
            }
        }

        let stripped = line.trim();
        if let Some((pattern, tag, start, mut content)) = fence.take() {
            if is_closing_fence(stripped, &pattern) {
                let block = code_block(&tag, content.join("\n"), start);
                match current {
                    Some(i) => entities[i].blocks.push(block),
                    None if section.holds_entities() => {
                        orphans.push((section, start));
                        orphans.push((section, number));
                    }
                    None => {}
                }
            } else {
                content.push(line.to_string());
                fence = Some((pattern, tag, start, content));
            }
            continue;
        }
        if let Some(pattern) = opening_fence(stripped) {
            flush(&mut item, &mut entities, current);
            let tag = stripped[pattern.len()..].trim().to_string();
            fence = Some((pattern, tag, number, Vec::new()));
            continue;
        }

        if let Some(heading) = stripped.strip_prefix("# ") {
            flush(&mut item, &mut entities, current);
            if title.is_none() {
                title = Some(heading.trim().to_string());
                current = None;
            }
            continue;
        }
        if let Some(name) = stripped.strip_prefix("## ") {
            flush(&mut item, &mut entities, current);
            current = None;
            section = Section::of(name.trim());
            if section.holds_entities() || section == Section::Cache {
                if let Some((_, first)) = seen_sections.iter().find(|(s, _)| *s == section) {
                    return Err(MarkdownError::at(
                        number,
                        format!("Duplicate '## {}' section.", section.name()),
                    )
                    .fix(format!(
                        "Merge with the existing '## {}' section at line {first}.",
                        section.name()
                    )));
                }
                seen_sections.push((section, number));
            }
            steps_found |= section == Section::Steps;
            continue;
        }
        if let Some(id) = stripped.strip_prefix("### ") {
            flush(&mut item, &mut entities, current);
            let id = id.trim();
            if !is_entity_id(id) {
                return Err(MarkdownError::at(number, format!("Invalid entity ID '{id}'.")).fix(
                    "IDs must start with a lowercase letter and contain only lowercase letters, \
                     digits, hyphens, and underscores.",
                ));
            }
            if let Some(existing) = entities.iter().find(|e| e.id == id && e.section == section) {
                return Err(
                    MarkdownError::at(number, format!("Duplicate entity ID '{id}'.")).fix(format!(
                        "An entity with ID '{id}' was already defined at line {}.",
                        existing.line
                    )),
                );
            }
            entities.push(Entity {
                id: id.to_string(),
                line: number,
                section,
                prose: Vec::new(),
                items: Vec::new(),
                blocks: Vec::new(),
            });
            current = Some(entities.len() - 1);
            continue;
        }

        let Some(entity) = current else {
            if title.is_some() && section == Section::None && !stripped.is_empty() {
                title_prose.push(stripped.to_string());
            } else if section.holds_entities() && !stripped.is_empty() {
                orphans.push((section, number));
            }
            continue;
        };

        if let Some(open) = item.as_mut() {
            let indent = line.len() - line.trim_start().len();
            if stripped.is_empty() || indent >= open.indent {
                open.lines.push(line.to_string());
                continue;
            }
            flush(&mut item, &mut entities, current);
        }
        let leading = line.len() - line.trim_start().len();
        if line[leading..].starts_with("- ") && !line[leading + 2..].trim().is_empty() {
            let mut open = OpenItem {
                lines: vec![line.trim_end().to_string()],
                start: number,
                indent: leading + 2,
                block_key_column: None,
                block_indent: 0,
            };
            if let Some((key, value)) = split_item(line) {
                if let Some(explicit) = block_scalar_header(value.trim()) {
                    let key_column = line.find(key).unwrap_or(leading + 2);
                    open.block_key_column = Some(key_column);
                    if let Some(digit) = explicit {
                        open.block_indent = key_column + digit;
                    }
                }
            }
            item = Some(open);
            continue;
        }
        if stripped.is_empty() {
            continue;
        }
        entities[entity].prose.push(stripped.to_string());
    }
    flush(&mut item, &mut entities, current);

    if let Some((pattern, _, start, _)) = fence {
        return Err(
            MarkdownError::at(start, "Unclosed code block.").fix(format!(
                "Add a closing fence ({pattern}) to match the opening fence at line {start}."
            )),
        );
    }
    for section in [Section::Inputs, Section::Steps, Section::Outputs] {
        let lines: Vec<usize> = orphans
            .iter()
            .filter(|(s, _)| *s == section)
            .map(|(_, l)| *l)
            .collect();
        let Some(&first) = lines.iter().min() else {
            continue;
        };
        if !entities.iter().any(|e| e.section == section) {
            let name = section.name();
            return Err(MarkdownError::at(
                first,
                format!(
                    "'{name}' section has content but no {} were parsed (line {first}).",
                    name.to_lowercase()
                ),
            )
            .fix(format!(
                "{name} must use ### heading syntax:\n\n    ### some-name\n\n    Description.\n\n    - key: value"
            )));
        }
    }
    if !steps_found {
        return Err(MarkdownError {
            line: None,
            message: "Missing '## Steps' section.".to_string(),
            suggestion: Some(
                "Every workflow needs a Steps section with at least one node:\n\n    ## Steps\n\n    ### my-node\n\n    Description of what this node does.\n\n    - type: shell"
                    .to_string(),
            ),
        });
    }
    let steps: Vec<&Entity> = entities
        .iter()
        .filter(|e| e.section == Section::Steps)
        .collect();
    if steps.is_empty() {
        return Err(MarkdownError {
            line: seen_sections
                .iter()
                .find(|(s, _)| *s == Section::Steps)
                .map(|(_, l)| *l),
            message: "The '## Steps' section has no nodes.".to_string(),
            suggestion: Some(
                "Add at least one node with a ### heading and a '- type:' param.".to_string(),
            ),
        });
    }

    let mut ir = Map::new();
    let inputs: Map<String, Value> = entities
        .iter()
        .filter(|e| e.section == Section::Inputs)
        .map(|e| Ok((e.id.clone(), Value::Object(flat_entity(e, false)?))))
        .collect::<Result<_, MarkdownError>>()?;
    if !inputs.is_empty() {
        ir.insert("inputs".to_string(), Value::Object(inputs));
    }
    let mut nodes = Vec::new();
    let mut routes = Vec::new();
    for entity in &steps {
        let (node, route) = node_of(entity)?;
        nodes.push(node);
        routes.push(route);
    }
    if steps.iter().any(|e| e.id == "end") {
        return Err(MarkdownError {
            line: steps.iter().find(|e| e.id == "end").map(|e| e.line),
            message: "'end' is a reserved keyword and cannot be used as a node ID".to_string(),
            suggestion: Some("Rename the node to something else (e.g., 'finish', 'done')".into()),
        });
    }
    let edges = routing::edges(&steps, &routes)?;
    ir.insert("nodes".to_string(), Value::Array(nodes));
    ir.insert("edges".to_string(), Value::Array(edges));
    let outputs: Map<String, Value> = entities
        .iter()
        .filter(|e| e.section == Section::Outputs)
        .map(|e| Ok((e.id.clone(), Value::Object(flat_entity(e, true)?))))
        .collect::<Result<_, MarkdownError>>()?;
    if !outputs.is_empty() {
        ir.insert("outputs".to_string(), Value::Object(outputs));
    }
    Ok(MarkdownWorkflow {
        ir: Value::Object(ir),
        title,
        description: (!title_prose.is_empty()).then(|| title_prose.join("\n")),
    })
}

fn is_entity_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// The fence (three or more backticks or tildes) that opens a code block on this line.
fn opening_fence(stripped: &str) -> Option<String> {
    let first = stripped.chars().next()?;
    if first != '`' && first != '~' {
        return None;
    }
    let run = stripped.chars().take_while(|&c| c == first).count();
    (run >= 3).then(|| first.to_string().repeat(run))
}

fn is_closing_fence(stripped: &str, opening: &str) -> bool {
    let fence_char = opening.chars().next().unwrap_or('`');
    !stripped.is_empty()
        && stripped.chars().all(|c| c == fence_char)
        && stripped.len() >= opening.len()
}

fn code_block(tag: &str, content: String, line: usize) -> CodeBlock {
    let words: Vec<&str> = tag.split_whitespace().collect();
    CodeBlock {
        tag: tag.to_string(),
        param: words.last().map(|w| w.to_string()).unwrap_or_default(),
        content,
        line,
        is_yaml: words.len() > 1 && words[0].eq_ignore_ascii_case("yaml"),
    }
}

/// `- key: value` split into key and raw value (pflow's `^\s*-\s+(\S+?):\s*(.*)$`).
fn split_item(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_start().strip_prefix('-')?;
    let rest = rest.trim_start();
    let colon = rest.find(':')?;
    let key = &rest[..colon];
    if key.is_empty() || key.contains(char::is_whitespace) {
        return None;
    }
    Some((key, rest[colon + 1..].trim_start()))
}

/// For a `|` / `>` block scalar header, Some(its explicit indentation digit, if any).
fn block_scalar_header(value: &str) -> Option<Option<usize>> {
    let header = value.split(" #").next().unwrap_or(value).trim_end();
    let mut chars = header.chars();
    if !matches!(chars.next(), Some('|' | '>')) {
        return None;
    }
    let rest: Vec<char> = chars.collect();
    if rest.len() > 2 {
        return None;
    }
    let mut digit = None;
    for c in rest {
        match c {
            '+' | '-' => {}
            '1'..='9' if digit.is_none() => digit = c.to_digit(10).map(|d| d as usize),
            _ => return None,
        }
    }
    Some(digit)
}

fn require_description(entity: &Entity) -> Result<(), MarkdownError> {
    if entity.prose.is_empty() {
        return Err(MarkdownError::at(
            entity.line,
            format!(
                "Entity '{}' (line {}) is missing a description.",
                entity.id, entity.line
            ),
        )
        .fix(format!(
            "Add a text paragraph between the heading and the parameters:\n\n    ### {}\n\n    Description of what this entity does and why.\n\n    - type: shell",
            entity.id
        )));
    }
    Ok(())
}

fn check_blocks(entity: &Entity) -> Result<(), MarkdownError> {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for block in &entity.blocks {
        if block.tag.is_empty() {
            let earlier = entity
                .blocks
                .iter()
                .rfind(|b| !b.tag.is_empty() && b.line < block.line);
            let error = match earlier {
                Some(last) => MarkdownError::at(
                    block.line,
                    format!(
                        "Code block has no tag (likely caused by nested ``` in the `{}` block at line {}).",
                        last.tag, last.line
                    ),
                )
                .fix(format!(
                    "An inner ``` closes the outer block early. Use 4+ backticks for the outer fence:\n    ````{}\n    content with ``` inside\n    ````",
                    last.tag
                )),
                None => MarkdownError::at(block.line, "Code block has no tag.").fix(
                    "Add a tag to identify what this code block contains:\n    ```shell command\n    ```prompt\n    ```python code\n    ```yaml batch",
                ),
            };
            return Err(error);
        }
        if let Some((_, first)) = seen.iter().find(|(p, _)| *p == block.param) {
            return Err(MarkdownError::at(
                block.line,
                format!("Duplicate code block for '{}'.", block.param),
            )
            .fix(format!(
                "A '{}' code block was already defined at line {first}. Each parameter can only have one code block.",
                block.param
            )));
        }
        seen.push((&block.param, block.line));
        if block.is_yaml {
            yaml::load(&block.content).map_err(|e| {
                MarkdownError::at(
                    block.line,
                    format!("YAML syntax error in '{}' block: {e}", block.tag),
                )
            })?;
        }
    }
    Ok(())
}

fn block_value(block: &CodeBlock) -> Result<Value, MarkdownError> {
    if block.is_yaml {
        yaml::load(&block.content).map_err(|e| {
            MarkdownError::at(
                block.line,
                format!("YAML syntax error in '{}' block: {e}", block.tag),
            )
        })
    } else {
        Ok(Value::String(block.content.clone()))
    }
}

/// An input or an output: its description, its `- key: value` fields and its code blocks.
fn flat_entity(entity: &Entity, is_output: bool) -> Result<Map<String, Value>, MarkdownError> {
    require_description(entity)?;
    check_blocks(entity)?;
    let mut result = Map::new();
    result.insert("description".to_string(), json!(entity.prose.join("\n")));
    let (fields, keys) = items(entity)?;
    if is_output {
        if let Some((_, line)) = keys.iter().find(|(k, _)| k == "source") {
            result.insert("_source_line".to_string(), json!(line));
        }
    }
    result.extend(fields);
    for block in &entity.blocks {
        result.insert(block.param.clone(), block_value(block)?);
        if is_output && block.param == "source" {
            result.insert("_source_line".to_string(), json!(block.line + 1));
        }
    }
    Ok(result)
}

/// The routing a step asks for, kept apart from its params.
#[derive(Default)]
struct Route {
    next: Option<Value>,
    on_error: Option<Value>,
    /// `next` targets a code block assigns as string literals, and whether it assigns any
    /// other value.
    code_targets: Vec<String>,
    code_dynamic: bool,
}

/// Fields that sit on the node itself, not among its params.
const NODE_FIELDS: &[&str] = &[
    "batch",
    "loop",
    "retry",
    "cache",
    "prompt_cache",
    "prewarm",
    "approval",
];

fn node_of(entity: &Entity) -> Result<(Value, Route), MarkdownError> {
    require_description(entity)?;
    check_blocks(entity)?;
    let (mut params, _) = items(entity)?;
    for block in &entity.blocks {
        if params.contains_key(&block.param) {
            return Err(MarkdownError::at(
                block.line,
                format!(
                    "Parameter '{}' is defined both inline and as a code block.",
                    block.param
                ),
            )
            .fix(format!(
                "Remove either the inline '- {}: ...' or the code block. Each parameter should be defined only once.",
                block.param
            )));
        }
    }
    let mut node = Map::new();
    node.insert("id".to_string(), json!(entity.id));
    match params.remove("type") {
        Some(node_type) => node.insert("type".to_string(), node_type),
        None => {
            return Err(MarkdownError::at(
                entity.line,
                format!("Node '{}' is missing a 'type' parameter.", entity.id),
            )
            .fix(format!(
                "Every node needs a type:\n\n    ### {}\n\n    Description of what this node does.\n\n    - type: shell",
                entity.id
            )))
        }
    };
    for field in NODE_FIELDS {
        if let Some(value) = params.remove(*field) {
            node.insert(field.to_string(), value);
        }
    }
    let mut route = Route {
        next: params.remove("next"),
        on_error: params.remove("on-error"),
        ..Route::default()
    };
    if route
        .next
        .as_ref()
        .is_some_and(|n| routing::targets(n).iter().any(|t| t == "end"))
    {
        node.insert("_routes_to_end".to_string(), json!(true));
    }
    node.insert("purpose".to_string(), json!(entity.prose.join("\n")));
    let mut source_lines = Map::new();
    for block in &entity.blocks {
        let value = block_value(block)?;
        match block.param.as_str() {
            "batch" | "loop" => {
                node.insert(block.param.clone(), value);
            }
            _ => {
                if !block.is_yaml {
                    source_lines.insert(block.param.clone(), json!(block.line + 1));
                }
                if block.param == "code" {
                    let (targets, dynamic) = routing::code_next_targets(&block.content);
                    if targets.iter().any(|t| t == "end") {
                        node.insert("_routes_to_end".to_string(), json!(true));
                    }
                    route.code_targets = targets.into_iter().filter(|t| t != "end").collect();
                    route.code_dynamic = dynamic;
                }
                params.insert(block.param.clone(), value);
            }
        }
    }
    if !params.is_empty() {
        node.insert("params".to_string(), Value::Object(params));
    }
    if !source_lines.is_empty() {
        node.insert("_source_lines".to_string(), Value::Object(source_lines));
    }
    node.insert("_source_line".to_string(), json!(entity.line));
    Ok((Value::Object(node), route))
}

/// The `- key: value` items of an entity, merged, and each key with its line.
type Items = (Map<String, Value>, Vec<(String, usize)>);

fn items(entity: &Entity) -> Result<Items, MarkdownError> {
    let mut merged = Map::new();
    let mut keys = Vec::new();
    let not_a_param = |content: &str, line: usize| {
        MarkdownError::at(
            line,
            format!("'{content}' is not a valid parameter. Use * for documentation bullets."),
        )
        .fix("Parameters must be key: value pairs:\n    - type: shell\n    - timeout: 30\n\nFor notes, use * instead of -:\n    * This is a documentation note")
    };
    for (text, line) in &entity.items {
        if text.contains('\n') {
            let parsed = yaml::load(text).map_err(|e| yaml_error(entity, text, *line, &e))?;
            let entries = match parsed {
                Value::Array(entries) => entries,
                Value::Null => continue,
                other => vec![other],
            };
            for entry in entries {
                match entry {
                    Value::Object(map) => {
                        for (key, value) in map {
                            keys.push((key.clone(), *line));
                            merged.insert(key, value);
                        }
                    }
                    other => {
                        let shown = match other {
                            Value::String(s) => s,
                            v => v.to_string(),
                        };
                        return Err(not_a_param(&shown, *line));
                    }
                }
            }
            continue;
        }
        let Some((key, value)) = split_item(text) else {
            let content = text.trim_start().trim_start_matches('-').trim();
            return Err(not_a_param(content, *line));
        };
        let value = scalar(value.trim()).map_err(|message| {
            MarkdownError::at(
                *line,
                format!("Parameter parse error in '{}': {message}", entity.id),
            )
        })?;
        keys.push((key.to_string(), *line));
        merged.insert(key.to_string(), value);
    }
    Ok((merged, keys))
}

fn yaml_error(entity: &Entity, text: &str, line: usize, error: &str) -> MarkdownError {
    if error.contains("mapping values are not allowed") {
        let first = text.lines().next().unwrap_or_default();
        if let Some((key, value)) = split_item(first) {
            if value.contains(": ") && !(value.starts_with('"') && value.ends_with('"')) {
                return MarkdownError::at(
                    line,
                    format!("YAML parse error in '{}' parameters.", entity.id),
                )
                .fix(format!(
                    "The value contains \": \" (colon + space), which YAML interprets as a key-value separator.\nFix: wrap the value in quotes:\n    - {key}: \"{value}\""
                ));
            }
        }
    }
    MarkdownError::at(
        line,
        format!(
            "YAML syntax error in parameters for '{}': {error}",
            entity.id
        ),
    )
}

/// A single-line value, read as pflow reads it: quoted strings, null, YAML 1.1 booleans,
/// numbers and flow collections are typed; anything else stays the raw text (no comment
/// stripping, no `: ` splitting).
fn scalar(value: &str) -> Result<Value, String> {
    if value.is_empty() {
        return Ok(Value::Null);
    }
    let bytes = value.as_bytes();
    if value.len() >= 2 && bytes[0] == b'"' && bytes[value.len() - 1] == b'"' {
        return Ok(Value::String(unescape_double_quoted(
            &value[1..value.len() - 1],
        )));
    }
    if value.len() >= 2 && bytes[0] == b'\'' && bytes[value.len() - 1] == b'\'' {
        return Ok(Value::String(value[1..value.len() - 1].replace("''", "'")));
    }
    if bytes[0] == b'"' || bytes[0] == b'\'' {
        let kind = if bytes[0] == b'"' { "double" } else { "single" };
        return Err(format!("Unterminated {kind}-quoted string: {value}"));
    }
    if bytes[0] == b'{' || bytes[0] == b'[' {
        return yaml::load(value);
    }
    Ok(match value {
        "null" | "Null" | "NULL" | "~" => Value::Null,
        "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => json!(true),
        "false" | "False" | "FALSE" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => {
            json!(false)
        }
        _ => number(value).unwrap_or_else(|| Value::String(value.to_string())),
    })
}

/// `[+-]digits` as an integer, `[+-](d+.d*|.d+)([eE][+-]d+)?` as a float.
fn number(value: &str) -> Option<Value> {
    let unsigned = value.strip_prefix(['+', '-']).unwrap_or(value);
    if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return value
            .parse::<i64>()
            .ok()
            .map(Value::from)
            .or_else(|| value.parse::<f64>().ok().map(|f| json!(f)));
    }
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (whole, fraction) = mantissa.split_once('.')?;
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok =
        digits(whole) && digits(fraction) && !(whole.is_empty() && fraction.is_empty());
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    if !mantissa_ok || !exponent_ok {
        return None;
    }
    value
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map(Value::Number)
}

fn unescape_double_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let replacement = match chars.peek() {
                Some('\\') => Some('\\'),
                Some('"') => Some('"'),
                Some('n') => Some('\n'),
                Some('t') => Some('\t'),
                Some('r') => Some('\r'),
                Some('0') => Some('\0'),
                Some('/') => Some('/'),
                Some(' ') => Some(' '),
                _ => None,
            };
            if let Some(r) = replacement {
                chars.next();
                out.push(r);
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// YAML for author text that may hold unquoted `${...}` templates, which YAML would read as
/// flow mappings: each bare template is masked before parsing and restored after.
mod yaml {
    use serde_json::Value;

    pub fn load(text: &str) -> Result<Value, String> {
        let mut templates = Vec::new();
        let masked = mask(text, &mut templates);
        let value: Value = serde_yaml::from_str(&masked).map_err(|e| {
            let mut message = e.to_string();
            for (i, template) in templates.iter().enumerate() {
                message = message.replace(&placeholder(i), template);
            }
            message
        })?;
        Ok(if templates.is_empty() {
            value
        } else {
            restore(value, &templates)
        })
    }

    fn placeholder(index: usize) -> String {
        format!("__pflow_tpl_{index}__")
    }

    /// Replaces bare `${...}` (one level of nested braces allowed) outside quoted scalars.
    fn mask(text: &str, templates: &mut Vec<String>) -> String {
        let bytes = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'"' => {
                    let end = quoted_end(bytes, i, b'"');
                    out.push_str(&text[i..end]);
                    i = end;
                }
                b'\'' => {
                    let end = quoted_end(bytes, i, b'\'');
                    out.push_str(&text[i..end]);
                    i = end;
                }
                b'$' if bytes.get(i + 1) == Some(&b'{') => match template_end(bytes, i + 2) {
                    Some(end) => {
                        out.push_str(&placeholder(templates.len()));
                        templates.push(text[i..end].to_string());
                        i = end;
                    }
                    None => {
                        out.push('$');
                        i += 1;
                    }
                },
                _ => {
                    let next = text[i..].chars().next().map_or(1, char::len_utf8);
                    out.push_str(&text[i..i + next]);
                    i += next;
                }
            }
        }
        out
    }

    /// The end of a quoted scalar starting at `start`, or `start + 1` when it never closes
    /// (then the quote is ordinary text).
    fn quoted_end(bytes: &[u8], start: usize, quote: u8) -> usize {
        let mut i = start + 1;
        while i < bytes.len() {
            if quote == b'"' && bytes[i] == b'\\' {
                i += 2;
                continue;
            }
            if bytes[i] == quote {
                if quote == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                    i += 2;
                    continue;
                }
                return i + 1;
            }
            i += 1;
        }
        start + 1
    }

    fn template_end(bytes: &[u8], mut i: usize) -> Option<usize> {
        let mut depth = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'{' if depth == 0 => depth = 1,
                b'{' => return None,
                b'}' if depth == 1 => depth = 0,
                b'}' => return Some(i + 1),
                _ => {}
            }
            i += 1;
        }
        None
    }

    fn restore(value: Value, templates: &[String]) -> Value {
        let text = |s: String| {
            if !s.contains("__pflow_tpl_") {
                return s;
            }
            let mut s = s;
            for (i, template) in templates.iter().enumerate().rev() {
                s = s.replace(&placeholder(i), template);
            }
            s
        };
        match value {
            Value::String(s) => Value::String(text(s)),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| restore(v, templates)).collect())
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (text(k), restore(v, templates)))
                    .collect(),
            ),
            other => other,
        }
    }
}

/// The edges of the steps: document order, `- next:`, `- on-error:` and literal `next`
/// assignments in code, with pflow's checks that no branch silently falls through.
mod routing {
    use super::{Entity, MarkdownError, Route};
    use serde_json::{json, Value};
    use std::collections::{BTreeMap, BTreeSet};

    /// `a`, `end`, or `a, b, c`.
    pub fn targets(value: &Value) -> Vec<String> {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        text.split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// `next: str = "x"` / `next = "x"` in a code block: the literal targets, and whether any
    /// assignment is not a literal.
    pub fn code_next_targets(code: &str) -> (Vec<String>, bool) {
        let mut targets: Vec<String> = Vec::new();
        let mut dynamic = false;
        for line in code.lines() {
            let line = line.trim();
            let Some(rest) = line.strip_prefix("next") else {
                continue;
            };
            let rest = rest.trim_start();
            let value = if let Some(annotated) = rest.strip_prefix(':') {
                match annotated.split_once('=') {
                    Some((_, value)) if !value.starts_with('=') => value,
                    _ => continue,
                }
            } else if let Some(value) = rest.strip_prefix('=') {
                if value.starts_with('=') {
                    continue;
                }
                value
            } else {
                continue;
            };
            let value = value.split('#').next().unwrap_or(value).trim();
            let literal = ['"', '\'']
                .iter()
                .find_map(|q| value.strip_prefix(*q).and_then(|v| v.strip_suffix(*q)));
            match literal {
                Some(target) if !target.contains(['"', '\'']) => {
                    if !targets.iter().any(|t| t == target) {
                        targets.push(target.to_string());
                    }
                }
                _ => dynamic = true,
            }
        }
        (targets, dynamic)
    }

    struct Edge {
        from: String,
        to: String,
        action: Option<String>,
    }

    pub fn edges(steps: &[&Entity], routes: &[Route]) -> Result<Vec<Value>, MarkdownError> {
        let mut edges: Vec<Edge> = Vec::new();
        let edge = |from: &str, to: &str, action: Option<&str>| Edge {
            from: from.to_string(),
            to: to.to_string(),
            action: action.map(str::to_string),
        };
        for (i, (step, route)) in steps.iter().zip(routes).enumerate() {
            let id = step.id.as_str();
            match &route.next {
                Some(next) => {
                    let real: Vec<String> =
                        targets(next).into_iter().filter(|t| t != "end").collect();
                    match real.as_slice() {
                        [] => {}
                        [only] => edges.push(edge(id, only, Some("default"))),
                        many => {
                            for target in many {
                                edges.push(edge(id, target, Some(target)));
                            }
                            edges.push(edge(id, &many[0], Some("default")));
                        }
                    }
                }
                None => {
                    if let Some(following) = steps.get(i + 1) {
                        edges.push(edge(id, &following.id, None));
                    }
                }
            }
            if let Some(handler) = &route.on_error {
                let handler = match handler {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                edges.push(edge(id, &handler, Some("error")));
            }
            for target in &route.code_targets {
                let covered = edges
                    .iter()
                    .any(|e| e.from == id && e.action.as_deref() == Some(target.as_str()));
                if !covered {
                    edges.push(edge(id, target, Some(target)));
                }
            }
        }

        let ids: Vec<&str> = steps.iter().map(|s| s.id.as_str()).collect();
        for e in &edges {
            if !ids.contains(&e.to.as_str()) {
                let similar = crate::closest(&e.to, ids.iter().copied());
                let hint = if similar.is_empty() {
                    let mut sorted = ids.clone();
                    sorted.sort_unstable();
                    format!("Available nodes: {}", sorted.join(", "))
                } else {
                    format!("Did you mean: {}?", similar.join(", "))
                };
                let line = steps.iter().find(|s| s.id == e.from).map(|s| s.line);
                return Err(MarkdownError {
                    line,
                    message: format!(
                        "Node '{}' references unknown target '{}'. {hint}",
                        e.from, e.to
                    ),
                    suggestion: None,
                });
            }
        }
        check_branches(steps, routes, &edges)?;
        Ok(edges
            .into_iter()
            .map(|e| match e.action {
                Some(action) => json!({"from": e.from, "to": e.to, "action": action}),
                None => json!({"from": e.from, "to": e.to}),
            })
            .collect())
    }

    /// pflow refuses routing that would silently fall through: a dynamic `next` without a
    /// `- next:` list, a branch target without `- next:`, and a main-flow step that runs into
    /// a branch target by document order.
    fn check_branches(
        steps: &[&Entity],
        routes: &[Route],
        edges: &[Edge],
    ) -> Result<(), MarkdownError> {
        let line_of = |id: &str| steps.iter().find(|s| s.id == id).map(|s| s.line);
        let route_of = |id: &str| steps.iter().position(|s| s.id == id).map(|i| &routes[i]);
        for (step, route) in steps.iter().zip(routes) {
            if route.code_dynamic && route.next.is_none() {
                return Err(MarkdownError {
                    line: Some(step.line),
                    message: format!(
                        "Node '{}' uses dynamic routing (next = <expression>) but has no '- next:' declaration.",
                        step.id
                    ),
                    suggestion: Some(format!(
                        "Add '- next:' listing all possible routing targets:\n\n    ### {}\n    - type: code\n    - next: target-a, target-b",
                        step.id
                    )),
                });
            }
        }
        // Branch target -> (router -> its actions to that target).
        let mut routers: BTreeMap<&str, BTreeMap<&str, Vec<&str>>> = BTreeMap::new();
        for e in edges {
            if let Some(action) = e.action.as_deref().filter(|a| *a != "default") {
                routers
                    .entry(e.to.as_str())
                    .or_default()
                    .entry(e.from.as_str())
                    .or_default()
                    .push(action);
            }
        }
        if routers.is_empty() {
            return Ok(());
        }
        let router_list = |target: &str| {
            routers[target]
                .iter()
                .map(|(router, actions)| {
                    if actions.iter().all(|a| *a == "error") {
                        format!("'{router}' (on-error)")
                    } else {
                        format!("'{router}'")
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let document_successor = |id: &str| {
            edges
                .iter()
                .find(|e| e.from == id && e.action.is_none())
                .map(|e| e.to.as_str())
        };
        for &target in routers.keys() {
            if route_of(target).is_some_and(|r| r.next.is_some()) {
                continue;
            }
            let successor = document_successor(target);
            let context = match successor {
                Some(s) => format!("Without it, execution would fall through to '{s}' via document order — pflow rejects this to prevent silent routing bugs."),
                None => "Branch targets must declare their exit explicitly to prevent silent routing bugs.".to_string(),
            };
            let fix = match successor.filter(|s| !routers.contains_key(s)) {
                Some(s) => format!("Fix — add '- next:' to '### {target}'. Either continue to the next step:\n\n    - next: {s}\n\nOr terminate the branch:\n\n    - next: end"),
                None => format!("Fix — add an explicit terminator to '### {target}':\n\n    - next: end"),
            };
            return Err(MarkdownError {
                line: line_of(target),
                message: format!(
                    "Node '{target}' is a routing target of {} but has no '- next:' directive. {context}",
                    router_list(target)
                ),
                suggestion: Some(fix),
            });
        }
        for e in edges.iter().filter(|e| e.action.is_none()) {
            let Some(targets) = routers.get(e.to.as_str()) else {
                continue;
            };
            if targets.contains_key(e.from.as_str()) {
                continue;
            }
            let convergence = convergence(edges, &routers, &e.from);
            let fix = match convergence {
                Some(c) => format!("Fix — add '- next:' to '### {}'. Either continue past the branch section to the convergence point (inferred: '{c}' is where other branch targets route):\n\n    - next: {c}\n\nOr terminate the flow:\n\n    - next: end", e.from),
                None => format!("Fix — add an explicit '- next:' to '### {}':\n\n    - next: end", e.from),
            };
            return Err(MarkdownError {
                line: line_of(&e.from),
                message: format!(
                    "Node '{}' flows into '{}' via document order, but '{}' is a routing target of {}. Main flow nodes must not silently fall through into branch targets.",
                    e.from,
                    e.to,
                    e.to,
                    router_list(&e.to)
                ),
                suggestion: Some(fix),
            });
        }
        Ok(())
    }

    /// The node that at least two branch targets route into with `- next:`, if any.
    fn convergence<'e>(
        edges: &'e [Edge],
        routers: &BTreeMap<&str, BTreeMap<&str, Vec<&str>>>,
        source: &str,
    ) -> Option<&'e str> {
        let mut votes: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for e in edges {
            if e.action.as_deref() == Some("default") && routers.contains_key(e.from.as_str()) {
                votes
                    .entry(e.to.as_str())
                    .or_default()
                    .insert(e.from.as_str());
            }
        }
        votes
            .into_iter()
            .filter(|(id, voters)| !routers.contains_key(id) && *id != source && voters.len() >= 2)
            .max_by(|a, b| a.1.len().cmp(&b.1.len()).then(b.0.cmp(a.0)))
            .map(|(id, _)| id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ir(text: &str) -> Value {
        parse_markdown(text).expect("parses").ir
    }

    #[test]
    fn steps_params_and_blocks_become_nodes_and_document_order_edges() {
        let ir = ir("# T\n\nProse.\n\n## Steps\n\n### a\n\nFirst.\n\n- type: shell\n- timeout: 5\n- env:\n    A: ${x}\n\n```shell command\necho ${x}\n```\n\n### b\n\nSecond.\n\n- type: shell\n- command: 'it''s'\n");
        assert_eq!(ir["nodes"][0]["params"]["timeout"], json!(5));
        assert_eq!(ir["nodes"][0]["params"]["env"], json!({"A": "${x}"}));
        assert_eq!(ir["nodes"][0]["params"]["command"], json!("echo ${x}"));
        assert_eq!(ir["nodes"][1]["params"]["command"], json!("it's"));
        assert_eq!(ir["edges"], json!([{"from": "a", "to": "b"}]));
    }

    #[test]
    fn single_line_values_keep_colons_and_hashes() {
        assert_eq!(scalar("a: b # c").unwrap(), json!("a: b # c"));
        assert_eq!(scalar("yes").unwrap(), json!(true));
        assert_eq!(scalar("1.5").unwrap(), json!(1.5));
        assert_eq!(scalar("1e5").unwrap(), json!("1e5"));
        assert_eq!(scalar("{a: ${b.c}}").unwrap(), json!({"a": "${b.c}"}));
        assert!(scalar("\"open").is_err());
    }

    #[test]
    fn routing_makes_action_edges_and_refuses_fall_through() {
        let text = "## Steps\n\n### a\n\nA.\n\n- type: shell\n- on-error: h\n\n### b\n\nB.\n\n- type: shell\n- next: end\n\n### h\n\nH.\n\n- type: shell\n- next: end\n";
        assert_eq!(
            ir(text)["edges"],
            json!([{"from": "a", "to": "b"}, {"from": "a", "to": "h", "action": "error"}])
        );
        let fall_through = text.replace(
            "- type: shell\n- next: end\n\n### h",
            "- type: shell\n\n### h",
        );
        let error = parse_markdown(&fall_through).unwrap_err();
        assert!(error.message.contains("flows into 'h'"), "{error}");
        assert_eq!(error.line, Some(10));
    }

    #[test]
    fn errors_name_the_line() {
        let error = parse_markdown("## Steps\n\n### a\n\n- type: shell\n").unwrap_err();
        assert_eq!(error.line, Some(3));
        assert!(error.message.contains("missing a description"));
        let error =
            parse_markdown("## Steps\n\n### a\n\nA.\n\n```shell command\necho\n").unwrap_err();
        assert_eq!(
            (error.line, error.message.as_str()),
            (Some(7), "Unclosed code block.")
        );
        assert!(parse_markdown("# T\n")
            .unwrap_err()
            .message
            .contains("Missing '## Steps'"));
    }

    #[test]
    fn block_scalars_keep_headings_and_fences_as_text() {
        let ir = ir("## Steps\n\n### a\n\nA.\n\n- type: shell\n- command: |\n    # not a heading\n    ```\n    echo\n");
        assert_eq!(
            ir["nodes"][0]["params"]["command"],
            json!("# not a heading\n```\necho")
        );
    }
}
