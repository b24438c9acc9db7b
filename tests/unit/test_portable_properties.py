"""A chat that switched providers any number of times, as the engine stores it, converted for each
target (core.providers.portable) and built into that API's body: the body passes the API's rules
(tests/api_rules.py), the stored history is untouched, every tool use keeps its result and every
result its use, the owner's words all reach the model, and the target's own blocks go back as the
target gave them, in order.

The histories are drawn step by step: each model step is answered by a provider drawn for that
step (a switch or a fallback between two steps), its blocks in that provider's own shapes (the
OpenAI ones read from wire items by the adapter's own ``_Reader``, as a stream would store them).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from functools import cache
from operator import ne
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from core.deferral.strategies import ANTHROPIC_SEARCH_TOOLS, make_strategy
from core.providers import make_provider
from core.providers.base import ModelRequest
from core.providers.openai_responses import _Reader, wire_function
from core.providers.portable import for_target
from core.providers.wirenames import WireNames, encode, readable
from core.roster.models import RosterPlan
from core.tools import Origin, ToolSpec
from tests import api_rules
from tests.helpers import production_plan

TARGETS = ("anthropic", "openai", "openai-chat")
Block = dict[str, Any]
Message = dict[str, Any]

# Names the production roster lacks: each needs the hashed wire form (a native "__", letters
# outside ASCII, too long for 64 characters).
ODD_DEFINED = ("mcp.odd.send__now", "mcp.wörk.list_mail", "mcp." + "very_long_server_name." * 3 + "fetch_everything")
ODD_DEFERRED = ("mcp.weird-srv.do__it",)


# --- the chat's pinned plan, and what each target's strategy declares -------------------------


@dataclass(frozen=True)
class Chat:
    """One chat's plan and how its strategy is chosen: ``auto`` runs each provider's own (native
    on Anthropic and OpenAI, active-tools on Chat Completions), the others run everywhere."""

    mode: str  # auto | active-tools | wrapper
    plan: RosterPlan
    specs: dict[str, ToolSpec]

    @property
    def defined(self) -> list[str]:
        return [n for n in self.plan.defined_tool_names if n in self.specs]

    @property
    def deferred(self) -> list[str]:
        return [n for n in self.plan.deferred_tool_names if n in self.specs]

    def strategy(self, target: str, *, anthropic_search: str = "bm25", openai_search: str = "hosted") -> Any:
        name = self.mode if self.mode != "auto" else {"openai-chat": "active-tools"}.get(target, target)
        return make_strategy(
            name,
            self.plan,
            "s",
            self.specs,
            anthropic_search=anthropic_search,
            openai_search=openai_search,
            foreign_history=True,
        )


def _spec(name: str) -> ToolSpec:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    return ToolSpec(name=name, description=f"the {name} tool", input_schema=schema, origin=Origin.DISCOVERED)


@cache
def chat_of(mode: str) -> Chat:
    plan = production_plan(strategy="anthropic" if mode == "auto" else mode)
    specs = {n: plan.spec_of(n) for n in plan.pinned_names()}
    specs.update({n: _spec(n) for n in (*ODD_DEFINED, *ODD_DEFERRED)})
    plan = plan.model_copy(
        update={
            "defined_tool_names": [*plan.defined_tool_names, *ODD_DEFINED],
            "deferred_tool_names": [*plan.deferred_tool_names, *ODD_DEFERRED],
        }
    )
    return Chat(mode, plan, specs)


# --- drawing a history -------------------------------------------------------------------------

TEXT = st.text(max_size=12)  # empty strings, newlines, any unicode
WORDS = st.text(min_size=1, max_size=12).filter(str.strip)  # what an owner types: never blank
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | TEXT,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(TEXT, inner, max_size=2),
    max_leaves=4,
)
INPUT = st.dictionaries(st.sampled_from(["q", "to", "body", "n"]), JSONISH, max_size=3)


@dataclass
class History:
    """Builds one chat's stored history, step by step, with unique ids."""

    chat: Chat
    anthropic_search: str  # the search tool the chat's Anthropic steps ran (settings can change it later)
    openai_search: str  # hosted | client
    messages: list[Message] = field(default_factory=list)
    counter: int = 0
    # an Anthropic server search whose result is to open the next response, if that is Anthropic's
    waiting_search: str | None = None

    def next_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter:04d}"

    @property
    def names(self) -> WireNames:
        return WireNames([*self.chat.specs])

    def callable_names(self) -> list[str]:
        """The wrapper reaches deferred tools through ``tool.call`` only; the others call them."""
        return self.chat.defined if self.chat.mode == "wrapper" else [*self.chat.defined, *self.chat.deferred]


