//! pflow's `${...}` templates: parsing and resolution against the shared store.
//!
//! Grammar: `${name(.field|[N]|[${template}])*}` with `name` = `[a-zA-Z_][\w-]*`; `$${` escapes a
//! template. Anything else after `${` (shell forms such as `${#a[@]}` or `${v:-d}`) is text.

use serde_json::{Map, Value};
use std::fmt;

/// How deeply `${...}` may nest (`${a[${b[${c}]}]}` is 3). Deeper text is refused with a clear
/// error when a workflow is read, and never parsed as a template, so that parsing stays linear
/// and shallow whatever the input.
pub const MAX_NESTING: usize = 64;

/// How deeply `${` opens nest in `text` (shell forms and `$${` counted too), in one pass.
pub fn nesting_depth(text: &str) -> usize {
    let bytes = text.as_bytes();
    let (mut depth, mut deepest, mut at) = (0usize, 0usize, 0usize);
    while at < bytes.len() {
        match bytes[at] {
            b'$' if bytes.get(at + 1) == Some(&b'{') => {
                depth += 1;
                deepest = deepest.max(depth);
                at += 1;
            }
            b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        at += 1;
    }
    deepest
}

/// Every string in `value` whose templates nest deeper than [`MAX_NESTING`], as
/// `(JSON path, depth)`.
pub fn too_deeply_nested(value: &Value, path: &str) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    let mut stack = vec![(value, path.to_string())];
    while let Some((value, path)) = stack.pop() {
        match value {
            Value::String(text) => {
                let depth = nesting_depth(text);
                if depth > MAX_NESTING {
                    found.push((path, depth));
                }
            }
            Value::Array(items) => stack.extend(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| (item, format!("{path}[{i}]"))),
            ),
            Value::Object(map) => stack.extend(
                map.iter()
                    .map(|(key, item)| (item, format!("{path}.{key}"))),
            ),
            _ => {}
        }
    }
    found.sort();
    found
}

/// A parsed string: literal text and template references.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Ref(Reference),
}

/// `${root.field[0]...}`, optionally with a fallback: `${a.x ?? b.y ?? "none"}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    pub root: String,
    pub path: Vec<Segment>,
    /// What `??` falls back to when this reference does not resolve (the node did not run,
    /// failed, or lacks the field).
    pub fallback: Option<Box<Fallback>>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Fallback {
    Reference(Reference),
    /// A JSON literal: `0`, `"none"`, `[]`, `{}`, `null`.
    Literal(Value),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Segment {
    Field(String),
    Index(usize),
    /// `[${inner}]`: the index is itself a template.
    NestedIndex(Box<Reference>),
}

/// Where templates look names up: the shared store (inputs at the root, node namespaces by id),
/// plus whatever a scope adds (e.g. a batch item).
pub trait Scope {
    fn lookup(&self, name: &str) -> Option<&Value>;
}

impl Scope for Map<String, Value> {
    fn lookup(&self, name: &str) -> Option<&Value> {
        self.get(name)
    }
}

/// A template that did not resolve: what was asked for, where it stopped, and what exists there.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct Unresolved {
    /// The template as written, e.g. `${fetch.response.email}`.
    pub template: String,
    pub message: String,
    /// Keys that exist where resolution stopped.
    pub available: Vec<String>,
}

