"""A request body made of JSON written once per message, handed to the SDK ready to send.

An SDK's ``create`` walks every value of its body each time it is called (the OpenAI SDK's
``_async_transform_recursive``, the Anthropic SDK's ``copy_tree``) and then serialises it all: for a
long chat, most of a turn's CPU goes to the history it already sent last time. So each adapter
keeps each history item's JSON text (:class:`HistoryWire`), and the body is joined from those
texts and the request's small values, and sent through the SDK's own client with ``post(...,
content=body)``: the SDK still builds the headers, authenticates, applies its timeouts, sends on
its HTTP client (so :mod:`core.providers._pacing` still paces the answer) and parses the stream
(nothing here reads SSE).

A :class:`Route` is what one SDK method adds to a request that ``post`` alone would not: its path,
the order its body literal writes the keys in, the body keys it sets itself (``"stream": true``),
its extra headers (the Anthropic stream helper's), its security option (OpenAI's bearer auth),
and what it parses the answer into. The routes below are read from the SDK's own methods
(openai 3.57, anthropic 2.15); ``tests/unit/test_raw_bodies.py`` sends every shape of request the
adapters make both ways, through the SDK's method and through its route, to the loopback server,
and holds the bodies byte-identical and the headers equal, so an SDK that changes its methods
fails that test rather than sending something else.

Serialisation is the SDKs' own ``openapi_dumps``: ``json.dumps`` with ``ensure_ascii=False``,
``separators=(",", ":")``, ``allow_nan=False``, UTF-8. A JSON array is its items' texts joined by
commas, so a list joined from kept texts is the bytes the SDK would write for that list.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.memo import PrefixMemo


def dumps(value: Any) -> bytes:
    """``value`` as the SDKs serialise a body (``openapi_dumps``)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