def _tool_input(draw: Any, h: History, name: str) -> dict[str, Any]:
    if name == "tool.call":
        return {"name": draw(st.sampled_from(h.chat.deferred)), "arguments": draw(INPUT)}
    if name == "tool.search":
        return {"query": draw(TEXT)}
    return draw(INPUT)


def _calls(draw: Any, h: History) -> list[tuple[str, dict[str, Any]]]:
    names = draw(st.lists(st.sampled_from(h.callable_names()), max_size=3))
    return [(n, _tool_input(draw, h, n)) for n in names]


def _references(draw: Any, h: History) -> list[str]:
    return draw(st.lists(st.sampled_from(h.chat.deferred), min_size=0, max_size=3, unique=True))


def anthropic_step(draw: Any, h: History) -> list[Block]:
    content: list[Block] = []
    if h.waiting_search is not None:  # the deferred case: the last response's search result opens this one
        refs = [{"type": "tool_reference", "tool_name": n} for n in _references(draw, h)]
        result = {"type": "tool_search_tool_search_result", "tool_references": refs}
        content.append({"type": "tool_search_tool_result", "tool_use_id": h.waiting_search, "content": result})
    for redacted in draw(st.lists(st.booleans(), max_size=2)):
        if redacted:
            content.append({"type": "redacted_thinking", "data": draw(st.text("abcXYZ09+/=", min_size=1))})
        else:
            sig = draw(st.text("abcXYZ09+/=", min_size=1, max_size=16))
            content.append({"type": "thinking", "thinking": draw(TEXT), "signature": sig})
    if text := draw(TEXT):
        content.append({"type": "text", "text": text})
    native = h.chat.mode == "auto"
    if native and draw(st.booleans()):
        sid = h.next_id("srvtoolu_")
        search = ANTHROPIC_SEARCH_TOOLS[h.anthropic_search]["name"]
        content.append({"type": "server_tool_use", "id": sid, "name": search, "input": {"query": draw(TEXT)}})
        refs = [{"type": "tool_reference", "tool_name": n} for n in _references(draw, h)]
        result = {"type": "tool_search_tool_search_result", "tool_references": refs}
        content.append({"type": "tool_search_tool_result", "tool_use_id": sid, "content": result})
        if text := draw(TEXT):
            content.append({"type": "text", "text": text})
    calls = _calls(draw, h)
    content += [{"type": "tool_use", "id": h.next_id("toolu_"), "name": n, "input": i} for n, i in calls]
    h.waiting_search = None
    if native and calls and draw(st.booleans()):
        sid = h.next_id("srvtoolu_")
        search = ANTHROPIC_SEARCH_TOOLS[h.anthropic_search]["name"]
        content.append({"type": "server_tool_use", "id": sid, "name": search, "input": {"query": draw(TEXT)}})
        h.waiting_search = sid
    return content


def openai_items(draw: Any, h: History) -> list[dict[str, Any]]:
    """One Responses output, as wire items (what ``response.output`` holds)."""
    names = h.names
    items: list[dict[str, Any]] = []

    def reasoning() -> None:
        if draw(st.booleans()):
            summary = [{"type": "summary_text", "text": t} for t in draw(st.lists(TEXT, max_size=2))]
            rid = h.next_id("rs_")
            items.append({"type": "reasoning", "id": rid, "summary": summary, "encrypted_content": f"enc-{rid}"})

    native = h.chat.mode == "auto"
    if native and draw(st.booleans()):
        reasoning()
        n = h.next_id("")
        if h.openai_search == "client":
            arguments = {"queries": draw(st.lists(TEXT, min_size=1, max_size=2))}
            items.append(
                {
                    "id": f"tsc_{n}",
                    "type": "tool_search_call",
                    "status": "completed",
                    "arguments": arguments,
                    "call_id": f"call_{n}",
                    "execution": "client",
                }
            )
        else:
            found = [
                dict(wire_function(h.chat.specs[r].definition(), names), defer_loading=True)
                for r in _references(draw, h)
            ]
            items.append(
                {
                    "id": f"tsc_{n}",
                    "type": "tool_search_call",
                    "status": "completed",
                    "arguments": {"paths": [draw(TEXT)]},
                    "call_id": None,
                    "execution": "server",
                }
            )
            items.append(
                {
                    "id": f"tso_{n}",
                    "type": "tool_search_output",
                    "status": "completed",
                    "call_id": None,
                    "execution": "server",
                    "tools": found,
                }
            )
    for _ in range(draw(st.integers(0, 2))):
        reasoning()
        phase = draw(st.sampled_from([None, "commentary", "final_answer"]))
        message = {
            "id": h.next_id("msg_"),
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": draw(TEXT), "annotations": []}],
        }
        items.append(message if phase is None else {**message, "phase": phase})
    for name, tool_input in _calls(draw, h):
        reasoning()
        n = h.next_id("")
        wire = names.wire(name)
        item = {
            "id": f"fc_{n}",
            "type": "function_call",
            "status": "completed",
            "arguments": json.dumps(tool_input, separators=(",", ":")),
            "call_id": f"call_{n}",
            "name": wire,
        }
        items.append({**item, "namespace": wire} if draw(st.booleans()) else item)
    return items