impl Template {
    pub fn parse(text: &str) -> Template {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(at) = rest.find('$') {
            literal.push_str(&rest[..at]);
            let tail = &rest[at..];
            if let Some(after) = tail.strip_prefix("$${") {
                literal.push_str("${");
                rest = after;
            } else if let Some(inside) = tail.strip_prefix("${") {
                match parse_reference(inside, 1) {
                    Some((reference, used)) => {
                        if !literal.is_empty() {
                            parts.push(Part::Text(std::mem::take(&mut literal)));
                        }
                        parts.push(Part::Ref(reference));
                        rest = &inside[used..];
                    }
                    None => {
                        literal.push_str("${");
                        rest = inside;
                    }
                }
            } else {
                literal.push('$');
                rest = &tail[1..];
            }
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Template { parts }
    }

    pub fn has_references(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Ref(_)))
    }

    /// Every reference, nested index templates included.
    pub fn references(&self) -> Vec<&Reference> {
        let mut all = Vec::new();
        for part in &self.parts {
            if let Part::Ref(reference) = part {
                collect_references(reference, &mut all);
            }
        }
        all
    }

    /// The references as written, each with its fallbacks, nested index templates not
    /// listed apart.
    pub fn top_references(&self) -> Vec<&Reference> {
        self.parts
            .iter()
            .filter_map(|part| match part {
                Part::Ref(reference) => Some(reference),
                Part::Text(_) => None,
            })
            .collect()
    }

    /// `reference` and the templates in its index brackets (not its fallbacks).
    pub fn nested_references(reference: &Reference) -> Vec<&Reference> {
        let mut all = vec![reference];
        for segment in &reference.path {
            if let Segment::NestedIndex(inner) = segment {
                all.extend(Template::nested_references(inner));
            }
        }
        all
    }

    /// The single reference when the whole string is exactly one template (its value keeps its
    /// JSON type).
    fn sole_reference(&self) -> Option<&Reference> {
        match self.parts.as_slice() {
            [Part::Ref(reference)] => Some(reference),
            _ => None,
        }
    }

    /// Resolves to a value: one whole-string template keeps its JSON type; mixed text becomes
    /// a string. In permissive mode an unresolved template stays as written.
    pub fn resolve(&self, scope: &dyn Scope, strict: bool) -> Result<Value, Unresolved> {
        if let Some(reference) = self.sole_reference() {
            return match reference.resolve(scope) {
                Ok(value) => Ok(value),
                Err(_) if !strict => Ok(Value::String(reference.to_string())),
                Err(e) => Err(e),
            };
        }
        let mut text = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => text.push_str(t),
                Part::Ref(reference) => match reference.resolve(scope) {
                    Ok(value) => text.push_str(&render(&value)),
                    Err(_) if !strict => text.push_str(&reference.to_string()),
                    Err(e) => return Err(e),
                },
            }
        }
        Ok(Value::String(text))
    }
}

fn collect_references<'a>(reference: &'a Reference, all: &mut Vec<&'a Reference>) {
    all.push(reference);
    for segment in &reference.path {
        if let Segment::NestedIndex(inner) = segment {
            collect_references(inner, all);
        }
    }
    if let Some(Fallback::Reference(next)) = reference.fallback.as_deref() {
        collect_references(next, all);
    }
}

/// How a value reads inside text, as pflow renders it: strings as they are, null as nothing,
/// booleans as `True`/`False`, lists and objects as Python's `json.dumps` writes them (`", "`
/// and `": "` between items), numbers as written.
pub fn render(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Bool(true) => "True".to_string(),
        Value::Bool(false) => "False".to_string(),
        Value::Number(n) => n.to_string(),
        structured => python_json(structured),
    }
}

/// JSON with Python's default separators.
fn python_json(value: &Value) -> String {
    use serde::Serialize;
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, PythonSeparators);
    match value.serialize(&mut serializer) {
        Ok(()) => String::from_utf8(out).unwrap_or_default(),
        Err(_) => value.to_string(),
    }
}

struct PythonSeparators;

impl serde_json::ser::Formatter for PythonSeparators {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    /// The same separator between an object's entries as between a list's items.
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.begin_array_value(writer, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

/// Resolves every template in a JSON value (strings inside objects and arrays included).
pub fn resolve_value(value: &Value, scope: &dyn Scope, strict: bool) -> Result<Value, Unresolved> {
    resolve_in(value, scope, strict, false)
}

/// `resolve_value` with pflow's rule for `inputs:` values: a value that is one whole template and
/// resolves to text holding a JSON object or array (`${shell.stdout}`) becomes that object or
/// array. Numbers and other scalars stay text (an ID like `"0042"` must not become 42).
pub fn resolve_inputs(value: &Value, scope: &dyn Scope, strict: bool) -> Result<Value, Unresolved> {
    resolve_in(value, scope, strict, true)
}

fn resolve_in(
    value: &Value,
    scope: &dyn Scope,
    strict: bool,
    parse_json_text: bool,
) -> Result<Value, Unresolved> {
    Ok(match value {
        Value::String(text) if text.contains("${") => {
            let template = Template::parse(text);
            match template.resolve(scope, strict)? {
                Value::String(resolved)
                    if parse_json_text && template.sole_reference().is_some() =>
                {
                    json_container(&resolved).unwrap_or(Value::String(resolved))
                }
                other => other,
            }
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| resolve_in(item, scope, strict, parse_json_text))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), resolve_in(v, scope, strict, parse_json_text)?)))
                .collect::<Result<_, Unresolved>>()?,
        ),
        other => other.clone(),
    })
}

