"""The ``openai`` provider: the official SDK on the Responses API, streamed.

Request mapping (engine history is Anthropic-shaped, names internal):

* function tools -> ``{"type": "function", "name", "description", "parameters"}`` (+
  ``defer_loading``, ``strict``); ``{"type": "namespace", "tools": [...]}`` groups function
  tools; provider tools (``{"type": "tool_search"}``, hosted or ``"execution": "client"``) pass
  through.
* ``text`` -> a user/assistant message; ``tool_use`` -> ``function_call`` (with the item id,
  ``namespace`` and the model's own argument string kept under the block's ``"openai"`` key, so
  the echo is exact); ``tool_result`` -> ``function_call_output``, or ``tool_search_output``
  when it answers a client-executed ``tool_search_call`` (its ``tool_reference`` blocks become
  the referenced tools' full definitions); ``provider_item`` blocks for ``openai`` -> their item,
  verbatim (``tool_search_call``, ``tool_search_output``, ``reasoning``...).

Reasoning (``thinking=ThinkingSettings(openai_effort=..., openai_summary=...)``): reasoning
models get ``reasoning: {"effort", "summary"}`` (what is set) and ``include:
["reasoning.encrypted_content"]``; ``reasoning`` items are kept as ``provider_item`` blocks and
echoed verbatim, encrypted content and summary included; summary text streams as
:class:`ThinkingDelta` (parts of a summary apart by a blank line). An assistant message's
``phase`` (``commentary`` / ``final_answer``) is kept on its text blocks (``"openai":
{"phase"}``) and resent on the echoed message: dropping it degrades gpt-5.3-codex and later.

Response mapping: ``function_call`` -> :class:`ToolUse`; ``tool_search_call`` ->
:class:`ServerToolUse` (``executor`` from its ``execution``; a client one must be answered with
a ``tool_result`` holding ``tool_reference`` blocks); ``tool_search_output`` ->
:class:`ToolSearchResult` (tools inside namespaces included). Every item the API must see
again is kept in ``ResponseDone.content`` as a ``provider_item`` block, in output order.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Any

from core.imports import bulk_import
from core.providers import raw
from core.providers._common import (
    ERROR_TYPES,
    Prepared,
    SdkAdapter,
    arguments_json,
    blocks,
    error_for_status,
    incomplete_stream,
    malformed,
    parse_arguments,
    redact,
    result_text,
    usage_from,
)
from core.providers.base import (
    ModelRequest,
    ProviderError,
    ProviderEvent,
    ResponseDone,
    ServerToolUse,
    TextDelta,
    ThinkingDelta,
    ToolSearchResult,
    ToolUse,
    Usage,
    thinking_of,
)
from core.providers.profiles import OPENAI
from core.providers.raw import HistoryWire
from core.providers.wirenames import (
    FUNCTION_KINDS,
    RequestNames,
    WireNames,
    encode,
    function_tool_names,
    function_tools,
    tool_references,
)

PROVIDER = OPENAI.name  # the key of this adapter's echo in tool_use blocks, and of its provider_item blocks
SEARCH_TOOL_NAME = "tool_search"  # ServerToolUse.name for OpenAI's tool search (it has no name of its own)
_INCOMPLETE = {"max_output_tokens": "max_tokens", "content_filter": "refusal"}


def is_reasoning_model(model: str) -> bool:
    return OPENAI.abilities(model).reasoning


def _client_search_call(block: dict[str, Any]) -> dict[str, Any] | None:
    """The item of a ``provider_item`` block that is a client-executed ``tool_search_call``."""
    item = block.get("item") if block.get("type") == "provider_item" and block.get("provider") == PROVIDER else None
    if isinstance(item, dict) and item.get("type") == "tool_search_call" and item.get("execution") == "client":
        return item
    return None


def pending_client_searches(content: list[dict[str, Any]]) -> list[ServerToolUse]:
    """The client-executed searches of a stored response (``tool_search_call`` items with
    ``execution: client``), as :class:`ServerToolUse` the way the stream reported them."""
    return [
        ServerToolUse(
            id=item.get("call_id") or item.get("id") or "",
            name=SEARCH_TOOL_NAME,
            input=item.get("arguments"),
            executor="client",
        )
        for item in map(_client_search_call, blocks(content))
        if item is not None
    ]


def wire_function(tool: dict[str, Any], names: WireNames) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "function", "name": names.wire(tool["name"])}
    if tool.get("description"):
        out["description"] = tool["description"]
    out["parameters"] = tool.get("input_schema") or tool.get("parameters") or {"type": "object", "properties": {}}
    for key in ("defer_loading", "strict"):
        if key in tool:
            out[key] = tool[key]
    return out


def wire_tool(tool: dict[str, Any], names: WireNames) -> dict[str, Any]:
    kind = tool.get("type")
    if kind == "namespace":
        return {
            "type": "namespace",
            "name": encode(tool["name"]),
            "description": tool.get("description", ""),
            "tools": [wire_function(t, names) for t in tool.get("tools") or []],
        }
    if kind in FUNCTION_KINDS:
        return wire_function(tool, names)
    return dict(tool)


def _text_message(role: str, texts: list[str], phase: str | None = None) -> dict[str, Any]:
    if len(texts) == 1:
        message: dict[str, Any] = {"role": role, "content": texts[0]}
    elif role == "user":
        message = {"role": role, "content": [{"type": "input_text", "text": t} for t in texts]}
    else:
        message = {"role": role, "content": "\n\n".join(texts)}
    if phase and role == "assistant":
        message["phase"] = phase
    return message


def _phase(block: dict[str, Any]) -> str | None:
    echo = block.get(PROVIDER)
    phase = echo.get("phase") if isinstance(echo, dict) else None
    return phase if isinstance(phase, str) else None


def function_call_item(block: dict[str, Any], names: WireNames) -> dict[str, Any]:
    """A ``tool_use`` block as the ``function_call`` the model produced (exact when we kept it)."""
    echo = block.get(PROVIDER) or {}
    item: dict[str, Any] = {
        "type": "function_call",
        "call_id": block["id"],
        "name": names.wire(block["name"]),
        "arguments": arguments_json(block.get("input")),
    }
    raw = echo.get("arguments")
    if isinstance(raw, str) and parse_arguments(raw) == block.get("input"):
        item["arguments"] = raw
    if echo.get("id"):
        item["id"] = echo["id"]
    if echo.get("namespace"):
        item["namespace"] = echo["namespace"]
    return item


def message_items(
    message: dict[str, Any],
    names: WireNames,
    definitions: Mapping[str, dict[str, Any]],
    client_searches: frozenset[str],
) -> tuple[frozenset[str], list[dict[str, Any]]]:
    """One engine message as Responses ``input`` items, given the client searches the history
    made before it (a result answering one is its ``tool_search_output``); returns those searches
    with this message's own added, and the items."""
    role = message["role"]
    items: list[dict[str, Any]] = []
    texts: list[str] = []
    phase: str | None = None  # of the texts gathered: a change of phase starts another message
    for block in blocks(message.get("content")):
        kind = block.get("type")
        if kind == "text":
            if block.get("text"):
                if texts and _phase(block) != phase:
                    items.append(_text_message(role, texts, phase))
                    texts = []
                phase = _phase(block)
                texts.append(block["text"])
            continue
        if texts:
            items.append(_text_message(role, texts, phase))
            texts = []
        if kind == "provider_item" and block.get("provider") == PROVIDER:
            items.append(dict(block["item"]))
            if (search := _client_search_call(block)) is not None:
                client_searches = client_searches | {search.get("call_id") or search.get("id") or ""}
        elif kind == "tool_use":
            items.append(function_call_item(block, names))
        elif kind == "tool_result" and block.get("tool_use_id") in client_searches:
            tools = [definitions[n] for n in tool_references(block) if n in definitions]
            items.append(
                {
                    "type": "tool_search_output",
                    "call_id": block["tool_use_id"],
                    "execution": "client",
                    "status": "completed",
                    "tools": tools,
                }
            )
        elif kind == "tool_result":
            items.append(
                {"type": "function_call_output", "call_id": block["tool_use_id"], "output": result_text(block)}
            )
        # server_tool_use / tool_search_tool_result / thinking / reasoning_content: another
        # provider's, not sent
    if texts:
        items.append(_text_message(role, texts, phase))
    return client_searches, items


