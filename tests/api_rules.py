"""What each provider API accepts in a request body, as strict validators: one function per API.

Each function takes the JSON body a client sends (what the SDK puts on the wire: the adapter's
``build_params``, a recorded request, or what the loopback server received) and returns the
list of rules it breaks (empty: the API would accept it, as far as these rules go). The rules
are built from the official SDKs' request param TypedDicts (which top-level keys, which block
or item types, which keys each of them may carry) and from the APIs' documented constraints:

* **Anthropic Messages**: user/assistant roles alternating, starting with the user; block types
  per role; every ``tool_use`` answered by a ``tool_result`` at the start of the next user
  message, and no ``tool_result`` without its ``tool_use``; every ``server_tool_use`` answered by
  its ``tool_search_tool_result`` in the same or the next assistant message; tool uses name a
  declared tool (server tool uses a declared server tool), ``tool_reference`` blocks a declared
  tool; no empty text; thinking blocks with their signature.
* **OpenAI Responses**: item types and keys; every ``function_call`` answered by a
  ``function_call_output`` with its ``call_id`` (and no output without its call); a client
  ``tool_search_call`` answered by its ``tool_search_output``; search items only with a
  ``tool_search`` tool declared; a ``reasoning`` item followed by the item it preceded, not by a
  user message or the end; function calls name a declared function; item ids of the right kind.
* **Chat Completions**: roles and per-role keys (plus ``reasoning_content`` on an assistant
  message, the thinking-mode servers' documented extension); every assistant ``tool_calls`` id
  answered by ``tool`` messages right after it, no ``tool`` message without its call; function
  tools only (no ``defer_loading``, no provider tools); calls name a declared function.

Everywhere: tool names legal (``^[a-zA-Z0-9_-]{1,64}$``) and declared once.
"""

from __future__ import annotations

import collections.abc
import re
import typing
from functools import cache
from typing import Any

import typing_extensions

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


# --- reading the SDKs' TypedDicts -------------------------------------------------------------


def _members(t: Any) -> list[Any]:
    """The TypedDicts of a (possibly Annotated, Required, Iterable-of) union."""
    origin = typing.get_origin(t)
    if origin in (typing.Annotated, typing.Required, typing.NotRequired):
        return _members(typing.get_args(t)[0])
    if origin is typing.Union:
        return [m for a in typing.get_args(t) for m in _members(a)]
    if origin in (list, collections.abc.Iterable):
        return _members(typing.get_args(t)[0])
    return [t] if typing_extensions.is_typeddict(t) else []


def _literal(td: Any, key: str) -> tuple[str, ...]:
    t = typing.get_type_hints(td).get(key)
    while typing.get_origin(t) in (typing.Required, typing.NotRequired):
        t = typing.get_args(t)[0]
    return tuple(v for v in typing.get_args(t) if isinstance(v, str))


def _keys_by_kind(union: Any, key: str = "type") -> dict[str, frozenset[str]]:
    """{type literal: every key a TypedDict of that type may carry} for a union of TypedDicts."""
    out: dict[str, set[str]] = {}
    for td in _members(union):
        for kind in _literal(td, key):
            out.setdefault(kind, set()).update(typing.get_type_hints(td))
    return {k: frozenset(v) for k, v in out.items()}


def _top_keys(*tds: Any) -> frozenset[str]:
    return frozenset(k for td in tds for k in typing.get_type_hints(td))


@cache
def _anthropic() -> dict[str, Any]:
    from anthropic.types.beta import message_create_params as p
    from anthropic.types.beta.beta_content_block_param import BetaContentBlockParam
    from anthropic.types.beta.beta_tool_param import BetaToolParam

    return {
        "top": _top_keys(p.MessageCreateParamsStreaming, p.MessageCreateParamsNonStreaming),
        "blocks": _keys_by_kind(BetaContentBlockParam),
        "tool": frozenset(typing.get_type_hints(BetaToolParam)),
    }


@cache
def _responses() -> dict[str, Any]:
    from openai.types.responses import response_create_params as p
    from openai.types.responses.function_tool_param import FunctionToolParam
    from openai.types.responses.response_input_item_param import ResponseInputItemParam

    return {
        "top": _top_keys(p.ResponseCreateParamsStreaming, p.ResponseCreateParamsNonStreaming),
        "items": _keys_by_kind(ResponseInputItemParam),
        "function": frozenset(typing.get_type_hints(FunctionToolParam)),
    }