/// The JSON object or array that `text` holds (a command's stdout, say), or None.
fn json_container(text: &str) -> Option<Value> {
    if !text.trim_start().starts_with(['{', '[']) {
        return None;
    }
    match serde_json::from_str::<Value>(text) {
        Ok(parsed @ (Value::Object(_) | Value::Array(_))) => Some(parsed),
        _ => None,
    }
}

/// `${...}` occurrences in `text` that look meant as templates but do not parse, each with why.
/// Shell forms (`${#a}`, `${v:-d}`, `${a[@]}` ...) and escaped `$${` are not reported.
pub fn malformed(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        let escaped = at > 0 && rest.as_bytes()[at - 1] == b'$';
        let inside = &rest[at + 2..];
        if !escaped && parse_reference(inside, 1).is_none() {
            if let Some(reason) = why_not_a_template(inside) {
                let shown: String = inside.chars().take(30).collect();
                found.push(format!("'${{{shown}' {reason}"));
            }
        }
        rest = inside;
    }
    found
}

/// None when the text after `${` is a shell form rather than a broken template.
fn why_not_a_template(inside: &str) -> Option<&'static str> {
    const SHELL_OPERATORS: &[u8] = b":-=?+%/^,@*";
    let bytes = inside.as_bytes();
    match bytes.first() {
        None => return Some("is never closed with '}'"),
        Some(b'#' | b'!') => return None,
        _ => {}
    }
    let mut at = identifier_len(bytes, true);
    if at == 0 {
        return Some("does not start with a name (letters, digits, '_', '-')");
    }
    loop {
        match bytes.get(at) {
            None => return Some("is never closed with '}'"),
            Some(b'.') => {
                let len = identifier_len(&bytes[at + 1..], false);
                if len == 0 {
                    return Some("has an empty field name after '.'");
                }
                at += 1 + len;
            }
            Some(b'[') => {
                let digits = bytes[at + 1..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                match bytes.get(at + 1 + digits) {
                    Some(b']') if digits > 0 => at += digits + 2,
                    _ if matches!(bytes.get(at + 1), Some(b'@' | b'*')) => return None,
                    _ if inside[at + 1..].starts_with("${") => {
                        return Some("has an index template that does not parse")
                    }
                    _ => return Some("has an index that is not a number or a template"),
                }
            }
            Some(b) if SHELL_OPERATORS.contains(b) => return None,
            Some(_) => return Some("has a character that templates do not allow"),
        }
    }
}

/// Parses the inside of `${...}` (after the `${`) at nesting `depth`; returns the reference and
/// the bytes used, the closing brace included. None when the text is not a pflow template, or
/// nests deeper than [`MAX_NESTING`].
fn parse_reference(text: &str, depth: usize) -> Option<(Reference, usize)> {
    if depth > MAX_NESTING {
        return None;
    }
    let bytes = text.as_bytes();
    let root_len = identifier_len(bytes, true);
    if root_len == 0 {
        return None;
    }
    let root = text[..root_len].to_string();
    let mut at = root_len;
    let mut path = Vec::new();
    loop {
        match bytes.get(at)? {
            b'}' => {
                let reference = Reference {
                    root,
                    path,
                    fallback: None,
                };
                return Some((reference, at + 1));
            }
            b' ' | b'?' => {
                let (fallback, used) = parse_fallback(&text[at..], depth)?;
                let reference = Reference {
                    root,
                    path,
                    fallback: Some(Box::new(fallback)),
                };
                return Some((reference, at + used));
            }
            b'.' => {
                let len = identifier_len(&bytes[at + 1..], false);
                if len == 0 {
                    return None;
                }
                path.push(Segment::Field(text[at + 1..at + 1 + len].to_string()));
                at += 1 + len;
            }
            b'[' => {
                let inner = &text[at + 1..];
                let digits = inner.bytes().take_while(u8::is_ascii_digit).count();
                if digits > 0 && inner.as_bytes().get(digits) == Some(&b']') {
                    path.push(Segment::Index(inner[..digits].parse().ok()?));
                    at += digits + 2;
                } else if let Some(nested) = inner.strip_prefix("${") {
                    let (reference, used) = parse_reference(nested, depth + 1)?;
                    if nested.as_bytes().get(used) != Some(&b']') {
                        return None;
                    }
                    path.push(Segment::NestedIndex(Box::new(reference)));
                    at += 1 + 2 + used + 1;
                } else {
                    return None;
                }
            }
            _ => return None,
        }
    }
}

