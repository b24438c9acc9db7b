"""The ``anthropic`` provider: the official SDK (``AsyncAnthropic``), streamed Messages API.

* Tools: function tools are ``{"name", "description", "input_schema"}`` (+ ``defer_loading``,
  ``strict``); names are mapped to wire form (:mod:`core.providers.wirenames`). Provider tools
  (anything with a ``type``, e.g. ``tool_search_tool_bm25_20251119``) pass through untouched.
* Prompt caching (``cache=True``, the default): a ``cache_control`` breakpoint on the last
  tool of the cacheable prefix (``ModelRequest.cache_prefix_tools``; a deferred tool is not
  rendered into the prefix, so the breakpoint moves back to the nearest tool that is), one on
  the system prompt, and one on the last block of the conversation (three of the four allowed).
* Native tool search: ``server_tool_use`` -> :class:`ServerToolUse`, ``tool_search_tool_result``
  -> :class:`ToolSearchResult` (references mapped back to internal names), ``tool_use`` ->
  :class:`ToolUse`. A search result that opens a response (the deferred case: the previous
  response held a client ``tool_use`` and a ``server_tool_use``) is read the same way; history
  simply echoes every block back.
* Client-side search: a ``tool_result`` whose content holds ``{"type": "tool_reference",
  "tool_name": <internal>}`` blocks is sent with wire names.
* Extended thinking (``thinking=ThinkingSettings(anthropic_budget_tokens=N)``, for models whose
  profile says they think): ``thinking: {"type": "enabled", "budget_tokens": N}`` with the
  ``interleaved-thinking-2025-05-14`` beta header for the models that can think between tool
  calls (the profile's ``interleaved_thinking``), ``max_tokens``
  grown by the budget (it must exceed it) and no ``temperature``/``top_k`` (the API refuses
  them with thinking). ``thinking_delta`` streams as :class:`ThinkingDelta`; each finished
  ``thinking``/``redacted_thinking`` block is a :class:`ThinkingBlock` and stays in
  ``ResponseDone.content`` exactly as sent (signature included), echoed verbatim and in order.
  Another provider's ``reasoning_content`` is never sent. A request that answers the tool uses
  of an assistant message written without thinking goes without it (the API refuses thinking
  there).

``ResponseDone.content`` is the assistant turn in engine shape (internal names), ready to be
appended to history and echoed on the next request.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import AsyncGenerator, Mapping
from typing import Any

from core.imports import bulk_import
from core.providers import raw
from core.providers._common import (
    Prepared,
    SdkAdapter,
    blocks,
    incomplete_stream,
    render_result_block,
    resolve_key,
    usage_from,
)
from core.providers.base import (
    ModelRequest,
    ProviderEvent,
    ResponseDone,
    ServerToolUse,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolSearchResult,
    ToolUse,
    Usage,
)
from core.providers.profiles import ANTHROPIC
from core.providers.raw import HistoryWire
from core.providers.wirenames import FUNCTION_KINDS, RequestNames, WireNames

EPHEMERAL = {"type": "ephemeral"}
INTERLEAVED_THINKING = "interleaved-thinking-2025-05-14"  # anthropic.types.AnthropicBetaParam
_THINKING_BLOCKS = ("thinking", "redacted_thinking")
_NOT_WITH_THINKING = ("temperature", "top_k")  # the API rejects them when thinking is on
_PASS_THROUGH_RESULT = ("text", "image", "document", "search_result")  # tool_result blocks Anthropic reads as-is
_CACHEABLE = ("text", "tool_use", "tool_result", "server_tool_use", "tool_search_tool_result", "image", "document")


_WIRE_ID = re.compile(r"[a-zA-Z0-9_-]+")  # the Messages API's pattern for tool use ids (fullmatch)


def wire_id(call_id: Any) -> str:
    """A call id as Anthropic accepts it. Another provider's ids may not be legal here (Kimi's
    ``functions.get_weather:0``); those get a legal stem and a hash of the id, the same for the
    tool use and its result, while legal ids (Anthropic's own among them) go as they are."""
    text = str(call_id or "")
    if _WIRE_ID.fullmatch(text):
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{re.sub(r'[^a-zA-Z0-9_-]', '_', text)}_{digest}"


def cache_breakpoint(tools: list[dict[str, Any]], prefix_end: int | None) -> int | None:
    """Where the tools breakpoint goes: the last non-deferred tool at or before ``prefix_end``."""
    if prefix_end is None or not tools:
        return None
    for i in range(min(prefix_end, len(tools) - 1), -1, -1):
        if not tools[i].get("defer_loading"):
            return i
    return None


def mark_history(messages: list[dict[str, Any]]) -> None:
    """A breakpoint on the last cacheable block of the last message: each step of a tool loop
    then reads the conversation so far from the cache and writes only what it adds."""
    if not messages:
        return
    content = messages[-1]["content"]
    for i in range(len(content) - 1, -1, -1):
        if content[i].get("type") in _CACHEABLE:
            content[i] = {**content[i], "cache_control": EPHEMERAL}
            return


def wire_tool(tool: dict[str, Any], names: WireNames) -> dict[str, Any]:
    """One request tool in Anthropic's wire form."""
    if tool.get("type") not in FUNCTION_KINDS:
        return dict(tool)
    out: dict[str, Any] = {"name": names.wire(tool["name"])}
    if tool.get("description"):
        out["description"] = tool["description"]
    out["input_schema"] = tool.get("input_schema") or {"type": "object", "properties": {}}
    for key in ("defer_loading", "strict"):
        if key in tool:
            out[key] = tool[key]
    return out


def _wire_references(content: Any, names: WireNames) -> Any:
    if not isinstance(content, Mapping) or "tool_references" not in content:
        return content
    refs = [
        {**r, "tool_name": names.wire(r["tool_name"])} if r.get("type") == "tool_reference" else r
        for r in content.get("tool_references") or []
    ]
    return {**content, "tool_references": refs}


def _wire_result_content(content: Any, names: WireNames) -> Any:
    if isinstance(content, str):
        return content
    out: list[dict[str, Any]] = []
    for b in blocks(content):
        kind = b.get("type")
        if kind == "tool_reference":
            out.append({"type": "tool_reference", "tool_name": names.wire(b["tool_name"])})
        elif kind in _PASS_THROUGH_RESULT and (kind != "image" or "source" in b):
            out.append(b)
        else:  # ToolResult placeholders (image without data, resource links) become text
            out.append({"type": "text", "text": render_result_block(b)})
    return out


def wire_block(block: dict[str, Any], names: WireNames) -> dict[str, Any] | None:
    """One history block in Anthropic's wire form (None: not for this provider)."""
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block["text"]} if block.get("text") else None
    if kind in ("tool_use", "server_tool_use"):
        name = names.wire(block["name"]) if kind == "tool_use" else block["name"]
        tool_input = block.get("input")  # an object; another wire's unparseable arguments cannot be sent
        out = {
            "type": kind,
            "id": wire_id(block["id"]),
            "name": name,
            "input": tool_input if isinstance(tool_input, dict) else {},
        }
        if block.get("caller"):
            out["caller"] = block["caller"]
        return out
    if kind == "tool_search_tool_result":
        return {
            "type": kind,
            "tool_use_id": wire_id(block["tool_use_id"]),
            "content": _wire_references(block.get("content"), names),
        }
    if kind == "tool_result":
        out = {
            "type": kind,
            "tool_use_id": wire_id(block["tool_use_id"]),
            "content": _wire_result_content(block.get("content", ""), names),
        }
        if "is_error" in block:
            out["is_error"] = bool(block["is_error"])
        return out
    if kind in ("provider_item", "reasoning_content"):
        return None
    return dict(block)  # thinking, redacted_thinking, documents...: Anthropic's own, echoed verbatim