def wire_input(
    messages: list[dict[str, Any]], names: WireNames, definitions: Mapping[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """Engine history -> Responses ``input`` items."""
    items: list[dict[str, Any]] = []
    searches: frozenset[str] = frozenset()
    for message in messages:
        searches, out = message_items(message, names, definitions, searches)
        items.extend(out)
    return items


class _Reader:
    """Reads output items in order; remembers the last search call for its output's id."""

    def __init__(self, names: WireNames):
        self.names = names
        self.last_search: str | None = None
        self.calls = 0  # client work the engine owes: function calls and client searches

    def read(self, item: dict[str, Any]) -> tuple[list[ProviderEvent], list[dict[str, Any]]]:
        kind = item.get("type")
        if kind == "message":
            texts = [part.get("text") or part.get("refusal") or "" for part in item.get("content") or []]
            echo = {PROVIDER: {"phase": item["phase"]}} if item.get("phase") else {}
            return [], [{"type": "text", "text": t, **echo} for t in texts if t]
        if kind == "function_call":
            name, raw = self.names.resolve(item["name"])
            args = parse_arguments(item.get("arguments"))
            echo = {k: item[k] for k in ("id", "namespace", "arguments") if item.get(k) is not None}
            self.calls += 1
            return (
                [ToolUse(id=item["call_id"], name=name, input=args, raw_name=raw)],
                [{"type": "tool_use", "id": item["call_id"], "name": name, "input": args, PROVIDER: echo}],
            )
        content = [{"type": "provider_item", "provider": PROVIDER, "item": item}]
        if kind == "tool_search_call":
            executor = "client" if item.get("execution") == "client" else "server"
            call_id = (item.get("call_id") if executor == "client" else None) or item.get("id") or ""
            self.last_search = call_id
            self.calls += executor == "client"
            return [
                ServerToolUse(id=call_id, name=SEARCH_TOOL_NAME, input=item.get("arguments"), executor=executor)
            ], content
        if kind == "tool_search_output":
            refs = [self.names.resolve(n)[0] for n in function_tool_names(item.get("tools") or [])]
            owner = item.get("call_id") or self.last_search or item.get("id") or ""
            return [ToolSearchResult(tool_use_id=owner, references=refs)], content
        return [], content  # reasoning and anything else: echoed, not shown


RESPONSES_HINT = (
    "It may not speak OpenAI's Responses API: for a Chat Completions server (Ollama, vLLM, llama.cpp, "
    'LM Studio...) use --provider openai-chat (provider = "openai-chat" in config.toml).'
)


class OpenAIResponsesProvider(SdkAdapter):
    """Streams one Responses API response as normalized events (see :mod:`core.providers.base`)."""

    profile = OPENAI
    sdk = "openai"
    path = "responses"

    def __init__(
        self,
        model: str,
        *,
        include_reasoning: bool | None = None,
        **options: Any,
    ):
        super().__init__(model, **options)
        self.include_reasoning = include_reasoning
        self._names = RequestNames()
        self._table = WireNames(())  # the name table and definitions the history is being converted with
        self._definitions: dict[str, dict[str, Any]] = {}
        self._history = HistoryWire(
            lambda searches, message: message_items(message, self._table, self._definitions, searches), frozenset()
        )

    def _hint(self) -> str:
        """A server that is not OpenAI and fails a Responses request outright likely speaks only Chat Completions."""
        if self.profile.is_genuine(self.used_url()):
            return ""
        return RESPONSES_HINT

    def _new_client(self) -> Any:
        with bulk_import():
            import openai

        client = openai.AsyncOpenAI(**self._client_options(api_key=self._key()))
        _ = client.responses  # load it now: an import in the first request would count against its first byte
        return client

    def pending_client_searches(self, content: list[dict[str, Any]]) -> list[ServerToolUse]:
        return pending_client_searches(content)

    def prepare(self, request: ModelRequest) -> Prepared:
        """The Responses API body for one request (each history message's items and their JSON
        made once, :class:`core.providers.raw.HistoryWire`), and the name table it was built with."""
        names = self._table = self._names.table(request.tools, request.messages)
        definitions = self._definitions = {t["name"]: wire_function(t, names) for t in function_tools(request.tools)}
        # a client search's answer expands into the definitions: they are part of what an item is
        key = (object() if names.salted else None, raw.dumps(list(definitions.values())))
        items = self._history.run(request.messages, key)
        model = request.model or self.model
        params: dict[str, Any] = {"model": model, "input": items, "max_output_tokens": request.max_tokens}
        if request.system:
            params["instructions"] = request.system
        if request.tools:
            params["tools"] = [wire_tool(t, names) for t in request.tools]
        reasoning = self.include_reasoning
        if reasoning is None:
            reasoning = self.profile.abilities(model).reasoning
        if reasoning:  # reasoning items carry their encrypted state, so echoing them works without store
            params["include"] = ["reasoning.encrypted_content"]
            settings = {"effort": self.thinking.openai_effort, "summary": self.thinking.openai_summary}
            if chosen := {k: v for k, v in settings.items() if v is not None}:
                params["reasoning"] = chosen
        return Prepared(params, names, "input", self._history.body())

    def _failed_event(self, event: Any) -> ProviderError:
        """A ``response.failed`` or ``error`` stream event as a ProviderError."""
        error = getattr(getattr(event, "response", None), "error", None) or event
        code = str(getattr(error, "code", "") or getattr(error, "type", "") or "")
        message = redact(str(getattr(error, "message", "") or "the response failed"), self._secrets())
        return error_for_status(self.label, ERROR_TYPES.get(code, 500), self.env_var, message)

    async def _send(self, client: Any, prepared: Prepared) -> Any:
        # create(stream=True), not the responses.stream() helper: the helper's accumulator rejects
        # real traffic whose client tool_search_call changes call_id between output_item.added
        # and .done (recorded in openai-client-tool-search.1.chunks.txt).
        params = prepared.params
        route = raw.RESPONSES_STREAM if self.streaming else raw.RESPONSES
        content = self._raw(route, prepared)
        if content is None:  # through the SDK's method
            if self.streaming:
                return await client.responses.create(**params, stream=True)
            return await client.responses.create(**params)
        from openai import AsyncStream
        from openai.types.responses import Response, ResponseStreamEvent

        events = AsyncStream[ResponseStreamEvent] if self.streaming else None
        return await raw.post(client, route, content, cast_to=Response, stream_cls=events)

    async def _read(self, opened: Any, names: WireNames) -> AsyncGenerator[ProviderEvent, None]:
        reader = _Reader(names)
        if self.streaming:
            final = None
            async with opened as stream:
                async for event in stream:
                    kind = event.type
                    if kind == "response.output_text.delta":
                        if not isinstance(event.delta, str):
                            raise malformed(self.label, f"a {kind} event without its `delta`")
                        yield TextDelta(text=event.delta)
                    elif kind == "response.reasoning_summary_text.delta":
                        if not isinstance(event.delta, str):
                            raise malformed(self.label, f"a {kind} event without its `delta`")
                        yield ThinkingDelta(text=event.delta)
                    elif kind == "response.reasoning_summary_part.added" and event.summary_index:
                        yield ThinkingDelta(text="\n\n")  # the summary's next part: a paragraph of its own
                    elif kind == "response.output_item.done":
                        if event.item is None:
                            raise malformed(self.label, f"a {kind} event without its `item`")
                        for found in reader.read(event.item.to_dict())[0]:
                            yield found
                    elif kind in ("response.completed", "response.incomplete"):
                        if event.response is None:
                            raise malformed(self.label, f"a {kind} event without its `response`")
                        final = event.response
                    elif kind in ("response.failed", "error"):
                        raise self._failed_event(event)
            if final is None:
                raise incomplete_stream(self.label)
        else:
            final = opened
            for item in final.output:
                item_events, read_blocks = reader.read(item.to_dict())
                for block in read_blocks:
                    if block["type"] == "text":
                        yield TextDelta(text=block["text"])
                    elif summary := thinking_of([block]):
                        yield ThinkingDelta(text=summary[0][0])
                for item_event in item_events:
                    yield item_event
        content_reader = _Reader(names)
        content = [c for item in final.output for c in content_reader.read(item.to_dict())[1]]
        yield (usage := _usage(final))
        yield ResponseDone(stop_reason=_stop_reason(final, content_reader), content=content, usage=usage)


def _usage(response: Any) -> Usage:
    u = response.usage
    if u is None:
        return usage_from(0, 0, input_includes_cache=True)
    details = getattr(u, "input_tokens_details", None)
    return usage_from(
        u.input_tokens,
        u.output_tokens,
        getattr(details, "cached_tokens", 0),
        getattr(details, "cache_write_tokens", 0),
        input_includes_cache=True,
    )


def _stop_reason(response: Any, reader: _Reader) -> str:
    if response.status == "incomplete":
        reason = getattr(response.incomplete_details, "reason", None) or "incomplete"
        return _INCOMPLETE.get(reason, reason)
    return "tool_use" if reader.calls else "end_turn"
