"""Replay recorded provider traffic (tests/fixtures/providers) at the wire level.

A :class:`Replay` is an ``httpx2.MockTransport`` handler: it serves canned responses in order
and records every request body the SDK sent. Nothing reaches the network.

Renaming: to prove that internal dotted names travel as wire names and come back, a test can
rename the tools of a recording (``get_weather`` -> the wire form of ``weather.get``) in both
the recorded requests and the recorded responses, consistently, with :func:`rename`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import httpx2
import yaml

from core.providers.base import ModelRequest, ResponseDone
from core.providers.wirenames import encode

FIXTURES = Path(__file__).parent / "fixtures" / "providers"
VERCEL = FIXTURES / "vercel-ai"
PYDANTIC = FIXTURES / "pydantic-ai"
NAME_KEYS = ("name", "tool_name", "namespace")


# --- reading fixtures ---------------------------------------------------------------------------


def chunk_lines(name: str) -> list[str]:
    """A vercel ``*.chunks.txt``: one SSE ``data:`` payload per line."""
    return [line for line in (VERCEL / name).read_text().splitlines() if line.strip()]


def split_sessions(lines: list[str], terminal: str) -> list[list[str]]:
    """Split concatenated responses at each ``terminal`` event (message_stop, response.completed)."""
    sessions, current = [], []
    for line in lines:
        current.append(line)
        if json.loads(line)["type"] == terminal:
            sessions.append(current)
            current = []
    assert not current, "trailing events after the last terminal event"
    return sessions


def sse(lines: Iterable[str]) -> bytes:
    """Payload lines as SSE, each wrapped as ``event: <type>`` + ``data: <line>``."""
    return "".join(f"event: {json.loads(line)['type']}\ndata: {line}\n\n" for line in lines).encode()


def vercel_json(name: str) -> dict[str, Any]:
    return json.loads((VERCEL / name).read_text())


def cassette(name: str) -> list[dict[str, Any]]:
    """A pydantic-ai VCR cassette's interactions (request ``parsed_body`` + response)."""
    return yaml.safe_load((PYDANTIC / name).read_text())["interactions"]


class Recording:
    """A pydantic-ai cassette, its tools optionally renamed to internal dotted names throughout."""

    def __init__(self, name: str, renames: dict[str, str] | None = None):
        self.internal = dict(renames or {})  # recorded name -> internal name
        self.to_wire = wire_map(self.internal)  # recorded name -> wire form of the internal name
        self.back = {self.to_wire[r]: n for r, n in self.internal.items()}  # wire -> internal
        self.interactions = cassette(name)
        self.requests = [rename(i["request"]["parsed_body"], self.to_wire) for i in self.interactions]
        self.responses = [rename(i["response"].get("parsed_body"), self.to_wire) for i in self.interactions]

    def replay(self) -> Replay:
        return Replay(cassette_response(i, self.to_wire) for i in self.interactions)

    def name(self, recorded: str) -> str:
        """The internal name standing in for a recorded tool name."""
        return self.internal.get(recorded, recorded)

    def internal_view(self, wire_obj: Any) -> Any:
        """Recorded wire content (blocks, messages) with internal names, as the engine holds it."""
        return rename(wire_obj, self.back)

    def tools(self, step: int, *, schema_key: str) -> list[dict[str, Any]]:
        return internal_tools(self.requests[step]["tools"], self.back, schema_key=schema_key)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


# --- renaming -----------------------------------------------------------------------------------


def wire_map(internal: dict[str, str]) -> dict[str, str]:
    """{recorded name: wire form of the internal name that stands in for it}."""
    return {recorded: encode(name) for recorded, name in internal.items()}


def rename(obj: Any, mapping: dict[str, str]) -> Any:
    """Replace tool names (values of name/tool_name/namespace keys, and search ``paths``)."""
    if not mapping:
        return obj
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            if key in NAME_KEYS and isinstance(value, str):
                out[key] = mapping.get(value, value)
            elif key == "paths" and isinstance(value, list):
                out[key] = [mapping.get(v, v) if isinstance(v, str) else v for v in value]
            else:
                out[key] = rename(value, mapping)
        return out
    if isinstance(obj, list):
        return [rename(v, mapping) for v in obj]
    return obj


def rename_lines(lines: list[str], mapping: dict[str, str]) -> list[str]:
    return [json.dumps(rename(json.loads(line), mapping)) for line in lines] if mapping else lines


def rename_sse_text(text: str, mapping: dict[str, str]) -> str:
    if not mapping:
        return text
    out = []
    for line in text.splitlines():
        if line.startswith("data:"):
            line = "data: " + json.dumps(rename(json.loads(line[5:]), mapping))
        out.append(line)
    return "\n".join(out) + "\n"


# --- serving ------------------------------------------------------------------------------------


def sse_response(body: bytes | str, status: int = 200, headers: dict[str, str] | None = None) -> httpx2.Response:
    data = body.encode() if isinstance(body, str) else body
    return httpx2.Response(status, headers={"content-type": "text/event-stream", **(headers or {})}, content=data)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(
        status, headers={"content-type": "application/json", **(headers or {})}, content=json.dumps(body).encode()
    )


def cassette_response(interaction: dict[str, Any], mapping: dict[str, str] | None = None) -> httpx2.Response:
    response = interaction["response"]
    status = response["status"]["code"]
    if "parsed_body" in response:
        return json_response(rename(response["parsed_body"], mapping or {}), status)
    return sse_response(rename_sse_text(response["body"]["string"], mapping or {}), status)


Responder = httpx2.Response | Callable[[httpx2.Request], httpx2.Response]


class Replay:
    """Serves ``responses`` in order (a callable is called with the request) and records requests."""

    def __init__(self, responses: Iterable[Responder]):
        self.responses = list(responses)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if not self.responses:
            raise AssertionError(f"unexpected extra request to {request.url}")
        nxt = self.responses.pop(0)
        return nxt(request) if callable(nxt) else nxt

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self))

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]


async def collect(provider: Any, request: ModelRequest) -> list[Any]:
    return [event async for event in provider.stream(request)]


def kinds(events: list[Any], kind: str) -> list[Any]:
    return [e for e in events if e.kind == kind]


def done(events: list[Any]) -> ResponseDone:
    assert events and events[-1].kind == "done", "the stream must end with ResponseDone"
    return events[-1]


def text_of(events: list[Any]) -> str:
    return "".join(e.text for e in kinds(events, "text_delta"))


def subset(body: dict[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    return {k: body[k] for k in keys if k in body}


def internal_tools(wire_tools: list[dict[str, Any]], back: dict[str, str], *, schema_key: str) -> list[dict[str, Any]]:
    """Recorded wire tools as the engine hands them to an adapter (internal names, input_schema)."""
    out = []
    for tool in copy.deepcopy(wire_tools):
        if tool.get("type") == "function" and "function" in tool:  # Chat Completions shape
            tool = {**tool["function"]}
        elif tool.get("type") not in (None, "function"):
            out.append(tool)  # a provider tool passes through as is
            continue
        internal = {"name": back.get(tool["name"], tool["name"])}
        if "description" in tool:
            internal["description"] = tool["description"]
        internal["input_schema"] = tool[schema_key]
        for key in ("defer_loading", "strict"):
            if key in tool:
                internal[key] = tool[key]
        out.append(internal)
    return out
