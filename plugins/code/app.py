"""pflow's `code` node, in the sandbox.

pflow runs the code with `exec()` inside its own process, with whatever the process can reach.
Here the same interface (params `code`, `inputs`, `timeout`; outputs `result`, `stdout`,
`stderr`; annotated inputs checked against their values; `next` for routing) runs in CPython
compiled to WebAssembly: no files, no network, no environment, under the node's fuel, memory
and time limits. The standard library imports as usual; what it would reach outside is not
there. The host enforces `timeout` (its schema says so), since nothing in the sandbox can
interrupt a running interpreter.
"""

import ast
import builtins
import io
import json
import sys
import traceback
import typing

# The standard library the code may import. componentize-py runs these imports at build time
# and keeps the initialised interpreter; the library's files are not in the sandbox at run time,
# so a module that is not loaded here cannot be imported by the code.
import abc, argparse, array, base64, binascii, bisect, calendar, cmath, collections  # noqa: E401,F401
import collections.abc, colorsys, contextlib, copy, csv, dataclasses, datetime, decimal  # noqa: E401,F401
import difflib, enum, fnmatch, fractions, functools, gzip, hashlib, heapq, hmac, html  # noqa: E401,F401
import html.parser, http, http.client, ipaddress, itertools, keyword, locale, math  # noqa: E401,F401
import numbers, operator, os, os.path, pathlib, pprint, queue, random, re, secrets  # noqa: E401,F401
import shlex, socket, statistics, string, struct, tempfile, textwrap, time, tomllib  # noqa: E401,F401
import types, unicodedata, urllib, urllib.parse, uuid, warnings, zlib  # noqa: E401,F401
import encodings.idna, xml.dom.minidom, xml.etree.ElementTree, zoneinfo  # noqa: E401,F401

import wit_world
from componentize_py_types import Err
from wit_world.imports.types import NodeError, NodeOutput, NodeSpec, Port

DEFAULT_TIMEOUT_SECONDS = 30

# Only the outer type is checked: `list[dict]` checks `list`.
TYPE_MAP = {
    "int": int,
    "float": (int, float),
    "str": str,
    "bool": bool,
    "list": list,
    "dict": dict,
    "set": set,
    "tuple": tuple,
    "bytes": bytes,
}

SANDBOX_HINT = (
    "The code node runs in a sandbox with no files, network or environment variables: pass "
    "data in through `inputs` (from a read-file, http or shell node) and return it as `result`."
)


class CodeFailure(Exception):
    def __init__(self, category, message, param=None, sample=None):
        super().__init__(message)
        self.category = category
        self.message = message
        self.param = param
        self.sample = sample


def _port(name, type_, description, required, schema=None):
    return Port(name, type_, description, required, None if schema is None else json.dumps(schema))


class WitWorld(wit_world.WitWorld):
    def describe(self) -> NodeSpec:
        return NodeSpec(
            name="code",
            description=(
                "Run Python code on typed inputs, sandboxed (no files, network or environment). "
                "Declare each input with an annotation (`data: list`) and assign `result: <type> = ...`; "
                "`next: str = 'action'` routes. print() goes to stdout."
            ),
            params=[
                _port("code", "str", "Python code: annotated inputs, then `result: <type> = ...`", True),
                _port("inputs", "dict", "Variables for the code, by name (templates allowed)", False),
                _port(
                    "timeout",
                    "int",
                    "Seconds the code may run (default 30)",
                    False,
                    {
                        "type": "number",
                        "default": DEFAULT_TIMEOUT_SECONDS,
                        "x-pflow-wall-time": "seconds",
                    },
                ),
                _port("requires", "list", "Packages the code needs (documentation only)", False),
            ],
            outputs=[
                _port("result", "any", "The value of `result` after the code ran", False),
                _port("stdout", "str", "What the code printed", True),
                _port("stderr", "str", "What the code wrote to stderr", True),
            ],
        )

    def run(self, params: str) -> NodeOutput:
        try:
            outputs, action = execute(json.loads(params))
        except CodeFailure as failure:
            raise Err(
                NodeError(
                    category=failure.category,
                    message=failure.message,
                    fixable=True,
                    attempted=[failure.param] if failure.param else [],
                    available=[],
                    sample=failure.sample,
                )
            )
        return NodeOutput(outputs=json.dumps(outputs, default=_jsonable), action=action)