def wire_message(message: dict[str, Any], names: WireNames) -> list[dict[str, Any]]:
    """One engine message in Anthropic's wire form: one message, or none when nothing of it is
    for this provider."""
    content = [w for w in (wire_block(b, names) for b in blocks(message.get("content"))) if w is not None]
    return [{"role": message["role"], "content": content}] if content else []


def wire_messages(messages: list[dict[str, Any]], names: WireNames) -> list[dict[str, Any]]:
    return [w for message in messages for w in wire_message(message, names)]


def unthought_tool_loop(messages: list[dict[str, Any]]) -> bool:
    """True when the request answers tool uses of its last assistant message and that message
    does not start with thinking (it was written with thinking off, or by another provider): with thinking on the
    API refuses it ("a final assistant message must start with a thinking block"), so this
    request goes without thinking and the next turn thinks again."""
    at = next((i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "assistant"), None)
    if at is None:
        return False
    last = messages[at]["content"]
    answered = any(b.get("type") == "tool_result" for m in messages[at + 1 :] for b in m["content"])
    return answered and any(b.get("type") == "tool_use" for b in last) and last[0].get("type") not in _THINKING_BLOCKS


def read_block(block: dict[str, Any], names: WireNames) -> tuple[ProviderEvent | None, dict[str, Any] | None]:
    """One response block -> (its event, its engine-shaped content block with internal names)."""
    kind = block.get("type")
    caller = block.get("caller")
    extra = {"caller": caller} if caller and caller.get("type") != "direct" else {}
    if kind == "text":
        return None, ({"type": "text", "text": block["text"]} if block.get("text") else None)
    if kind == "tool_use":
        name, raw = names.resolve(block["name"])
        inp = block.get("input") or {}
        return (
            ToolUse(id=block["id"], name=name, input=inp, raw_name=raw),
            {"type": "tool_use", "id": block["id"], "name": name, "input": inp, **extra},
        )
    if kind == "server_tool_use":
        inp = block.get("input") or {}
        return (
            ServerToolUse(id=block["id"], name=block["name"], input=inp, executor="server"),
            {"type": "server_tool_use", "id": block["id"], "name": block["name"], "input": inp, **extra},
        )
    if kind in _THINKING_BLOCKS:
        return ThinkingBlock(block=block), block
    if kind == "tool_search_tool_result":
        content = block.get("content")
        refs: list[str] = []
        if isinstance(content, Mapping) and "tool_references" in content:
            mapped = [{**r, "tool_name": names.resolve(r["tool_name"])[0]} for r in content["tool_references"]]
            content = {**content, "tool_references": mapped}
            refs = [r["tool_name"] for r in mapped if r.get("type") == "tool_reference"]
        return (
            ToolSearchResult(tool_use_id=block["tool_use_id"], references=refs),
            {"type": kind, "tool_use_id": block["tool_use_id"], "content": content},
        )
    return None, block


