//! Structured output: the one JSON object an answer carries, from the forced tool call, or,
//! from a provider that answered in text, from a fenced ```json block.

use crate::Response;
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};
use serde_json::{Map, Value};

/// Why an answer carries no usable object. The message is written for the model that has to
/// answer again.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StructuredError {
    #[error("you called the tool '{called}'; call '{expected}' instead")]
    WrongTool { called: String, expected: String },
    #[error("your answer has no '{0}' tool call and no ```json block")]
    Missing(String),
    #[error("the ```json block in your answer is not valid JSON: {0}")]
    BadJson(String),
    #[error("the input of '{tool}' must be a JSON object, not {found}")]
    NotObject { tool: String, found: &'static str },
}

/// The input of the `tool` call, else the first ```json block of the text (the last one
/// that parses wins over none: models sometimes show a broken draft first).
pub fn object(response: &Response, tool: &str) -> Result<Map<String, Value>, StructuredError> {
    let value = match &response.tool_call {
        Some((name, _)) if name != tool => {
            return Err(StructuredError::WrongTool {
                called: name.clone(),
                expected: tool.to_string(),
            })
        }
        Some((_, input)) => input.clone(),
        None => fenced_json(&response.text)
            .ok_or_else(|| StructuredError::Missing(tool.to_string()))??,
    };
    match value {
        Value::Object(map) => Ok(map),
        other => Err(StructuredError::NotObject {
            tool: tool.to_string(),
            found: kind(&other),
        }),
    }
}

/// None without a ```json block; the first block that parses, else the first one's error.
fn fenced_json(text: &str) -> Option<Result<Value, StructuredError>> {
    let mut blocks: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    for event in Parser::new(text) {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info)))
                if info.split_whitespace().next() == Some("json") =>
            {
                current = Some(String::new())
            }
            Event::Text(chunk) => {
                if let Some(block) = current.as_mut() {
                    block.push_str(&chunk);
                }
            }
            Event::End(TagEnd::CodeBlock) => blocks.extend(current.take()),
            _ => {}
        }
    }
    let mut first_error = None;
    for block in &blocks {
        match serde_json::from_str(block) {
            Ok(value) => return Some(Ok(value)),
            Err(e) => {
                first_error.get_or_insert(StructuredError::BadJson(e.to_string()));
            }
        }
    }
    first_error.map(Err)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(text: &str) -> Response {
        Response {
            text: text.to_string(),
            ..Response::default()
        }
    }

    #[test]
    fn the_tool_call_is_taken_as_is() {
        let response = Response {
            tool_call: Some(("submit_workflow".into(), json!({"reuse": "x"}))),
            ..Response::default()
        };
        let object = object(&response, "submit_workflow").unwrap();
        assert_eq!(object["reuse"], "x");
        let error = super::object(&response, "other").unwrap_err();
        assert!(error.to_string().contains("'submit_workflow'"));
    }

    #[test]
    fn a_text_answer_gives_its_json_block() {
        let answer = "Here it is:\n\n```json\n{\"reuse\": \"y\", \"params\": {}}\n```\nDone.";
        assert_eq!(object(&text(answer), "t").unwrap()["reuse"], "y");
        let broken_then_good = "```json\n{broken\n```\n\n```json\n{\"a\": 1}\n```";
        assert_eq!(object(&text(broken_then_good), "t").unwrap()["a"], 1);
    }

    #[test]
    fn answers_without_an_object_are_errors_that_say_so() {
        assert_eq!(
            object(&text("no json here"), "t").unwrap_err(),
            StructuredError::Missing("t".into())
        );
        assert!(matches!(
            object(&text("```json\n{nope\n```"), "t").unwrap_err(),
            StructuredError::BadJson(_)
        ));
        assert!(matches!(
            object(&text("```json\n[1]\n```"), "t").unwrap_err(),
            StructuredError::NotObject { .. }
        ));
    }
}