@dataclass(frozen=True)
class Route:
    """One SDK method's request, as ``post`` must be told it (see the module)."""

    path: str
    order: tuple[str, ...]  # every key the method's body may hold, in the order it writes them
    history: str  # the key the history goes under
    added: Mapping[str, Any] = field(default_factory=dict)  # body keys the method sets itself
    headers: Mapping[str, str] = field(default_factory=dict)  # headers the method adds
    security: Mapping[str, bool] | None = None  # the OpenAI SDK's security option

    def options(self, extra_headers: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The ``options`` for ``post``: the method's headers, then the request's own."""
        options: dict[str, Any] = {}
        headers = {**self.headers, **(extra_headers or {})}
        if headers:
            options["headers"] = headers
        if self.security is not None:
            options["security"] = dict(self.security)
        return options


def post(
    client: Any,
    route: Route,
    content: bytes,
    *,
    cast_to: Any,
    stream_cls: Any = None,
    headers: Mapping[str, str] | None = None,
) -> Any:
    """The SDK client's own ``post`` of a ready body on ``route`` (an awaitable): streamed, parsed
    into ``stream_cls``'s events, when one is given, else one answer parsed as ``cast_to``."""
    options = route.options(headers)
    if stream_cls is None:
        return client.post(route.path, cast_to=cast_to, content=content, options=options)
    return client.post(
        route.path, cast_to=cast_to, content=content, options=options, stream=True, stream_cls=stream_cls
    )


class UnplacedKey(Exception):
    """A body key the route does not know the place of: the request goes through the SDK's
    method instead (never a body in an order the SDK would not write)."""


def body(route: Route, params: Mapping[str, Any], history: bytes) -> bytes:
    """The request body: ``params`` and ``route.added`` in the route's order, the history's list
    as the kept text ``history`` (a JSON array)."""
    values = {**params, **route.added}
    unplaced = set(values) - set(route.order)
    if unplaced:
        raise UnplacedKey(", ".join(sorted(unplaced)))
    parts = []
    for key in route.order:
        if key in values:
            text = history if key == route.history else dumps(values[key])
            parts.append(b'"' + key.encode() + b'":' + text)
    return b"{" + b",".join(parts) + b"}"


def joined(texts: Iterable[bytes]) -> bytes:
    """A JSON array from its items' texts (empty texts, items that went nowhere, left out)."""
    return b"[" + b",".join(filter(None, texts)) + b"]"


Convert = Callable[[Any, dict[str, Any]], tuple[Any, list[dict[str, Any]]]]
"""``(state, message) -> (state, the message's wire items)``: one engine message on a wire."""


class HistoryWire:
    """One adapter's wire form of the history, message by message, kept across requests: each
    engine message's wire items and their JSON text are made once (:class:`core.memo.PrefixMemo`,
    by the message's identity), while ``key`` (what else the items depend on: the name table, the
    tools a search answer expands into) stays the same. The flat list of items and the JSON text
    of all but the newest message are kept too, so a request costs what is new (and a few copies)."""

    def __init__(self, convert: Convert, start: Any = None):
        def step(state: Any, message: dict[str, Any]) -> tuple[Any, tuple[list[dict[str, Any]], bytes]]:
            state, items = convert(state, message)
            return state, (items, b",".join(dumps(i) for i in items))

        self._memo: PrefixMemo[dict[str, Any], tuple[list[dict[str, Any]], bytes], Any] = PrefixMemo(step, start)
        self._items: list[dict[str, Any]] = []  # every message's items, flat
        self._ends: list[int] = []  # where each message's items end in _items
        self._texts: list[bytes] = []  # each message's items' JSON text
        self._joined: tuple[int, bytes] = (0, b"")  # the texts of the first n messages, joined

    @property
    def stepped(self) -> int:
        """Messages converted in all (a chat that only grows: about one each)."""
        return self._memo.stepped

    def run(self, messages: Sequence[dict[str, Any]], key: Hashable) -> list[dict[str, Any]]:
        """Every wire item of ``messages`` in order (a list of the caller's own; the items are
        shared: never change one, copy it)."""
        outputs, _ = self._memo.run(messages, key)
        keep = self._memo.kept
        if self._joined[0] > keep:  # messages the joined text holds changed
            self._joined = (0, b"")
        items = self._items[: self._ends[keep - 1]] if keep else []
        ends, texts = self._ends[:keep], self._texts[:keep]
        for own, text in outputs[keep:]:
            items.extend(own)
            ends.append(len(items))
            texts.append(text)
        self._items, self._ends, self._texts = items, ends, texts
        return list(items)

    def body(self, *, head: bytes = b"", last: bytes | None = None) -> bytes:
        """The JSON array of the items of the last :meth:`run`, led by ``head`` (an item's text:
        Chat Completions' system message); ``last`` in place of the last item's own text
        (Anthropic's cache marker on the newest message)."""
        texts = self._texts
        if last is not None and texts and not texts[-1]:
            # the newest message went nowhere: the marked one is an earlier message's
            at = next(i for i in range(len(texts) - 1, -1, -1) if texts[i])
            return joined([head, *texts[:at], last, *texts[at + 1 :]])
        stable = max(len(texts) - 1, 0)  # all but the newest: the part the next request repeats
        done, text = self._joined
        if done > stable:
            done, text = 0, b""
        rest = b",".join(filter(None, texts[done:stable]))
        text = text + b"," + rest if text and rest else text or rest
        self._joined = (stable, text)
        newest = last if last is not None else (texts[-1] if texts else b"")
        return b"[" + b",".join(part for part in (head, text, newest) if part) + b"]"


# --- the routes ------------------------------------------------------------------------------------

_ANTHROPIC_CREATE_ORDER = (
    "max_tokens",
    "messages",
    "model",
    "cache_control",
    "container",
    "diagnostics",
    "inference_geo",
    "metadata",
    "output_config",
    "service_tier",
    "speed",
    "stop_sequences",
    "stream",
    "system",
    "thinking",
    "tool_choice",
    "tools",
)
_ANTHROPIC_STREAM_ORDER = (
    "max_tokens",
    "messages",
    "model",
    "cache_control",
    "diagnostics",
    "inference_geo",
    "metadata",
    "output_config",
    "container",
    "service_tier",
    "speed",
    "stop_sequences",
    "system",
    "tools",
    "thinking",
    "tool_choice",
    "stream",
)
ANTHROPIC_CREATE = Route("/v1/messages", _ANTHROPIC_CREATE_ORDER, "messages")
"""``AsyncAnthropic.messages.create`` without ``stream``."""
ANTHROPIC_STREAM = Route(
    "/v1/messages",
    _ANTHROPIC_STREAM_ORDER,
    "messages",
    added={"stream": True},
    headers={"x-stainless-helper-method": "stream", "x-stainless-stream-helper": "messages"},
)
"""``AsyncAnthropic.messages.stream``: the stream helper's body order and headers."""

_CHAT_ORDER = (
    "model",
    "stream",
    "service_tier",
    "messages",
    "audio",
    "frequency_penalty",
    "function_call",
    "functions",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "metadata",
    "modalities",
    "moderation",
    "n",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning_effort",
    "response_format",
    "safety_identifier",
    "seed",
    "stop",
    "store",
    "stream_options",
    "temperature",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
    "web_search_options",
)
_BEARER = {"bearer_auth": True}
CHAT = Route("/chat/completions", _CHAT_ORDER, "messages", security=_BEARER)
"""``AsyncOpenAI.chat.completions.create`` without ``stream``."""
CHAT_STREAM = Route("/chat/completions", _CHAT_ORDER, "messages", added={"stream": True}, security=_BEARER)
"""``AsyncOpenAI.chat.completions.create(stream=True)``."""

_RESPONSES_ORDER = (
    "model",
    "stream",
    "service_tier",
    "access_programs",
    "background",
    "background_options",
    "context_management",
    "conversation",
    "image",
    "include",
    "input",
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "metadata",
    "moderation",
    "parallel_tool_calls",
    "previous_response_id",
    "prompt",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning",
    "safety_identifier",
    "store",
    "stream_options",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "truncation",
    "user",
)
RESPONSES = Route("/responses", _RESPONSES_ORDER, "input", security=_BEARER)
"""``AsyncOpenAI.responses.create`` without ``stream``."""
RESPONSES_STREAM = Route("/responses", _RESPONSES_ORDER, "input", added={"stream": True}, security=_BEARER)
"""``AsyncOpenAI.responses.create(stream=True)``."""
