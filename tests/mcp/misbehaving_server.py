"""An MCP server (stdio, Python SDK) that misbehaves on request, for the tests.

Tools: `fail` reports an error (isError), `crash` kills the server mid-call, `hang` never
answers. It writes its process id to the file named by $PFLOW_TEST_PID_FILE, so that a test can
check it is gone after the run.
"""

import os
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("misbehaving")

pid_file = os.environ.get("PFLOW_TEST_PID_FILE")
if pid_file:
    with open(pid_file, "a") as f:
        f.write(f"{os.getpid()}\n")


@server.tool()
def fail(reason: str) -> str:
    """Fails with the given reason."""
    raise RuntimeError(f"the backend is down: {reason}")


@server.tool()
def crash() -> str:
    """Exits the server in the middle of the call."""
    os._exit(3)


@server.tool()
def hang() -> str:
    """Never answers."""
    while True:
        time.sleep(1)


if __name__ == "__main__":
    server.run()
