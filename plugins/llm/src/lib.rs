//! pflow's `llm` node: one prompt to the host's configured model. With `output_schema` the
//! answer is the JSON value the model gave in that shape; otherwise its text. The node never
//! holds a key: the call goes through the host's `llm` capability.

use pflow_sdk::{json, llm, Map, Node, NodeError, NodeSpec, Outcome, Params, Value};

struct Llm;

impl Node for Llm {
    fn describe() -> NodeSpec {
        NodeSpec::new(
            "llm",
            "Ask a language model: summarize, interpret, decide. With output_schema the response \
             is structured JSON.",
        )
        .param("prompt", "str", "Text prompt to send to the model", true)
        .param("system", "str", "System prompt", false)
        .param("model", "str", "Model (the configured default when absent)", false)
        .param("temperature", "float", "Sampling temperature", false)
        .param("max_tokens", "int", "Response-length ceiling", false)
        .param("output_schema", "dict", "JSON Schema of a structured response", false)
        .param("timeout", "int", "Seconds the call may take (default 120)", false)
        .output("response", "any", "The text, or the parsed JSON with output_schema", true)
        .output("prompt", "str", "The prompt that was sent", true)
        .output("llm_usage", "dict", "Model and token counts", true)
    }

    fn run(params: Params) -> Result<Outcome, NodeError> {
        let prompt = match params.get("prompt") {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Null) | None => {
                return Err(NodeError::bad_params("Missing required parameter 'prompt'"))
            }
            // pflow renders a structured prompt as JSON text.
            Some(other) => pflow_sdk::python_json::to_string(other),
        };
        let mut request = Map::new();
        request.insert("prompt".to_string(), Value::String(prompt.clone()));
        for (param, field) in [
            ("system", "system"),
            ("model", "model"),
            ("temperature", "temperature"),
            ("max_tokens", "max_tokens"),
            ("output_schema", "output_schema"),
            ("timeout", "timeout_seconds"),
        ] {
            if let Some(value) = params.get(param).filter(|v| !v.is_null()) {
                request.insert(field.to_string(), value.clone());
            }
        }
        let schema = params.get("output_schema").filter(|v| !v.is_null()).is_some();
        let answer = llm::complete(&Value::Object(request))?;
        let response = match (schema, answer.get("structured")) {
            (true, Some(structured)) if !structured.is_null() => structured.clone(),
            _ => answer.get("text").cloned().unwrap_or(Value::Null),
        };
        let tokens = |name: &str| answer.get(name).and_then(Value::as_u64).unwrap_or(0);
        let mut usage = json!({
            "model": answer.get("model").cloned().unwrap_or(Value::Null),
            "input_tokens": tokens("input_tokens"),
            "output_tokens": tokens("output_tokens"),
            "total_tokens": tokens("input_tokens") + tokens("output_tokens"),
        });
        if let Some(cost) = answer.get("cost_usd").filter(|c| !c.is_null()) {
            usage["cost_usd"] = cost.clone();
        }
        Ok(json!({
            "response": response,
            "prompt": prompt,
            "llm_usage": usage,
        })
        .into())
    }
}

pflow_sdk::export_node!(Llm);
