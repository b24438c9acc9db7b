"""The ``openai-chat`` provider: the official SDK on Chat Completions, any base URL.

For OpenAI itself and every OpenAI-compatible server (Ollama, vLLM, llama.cpp, DeepSeek,
Moonshot...). Chat Completions has no native deferral, so tools are plain function tools
(``defer_loading`` is dropped) and the ``active-tools`` strategy narrows the array per step.
A provider-side tool (``tool_search``, ``tool_search_tool_bm25_...``) cannot be sent here and
fails the request with ``provider.unsupported_tool`` rather than being dropped silently.

History mapping: ``text`` -> message content; ``tool_use`` -> the assistant's ``tool_calls``;
``tool_result`` -> a ``tool`` message (``tool_reference`` blocks become text naming the tool);
another provider's blocks (``provider_item``, ``server_tool_use``, ``thinking``...) are not sent.

Thinking mode (DeepSeek and other compatible servers answer ``reasoning_content`` beside
``content``): its deltas stream as :class:`ThinkingDelta`; the whole reasoning is kept as a
``{"type": "reasoning_content", "text"}`` block first in the response's content (and yielded as
a :class:`ThinkingBlock` before the tool calls, so a stopped turn keeps it with them), and an
assistant message with tool calls sends it back as its ``reasoning_content``: DeepSeek answers
HTTP 400 to a tool-call turn without it. Reasoning of a turn without tool calls is not resent
(DeepSeek ignores it there).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from core.imports import bulk_import
from core.providers import raw
from core.providers._common import (
    Prepared,
    SdkAdapter,
    arguments_json,
    blocks,
    incomplete_stream,
    malformed,
    parse_arguments,
    result_text,
    shown_url,
    usage_from,
)
from core.providers.base import (
    ModelRequest,
    ProviderError,
    ProviderEvent,
    ResponseDone,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUse,
    Usage,
)
from core.providers.profiles import OPENAI_CHAT
from core.providers.raw import HistoryWire
from core.providers.wirenames import FUNCTION_KINDS, RequestNames, WireNames

REASONING = "reasoning_content"  # the block type and the wire field of thinking-mode reasoning
_FINISH = {
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "stop": "end_turn",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def chat_tool(tool: dict[str, Any], names: WireNames) -> dict[str, Any]:
    if tool.get("type") not in FUNCTION_KINDS:
        raise ProviderError(
            "provider.unsupported_tool",
            f"Chat Completions cannot carry the provider tool {tool.get('type')!r}; "
            "use the active-tools strategy with the openai-chat provider.",
        )
    function: dict[str, Any] = {"name": names.wire(tool["name"])}
    if tool.get("description"):
        function["description"] = tool["description"]
    function["parameters"] = tool.get("input_schema") or {"type": "object", "properties": {}}
    if "strict" in tool:
        function["strict"] = tool["strict"]
    return {"type": "function", "function": function}


def _user_content(texts: list[str]) -> Any:
    return texts[0] if len(texts) == 1 else [{"type": "text", "text": t} for t in texts]


def chat_messages(message: dict[str, Any], names: WireNames) -> list[dict[str, Any]]:
    """One engine message as Chat Completions messages (a user turn of tool results becomes
    one ``tool`` message per result, then any text)."""
    role = message["role"]
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for block in blocks(message.get("content")):
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            texts.append(block["text"])
        elif kind == REASONING and isinstance(block.get("text"), str):
            reasoning.append(block["text"])
        elif kind == "tool_use":
            calls.append(
                {
                    "id": block["id"],
                    "type": "function",
                    "function": {"name": names.wire(block["name"]), "arguments": arguments_json(block.get("input"))},
                }
            )
        elif kind == "tool_result":
            results.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": result_text(block)})
    if role == "assistant":
        if not texts and not calls:
            return []
        out: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
        if calls:
            out["tool_calls"] = calls
            if reasoning:  # the SDK sends a message dict's extra keys as they are
                out["reasoning_content"] = "".join(reasoning)
        return [out]
    return results + ([{"role": role, "content": _user_content(texts)}] if texts else [])


class OpenAIChatProvider(SdkAdapter):
    """Streams one Chat Completions response as normalized events (see :mod:`core.providers.base`)."""

    profile = OPENAI_CHAT
    sdk = "openai"
    path = "chat/completions"

    def __init__(self, model: str, *, include_usage: bool = True, **options: Any):
        super().__init__(model, **options)
        self.include_usage = include_usage
        self._names = RequestNames()
        self._table = WireNames(())  # the name table the history is being converted with
        self._history = HistoryWire(lambda state, message: (state, chat_messages(message, self._table)))
        self.genuine = self.profile.is_genuine(self.base_url)
        if not self.genuine:
            self.label = f"{self.profile.label}-compatible server {shown_url(self.base_url)}"

    def _new_client(self) -> Any:
        with bulk_import():
            import openai
            import openai.lib.streaming.chat  # the stream state _read uses, loaded before any deadline runs

        client = openai.AsyncOpenAI(**self._client_options(api_key=self._key()))
        _ = client.chat.completions  # load it now: an import in the first request would count against its first byte
        return client

    def prepare(self, request: ModelRequest) -> Prepared:
        """The Chat Completions body for one request (each history message's wire form and JSON
        made once, :class:`core.providers.raw.HistoryWire`), and the name table it was built with."""
        names = self._table = self._names.table(request.tools, request.messages)
        history = self._history.run(request.messages, object() if names.salted else None)
        system: list[dict[str, Any]] = [{"role": "system", "content": request.system}] if request.system else []
        messages = system + history
        # OpenAI itself wants max_completion_tokens (reasoning models reject max_tokens); the
        # compatible servers know max_tokens.
        limit = "max_completion_tokens" if self.genuine else "max_tokens"
        params: dict[str, Any] = {"model": request.model or self.model, "messages": messages, limit: request.max_tokens}
        if request.tools:
            params["tools"] = [chat_tool(t, names) for t in request.tools]
        if self.streaming and self.include_usage:
            params["stream_options"] = {"include_usage": True}
        effort = self.thinking.openai_effort
        if effort and self.genuine and self.profile.abilities(params["model"]).reasoning:
            params["reasoning_effort"] = effort  # [thinking] openai_effort, for OpenAI's reasoning models
        return Prepared(params, names, "messages", self._history.body(head=raw.dumps(system[0]) if system else b""))

    async def _send(self, client: Any, prepared: Prepared) -> Any:
        params = prepared.params
        route = raw.CHAT_STREAM if self.streaming else raw.CHAT
        content = self._raw(route, prepared)
        if content is None:  # through the SDK's method
            if self.streaming:
                return await client.chat.completions.create(**params, stream=True)
            return await client.chat.completions.create(**params)
        from openai import AsyncStream
        from openai.types.chat import ChatCompletion, ChatCompletionChunk

        events = AsyncStream[ChatCompletionChunk] if self.streaming else None
        return await raw.post(client, route, content, cast_to=ChatCompletion, stream_cls=events)

    async def _read(self, opened: Any, names: WireNames) -> AsyncGenerator[ProviderEvent, None]:
        if self.streaming:
            from openai.lib.streaming.chat import ChatCompletionStreamState

            state: Any = ChatCompletionStreamState()
            finished = False
            async with opened as stream:
                async for chunk in stream:
                    if not isinstance(chunk.choices, list):  # a usage-only chunk has `choices: []`
                        raise malformed(self.label, "a chunk without `choices`")
                    for choice in chunk.choices[:1]:
                        if isinstance(piece := getattr(choice.delta, REASONING, None), str) and piece:
                            yield ThinkingDelta(text=piece)
                    for event in state.handle_chunk(chunk):
                        if event.type == "content.delta" and event.delta:
                            yield TextDelta(text=event.delta)
                    finished = finished or any(c.finish_reason for c in chunk.choices)
            if not finished:
                raise incomplete_stream(self.label)
            completion = state.current_completion_snapshot
        else:
            completion = opened
            if not isinstance(completion.choices, list):
                raise malformed(self.label, "a completion without `choices`")
            message = completion.choices[0].message if completion.choices else None
            if message is not None and (thought := _reasoning(message)):
                yield ThinkingDelta(text=thought)
            if message is not None and message.content:
                yield TextDelta(text=message.content)
        content, calls, finish = _read_completion(completion, names)
        if content and content[0]["type"] == REASONING:
            yield ThinkingBlock(block=content[0])
        for call in calls:
            yield call
        yield (usage := _usage(completion))
        yield ResponseDone(stop_reason=finish, content=content, usage=usage)


def _read_completion(completion: Any, names: WireNames) -> tuple[list[dict[str, Any]], list[ToolUse], str | None]:
    if not completion.choices:
        return [], [], None
    choice = completion.choices[0]
    message = choice.message
    content: list[dict[str, Any]] = [{"type": REASONING, "text": thought}] if (thought := _reasoning(message)) else []
    if message.content:
        content.append({"type": "text", "text": message.content})
    calls: list[ToolUse] = []
    for call in message.tool_calls or []:
        function = getattr(call, "function", None)
        if function is None:
            continue
        call_id = call.id or ""  # some local servers send calls without ids: the turn loop gives each one
        name, raw = names.resolve(function.name)
        args = parse_arguments(function.arguments)
        calls.append(ToolUse(id=call_id, name=name, input=args, raw_name=raw))
        content.append({"type": "tool_use", "id": call_id, "name": name, "input": args})
    finish = _FINISH.get(choice.finish_reason or "", choice.finish_reason)
    if calls:  # some servers (Ollama) say "stop" even when they called tools
        finish = "tool_use"
    return content, calls, finish


def _reasoning(message: Any) -> str:
    """A message's thinking-mode ``reasoning_content`` (an extra field the SDK keeps), or ""."""
    value = getattr(message, REASONING, None)
    return value if isinstance(value, str) else ""


def _usage(completion: Any) -> Usage:
    u = completion.usage
    if u is None:
        return usage_from(0, 0, input_includes_cache=True)
    details = getattr(u, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    if cached is None:  # DeepSeek reports its cache hits on the usage object itself
        cached = (u.model_extra or {}).get("prompt_cache_hit_tokens", 0) if hasattr(u, "model_extra") else 0
    return usage_from(u.prompt_tokens, u.completion_tokens, cached, 0, input_includes_cache=True)