/// ` ?? operand}` after a reference: the operand (itself a reference, with its own fallback, or
/// a JSON literal) and the bytes used, the closing brace included.
fn parse_fallback(text: &str, depth: usize) -> Option<(Fallback, usize)> {
    let after_space = text.trim_start_matches(' ');
    let operand = after_space.strip_prefix("??")?.trim_start_matches(' ');
    let skipped = text.len() - operand.len();
    if identifier_len(operand.as_bytes(), true) > 0
        && !["true", "false", "null"]
            .iter()
            .any(|word| operand.starts_with(word) && !continues_name(operand, word.len()))
    {
        let (reference, used) = parse_reference(operand, depth)?;
        return Some((Fallback::Reference(reference), skipped + used));
    }
    let mut values = serde_json::Deserializer::from_str(operand).into_iter::<Value>();
    let literal = values.next()?.ok()?;
    let end = values.byte_offset();
    let rest = &operand[end..];
    let closing = rest.len() - rest.trim_start_matches(' ').len();
    (rest.as_bytes().get(closing) == Some(&b'}'))
        .then(|| (Fallback::Literal(literal), skipped + end + closing + 1))
}

fn continues_name(text: &str, at: usize) -> bool {
    text.as_bytes()
        .get(at)
        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-' || *b == b'.')
}

/// Length of `[a-zA-Z_][\w-]*` (a root name) or `[\w-]+` (a field) at the start of `bytes`.
fn identifier_len(bytes: &[u8], root: bool) -> usize {
    let is_word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-';
    match bytes.first() {
        Some(b) if root && !(b.is_ascii_alphabetic() || *b == b'_') => 0,
        _ => bytes.iter().take_while(|b| is_word(b)).count(),
    }
}

impl Reference {
    /// Whether this names a node's namespace (a dotted name) rather than a workflow input.
    pub fn is_node_reference(&self) -> bool {
        !self.path.is_empty()
    }

    pub fn resolve(&self, scope: &dyn Scope) -> Result<Value, Unresolved> {
        match (self.resolve_own(scope), &self.fallback) {
            (Err(_), Some(fallback)) => match fallback.as_ref() {
                Fallback::Reference(reference) => reference.resolve(scope),
                Fallback::Literal(value) => Ok(value.clone()),
            },
            (result, _) => result,
        }
    }

    fn resolve_own(&self, scope: &dyn Scope) -> Result<Value, Unresolved> {
        let unresolved = |message: String, available: Vec<String>| Unresolved {
            template: self.to_string(),
            message,
            available,
        };
        let Some(mut current) = scope.lookup(&self.root).cloned() else {
            return Err(unresolved(
                format!(
                    "Template {self} cannot be resolved: '{}' is neither a workflow input nor a node that has run",
                    self.root
                ),
                Vec::new(),
            ));
        };
        let mut walked = self.root.clone();
        for segment in &self.path {
            // Text that holds JSON (a command's stdout, say) can be walked into.
            if let Some(parsed) = current.as_str().and_then(json_container) {
                current = parsed;
            }
            let next = match segment {
                Segment::Field(field) => match &current {
                    Value::Object(map) => map.get(field).cloned().ok_or_else(|| {
                        unresolved(
                            format!(
                                "Template {self} cannot be resolved: '{walked}' has no field '{field}'; it has: {}",
                                join_or_none(map.keys())
                            ),
                            map.keys().cloned().collect(),
                        )
                    })?,
                    other => {
                        return Err(unresolved(
                            format!(
                                "Template {self} cannot be resolved: '{walked}' is {}, not an object with field '{field}'",
                                crate::json_kind(other)
                            ),
                            Vec::new(),
                        ))
                    }
                },
                Segment::Index(_) | Segment::NestedIndex(_) => {
                    let index = match segment {
                        Segment::Index(i) => *i,
                        Segment::NestedIndex(inner) => index_value(&inner.resolve(scope)?)
                            .ok_or_else(|| {
                                unresolved(
                                    format!(
                                        "Template {self} cannot be resolved: index {inner} is not a non-negative integer"
                                    ),
                                    Vec::new(),
                                )
                            })?,
                        Segment::Field(_) => unreachable!("matched above"),
                    };
                    match &current {
                        Value::Array(items) => items.get(index).cloned().ok_or_else(|| {
                            unresolved(
                                format!(
                                    "Template {self} cannot be resolved: '{walked}' has {} item(s), no index {index}",
                                    items.len()
                                ),
                                Vec::new(),
                            )
                        })?,
                        other => {
                            return Err(unresolved(
                                format!(
                                    "Template {self} cannot be resolved: '{walked}' is {}, not a list",
                                    crate::json_kind(other)
                                ),
                                Vec::new(),
                            ))
                        }
                    }
                }
            };
            walked.push_str(&segment.to_string());
            current = next;
        }
        Ok(current)
    }
}

