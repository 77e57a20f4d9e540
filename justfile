# pflow-host recipes. On a fresh machine start with ./dev, which installs `just` itself:
#   ./dev demo    run the example workflow end to end
#   ./dev test    run every check and test

set shell := ["bash", "-euo", "pipefail", "-c"]

# List the recipes
default:
    @just --list

# Install the wasm toolchains when missing: Debian's rustc 1.63 with wasm32-wasi, componentize-py
setup:
    cargo run -q -p pflow-plugin-build -- toolchain

# Build every plugin into a component: built-ins in target/plugins (the Rust crates, and the
# `code` node in Python), test plugins in target/test-plugins
plugins:
    cargo run -q -p pflow-plugin-build

# Build the release binary, the LLM stand-in and the plugins
build: plugins
    cargo build --release -p pflow-host -p pflow-llm-standin

# Run the example workflow end to end
demo: build
    ./target/release/pflow-host registry list
    ./target/release/pflow-host run examples/word-count.json
    ./target/release/pflow-host run examples/word-count.json text="to be or not to be that is the question" top=2
    # pflow 0.16's .pflow.md: a parallel batch, a file written and read back
    ./target/release/pflow-host run examples/word-stats.pflow.md
    # Planning, against the LLM stand-in replaying examples/planner/count-words.answers.json (the
    # first answer misspells a node type, so the retry shows too); a real model needs only
    # ANTHROPIC_API_KEY or OPENAI_API_KEY and --model.
    ./target/release/pflow-llm-standin examples/planner/count-words.answers.json -- \
        ./target/release/pflow-host "count the words in README.md" --model claude-sonnet-4-5 --yes

# The real peers the tests talk to: MCP servers from npm, the MCP and httpbin packages from PyPI,
# bubblewrap (the dry-run fallback) from Debian; and the JavaScript and C node toolchains
test-peers:
    cargo run -q -p pflow-plugin-build -- toolchain --all
    command -v bwrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap \
        || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap)
    npm ci --prefix tests/mcp --no-audit --no-fund --loglevel=error
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "mcp>=2,<3" httpbin
    # pflow 0.16 itself, the reference the differential tests compare against
    test -x target/pflow-venv/bin/pflow || (python3 -m venv target/pflow-venv \
        && target/pflow-venv/bin/pip install --quiet --disable-pip-version-check pflow-cli==0.16.0)

# Every check: formatting, lints, the plugin build, the acceptance scripts, all tests
test: plugins test-peers
    cargo fmt --all --check
    cargo clippy --workspace --all-targets -q -- -D warnings
    just acceptance
    if cargo nextest --version >/dev/null 2>&1; then cargo nextest run --workspace --no-fail-fast; else cargo test --workspace --no-fail-fast; fi

# Example workflows against real services started for the purpose (httpbin from PyPI)
acceptance:
    cargo build -q -p pflow-host
    scripts/acceptance-http.sh target/debug/pflow-host

# The benchmarks (release build); each prints its figure
bench: build test-peers
    cargo bench -p pflow-runtime --bench node_overhead
    cargo bench -p pflow-runtime --bench http_extract
    cargo bench -p pflow-validate --bench validate_large
    cargo bench -p pflow-runtime --bench mcp_echo
    cargo bench -p pflow-runtime --bench runtime_validation_overhead
    cargo bench -p pflow-runtime --bench dry_shell_overhead
    cargo bench -p pflow-runtime --bench checkpoint
    cargo bench -p pflow-host --bench run_example
    cargo bench -p pflow-host --bench vs_pflow
    cargo bench -p pflow-host --bench agent_tools
    cargo bench -p pflow-host --bench language_nodes
    cargo bench -p pflow-runtime --bench batch_overhead
    cargo bench -p pflow-planner --bench planner_overhead