@cache
def _chat() -> dict[str, Any]:
    from openai.types.chat import ChatCompletionMessageParam
    from openai.types.chat import completion_create_params as p
    from openai.types.shared_params.function_definition import FunctionDefinition

    roles = _keys_by_kind(ChatCompletionMessageParam, "role")
    # Thinking-mode servers (DeepSeek) document reasoning_content on an assistant message they
    # answered with; it must come back with that message.
    roles = {**roles, "assistant": roles["assistant"] | {"reasoning_content"}}
    return {
        "top": _top_keys(p.CompletionCreateParamsStreaming, p.CompletionCreateParamsNonStreaming),
        "roles": roles,
        "function": frozenset(typing.get_type_hints(FunctionDefinition)),
    }


def _names(where: str, names: list[str], errors: list[str]) -> set[str]:
    for n in names:
        if not isinstance(n, str) or not NAME.match(n):
            errors.append(f"{where}: illegal tool name {n!r}")
    for n in {n for n in names if names.count(n) > 1}:
        errors.append(f"{where}: tool {n!r} declared twice")
    return set(names)


# --- Anthropic Messages -----------------------------------------------------------------------

_ANTHROPIC_USER = frozenset({"text", "image", "document", "search_result", "tool_result"})
_ANTHROPIC_ASSISTANT = frozenset(
    {"text", "thinking", "redacted_thinking", "tool_use", "server_tool_use", "tool_search_tool_result"}
)


def anthropic_messages(body: dict[str, Any]) -> list[str]:
    """The rules an Anthropic Messages request body breaks."""
    sdk = _anthropic()
    errors = [f"unknown request key {k!r}" for k in body if k not in sdk["top"]]
    functions: list[str] = []
    servers: list[str] = []
    for i, tool in enumerate(body.get("tools") or []):
        if tool.get("type") in (None, "custom"):
            errors += [f"tools[{i}]: unknown key {k!r}" for k in tool if k not in sdk["tool"]]
            functions.append(tool.get("name"))
        else:
            servers.append(tool.get("name"))
    declared = _names("tools", functions + servers, errors)
    server_names = set(servers)
    messages = body.get("messages") or []
    if not messages or messages[0].get("role") != "user":
        errors.append("the first message must be the user's")
    pending: list[str] = []  # tool_use ids the next user message must answer
    searches: dict[str, int] = {}  # server_tool_use id -> its message
    search_results: dict[str, int] = {}  # tool_search_tool_result's tool_use_id -> its message
    for i, m in enumerate(messages):
        role = m.get("role")
        where = f"messages[{i}]"
        if role not in ("user", "assistant"):
            errors.append(f"{where}: role {role!r}")
            continue
        if i and messages[i - 1].get("role") == role:
            errors.append(f"{where}: two {role} messages in a row")
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        if not blocks:
            errors.append(f"{where}: empty content")
        allowed = _ANTHROPIC_USER if role == "user" else _ANTHROPIC_ASSISTANT
        results_done = False
        answered: list[str] = []
        uses: list[str] = []
        for j, b in enumerate(blocks):
            kind = b.get("type")
            bw = f"{where}.content[{j}]"
            if kind not in sdk["blocks"]:
                errors.append(f"{bw}: {kind!r} is not an Anthropic block type")
                continue
            if kind not in allowed:
                errors.append(f"{bw}: a {role} message cannot carry {kind!r}")
            errors += [f"{bw}: {kind} has no key {k!r}" for k in b if k not in sdk["blocks"][kind]]
            if kind == "text" and not b.get("text"):
                errors.append(f"{bw}: empty text")
            if kind == "tool_result":
                if results_done:
                    errors.append(f"{bw}: tool_result after other content")
                answered.append(b.get("tool_use_id"))
                for part in b.get("content") if isinstance(b.get("content"), list) else []:
                    if part.get("type") == "tool_reference" and part.get("tool_name") not in declared:
                        errors.append(f"{bw}: tool_reference to undeclared {part.get('tool_name')!r}")
            else:
                results_done = True
            if kind in ("tool_use", "server_tool_use"):
                if not ANTHROPIC_ID.match(str(b.get("id") or "")):
                    errors.append(f"{bw}: illegal id {b.get('id')!r}")
                if not isinstance(b.get("input"), dict):
                    errors.append(f"{bw}: input must be an object")
            if kind == "tool_use":
                uses.append(b.get("id"))
                if b.get("name") not in functions:
                    errors.append(f"{bw}: tool_use of undeclared tool {b.get('name')!r}")
            if kind == "server_tool_use":
                searches[b.get("id")] = i
                if b.get("name") not in server_names:
                    errors.append(f"{bw}: server_tool_use of undeclared server tool {b.get('name')!r}")
            if kind == "tool_search_tool_result":
                if searches.get(b.get("tool_use_id")) not in (i, i - 2):
                    errors.append(
                        f"{bw}: tool_search_tool_result without its server_tool_use (this response or the last)"
                    )
                search_results[b.get("tool_use_id")] = i
                refs = (b.get("content") or {}).get("tool_references") or []
                for r in refs:
                    if r.get("tool_name") not in declared:
                        errors.append(f"{bw}: tool_reference to undeclared {r.get('tool_name')!r}")
            if kind == "thinking" and not b.get("signature"):
                errors.append(f"{bw}: thinking without its signature")
        if role == "user":
            missing = [u for u in pending if u not in answered]
            stray = [a for a in answered if a not in pending]
            errors += [f"{where}: tool_use {u!r} has no tool_result here" for u in missing]
            errors += [f"{where}: tool_result for {a!r}, which the previous message did not call" for a in stray]
            pending = []
        else:
            if pending:
                errors += [f"{where}: tool_use {u!r} was never answered" for u in pending]
            pending = uses
    last_assistant = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    for sid, at in searches.items():
        # its result is in the same response, or opens the next one (the deferred case); a search
        # of the last response may still be waiting for the response this request asks for
        if search_results.get(sid) not in (at, at + 2) and at != last_assistant:
            errors.append(f"messages[{at}]: server_tool_use {sid!r} has no tool_search_tool_result")
    return errors