fn index_value(value: &Value) -> Option<usize> {
    match value {
        Value::Number(n) => n.as_u64().map(|n| n as usize),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn join_or_none<'a>(keys: impl Iterator<Item = &'a String>) -> String {
    let keys: Vec<&str> = keys.map(String::as_str).collect();
    if keys.is_empty() {
        "nothing".to_string()
    } else {
        keys.join(", ")
    }
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Segment::Field(name) => write!(f, ".{name}"),
            Segment::Index(i) => write!(f, "[{i}]"),
            Segment::NestedIndex(inner) => write!(f, "[{inner}]"),
        }
    }
}

impl Reference {
    fn write_inside(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.root)?;
        for segment in &self.path {
            write!(f, "{segment}")?;
        }
        match self.fallback.as_deref() {
            Some(Fallback::Reference(next)) => {
                write!(f, " ?? ")?;
                next.write_inside(f)
            }
            Some(Fallback::Literal(value)) => write!(f, " ?? {value}"),
            None => Ok(()),
        }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${{")?;
        self.write_inside(f)?;
        write!(f, "}}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store() -> Map<String, Value> {
        json!({
            "name": "Ada",
            "n": 1,
            "fetch": {"response": {"items": [{"id": 7}, {"id": 8}]}, "stdout": "{\"a\": [1, 2]}"},
        })
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn fallbacks_take_the_first_operand_that_resolves() {
        let t = Template::parse("${missing.x ?? fetch.response.items[0].id}");
        assert_eq!(t.resolve(&store(), true).unwrap(), json!(7));
        let t = Template::parse("${missing.x ?? also.missing ?? \"none\"}");
        assert_eq!(t.resolve(&store(), true).unwrap(), json!("none"));
        assert_eq!(
            t.references()[0].to_string(),
            "${missing.x ?? also.missing ?? \"none\"}"
        );
        let t = Template::parse("${missing ?? 0} and ${name ?? []}");
        assert_eq!(t.resolve(&store(), true).unwrap(), json!("0 and Ada"));
        assert!(Template::parse("${a ?? }").references().is_empty());
    }

    #[test]
    fn whole_template_keeps_the_json_type() {
        let t = Template::parse("${fetch.response.items[1].id}");
        assert_eq!(t.resolve(&store(), true).unwrap(), json!(8));
        let t = Template::parse("${fetch.response.items}");
        assert_eq!(
            t.resolve(&store(), true).unwrap(),
            json!([{"id": 7}, {"id": 8}])
        );
    }

    #[test]
    fn mixed_text_becomes_a_string_with_json_for_structures() {
        let t = Template::parse("hi ${name}: ${fetch.response.items[0]}");
        assert_eq!(
            t.resolve(&store(), true).unwrap(),
            json!("hi Ada: {\"id\": 7}")
        );
        let flags = Template::parse("${t} ${f} ${n} [${l}]");
        let scope = json!({"t": true, "f": false, "n": null, "l": [1, {"a": "b"}]});
        assert_eq!(
            flags.resolve(scope.as_object().unwrap(), true).unwrap(),
            json!("True False  [[1, {\"a\": \"b\"}]]")
        );
    }

    #[test]
    fn inputs_get_json_text_of_a_whole_template_parsed() {
        let inputs = json!({"doc": "${fetch.stdout}", "said": "got ${fetch.stdout}", "n": "${n}"});
        let resolved = resolve_inputs(&inputs, &store(), true).unwrap();
        assert_eq!(resolved["doc"], json!({"a": [1, 2]}));
        assert_eq!(resolved["said"], json!("got {\"a\": [1, 2]}"));
        assert_eq!(resolved["n"], json!(1));
        let plain = resolve_value(&inputs, &store(), true).unwrap();
        assert_eq!(plain["doc"], json!("{\"a\": [1, 2]}"));
    }

    #[test]
    fn nested_index_and_json_text() {
        let t = Template::parse("${fetch.response.items[${n}].id}");
        assert_eq!(t.resolve(&store(), true).unwrap(), json!(8));
        let t = Template::parse("${fetch.stdout.a[1]}");
        assert_eq!(t.resolve(&store(), true).unwrap(), json!(2));
    }

    #[test]
    fn shell_forms_and_escapes_stay_text() {
        for text in [
            "${#a[@]}", "${v:-d}", "${v%x}", "$HOME", "cost: $5", "${}", "${a.}",
        ] {
            let t = Template::parse(text);
            assert!(!t.has_references(), "{text}");
            assert_eq!(t.resolve(&store(), true).unwrap(), json!(text));
        }
        let t = Template::parse("$${name} ${name}");
        assert_eq!(t.resolve(&store(), true).unwrap(), json!("${name} Ada"));
    }

    #[test]
    fn unresolved_names_what_exists() {
        let error = Template::parse("${fetch.response.email}")
            .resolve(&store(), true)
            .unwrap_err();
        assert_eq!(error.available, vec!["items"]);
        assert!(
            error
                .message
                .contains("'fetch.response' has no field 'email'"),
            "{}",
            error.message
        );
        let error = Template::parse("${ghost}")
            .resolve(&store(), true)
            .unwrap_err();
        assert!(error
            .message
            .contains("neither a workflow input nor a node"));
        let kept = Template::parse("x ${ghost.a}")
            .resolve(&store(), false)
            .unwrap();
        assert_eq!(kept, json!("x ${ghost.a}"));
    }

    #[test]
    fn malformed_templates_are_told_apart_from_shell_forms() {
        assert_eq!(
            malformed("${fetch.response"),
            ["'${fetch.response' is never closed with '}'"]
        );
        assert_eq!(malformed("x ${ name } y").len(), 1);
        assert_eq!(
            malformed("${a..b}"),
            ["'${a..b}' has an empty field name after '.'"]
        );
        assert_eq!(
            malformed("${a[x]}"),
            ["'${a[x]}' has an index that is not a number or a template"]
        );
        for fine in [
            "${#a[@]}",
            "${v:-d}",
            "${v%x}",
            "${a[@]}",
            "$${ x",
            "${ok.x[0]}",
            "${!ref}",
        ] {
            assert!(malformed(fine).is_empty(), "{fine}: {:?}", malformed(fine));
        }
    }

    #[test]
    fn nesting_is_measured_in_one_pass_and_bounded_when_parsing() {
        let nested = |levels: usize| {
            let mut text = "${x}".to_string();
            for _ in 1..levels {
                text = format!("${{a[{text}]}}");
            }
            text
        };
        assert_eq!(nesting_depth(&nested(3)), 3);
        assert_eq!(nesting_depth("${v:-${w}} ${x}"), 2);
        assert_eq!(nesting_depth("no templates }}"), 0);
        assert_eq!(
            Template::parse(&nested(MAX_NESTING)).references().len(),
            MAX_NESTING
        );
        // Past the limit the outer levels are text; parsing neither recurses nor goes
        // quadratic, and only the innermost levels are templates.
        let too_deep = nested(20_000);
        assert_eq!(Template::parse(&too_deep).references().len(), MAX_NESTING);
        let found = too_deeply_nested(&json!({"p": [too_deep]}), "params");
        assert_eq!(found, vec![("params.p[0]".to_string(), 20_000)]);
    }

    #[test]
    fn references_round_trip_to_text() {
        let text = "${a.b[0][${c.d}].e-f}";
        let t = Template::parse(text);
        assert_eq!(t.references()[0].to_string(), text);
        assert_eq!(t.references().len(), 2);
    }
}
