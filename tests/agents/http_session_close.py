"""A Streamable HTTP client that closes its session (DELETE) while a live run is going: the run
is cancelled and its process dies. Raw HTTP (the standard library's http.client), so that the
close is the only thing that can stop the run: no cancel notification is sent.

    python3 http_session_close.py MARKER

PFLOW_HOST_BIN and the environment as for session.py. Exits non-zero with the failed step.
"""

import json
import os
import re
import subprocess
import sys
import threading
import time

from http.client import HTTPConnection
from urllib.parse import urlsplit

BIN = os.environ["PFLOW_HOST_BIN"]
MARKER = sys.argv[1]
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def marked():
    """PIDs of running processes whose environment holds PFLOW_TEST_MARKER=MARKER."""
    needle = f"PFLOW_TEST_MARKER={MARKER}".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as env:
                if needle in env.read().split(b"\0"):
                    with open(f"/proc/{pid}/stat") as stat:
                        if stat.read().rsplit(")", 1)[1].split()[0] != "Z":
                            found.append(pid)
        except OSError:
            pass
    return found


def wait_until(condition, seconds, what):
    until = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > until:
            sys.exit(f"FAILED: {what}")
        time.sleep(0.05)
    print(f"ok: {what}")


def main():
    server = subprocess.Popen([BIN, "mcp", "serve", "--http", "127.0.0.1:0"],
                              stderr=subprocess.PIPE, text=True)
    try:
        url = urlsplit(re.search(r"http://\S+", server.stderr.readline()).group(0))

        def post(connection, body, headers):
            connection.request("POST", url.path, body=json.dumps(body), headers=headers)
            return connection.getresponse()

        control = HTTPConnection(url.hostname, url.port, timeout=30)
        init = post(control, {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "1"}}}, HEADERS)
        session = init.getheader("mcp-session-id")
        init.read()
        headers = {**HEADERS, "mcp-session-id": session}
        post(control, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers).read()
        workflow = {"nodes": [{"id": "wait", "type": "shell", "params": {
            "command": "sleep 300", "env": {"PFLOW_TEST_MARKER": MARKER}}}]}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "workflow_execute", "arguments": {"workflow": workflow, "live": True}}}
        # Its own connection, left open and unread: only the DELETE may end the run.
        running = HTTPConnection(url.hostname, url.port, timeout=None)
        threading.Thread(target=lambda: post(running, call, headers), daemon=True).start()
        wait_until(lambda: marked(), 30, "the live run's command started")
        control.request("DELETE", url.path, headers={"mcp-session-id": session})
        print(f"ok: the session was closed ({control.getresponse().status})")
        wait_until(lambda: not marked(), 10, "closing the session killed the run's command")
        check = server.poll()
        if check is not None:
            sys.exit(f"FAILED: the server exited ({check}) when one session closed")
        print("ok: the server goes on serving")
    finally:
        server.terminate()
        server.wait(timeout=20)


if __name__ == "__main__":
    main()