# --- OpenAI Responses ---------------------------------------------------------------------------


def openai_responses(body: dict[str, Any]) -> list[str]:
    """The rules an OpenAI Responses request body breaks."""
    sdk = _responses()
    errors = [f"unknown request key {k!r}" for k in body if k not in sdk["top"]]
    functions: list[str] = []
    search = False
    for i, tool in enumerate(body.get("tools") or []):
        kind = tool.get("type")
        if kind == "function":
            errors += [f"tools[{i}]: unknown key {k!r}" for k in tool if k not in sdk["function"]]
            functions.append(tool.get("name"))
        elif kind == "namespace":
            functions += [t.get("name") for t in tool.get("tools") or []]
        elif kind == "tool_search":
            search = True
        elif kind is None:
            errors.append(f"tools[{i}]: a tool without a type")
    _names("tools", functions, errors)
    items = body.get("input")
    items = [{"role": "user", "content": items}] if isinstance(items, str) else list(items or [])
    calls: dict[str, int] = {}
    outputs: dict[str, int] = {}
    client_searches: dict[str, int] = {}
    search_outputs: dict[str, int] = {}
    for i, item in enumerate(items):
        kind = item.get("type") or ("message" if "role" in item else None)
        where = f"input[{i}]"
        if kind not in sdk["items"]:
            errors.append(f"{where}: {kind!r} is not a Responses input item type")
            continue
        errors += [f"{where}: {kind} has no key {k!r}" for k in item if k not in sdk["items"][kind]]
        if kind == "message":
            if item.get("role") not in ("user", "assistant", "system", "developer"):
                errors.append(f"{where}: role {item.get('role')!r}")
            if item.get("content") in (None, "", []):
                errors.append(f"{where}: empty message")
        elif kind == "function_call":
            call_id = item.get("call_id")
            if call_id in calls:
                errors.append(f"{where}: call_id {call_id!r} twice")
            calls[call_id] = i
            if not NAME.match(str(item.get("name") or "")):
                errors.append(f"{where}: illegal function name {item.get('name')!r}")
            elif item.get("name") not in functions:
                errors.append(f"{where}: function_call of undeclared function {item.get('name')!r}")
            if "id" in item and not str(item["id"]).startswith("fc_"):
                errors.append(f"{where}: function_call id {item['id']!r} is not a function call item's id")
            if not isinstance(item.get("arguments"), str):
                errors.append(f"{where}: arguments must be a JSON string")
        elif kind == "function_call_output":
            if item.get("call_id") not in calls:
                errors.append(f"{where}: function_call_output for {item.get('call_id')!r}, which no earlier call made")
            outputs[item.get("call_id")] = i
        elif kind in ("tool_search_call", "tool_search_output"):
            if not search:
                errors.append(f"{where}: {kind} without a tool_search tool declared")
            if kind == "tool_search_call" and item.get("execution") == "client":
                client_searches[item.get("call_id")] = i
            if kind == "tool_search_output" and item.get("execution") == "client":
                if item.get("call_id") not in client_searches:
                    errors.append(f"{where}: tool_search_output for {item.get('call_id')!r} without its call")
                search_outputs[item.get("call_id")] = i
        elif kind == "reasoning":
            nxt = items[i + 1] if i + 1 < len(items) else {}
            follows = nxt.get("type") or ("message" if "role" in nxt else None)
            if follows in (None, "reasoning", "function_call_output", "tool_search_output") or (
                follows == "message" and nxt.get("role") != "assistant"
            ):
                errors.append(f"{where}: reasoning item without the item it preceded")
    errors += [f"function_call {c!r} has no function_call_output" for c in calls if c not in outputs]
    errors += [
        f"client tool_search_call {c!r} has no tool_search_output" for c in client_searches if c not in search_outputs
    ]
    return errors