def openai_step(draw: Any, h: History) -> list[Block]:
    h.waiting_search = None  # Anthropic's pending search result never comes: this response is OpenAI's
    reader = _Reader(h.names)
    return [b for item in openai_items(draw, h) for b in reader.read(item)[1]]


def chat_step(draw: Any, h: History) -> list[Block]:
    content: list[Block] = []
    if thought := draw(TEXT):
        content.append({"type": "reasoning_content", "text": thought})
    if text := draw(TEXT):
        content.append({"type": "text", "text": text})
    for name, tool_input in _calls(draw, h):
        n = h.next_id("")
        # the ids servers give: OpenAI's call_..., Kimi's functions.<name>:<index>
        call_id = draw(st.sampled_from([f"call_{n}", f"chatcmpl-tool-{n}", f"functions.{encode(name)}:{n}"]))
        content.append({"type": "tool_use", "id": call_id, "name": name, "input": tool_input})
    h.waiting_search = None  # as for OpenAI
    return content


STEPS = {"anthropic": anthropic_step, "openai": openai_step, "openai-chat": chat_step}


def _client(item: dict[str, Any]) -> str:
    """An OpenAI item's type when the client runs it, else "" (a hosted search OpenAI answers itself)."""
    return item["type"] if item.get("execution") == "client" else ""


def owed(content: list[Block]) -> list[tuple[str, str | None]]:
    """What the client must answer in the next user message: (id, client search or None)."""
    out: list[tuple[str, str | None]] = []
    for b in content:
        if b["type"] == "tool_use":
            out.append((b["id"], b["name"]))
        elif b["type"] == "provider_item" and _client(b["item"]) == "tool_search_call":
            out.append((b["item"]["call_id"], None))
    return out


def results(draw: Any, h: History, calls: list[tuple[str, str | None]]) -> list[Block]:
    out: list[Block] = []
    for call_id, name in calls:
        if name is None:  # a client search's answer: the tools it loaded
            refs = [{"type": "tool_reference", "tool_name": r} for r in _references(draw, h)]
            out.append({"type": "tool_result", "tool_use_id": call_id, "content": refs})
            continue
        shape = draw(st.sampled_from(["text", "blocks", "error", "references"]))
        block: Block = {"type": "tool_result", "tool_use_id": call_id}
        if shape == "text":
            block["content"] = draw(TEXT)
        elif shape == "blocks":
            block["content"] = [{"type": "text", "text": t} for t in draw(st.lists(TEXT, min_size=1, max_size=2))]
        elif shape == "error":
            block.update(content=draw(TEXT), is_error=True)
        else:  # tool.search under active-tools answers with the tools it loaded
            refs = [{"type": "tool_reference", "tool_name": r} for r in _references(draw, h)]
            block["content"] = [{"type": "text", "text": draw(TEXT)}, *refs]
        out.append(block)
    return out


@st.composite
def histories(draw: Any) -> tuple[str, list[Message], str, str, list[str]]:
    """(the chat's mode, its stored history, the Anthropic search the request declares, the
    OpenAI search flavour, the provider of each step in order)."""
    mode = draw(st.sampled_from(["auto", "auto", "active-tools", "wrapper"]))
    chat = chat_of(mode)
    h = History(chat, draw(st.sampled_from(["bm25", "regex"])), draw(st.sampled_from(["hosted", "client"])))
    answered_by: list[str] = []
    for _turn in range(draw(st.integers(1, 4))):
        h.waiting_search = None
        h.messages.append({"role": "user", "content": [{"type": "text", "text": draw(WORDS)}]})
        for _step in range(draw(st.integers(0, 3))):
            provider = draw(st.sampled_from(TARGETS))
            content = STEPS[provider](draw, h)
            if not content:
                continue  # nothing came: the engine keeps no empty response
            answered_by.append(provider)
            h.messages.append({"role": "assistant", "content": content})
            calls = owed(content)
            if not calls:
                h.waiting_search = None
                break  # an answer: the turn is over
            h.messages.append({"role": "user", "content": results(draw, h, calls)})
    if h.messages[-1]["role"] == "assistant":
        h.messages.append({"role": "user", "content": [{"type": "text", "text": draw(WORDS)}]})
    return mode, h.messages, draw(st.sampled_from(["bm25", "regex"])), h.openai_search, answered_by


