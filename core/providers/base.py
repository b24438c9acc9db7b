"""What every provider adapter speaks: one request in, a stream of normalized events out.

The engine keeps history in one shape, Anthropic's content blocks with *internal* tool
names (``tool.call``, ``mcp.gmail_work.send_message``). Each adapter maps that shape and
those names to its wire (see :mod:`core.providers.wirenames`) and maps the answer back.

Content blocks the engine understands:

* ``{"type": "text", "text": ...}``
* ``{"type": "tool_use", "id", "name", "input"}``            (client tool, internal name; an
  adapter may add a key named after itself, e.g. ``"openai": {"id", "namespace", "arguments"}``,
  to echo the call exactly: keep blocks as ``ResponseDone.content`` gave them)
* ``{"type": "tool_result", "tool_use_id", "content", "is_error"?}``
* ``{"type": "server_tool_use", "id", "name", "input"}``     (provider-executed tool search)
* ``{"type": "tool_search_tool_result", "tool_use_id", "content"}``  (its result; references)
* ``{"type": "provider_item", "provider": "openai", "item": {...}}`` a wire item an adapter
  needs echoed back verbatim on its next request (OpenAI ``tool_search_call``/``_output``,
  ``reasoning`` items with their ``encrypted_content`` and ``summary``). Other adapters ignore
  blocks that are not theirs.
* ``{"type": "thinking", "thinking", "signature"}`` and ``{"type": "redacted_thinking",
  "data"}``: Anthropic's extended thinking, stored as the API sent them and echoed verbatim, in
  order, in the same message (a tool loop fails without them; a block whose signature never
  arrived, because the turn was stopped mid-thought, is never kept).
* ``{"type": "reasoning_content", "text"}``: an OpenAI-compatible server's thinking-mode
  reasoning (DeepSeek), first in the assistant message that carried it; ``openai-chat`` sends it
  back as that message's ``reasoning_content`` when the message has tool calls.
* A ``text`` block may carry ``"openai": {"phase": "commentary" | "final_answer"}``: the
  Responses message's ``phase``, resent on the echoed assistant message.

Thinking reaches the engine twice: :class:`ThinkingDelta` as it streams, and
:class:`ThinkingBlock` once a block is whole (what a stopped turn may keep);
:func:`thinking_of` reads the thinking of a stored response for people.

Tools in a request are dicts: a function tool is ``{"name", "description", "input_schema"}``
plus optional ``"defer_loading": True``; a provider-side tool has a ``"type"`` (e.g.
``{"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}`` or
``{"type": "tool_search"}``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal, Protocol, TypeGuard, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator


class ModelRequest(BaseModel):
    """One model call, exactly as the strategy surfaced it (what ``--record`` writes)."""

    model_config = ConfigDict(extra="forbid")

    model: str
    system: str
    tools: list[dict[str, Any]] = Field(default_factory=list)
    messages: list[dict[str, Any]]
    max_tokens: int = 4096
    # Index into ``tools`` of the last tool that belongs to the stable, cacheable prefix.
    # Adapters that support prompt caching put their cache breakpoint there.
    cache_prefix_tools: int | None = None

    def record(self) -> dict[str, Any]:
        """The Anthropic-shaped record written by ``deferchat ask --record``."""
        return {"model": self.model, "system": self.system, "tools": self.tools, "messages": self.messages}


# --- normalized stream events ------------------------------------------------------------------


class TextDelta(BaseModel):
    kind: Literal["text_delta"] = "text_delta"
    text: str


class ThinkingDelta(BaseModel):
    """Streamed thinking or reasoning text: Anthropic ``thinking_delta``, an OpenAI Responses
    reasoning summary's text, an OpenAI-compatible server's ``reasoning_content``."""

    kind: Literal["thinking_delta"] = "thinking_delta"
    text: str


class ThinkingBlock(BaseModel):
    """One thinking block finished, as history must echo it (``thinking`` with its signature,
    ``redacted_thinking``, ``reasoning_content``). It also comes in ``ResponseDone.content``;
    a stop before the response ends keeps the blocks that came whole, and only those."""

    kind: Literal["thinking_block"] = "thinking_block"
    block: dict[str, Any]


_USES = ("tool_use", "server_tool_use")


def _bounded_input(value: Any) -> Any:
    from core.limits import bounded_arguments

    return bounded_arguments(value)


class ToolUse(BaseModel):
    """A client-executed tool call, name already mapped back to the internal form. Arguments
    nested deeper than deferchat reads are a marker (:func:`core.limits.bounded_arguments`), so
    no event, row or later request has to carry them."""

    kind: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: Any = None
    # Set when the wire name did not map back to any tool offered (the model invented it).
    raw_name: str | None = None

    _input = field_validator("input")(_bounded_input)


class ServerToolUse(BaseModel):
    """A provider-executed (or client-executed, for OpenAI client search) tool search call."""

    kind: Literal["server_tool_use"] = "server_tool_use"
    id: str
    name: str
    input: Any = None
    executor: Literal["server", "client"] = "server"

    _input = field_validator("input")(_bounded_input)


class ToolSearchResult(BaseModel):
    kind: Literal["tool_search_result"] = "tool_search_result"
    tool_use_id: str
    references: list[str] = Field(default_factory=list)  # internal tool names


class Usage(BaseModel):
    kind: Literal["usage"] = "usage"
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


class ResponseDone(BaseModel):
    """Last event of every stream: the assistant turn to append to history."""

    kind: Literal["done"] = "done"
    stop_reason: str | None = None
    content: list[dict[str, Any]] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)

    @field_validator("content")
    @classmethod
    def _bounded_uses(cls, content: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tool uses of the response with their arguments bounded as :class:`ToolUse` has them."""
        return [
            {**b, "input": _bounded_input(b["input"])} if b.get("type") in _USES and "input" in b else b
            for b in content
        ]


