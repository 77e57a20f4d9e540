"""The {{name}} node: upper-cases `text` into `result`.

The host calls `describe` once when the plugin is installed, and `run` for every execution,
with the node's params as a JSON object. `run` returns the outputs as a JSON object, or raises
`Err(NodeError(...))`: the host reports it like any node's failure.
"""

import json

import wit_world
from componentize_py_types import Err
from wit_world.imports import log
from wit_world.imports.types import NodeError, NodeOutput, NodeSpec, Port


class WitWorld(wit_world.WitWorld):
    def describe(self) -> NodeSpec:
        return NodeSpec(
            name="{{name}}",
            description="Upper-cases a text.",
            params=[Port("text", "str", "The text to upper-case.", True, None)],
            outputs=[Port("result", "str", "The text, upper-cased.", True, None)],
        )

    def run(self, params: str) -> NodeOutput:
        text = json.loads(params).get("text")
        if not isinstance(text, str):
            raise Err(
                NodeError(
                    category="bad_params",
                    message=f"Param 'text' must be a string, got {type(text).__name__}.",
                    fixable=True,
                    attempted=["text"],
                    available=[],
                    sample=None,
                )
            )
        log.log(log.Level.DEBUG, f"upper-casing {len(text)} characters")
        return NodeOutput(outputs=json.dumps({"result": text.upper()}), action=None)