# --- one request, and what must hold of it -----------------------------------------------------


def request_for(
    chat: Chat, history: list[Message], target: str, anthropic_search: str, openai_search: str
) -> tuple[list[Message], dict[str, Any]]:
    """What the turn loop sends (core.chat.turn): the strategy's surface for the history, the
    history converted for the target, the adapter's body."""
    strategy = chat.strategy(target, anthropic_search=anthropic_search, openai_search=openai_search)
    surface = strategy.surface(history)
    converted = for_target(history, target, surface.tools)
    if surface.converted is not None:  # a native strategy's own conversion, which the turn loop sends
        assert surface.converted[0] == target
        assert json.dumps(surface.converted[1]) == json.dumps(converted)
    provider = make_provider(target, "m", api_key="k")
    request = ModelRequest(model="m", system=surface.system, tools=surface.tools, messages=converted)
    params, _ = provider.build_params(request)  # type: ignore[attr-defined]
    return converted, params


def _calls_of(message: Message) -> set[str]:
    return {call_id for call_id, _ in owed(message["content"])}


def _results_of(message: Message) -> set[str]:
    return {b["tool_use_id"] for b in message["content"] if b["type"] == "tool_result"}


def problems(chat: Chat, history: list[Message], anthropic_search: str, openai_search: str) -> list[str]:
    """Every property, for every target: empty when all hold."""
    out: list[str] = []
    before = json.dumps(history, sort_keys=True)
    user_texts = [b["text"] for m in history if m["role"] == "user" for b in m["content"] if b["type"] == "text"]
    for target in TARGETS:
        converted, params = request_for(chat, history, target, anthropic_search, openai_search)
        out += [f"{target}: {p}" for p in api_rules.check(target, params)]
        if json.dumps(history, sort_keys=True) != before:
            out.append(f"{target}: the stored history was changed")
        # every tool use kept is answered in the next message, every result answers the one before
        padded = [{"role": "", "content": []}, *converted, {"role": "", "content": []}]
        for i, m in enumerate(converted, start=1):
            if m["role"] == "assistant" and not _calls_of(m) <= _results_of(padded[i + 1]):
                out.append(f"{target}: message {i - 1}'s tool uses are not all answered in the next one")
            if m["role"] == "user" and not _results_of(m) <= _calls_of(padded[i - 1]):
                out.append(f"{target}: message {i - 1} answers a tool use the message before did not make")
        sent_texts = [b["text"] for m in converted if m["role"] == "user" for b in m["content"] if b["type"] == "text"]
        if sent_texts != user_texts:
            out.append(f"{target}: the owner's texts {user_texts!r} went as {sent_texts!r}")
        out += [f"{target}: {p}" for p in own_blocks_kept(history, converted, params, target)]
    return out


def _flat(messages: list[Message], kinds: tuple[str, ...]) -> list[Block]:
    return [b for m in messages for b in m["content"] if isinstance(b, dict) and b.get("type") in kinds]


def _in_order(sub: list[Any], seq: list[Any]) -> bool:
    """Whether ``sub`` is ``seq`` with some of its elements left out."""
    rest = iter(seq)
    return all(any(x == y for y in rest) for x in sub)