class Retrying(BaseModel):
    """The request failed in a way worth another try, and the adapter waits ``seconds`` before
    retry number ``attempt`` (1 for the first). Comes before any other event of the response:
    once an answer has begun nothing is retried. The turn loop reports it as
    ``provider.retrying``, so a person sees "retrying in N s" and can stop the wait."""

    kind: Literal["retrying"] = "retrying"
    seconds: float
    attempt: int
    reason: str  # what failed, for people: "rate limited (HTTP 429)", "connection failed: ..."


ProviderEvent = (
    TextDelta
    | ThinkingDelta
    | ThinkingBlock
    | ToolUse
    | ServerToolUse
    | ToolSearchResult
    | Usage
    | ResponseDone
    | Retrying
)


def thinking_of(content: list[dict[str, Any]]) -> list[tuple[str, bool]]:
    """The thinking in a response's blocks, for people: ``(text, redacted)`` per block, in
    order. Anthropic ``thinking`` and ``redacted_thinking`` (no text, ``redacted``), a
    ``reasoning_content`` block, and OpenAI ``reasoning`` items that carry a summary (one
    without a summary shows nothing: its reasoning is only encrypted)."""
    out: list[tuple[str, bool]] = []
    for block in content:
        kind = block.get("type")
        if kind == "thinking" and isinstance(block.get("thinking"), str):
            out.append((block["thinking"], False))
        elif kind == "redacted_thinking":
            out.append(("", True))
        elif kind == "reasoning_content" and isinstance(block.get("text"), str) and block["text"]:
            out.append((block["text"], False))
        elif kind == "provider_item" and _is_reasoning(item := block.get("item")):
            parts = [s.get("text") for s in item.get("summary") or [] if isinstance(s, dict)]
            text = "\n\n".join(p for p in parts if isinstance(p, str) and p)
            if text:
                out.append((text, False))
    return out


def _is_reasoning(item: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(item, dict) and item.get("type") == "reasoning"


class ProviderError(Exception):
    """A provider failed in a way the user should read. ``code`` is stable, ``message`` human."""

    def __init__(self, code: str, message: str, *, retryable: bool = False, status: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = retryable
        self.status = status


@runtime_checkable
class Provider(Protocol):
    name: str  # a profile's name: demo | script | anthropic | openai | openai-chat
    model: str

    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """Stream one response. Raises :class:`ProviderError` on failure."""
        ...

    def pending_client_searches(self, content: list[dict[str, Any]]) -> list[ServerToolUse]:
        """The searches the client still owes in a stored response (``ResponseDone.content``),
        read from this adapter's own wire items: what a turn resumed after a park must answer
        before it goes on. Empty for an adapter whose searches all run on the server."""
        ...


class ProviderBase:
    """The defaults of :class:`Provider`'s optional parts, for adapters to inherit."""

    def pending_client_searches(self, content: list[dict[str, Any]]) -> list[ServerToolUse]:
        return []
