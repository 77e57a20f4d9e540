"""A hostile Python node: each `mode` tries to escape or exhaust the sandbox.

- `loop`: computes forever.
- `memory`: grows a list until memory runs out.
- `sleep`: sleeps for an hour.
- `http`: sends a request to `url` through the `http` capability.
- `secrets`: reads files and the environment, and opens a socket.
"""

import encodings.idna  # noqa: F401 (socket needs it to resolve a name)
import json
import os
import socket
import time

import wit_world
from componentize_py_types import Err
from wit_world.imports import http
from wit_world.imports.types import NodeError, NodeOutput, NodeSpec, Port


class WitWorld(wit_world.WitWorld):
    def describe(self) -> NodeSpec:
        return NodeSpec(
            name="hostile-py",
            description="Tries to escape or exhaust the sandbox (tests only).",
            params=[Port("mode", "str", "loop, memory, sleep, http or secrets", True, None)],
            outputs=[Port("result", "any", "What it got", True, None)],
        )

    def run(self, params: str) -> NodeOutput:
        params = json.loads(params)
        mode = params["mode"]
        if mode == "loop":
            n = 0
            while True:
                n += 1
        if mode == "memory":
            hoard = []
            while True:
                hoard.append(bytearray(1 << 20))
        if mode == "sleep":
            time.sleep(3600)
            return output("woke up")
        if mode == "http":
            request = http.Request("GET", params["url"], [], [], None, 5000, 0)
            response = http.send(request)
            return output({"status": response.status})
        if mode == "secrets":
            found = {"environ": dict(os.environ)}
            for path in ("/etc/passwd", os.path.expanduser("~/.ssh/id_rsa"), "."):
                try:
                    found[path] = open(path).read() if path != "." else os.listdir(path)
                except OSError as e:
                    found[path] = f"refused: {type(e).__name__}"
            try:
                socket.create_connection(("127.0.0.1", int(params.get("port", 80))), timeout=2)
                found["socket"] = "connected"
            except OSError as e:
                found["socket"] = f"refused: {type(e).__name__}"
            return output(found)
        raise Err(NodeError("bad_params", f"unknown mode {mode!r}", True, ["mode"], [], None))


def output(value):
    return NodeOutput(outputs=json.dumps({"result": value}), action=None)