def own_blocks_kept(history: list[Message], converted: list[Message], params: dict[str, Any], target: str) -> list[str]:
    """The target's own blocks go back as it gave them, in order (on the wire, for thinking)."""
    out: list[str] = []
    if target == "anthropic":
        kinds = ("thinking", "redacted_thinking")
        wire = [json.dumps(b, sort_keys=True) for b in _flat(params["messages"], kinds)]
        stored = [json.dumps(b, sort_keys=True) for b in _flat(history, kinds)]
        if wire != stored:
            out.append("the thinking blocks did not go back byte-equal, in order")
    elif target == "openai-chat":
        stored_r = [b["text"] for m in history for b in m["content"] if b["type"] == "reasoning_content"]
        sent_r = [b["text"] for b in _flat(converted, ("reasoning_content",))]
        if sent_r != stored_r:
            out.append("the reasoning_content blocks were not all kept, in order")
    else:
        stored_items = [b["item"] for b in _flat(history, ("provider_item",))]
        wire_items = [
            i for i in params["input"] if i.get("type") in ("reasoning", "tool_search_call", "tool_search_output")
        ]
        wire_items = [i for i in wire_items if i.get("execution") != "client" or i["type"] == "tool_search_call"]
        if not _in_order(
            [json.dumps(i, sort_keys=True) for i in wire_items], [json.dumps(i, sort_keys=True) for i in stored_items]
        ):
            out.append("the provider items on the wire are not the stored ones, in order")
    # every target: the blocks it kept are the stored ones (the same objects), in their order
    kept = _flat(converted, ("thinking", "redacted_thinking", "provider_item", "reasoning_content"))
    if not _in_order([id(b) for b in kept], [id(b) for m in history for b in m["content"]]):
        out.append("the kept blocks are not the stored ones in their order")
    return out


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(histories())
def test_a_switched_chats_history_converts_into_a_request_every_target_accepts(drawn):
    mode, history, anthropic_search, openai_search, answered_by = drawn
    kinds = {b["type"] for m in history for b in m["content"]}
    kinds |= {b["item"]["type"] for m in history for b in m["content"] if b["type"] == "provider_item"}
    for kind in sorted(kinds - {"text"}):
        event(kind)
    event(f"providers that answered: {len(set(answered_by))}, switches: {sum(map(ne, answered_by, answered_by[1:]))}")
    found = problems(chat_of(mode), copy.deepcopy(history), anthropic_search, openai_search)
    assert found == []


def test_the_odd_names_need_the_hashed_wire_form():
    assert all(encode(n) != readable(n) for n in (*ODD_DEFINED, *ODD_DEFERRED))


# --- what the property found, shrunk ------------------------------------------------------------


def _openai_response(*items: dict[str, Any]) -> list[Block]:
    reader = _Reader(WireNames([*chat_of("auto").specs]))
    return [b for item in items for b in reader.read(item)[1]]


REASONING = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc-rs_1"}
EMPTY_MESSAGE = {
    "id": "msg_2",
    "type": "message",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "", "annotations": []}],
}
CALL = {"id": "fc_3", "type": "function_call", "arguments": "{}", "call_id": "call_3", "name": "time__now"}


def test_a_reasoning_item_that_ended_its_response_is_not_sent_back():
    # a response cut short while thinking (max_output_tokens): only its reasoning item came
    history = [
        {"role": "user", "content": [{"type": "text", "text": "0"}]},
        {"role": "assistant", "content": _openai_response(REASONING)},
        {"role": "user", "content": [{"type": "text", "text": "again"}]},
    ]
    assert problems(chat_of("auto"), history, "bm25", "hosted") == []
    _, body = request_for(chat_of("auto"), history, "openai", "bm25", "hosted")
    assert body["input"] == [  # the two user messages, merged, and no reasoning
        {"role": "user", "content": [{"type": "input_text", "text": "0"}, {"type": "input_text", "text": "again"}]}
    ]


def test_a_reasoning_item_whose_message_was_empty_is_not_sent_back():
    # the adapter keeps no empty message: the first reasoning item lost the item it preceded
    second = {**REASONING, "id": "rs_2", "encrypted_content": "enc-rs_2"}
    history = [
        {"role": "user", "content": [{"type": "text", "text": "0"}]},
        {"role": "assistant", "content": _openai_response(REASONING, EMPTY_MESSAGE, second, CALL)},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_3", "content": ""}]},
    ]
    assert problems(chat_of("active-tools"), history, "bm25", "hosted") == []
    _, body = request_for(chat_of("active-tools"), history, "openai", "bm25", "hosted")
    assert [i.get("id") for i in body["input"][1:3]] == ["rs_2", "fc_3"]


def test_a_chat_servers_call_ids_go_to_anthropic_legal_and_still_paired():
    # Kimi's ids (functions.<name>:<index>) break the Messages API's ^[a-zA-Z0-9_-]+$
    history = [
        {"role": "user", "content": [{"type": "text", "text": "0"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "functions.time__now:0", "name": "time.now", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "functions.time__now:0", "content": ""}]},
    ]
    assert problems(chat_of("auto"), history, "bm25", "hosted") == []
    _, body = request_for(chat_of("auto"), history, "anthropic", "bm25", "hosted")
    use, result = body["messages"][1]["content"][0], body["messages"][2]["content"][0]
    assert use["id"] == result["tool_use_id"] != "functions.time__now:0"
    _, chat_body = request_for(chat_of("auto"), history, "openai-chat", "bm25", "hosted")
    assert chat_body["messages"][2]["tool_calls"][0]["id"] == "functions.time__now:0"  # its own server's id, as it was
