#!/usr/bin/env bash
# Runs the http example workflows against a real httpbin (PyPI) that this script starts on
# loopback, and checks what they produce. Usage: scripts/acceptance-http.sh [path/to/pflow-host]
set -euo pipefail
cd "$(dirname "$0")/.."
pflow=${1:-target/debug/pflow-host}

if ! python3 -c 'import httpbin' 2>/dev/null; then
    echo "acceptance: installing httpbin (PyPI)" >&2
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore httpbin
fi
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m httpbin.core --host 127.0.0.1 --port "$port" >/tmp/pflow-httpbin-$port.log 2>&1 &
server=$!
home=$(mktemp -d)
trap 'kill $server 2>/dev/null; rm -rf "$home"' EXIT
base="http://127.0.0.1:$port"
for _ in $(seq 100); do
    python3 -c "import urllib.request; urllib.request.urlopen('$base/get', timeout=1)" 2>/dev/null && break
    sleep 0.1
done

passed=0
failed=0
# check NAME EXPECTED-PYTHON-EXPRESSION WORKFLOW [inputs...]: `r` is the JSON report.
check() {
    local name=$1 expectation=$2 workflow=$3
    shift 3
    local report
    report=$(PFLOW_HOME=$home "$pflow" run "$workflow" "base_url=$base" "$@" --output-format json || true)
    if python3 -c "import json, sys; r = json.loads(sys.argv[1]); sys.exit(0 if ($expectation) else 1)" "$report"; then
        echo "  ok   $name"
        passed=$((passed + 1))
    else
        echo "  FAIL $name"
        echo "$report" | sed 's/^/       /'
        failed=$((failed + 1))
    fi
}

echo "acceptance: example workflows against httpbin at $base"
check "extract from /json and use it in a shell node" \
    "r['outputs']['summary'] == 'Sample Slide Show by Yours Truly opens with \"Wake up to WonderWidgets!\", then \"Overview\"'" \
    examples/http-extract.json
check "POST JSON with query and bearer token" \
    "r['outputs']['echoed'] == {'name': 'Grace', 'method': 'POST', 'source': 'pflow', 'authorization': 'Bearer demo-token'}" \
    examples/http-post.json name=Grace
check "a 404 routes along the error edge" \
    "r['status'] == 'succeeded' and r['outputs']['result'].startswith('fell back: HTTP 404 Not Found from GET')" \
    examples/http-fallback.json
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