# --- Chat Completions ---------------------------------------------------------------------------


def chat_completions(body: dict[str, Any]) -> list[str]:
    """The rules a Chat Completions request body breaks."""
    sdk = _chat()
    errors = [f"unknown request key {k!r}" for k in body if k not in sdk["top"]]
    functions: list[str] = []
    for i, tool in enumerate(body.get("tools") or []):
        if tool.get("type") != "function" or set(tool) - {"type", "function"}:
            errors.append(f"tools[{i}]: only function tools {{type, function}} are accepted, not {tool}")
            continue
        fn = tool.get("function") or {}
        errors += [f"tools[{i}].function: unknown key {k!r}" for k in fn if k not in sdk["function"]]
        functions.append(fn.get("name"))
    _names("tools", functions, errors)
    pending: list[str] = []
    for i, m in enumerate(body.get("messages") or []):
        role = m.get("role")
        where = f"messages[{i}]"
        if role not in sdk["roles"]:
            errors.append(f"{where}: role {role!r}")
            continue
        errors += [f"{where}: a {role} message has no key {k!r}" for k in m if k not in sdk["roles"][role]]
        if role == "tool":
            if m.get("tool_call_id") not in pending:
                errors.append(f"{where}: tool message for {m.get('tool_call_id')!r}, which the assistant did not call")
            else:
                pending.remove(m.get("tool_call_id"))
            continue
        errors += [f"{where}: tool call {c!r} was not answered before it" for c in pending]
        pending = []
        if role == "assistant":
            calls = m.get("tool_calls") or []
            if not calls and not m.get("content"):
                errors.append(f"{where}: an assistant message with neither content nor tool calls")
            for c in calls:
                fn = c.get("function") or {}
                if c.get("type") != "function" or not c.get("id"):
                    errors.append(f"{where}: a tool call needs an id and type function")
                if not NAME.match(str(fn.get("name") or "")):
                    errors.append(f"{where}: illegal function name {fn.get('name')!r}")
                elif fn.get("name") not in functions:
                    errors.append(f"{where}: call of undeclared function {fn.get('name')!r}")
                if not isinstance(fn.get("arguments"), str):
                    errors.append(f"{where}: arguments must be a JSON string")
                pending.append(c.get("id"))
        elif m.get("content") in (None, "", []):
            errors.append(f"{where}: empty {role} message")
    errors += [f"tool call {c!r} was never answered" for c in pending]
    return errors


RULES = {"anthropic": anthropic_messages, "openai": openai_responses, "openai-chat": chat_completions}
"""The validator for each wire (the provider names of :func:`core.providers.make_provider`)."""


def check(wire: str, body: dict[str, Any]) -> list[str]:
    return RULES[wire](body)
