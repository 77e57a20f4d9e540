"""An agent's session with `pflow-host mcp serve`, through the MCP Python SDK's ClientSession.

    python3 session.py stdio|http

The server is started from PFLOW_HOST_BIN with the environment this script gets (PFLOW_HOME,
the plugin directories). JSON_URL is an HTTP endpoint serving {"user": ..., "items": ...,
"total": ...}; SCRATCH is a directory a dry probe must leave untouched. Exits non-zero with the
failed step on stderr.

The session: list the tools, find a node, probe it dry, validate a workflow with a wrong
extract path and get the available keys, fix it, execute it live, save it, find it.
"""

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

BIN = os.environ["PFLOW_HOST_BIN"]
JSON_URL = os.environ["JSON_URL"]
SCRATCH = Path(os.environ["SCRATCH"])


def check(condition, what, detail=None):
    if not condition:
        message = f"FAILED: {what}"
        if detail is not None:
            message += "\n" + (detail if isinstance(detail, str) else json.dumps(detail, indent=2))
        sys.exit(message)
    print(f"ok: {what}")


def workflow(extract_path):
    return {
        "inputs": {"who": {"type": "string", "required": True}},
        "nodes": [
            {"id": "fetch", "type": "http",
             "params": {"url": JSON_URL, "extract": {"name": extract_path}}},
            {"id": "greet", "type": "shell",
             "params": {"command": "echo hello ${who} from ${fetch.extracted.name}"}},
        ],
        "edges": [{"from": "fetch", "to": "greet"}],
        "outputs": {"greeting": {"source": "${greet.stdout}"}},
    }


async def session(client: ClientSession):
    await client.initialize()

    # 1. The tools, with schemas and annotations.
    tools = {t.name: t for t in (await client.list_tools()).tools}
    expected = {"workflow_find", "workflow_list", "workflow_describe", "workflow_validate",
                "workflow_execute", "workflow_save", "registry_find", "registry_describe",
                "probe", "read_fields", "guide"}
    check(expected <= set(tools), "1. every tool is listed", sorted(tools))
    check(tools["workflow_validate"].annotations.read_only_hint is True, "validate is read-only")
    check(tools["workflow_execute"].annotations.destructive_hint is True,
          "execute is marked destructive")
    check("workflow" in tools["workflow_execute"].input_schema["properties"],
          "execute takes a workflow")

    # 2. Find a node for a step.
    found = await client.call_tool("registry_find", {"query": "run a shell command"})
    types = [m["type"] for m in found.structured_content["matches"]]
    check(types[:3].count("shell") == 1, "2. registry_find ranks shell near the top", types)

    # 3. Probe it, dry: a file it writes is not written; the real output's paths come back.
    target = SCRATCH / "probe-wrote-this.txt"
    probe = await client.call_tool("probe", {
        "type": "shell",
        "params": {"command": f"echo '{{\"rows\": [1, 2]}}' && echo x > {target}"},
    })
    check(not probe.is_error, "3. a dry probe runs", probe.structured_content)
    result = probe.structured_content
    check(result["mode"] == "dry", "the probe was dry", result)
    paths = {p["path"] for p in result["paths"]}
    check("probe.stdout.rows" in paths, "the probe shows the paths inside its JSON output", result)
    check(not target.exists(), "a dry probe leaves no file")
    read = await client.call_tool("read_fields", {
        "execution_id": result["execution_id"], "paths": ["probe.stdout.rows[1]"]})
    check(read.structured_content["values"] == {"probe.stdout.rows[1]": 2},
          "read_fields reads a value of the probe", read.structured_content)

    # 4. A wrong extract path: runtime validation names the keys that are there.
    broken = workflow("$.user.fullname")
    checked = await client.call_tool("workflow_validate", {
        "workflow": broken, "params": {"who": "Bob"}, "runtime": True})
    report = checked.structured_content
    check(report["valid"] is False, "4. runtime validation refuses the wrong path", report)
    errors = report["runtime"]["runtime_errors"]
    check(any(e.get("available") == ["items", "total", "user"] for e in errors),
          "the error lists the available keys", errors)

    # 5. The fix validates, statically and at run time.
    fixed = workflow("$.user.name")
    checked = await client.call_tool("workflow_validate", {
        "workflow": fixed, "params": {"who": "Bob"}, "runtime": True})
    check(checked.structured_content["valid"] is True, "5. the fixed workflow validates",
          checked.structured_content)

    # 6. Live, with progress notifications.
    progress = []

    async def on_progress(done, total, message):
        progress.append((done, total, message))

    ran = await client.call_tool("workflow_execute",
                                 {"workflow": fixed, "params": {"who": "Bob"}, "live": True},
                                 progress_callback=on_progress)
    run = ran.structured_content
    check(not ran.is_error and run["status"] == "succeeded", "6. the live run succeeds", run)
    check(run["outputs"]["greeting"] == "hello Bob from Ada", "its output is right", run)
    check(run["mode"] == "live" and re.match(r"^\S+$", run["run_id"]), "it has a run id", run)
    check(any(total == 2 for _, total, _ in progress), "progress came while it ran", progress)

    # 7. Saved under a name.
    saved = await client.call_tool("workflow_save", {
        "workflow": fixed, "name": "greet-api-user",
        "description": "Greet someone with the name of the user the API returns"})
    check(not saved.is_error, "7. the workflow is saved", saved.structured_content)
    check(saved.structured_content["example"] == "pflow-host greet-api-user who=...",
          "the save says how to run it", saved.structured_content)

    # 8. Found again.
    found = await client.call_tool("workflow_find", {"query": "greeting with the API user's name"})
    names = [m["name"] for m in found.structured_content["matches"]]
    check(names[:1] == ["greet-api-user"], "8. workflow_find finds it first", names)

    # The server keeps going after bad requests, with errors in the one shape.
    bad = await client.call_tool("workflow_execute", {"workflow": {"nodes": [{"id": "a", "type": "shel"}]}})
    check(bad.is_error and bad.structured_content["category"] == "unknown_node_type"
          and bad.structured_content["fixable"] is True,
          "an unknown node type is a fixable error result", bad.structured_content)
    bad = await client.call_tool("workflow_describe", {"workflow": "no-such-workflow"})
    check(bad.is_error and "no-such-workflow" in bad.structured_content["message"],
          "an unknown saved name is an error result", bad.structured_content)
    again = await client.call_tool("workflow_execute", {"workflow": "greet-api-user",
                                                        "params": {"who": "Eve"}})
    check(again.structured_content["outputs"]["greeting"] == "hello Eve from Ada"
          and again.structured_content["mode"] == "dry",
          "the saved workflow runs by name, dry by default", again.structured_content)


async def main(transport):
    env = dict(os.environ)
    if transport == "stdio":
        params = StdioServerParameters(command=BIN, args=["mcp", "serve"], env=env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as client:
                await session(client)
        return
    server = subprocess.Popen([BIN, "mcp", "serve", "--http", "127.0.0.1:0"], env=env,
                              stderr=subprocess.PIPE, text=True)
    try:
        line = server.stderr.readline()
        url = re.search(r"http://\S+", line)
        check(url is not None, "the HTTP server says where it listens", line)
        async with streamable_http_client(url.group(0)) as (read, write):
            async with ClientSession(read, write) as client:
                await session(client)
    finally:
        server.terminate()
        check(server.wait(timeout=20) == 0, "the HTTP server stops cleanly on SIGTERM")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