class AnthropicProvider(SdkAdapter):
    """Streams one Messages API response as normalized events (see :mod:`core.providers.base`)."""

    profile = ANTHROPIC
    sdk = "anthropic"
    path = "v1/messages"

    def __init__(
        self,
        model: str,
        *,
        cache: bool = True,
        env: Mapping[str, str] | None = None,
        **options: Any,
    ):
        super().__init__(model, env=env, **options)
        self.cache = cache
        self._auth_token = None if self._api_key else resolve_key(None, self.profile.auth_token_env, env)
        self._names = RequestNames()
        self._table = WireNames(())  # the name table the history is being converted with
        self._history = HistoryWire(lambda state, message: (state, wire_message(message, self._table)))

    def _new_client(self) -> Any:
        with bulk_import():
            import anthropic

        credentials = {"auth_token": self._auth_token} if self._auth_token else {"api_key": self._key()}
        client = anthropic.AsyncAnthropic(**self._client_options(**credentials))
        _ = client.messages  # load it now: an import in the first request would count against its first byte
        return client

    def _secrets(self) -> tuple[str | None, ...]:
        return (*super()._secrets(), self._auth_token)

    def prepare(self, request: ModelRequest) -> Prepared:
        """The Messages API body for one request (each history message's wire form and JSON made
        once, :class:`core.providers.raw.HistoryWire`), and the name table it was built with."""
        names = self._table = self._names.table(request.tools, request.messages)
        messages = self._history.run(request.messages, object() if names.salted else None)
        tools = [wire_tool(t, names) for t in request.tools]
        if self.cache and (at := cache_breakpoint(request.tools, request.cache_prefix_tools)) is not None:
            tools[at] = {**tools[at], "cache_control": EPHEMERAL}
        params: dict[str, Any] = {"model": request.model or self.model, "max_tokens": request.max_tokens}
        params["messages"] = messages
        if request.system:
            params["system"] = (
                [{"type": "text", "text": request.system, "cache_control": EPHEMERAL}] if self.cache else request.system
            )
        marked = None
        if self.cache and messages:  # the kept last message is not marked: a copy of it is
            messages[-1] = {**messages[-1], "content": list(messages[-1]["content"])}
            mark_history(messages)
            marked = raw.dumps(messages[-1])
        if tools:
            params["tools"] = tools
        self._think(params)
        history = self._history.body(last=marked)
        return Prepared(params, names, "messages", history, params.get("extra_headers") or {})

    def output_reserve(self, max_tokens: int) -> int:
        """What an answer may take of the window: ``max_tokens``, and the thinking budget that
        :meth:`_think` adds to it when this model thinks."""
        budget = self.thinking.anthropic_budget_tokens
        return max_tokens + budget if budget and self.profile.abilities(self.model).thinking else max_tokens

    def _think(self, params: dict[str, Any]) -> None:
        """Extended thinking on, when a budget is set, the model can think and the tool loop in
        progress did not start without it (see :func:`unthought_tool_loop`)."""
        budget = self.thinking.anthropic_budget_tokens
        abilities = self.profile.abilities(params["model"])
        if not budget or not abilities.thinking or unthought_tool_loop(params["messages"]):
            return
        params["thinking"] = {"type": "enabled", "budget_tokens": budget}
        params["max_tokens"] += budget
        if abilities.interleaved_thinking:
            params["extra_headers"] = {"anthropic-beta": INTERLEAVED_THINKING}
        for key in _NOT_WITH_THINKING:
            params.pop(key, None)

    async def _send(self, client: Any, prepared: Prepared) -> Any:
        params = prepared.params
        route = raw.ANTHROPIC_STREAM if self.streaming else raw.ANTHROPIC_CREATE
        content = self._raw(route, prepared)
        if content is None:  # through the SDK's method
            if self.streaming:  # the stream helper sends in __aenter__; its __aexit__ only closes, as _read does
                return await client.messages.stream(**params).__aenter__()
            return await client.messages.create(**params)
        from anthropic import AsyncStream
        from anthropic.lib.streaming import AsyncMessageStreamManager
        from anthropic.types import Message, RawMessageStreamEvent

        if self.streaming:  # the stream helper's own manager around the post its method would make
            events = AsyncStream[RawMessageStreamEvent]
            sent = raw.post(client, route, content, cast_to=Message, stream_cls=events, headers=prepared.headers)
            return await AsyncMessageStreamManager(sent).__aenter__()
        return await raw.post(client, route, content, cast_to=Message, headers=prepared.headers)

    async def _read(self, opened: Any, names: WireNames) -> AsyncGenerator[ProviderEvent, None]:
        if self.streaming:
            try:
                stopped = False
                async for event in opened:
                    if event.type == "message_start":  # the prompt's tokens, known before the answer
                        yield _usage(event.message.usage)
                    elif event.type == "text":
                        yield TextDelta(text=event.text)
                    elif event.type == "thinking":
                        yield ThinkingDelta(text=event.thinking)
                    elif event.type == "content_block_stop":
                        found, _ = read_block(event.content_block.to_dict(), names)
                        if found is not None:
                            yield found
                    elif event.type == "message_stop":
                        stopped = True
                if not stopped:
                    raise incomplete_stream(self.label)
                message = await opened.get_final_message()
            finally:
                await opened.close()
        else:
            message = opened
            for block in message.content:
                data = block.to_dict()
                if data.get("type") == "text" and data.get("text"):
                    yield TextDelta(text=data["text"])
                elif data.get("type") == "thinking" and data.get("thinking"):
                    yield ThinkingDelta(text=data["thinking"])
                found, _ = read_block(data, names)
                if found is not None:
                    yield found
        content = [c for c in (read_block(b.to_dict(), names)[1] for b in message.content) if c is not None]
        yield (usage := _usage(message.usage))
        yield ResponseDone(stop_reason=message.stop_reason, content=content, usage=usage)


def _usage(u: Any) -> Usage:
    """Anthropic's usage (of ``message_start``, so far, or of the whole message) in our terms."""
    return usage_from(
        u.input_tokens,
        u.output_tokens,
        getattr(u, "cache_read_input_tokens", 0),
        getattr(u, "cache_creation_input_tokens", 0),
        input_includes_cache=False,
    )
