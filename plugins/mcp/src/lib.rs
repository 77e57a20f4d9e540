//! MCP tools as workflow nodes. Every `mcp-<server>-<tool>` node type runs this component; the
//! host adds which server and tool (`__mcp_server`, `__mcp_tool`) and the tool's argument
//! names (`__mcp_arguments`) to the params, and the rest of the params are the arguments.
//! The call itself goes through the host's `mcp` capability, which owns the server processes
//! and the policy.

use pflow_sdk::serde_json;
use pflow_sdk::{mcp, Map, Node, NodeError, NodeSpec, Outcome, Params, Value};

const SERVER: &str = "__mcp_server";
const TOOL: &str = "__mcp_tool";
const KNOWN_ARGUMENTS: &str = "__mcp_arguments";
const ERROR_EXCERPT_CHARS: usize = 500;

struct McpNode;

impl Node for McpNode {
    fn describe() -> NodeSpec {
        NodeSpec::new(
            "mcp",
            "Calls a tool of a configured MCP server. Use the mcp-<server>-<tool> node types, \
             whose params are the tool's arguments; or this type with server, tool and arguments.",
        )
        .param("server", "string", "Server name in mcp-servers.json", false)
        .param("tool", "string", "Tool name", false)
        .param("arguments", "dict", "The tool's arguments", false)
        .output("result", "any", "Text content (parsed when it is JSON), or the structured result", true)
    }

    fn run(params: Params) -> Result<Outcome, NodeError> {
        let (server, tool, arguments) = call_target(&params)?;
        let arguments_json = Value::Object(arguments.clone()).to_string();
        let result = mcp::call(&server, &tool, &arguments_json, None)?;
        let content: Vec<Value> = serde_json::from_str(&result.content).unwrap_or_default();
        let text = text_of(&content);
        if result.is_error {
            return Err(tool_error(&params, &arguments, &text));
        }
        let mut outputs = Map::new();
        let structured = result
            .structured
            .as_deref()
            .and_then(|s| serde_json::from_str::<Value>(s).ok());
        let value = match structured {
            // A tool that returns a plain value wraps it as {"result": value}.
            Some(Value::Object(mut fields)) if fields.len() == 1 && fields.contains_key("result") => {
                fields.remove("result").unwrap_or(Value::Null)
            }
            Some(Value::Object(fields)) => {
                for (key, value) in &fields {
                    outputs.insert(key.clone(), value.clone());
                }
                Value::Object(fields)
            }
            Some(other) => other,
            None => match text {
                Some(text) => serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text)),
                None => Value::Array(content),
            },
        };
        outputs.insert("result".to_string(), value);
        Ok(Outcome::new(outputs))
    }
}

/// (server, tool, arguments): from the host's injected keys, or from server/tool/arguments.
fn call_target(params: &Params) -> Result<(String, String, Map<String, Value>), NodeError> {
    if let Some(server) = params.opt_str(SERVER)? {
        let tool = params.str(TOOL)?.to_string();
        let arguments = params
            .as_map()
            .iter()
            .filter(|(k, _)| !k.starts_with("__mcp_"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        return Ok((server.to_string(), tool, arguments));
    }
    let arguments = match params.get("arguments") {
        None => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(other) => {
            return Err(NodeError::bad_params(format!(
                "Parameter 'arguments' must be an object, got {}",
                other
            )))
        }
    };
    Ok((params.str("server")?.to_string(), params.str("tool")?.to_string(), arguments))
}

/// The text blocks of a result, joined.
fn text_of(content: &[Value]) -> Option<String> {
    let texts: Vec<&str> = content
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    if texts.is_empty() {
        None
    } else {
        Some(texts.join("\n"))
    }
}

/// `isError: true`. An error that names an argument (or says arguments are wrong) is one the
/// workflow can fix; anything else is the tool's own failure.
fn tool_error(params: &Params, arguments: &Map<String, Value>, text: &Option<String>) -> NodeError {
    let text = text.clone().unwrap_or_else(|| "the tool reported an error".to_string());
    let known: Vec<String> = match params.get(KNOWN_ARGUMENTS) {
        Some(Value::Array(names)) => names
            .iter()
            .filter_map(|n| n.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    let lower = text.to_lowercase();
    let names_an_argument = ["argument", "parameter", "required", "invalid_type", "unrecognized"]
        .iter()
        .any(|word| lower.contains(word))
        || arguments.keys().chain(known.iter()).any(|name| lower.contains(&name.to_lowercase()));
    let excerpt: String = text.chars().take(ERROR_EXCERPT_CHARS).collect();
    let given: Vec<String> = arguments.keys().cloned().collect();
    if names_an_argument {
        NodeError::new(
            "argument_error",
            format!("The tool rejected its arguments: {}", excerpt),
        )
        .fixable(true)
        .attempted(given)
        .available(known)
    } else {
        NodeError::new("tool_error", format!("The tool failed: {}", excerpt)).attempted(given)
    }
}

pflow_sdk::export_node!(McpNode);
