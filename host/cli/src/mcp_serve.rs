//! `pflow-host mcp serve`: the agent-facing tools as an MCP server over stdio. (In progress:
//! the read and validate tools; execution, save, probe and Streamable HTTP follow.)

use pflow_planner::library::WorkflowLibrary;
use pflow_runtime::Host;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::sync::Arc;

pub struct PflowServer {
    host: Arc<Host>,
}

fn schema(properties: Value, required: &[&str]) -> Arc<JsonObject> {
    let schema = json!({"type": "object", "properties": properties, "required": required});
    Arc::new(schema.as_object().cloned().unwrap_or_default())
}

fn tools() -> Vec<Tool> {
    let read_only = ToolAnnotations::new().read_only(true);
    vec![
        Tool::new(
            "workflow_validate",
            "Validate a workflow statically: every problem with its path, message and fix.",
            schema(
                json!({"workflow": {"description": "IR object, .pflow.md text, or a file path"}}),
                &["workflow"],
            ),
        )
        .with_annotations(read_only.clone()),
        Tool::new(
            "workflow_find",
            "Saved workflows ranked for what they do, best first.",
            schema(json!({"query": {"type": "string"}}), &["query"]),
        )
        .with_annotations(read_only.clone()),
        Tool::new(
            "workflow_list",
            "Every saved workflow with its description and inputs.",
            schema(json!({}), &[]),
        )
        .with_annotations(read_only.clone()),
        Tool::new(
            "registry_find",
            "Node types ranked for what a step should do, best first.",
            schema(json!({"query": {"type": "string"}}), &["query"]),
        )
        .with_annotations(read_only.clone()),
        Tool::new(
            "registry_describe",
            "One node type: its params, outputs and capabilities.",
            schema(json!({"type": {"type": "string"}}), &["type"]),
        )
        .with_annotations(read_only.clone()),
        Tool::new(
            "guide",
            "Instructions for building workflows: topics core, batch, control-flow, dry-and-live, fix-loop.",
            schema(json!({"topics": {"type": "array", "items": {"type": "string"}}}), &[]),
        )
        .with_annotations(read_only),
    ]
}

impl PflowServer {
    fn call(&self, name: &str, arguments: &JsonObject) -> Result<Value, String> {
        let library = WorkflowLibrary::new(self.host.home.root().join("workflows"));
        match name {
            "workflow_validate" => {
                let report = match arguments.get("workflow") {
                    Some(Value::Object(ir)) => pflow_validate::validate(
                        &Value::Object(ir.clone()),
                        &self.host.registry,
                        None,
                    ),
                    Some(Value::String(text)) => {
                        let text = match std::path::Path::new(text).is_file() {
                            true => std::fs::read_to_string(text).map_err(|e| e.to_string())?,
                            false => text.clone(),
                        };
                        pflow_validate::validate_text(text, &self.host.registry, None)
                    }
                    _ => return Err("'workflow' must be an IR object, a document or a path".into()),
                };
                serde_json::to_value(report).map_err(|e| e.to_string())
            }
            "workflow_find" => {
                let query = arguments.get("query").and_then(Value::as_str).unwrap_or("");
                Ok(json!({"matches": library
                    .find(query)
                    .into_iter()
                    .map(|(s, score)| json!({"name": s.name, "description": s.description, "score": score}))
                    .collect::<Vec<_>>()}))
            }
            "workflow_list" => Ok(json!({"workflows": library
                .list()
                .into_iter()
                .map(|s| json!({"name": s.name, "description": s.description, "inputs": s.ir.get("inputs")}))
                .collect::<Vec<_>>()})),
            "registry_find" => {
                let query = arguments.get("query").and_then(Value::as_str).unwrap_or("");
                Ok(
                    json!({"matches": crate::registry_cmd::ranked(&self.host, query, 10)
                    .into_iter()
                    .map(|(name, description, score)| json!({"type": name, "description": description, "score": score}))
                    .collect::<Vec<_>>()}),
                )
            }
            "registry_describe" => {
                let wanted = arguments.get("type").and_then(Value::as_str).unwrap_or("");
                self.host
                    .registry
                    .specs()
                    .find(|(spec, _)| spec.name == wanted)
                    .map(|(spec, _)| serde_json::to_value(spec).unwrap_or_default())
                    .ok_or_else(|| {
                        let close = pflow_ir::closest(wanted, self.host.registry.types());
                        format!(
                            "Unknown node type '{wanted}'. Did you mean: {}?",
                            close.join(", ")
                        )
                    })
            }
            "guide" => {
                let wanted: Vec<&str> = arguments
                    .get("topics")
                    .and_then(Value::as_array)
                    .map(|t| t.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let text: Vec<&str> = crate::guide_cmd::TOPICS
                    .iter()
                    .filter(|(name, _)| wanted.is_empty() || wanted.contains(name))
                    .map(|(_, text)| *text)
                    .collect();
                Ok(json!(text.join("\n---\n\n")))
            }
            other => Err(format!("no tool named '{other}'")),
        }
    }
}

impl ServerHandler for PflowServer {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("pflow-host", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Build, validate and run pflow workflows; start with the guide tool.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = request.arguments.unwrap_or_default();
        let result = match self.call(&request.name, &arguments) {
            Ok(Value::String(text)) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Ok(value) => CallToolResult::structured(value),
            Err(message) => CallToolResult::structured_error(json!({
                "source": "host", "category": "bad_request", "fixable": true, "message": message,
            })),
        };
        Ok(result.into())
    }
}

/// Serves on stdin/stdout until the client goes away.
pub fn serve(host: Host) -> anyhow::Result<u8> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let server = PflowServer {
            host: Arc::new(host),
        };
        let service = server.serve(rmcp::transport::stdio()).await?;
        service.waiting().await?;
        anyhow::Ok(0)
    })
}

/// `mcp serve` reached without the host to hand over (never, from main): said plainly.
pub fn serve_borrowed() -> anyhow::Result<u8> {
    anyhow::bail!("mcp serve needs the host to itself; run `pflow-host mcp serve`")
}