def execute(params):
    code = params.get("code")
    if not isinstance(code, str) or not code.strip():
        raise CodeFailure(
            "bad_params",
            "Missing required 'code' parameter\n\nProvide a Python code string with type-annotated "
            'inputs and result.\nExample:\n  "code": "data: list\\nresult: list = data[:10]"',
            "code",
        )
    _check_timeout(params.get("timeout", DEFAULT_TIMEOUT_SECONDS))
    inputs = params.get("inputs", {})
    if not isinstance(inputs, dict):
        raise CodeFailure(
            "bad_params", f"'inputs' parameter must be a dict, got {type(inputs).__name__}", "inputs"
        )
    try:
        tree = ast.parse(code)
    except SyntaxError as e:
        raise CodeFailure("code_error", _syntax_message(e, code), "code") from None
    annotations = _annotations(tree, code)
    _check_inputs(inputs, annotations)
    has_result = "result" in annotations
    if not has_result and "next" not in annotations:
        raise CodeFailure(
            "code_error",
            "Code must declare result type annotation (result: <type> = ...) "
            "or next type annotation (next: str = ...) for routing",
            "code",
        )

    namespace = {
        "__builtins__": builtins,
        "__name__": "__main__",
        "typing": typing,
        "Optional": typing.Optional,
        "Any": typing.Any,
    }
    namespace.update(inputs)
    stdout, stderr = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = stdout, stderr
    try:
        exec(compile(tree, "<code>", "exec"), namespace)
    except Exception as exc:
        raise CodeFailure("code_error", _exec_message(exc, code), "code", _captured(stdout, stderr)) from None
    finally:
        sys.stdout, sys.stderr = saved

    outputs = {"stdout": stdout.getvalue(), "stderr": stderr.getvalue()}
    if has_result:
        if "result" not in namespace:
            raise CodeFailure("code_error", "Code must set 'result' variable. Add: result = <your_value>", "code")
        value = namespace["result"]
        declared = annotations["result"]
        actual = _mismatch(value, declared)
        if actual:
            raise CodeFailure(
                "code_error",
                f"Result declared as {declared} but code returned {actual}\n\nSuggestions:\n"
                f"  - Change result type annotation to: result: {actual}\n"
                "  - Or convert the value to match the declared type",
                "code",
            )
        outputs["result"] = value
    action = None
    if "next" in namespace:
        action = namespace["next"]
        if not isinstance(action, str) or not action:
            raise CodeFailure(
                "code_error", f"'next' must be a non-empty string, got {action!r}", "code"
            )
    return outputs, action


def _check_timeout(timeout):
    try:
        seconds = float(timeout)
    except (TypeError, ValueError):
        raise CodeFailure("bad_params", f"Timeout must be a positive number, got {timeout!r}", "timeout") from None
    if seconds <= 0:
        raise CodeFailure("bad_params", f"Timeout must be a positive number, got {timeout}", "timeout")


def _annotations(tree, code):
    """Every `name: type` annotation in the code, as written (the interpreter here lacks
    `ast.unparse`'s helper module, so the source text is used)."""
    return {
        node.target.id: ast.get_source_segment(code, node.annotation) or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }


def _check_inputs(inputs, annotations):
    missing = [name for name in inputs if name not in annotations]
    if missing:
        hints = "\n".join(f"  {name}: <type>" for name in missing)
        raise CodeFailure(
            "code_error",
            f"Input(s) missing type annotation in code: {', '.join(missing)}\nAdd annotations:\n{hints}",
            "code",
        )
    for name, value in inputs.items():
        declared = annotations[name]
        actual = _mismatch(value, declared)
        if actual:
            raise CodeFailure(
                "bad_params",
                f"Input '{name}' expects {declared} but received {actual}\n\nSuggestions:\n"
                f"  - Change the type annotation to: {name}: {actual}\n"
                f"  - Or convert the input value to {declared}\n"
                f"  - Or use `Any` to accept any type: {name}: Any",
                "inputs",
                sample=_short(value),
            )


def _mismatch(value, declared):
    """The value's type name when it does not match the annotation, else None."""
    expected = _outer_type(declared)
    if expected is None or isinstance(value, expected):
        return None
    return type(value).__name__


def _outer_type(declared):
    """The isinstance() check for an annotation: `list[dict]` is `list`, `str | None` adds
    NoneType; None for a type the check skips (user classes, `Any`)."""
    text = declared.strip()
    for prefix in ("typing.Optional[", "Optional["):
        if text.startswith(prefix) and text.endswith("]"):
            return _with_none(_outer_type(text[len(prefix) : -1]))
    parts = [p.strip() for p in text.split("|")]
    if "None" in parts and len(parts) > 1:
        return _with_none(_outer_type(" | ".join(p for p in parts if p != "None")))
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1].strip()
    return TYPE_MAP.get(text.split("[")[0].strip())


def _with_none(inner):
    if inner is None:
        return None
    return (*inner, type(None)) if isinstance(inner, tuple) else (inner, type(None))


def _location(line, code):
    lines = code.splitlines()
    source = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    location = f"  Location: line {line} in code block"
    return f"{location}\n  Source: {source}" if source else location


def _syntax_message(error, code):
    message = f"Python syntax error in code: {error.msg}"
    if error.lineno:
        message += "\n" + _location(error.lineno, code)
    return message


def _exec_message(exc, code):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<code>"]
    location = _location(frames[-1].lineno, code) if frames and frames[-1].lineno else ""
    if isinstance(exc, NameError):
        message = f"Undefined variable '{getattr(exc, 'name', exc)}'"
        suggestions = (
            f"  - Add '{getattr(exc, 'name', exc)}' to the inputs dict\n"
            "  - Or define it in the code before use\n"
            "  - Check for typos in variable names"
        )
    elif isinstance(exc, ImportError):
        module = getattr(exc, "name", None) or str(exc)
        message = f"Module '{module}' not found"
        suggestions = (
            "  - The sandbox's Python has most of the standard library (json, re, math, statistics, "
            "datetime, collections, itertools, csv, decimal, hashlib, ...) and no third-party "
            "packages: compute with those, or use another node"
        )
    elif isinstance(exc, OSError):
        message = f"{type(exc).__name__}: {exc}"
        suggestions = "  - " + SANDBOX_HINT
    else:
        message = f"{type(exc).__name__}: {exc}"
        suggestions = "  - Fix the error in the code string above\n  - Check input data types and values match expectations"
    if location:
        message += "\n" + location
    return f"{message}\n\nSuggestions:\n{suggestions}"


def _captured(stdout, stderr):
    text = stdout.getvalue() + stderr.getvalue()
    return _short(text) if text else None


def _short(value):
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


def _jsonable(value):
    """What json.dumps cannot write: sets and tuples as lists, bytes as text, others as repr."""
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return repr(value)
