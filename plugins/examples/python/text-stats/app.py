"""Example Python node `text-stats`: word counts of a text, with the most frequent words.

Shows a node in Python end to end: params in (a string and an optional int), structured
outputs out (an int, a list of objects), the standard library (collections, re), a log line,
and a structured error for bad params. Build and install it with
`pflow-host plugin build plugins/examples/python/text-stats`.
"""

import collections
import heapq  # noqa: F401 (Counter.most_common imports it on first use; see the README)
import json
import re

import wit_world
from componentize_py_types import Err
from wit_world.imports import log
from wit_world.imports.types import NodeError, NodeOutput, NodeSpec, Port

TOP_SCHEMA = json.dumps(
    {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"word": {"type": "string"}, "count": {"type": "integer"}},
        },
    }
)


class WitWorld(wit_world.WitWorld):
    def describe(self) -> NodeSpec:
        return NodeSpec(
            name="text-stats",
            description="Counts the words of a text and lists the most frequent ones.",
            params=[
                Port("text", "str", "The text to count.", True, None),
                Port("top", "int", "How many frequent words to list (default 3).", False, None),
            ],
            outputs=[
                Port("words", "int", "How many words the text has.", True, None),
                Port("unique", "int", "How many different words.", True, None),
                Port("top", "list", "The most frequent words, most frequent first.", True, TOP_SCHEMA),
            ],
        )

    def run(self, params: str) -> NodeOutput:
        params = json.loads(params)
        text, top = params.get("text"), params.get("top", 3)
        if not isinstance(text, str):
            raise Err(bad_param("text", f"must be a string, got {type(text).__name__}", params))
        if not isinstance(top, int) or isinstance(top, bool) or top < 0:
            raise Err(bad_param("top", f"must be a whole number of 0 or more, got {top!r}", params))
        words = re.findall(r"[\w']+", text.lower())
        counts = collections.Counter(words)
        log.log(log.Level.DEBUG, f"{len(words)} words, {len(counts)} different")
        outputs = {
            "words": len(words),
            "unique": len(counts),
            "top": [{"word": w, "count": c} for w, c in counts.most_common(top)],
        }
        return NodeOutput(outputs=json.dumps(outputs), action=None)


def bad_param(name, problem, params):
    return NodeError(
        category="bad_params",
        message=f"Param '{name}' {problem}.",
        fixable=True,
        attempted=[name],
        available=sorted(params),
        sample=None,
    )
