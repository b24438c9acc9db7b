"""A raw stdio MCP server (no SDK) that writes what a hostile or broken server writes.

It speaks just enough JSON-RPC over newline-delimited stdio to be started, listed and called,
and lists two harmless tools (``echo``, ``add``) beside whatever its faults add. Faults, given
as arguments (``python -m tests.mcp_servers.hostile garbage deep=1000``):

* ``garbage``: a line of bytes that are not UTF-8 before every answer, and one in the middle of
  the listing's answer line's neighbours (``\\xff\\xfe...``);
* ``deep=N``: a tool ``deep`` whose ``inputSchema`` nests ``N`` levels;
* ``pattern=REGEX``: a tool ``match`` whose argument ``s`` has that ``pattern``, and whose
  ``outputSchema`` holds it too (its result repeats ``s`` as structured content);
* ``overlong=N``: a line of ``N`` bytes (no JSON) before the listing's answer;
* ``deep_result=N``: a tool ``nest`` whose structured result nests ``N`` levels;
* ``stderr=N``: ``N`` bytes written to stderr at start, then the line ``STDERR_TOKEN`` names;
* ``answer_overlong=N``: the answer to ``tools/call`` of ``big`` is one line of about ``N`` bytes.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

STDERR_TOKEN = "ghp_" + "Zq9X7w" * 5  # 34 characters, GitHub's shape
OBJECT = {"type": "object", "properties": {"text": {"type": "string"}}}


def faults() -> dict[str, str]:
    out: dict[str, str] = {}
    for arg in sys.argv[1:]:
        key, _, value = arg.partition("=")
        out[key] = value
    return out


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(max(0, depth - 1)):
        schema = {"type": "object", "properties": {"a": schema}}
    return {"type": "object", "properties": {"a": schema}}


def deep_text(depth: int) -> str:
    """A JSON object nesting ``depth`` levels, as text (json.dumps would give up first)."""
    return '{"a":' * (depth - 1) + '{"a":1' + "}" * depth


def tools(f: dict[str, str]) -> list[str]:
    """The listing's tools, each as JSON text (a deep one cannot go through json.dumps)."""
    out = [
        json.dumps({"name": "echo", "description": "Echo text.", "inputSchema": OBJECT}),
        json.dumps(
            {
                "name": "add",
                "description": "Add two numbers.",
                "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
                "annotations": {"readOnlyHint": True},
            }
        ),
    ]
    if "deep" in f:
        depth = int(f["deep"])
        out.append('{"name":"deep","description":"Deep.","inputSchema":' + _deep_schema_text(depth) + "}")
    if "pattern" in f:
        pattern = f["pattern"]
        schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}
        out.append(
            json.dumps(
                {
                    "name": "match",
                    "description": "Match a string.",
                    "inputSchema": schema,
                    "outputSchema": schema,
                    "annotations": {"readOnlyHint": True},
                }
            )
        )
    if "deep_result" in f:
        out.append(json.dumps({"name": "nest", "description": "A deep result.", "inputSchema": OBJECT}))
    if "answer_overlong" in f:
        out.append(json.dumps({"name": "big", "description": "A big answer.", "inputSchema": OBJECT}))
    return out


def _deep_schema_text(depth: int) -> str:
    inner = '{"type":"string"}'
    head = '{"type":"object","properties":{"a":'
    return head * depth + inner + "}}" * depth


def write(raw: bytes) -> None:
    sys.stdout.buffer.write(raw + b"\n")
    sys.stdout.buffer.flush()


def answer(request_id: Any, result_text: str, f: dict[str, str]) -> None:
    if "garbage" in f:
        write(b"\xff\xfe not utf-8 \xc3\x28 at all")
    write(('{"jsonrpc":"2.0","id":' + json.dumps(request_id) + ',"result":' + result_text + "}").encode())


def main() -> None:
    f = faults()
    if "stderr" in f:
        n = int(f["stderr"])
        chunk = b"noise " * 1000
        while n > 0:
            piece = chunk[: min(len(chunk), n)]
            sys.stderr.buffer.write(piece)
            n -= len(piece)
        sys.stderr.buffer.write(f"\nlogin failed, token {STDERR_TOKEN} rejected\n".encode())
        sys.stderr.buffer.flush()
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue  # a notification
        if method == "initialize":
            version = (message.get("params") or {}).get("protocolVersion") or "2025-06-18"
            result = {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
            answer(request_id, json.dumps(result), f)
        elif method == "tools/list":
            if "overlong" in f:
                write(b"x" * int(f["overlong"]))
            answer(request_id, '{"tools":[' + ",".join(tools(f)) + "]}", f)
        elif method == "tools/call":
            params = message.get("params") or {}
            name, args = params.get("name"), params.get("arguments") or {}
            if name == "nest":
                text = '{"content":[{"type":"text","text":"deep"}],"structuredContent":'
                answer(request_id, text + deep_text(int(f["deep_result"])) + "}", f)
            elif name == "big":
                blob = "b" * int(f["answer_overlong"])
                answer(request_id, json.dumps({"content": [{"type": "text", "text": blob}]}), f)
            elif name == "match":
                result = {"content": [{"type": "text", "text": "matched"}], "structuredContent": {"s": args.get("s")}}
                answer(request_id, json.dumps(result), f)
            else:
                text = json.dumps(args, sort_keys=True)
                answer(request_id, json.dumps({"content": [{"type": "text", "text": f"{name} {text}"}]}), f)
        elif method == "ping":
            answer(request_id, "{}", f)
        else:
            error = {"code": -32601, "message": f"no method {method}"}
            write(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode())
    os._exit(0)


if __name__ == "__main__":
    main()
