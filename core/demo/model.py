"""The demo model (provider ``demo``): an offline, deterministic model that behaves like a small agent.

It sees exactly what a real model would see (the system prompt with any deferred tool index,
the tools array, the history) and nothing else, and for the owner's latest message it works as
a model does:

1. it reads the request (:mod:`core.demo.reading`): what it names in the demo's data (people,
   threads, schedules, events, tasks, notes, files: :mod:`core.demo.world`), the dates, times,
   places, addresses and the text it gives to be written;
2. it chooses a tool (:mod:`core.demo.choose`) among those the request offers (definitions,
   the deferred index reached through ``tool.call``, tools declared with ``defer_loading``
   reached through a native search it performs the way a provider's server would, and, under
   active-tools, those a ``tool.search`` finds: it searches first when none of the tools in
   hand does what the request says), by the chat's own tool search and the fit of each tool's
   parameters with what the request names; a reply to a question it asked counts with the
   request it answers;
3. it takes the steps that tool needs (:mod:`core.demo.skills`): ``time.now`` before
   "tomorrow", a list before an id, a contact's record before their address, the thread before
   a reply; a write whose target the request and the data do not identify beyond doubt asks
   which one; an argument it cannot fill from the request and the data, it asks for;
4. it sums up the result (:mod:`core.demo.answers`) and says plainly what it cannot do.

Either way a tool is reached the way the request offers it, so the same request shows each
strategy's route. Same request, same response: no randomness, no clock (today is what
``time.now`` said in this turn).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from core.deferral.search import query_words
from core.demo import skills
from core.demo.answers import failure, summarize
from core.demo.skills.generic import REAL_MODEL
from core.demo.text import parse_json
from core.providers.base import (
    ModelRequest,
    ProviderBase,
    ProviderEvent,
    ResponseDone,
    ServerToolUse,
    TextDelta,
    ToolSearchResult,
    ToolUse,
    Usage,
)

_INDEX_LINE = re.compile(r"(?P<name>[A-Za-z0-9_.:-]+)\((?P<params>[^)]*)\)(?: \u2014 (?P<desc>.*))?")  # fullmatch


@dataclass
class Offered:
    name: str
    description: str
    params: list[tuple[str, bool]]  # (name, required)
    schema: dict[str, Any] | None
    route: str  # direct | wrapper | native
    score: float = 0.0


@dataclass
class Step:
    """What happened so far in the current turn, read back from the history."""

    text: str
    calls: list[dict[str, Any]] = field(default_factory=list)  # tool_use blocks, in order
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # tool_use_id -> tool_result
    follow_up: str = ""  # the owner's previous request, when the model's last answer asked a question


def _block_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


def _result_text(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")


def read_turn(messages: list[dict[str, Any]]) -> Step:
    start = 0
    for i, m in enumerate(messages):
        if m.get("role") == "user" and _block_text(m.get("content")).strip():
            start = i
    step = Step(text=_block_text(messages[start].get("content")) if messages else "")
    asked = earlier = ""
    for m in messages[:start]:
        said = _block_text(m.get("content")).strip()
        if said and m.get("role") == "user":
            earlier, asked = said, ""
        elif said and m.get("role") == "assistant":
            asked = said
    if earlier and "?" in asked.split("\n\n")[-1]:
        step.follow_up = earlier
    for m in messages[start + 1 :]:
        for b in m.get("content") or []:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_use":
                step.calls.append(b)
            elif b.get("type") == "tool_result":
                step.results[b.get("tool_use_id", "")] = b
    return step


def offered_tools(request: ModelRequest) -> list[Offered]:
    tools: list[Offered] = []
    names: set[str] = set()
    for t in request.tools:
        if "type" in t and "name" not in t:
            continue
        if t.get("type") and t.get("type") not in ("function", "custom"):
            continue  # a provider-side tool (server tool search)
        schema = t.get("input_schema") or t.get("parameters") or {}
        props = schema.get("properties") or {}
        req = set(schema.get("required") or [])
        route = "native" if t.get("defer_loading") else "direct"
        tools.append(Offered(t["name"], t.get("description", ""), [(p, p in req) for p in props], schema, route))
        names.add(t["name"])
    if "tool.call" in names:
        for line in request.system.splitlines():
            m = _INDEX_LINE.fullmatch(line.strip())
            if not m or m.group("name") in names:
                continue
            params = []
            for p in filter(None, (x.strip() for x in m.group("params").split(","))):
                if p == "\u2026":
                    continue
                params.append((p.rstrip("?"), not p.endswith("?")))
            tools.append(Offered(m.group("name"), m.group("desc") or "", params, None, "wrapper"))
    return tools


def _call_id(request: ModelRequest, salt: str) -> str:
    first = _block_text(request.messages[0].get("content")) if request.messages else ""
    h = hashlib.sha256(f"{len(request.messages)}|{salt}|{first}".encode()).hexdigest()[:12]
    return f"toolu_demo_{len(request.messages):03d}_{h}"


_ANSWERED = 0.25  # a message whose best tool has less tool-search evidence than this names no action of its own
_CLEAR_LEAD = 0.75  # a write this far ahead of another of its family is what the request asks
_CONFIDENT_IN_HAND = 0.6  # under active-tools: a tool in hand this well matched needs no search first


class DemoProvider(ProviderBase):
    name = "demo"

    def __init__(self, model: str = "demo-1", *, delay: float = 0.0):
        self.model = model
        self.delay = delay

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        blocks = self.respond(request)
        content: list[dict[str, Any]] = []
        for b in blocks:
            if b["type"] == "text":
                for chunk in re.findall(r"\S+\s*|\s+", b["text"]):
                    if self.delay:
                        await asyncio.sleep(self.delay)
                    yield TextDelta(text=chunk)
            elif b["type"] == "server_tool_use":
                yield ServerToolUse(id=b["id"], name=b["name"], input=b["input"])
            elif b["type"] == "tool_search_tool_result":
                refs = [r["tool_name"] for r in b["content"]["tool_references"]]
                yield ToolSearchResult(tool_use_id=b["tool_use_id"], references=refs)
            elif b["type"] == "tool_use":
                yield ToolUse(id=b["id"], name=b["name"], input=b["input"])
            content.append(b)
        usage = Usage(
            input_tokens=len(request.system) // 4
            + len(json.dumps(request.tools)) // 4
            + len(json.dumps(request.messages)) // 4,
            output_tokens=max(1, len(json.dumps(content)) // 4),
        )
        yield usage
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        yield ResponseDone(stop_reason=stop, content=content, usage=usage)

    # -- the policy of a small, honest agent -------------------------------------------------------
    def respond(self, request: ModelRequest) -> list[dict[str, Any]]:
        from core.demo.choose import rank
        from core.demo.reading import read
        from core.demo.world import load_world

        turn = read_turn(request.messages)
        tools = offered_tools(request)
        world = load_world(seeded=True)
        done = self._done(turn)
        text = turn.text
        choice = rank(read(text, world), tools)
        if turn.follow_up and self._answers(choice):
            # An answer to the question the last reply asked, read with the request it answers
            # (its own verb, when it has one, says what to do: "cancel it").
            combined = f"{turn.follow_up} {text}"
            answered = rank(read(combined, world, head=choice.reading.head or None), tools)
            if answered.best is not None:
                text, choice = combined, answered
        ctx = skills.Context(text=text, done=done, world=world, offered=frozenset(t.name for t in tools))
        reading = ctx.reading
        if reading.compose:
            return [{"type": "text", "text": skills.beyond(len(tools))}]
        by_name = {t.name: t for t in tools}
        asked_for = max((c.search for c in choice.ranked), default=0.0)  # the best a tool's words match
        if reading.question and choice.unknown and not reading.links and asked_for < 0.3 and "web.search" in by_name:
            # A question about what no tool of this chat knows (the weather): a model looks it up.
            ctx.goal = "web.search"
            action = skills.skill_for("web.search")(ctx)  # type: ignore[misc]
            if isinstance(action, skills.Say):
                return [{"type": "text", "text": action.text}]
            if isinstance(action, skills.Call) and (blocks := self._reach(request, ctx, action, tools)):
                return blocks
        searched = any(d.name == "tool.search" for d in done)
        if "tool.search" in by_name and not searched and self._needs_search(choice, tools):
            # None of the tools in hand clearly does it: look for one among the deferred tools first.
            query = self._search_query(reading)
            if query:
                return self._use(request, "tool.search", {"query": query}, "Let me look for a tool that can do that.")
        candidates = [s.tool for s in choice.chosen()[:3]]
        pinned = self._written(done, by_name)
        if pinned is None and not done and (question := self._which_action(choice)):
            return [{"type": "text", "text": question}]
        if pinned is not None:
            candidates = [pinned, *(t for t in candidates if t.name != pinned.name)]
        for tool in candidates:
            ctx.goal = tool.name
            skill = skills.skill_for(tool.name)
            action = skill(ctx) if skill is not None else skills.generic(ctx, tool, tools)
            if action is None:
                continue
            if isinstance(action, skills.Say):
                return [{"type": "text", "text": action.text}]
            blocks = self._reach(request, ctx, action, tools)
            if blocks is not None:
                return blocks
        last = next((d for d in reversed(done) if d.name != "tool.search"), None)
        if last is not None:  # the tool called last (chosen by an earlier step) sums up its own result
            ctx.goal = last.name
            skill = skills.skill_for(last.name)
            action = skill(ctx) if skill is not None else None
            if isinstance(action, skills.Say):
                return [{"type": "text", "text": action.text}]
            return [{"type": "text", "text": summarize(last.name, last.text, not last.ok)}]
        if reading.question and "web.search" in by_name and not reading.links:
            # A question about the world the demo's data does not hold: what a model would look up.
            ctx.goal = "web.search"
            action = skills.skill_for("web.search")(ctx)  # type: ignore[misc]
            if isinstance(action, skills.Call) and (blocks := self._reach(request, ctx, action, tools)):
                return blocks
        return [{"type": "text", "text": self._cannot(choice, len(tools))}]

    @staticmethod
    def _answers(choice: Any) -> bool:
        """Whether a message reads as the answer to a question rather than a request of its own:
        not a question itself, and it names no action ("the cookbook one"), or no tool it could
        be is well matched, or the best one lacks what the message leaves to the earlier request
        ("tell her dinner is at 7": who "her" is)."""
        r, best = choice.reading, choice.best
        if r.question:
            return False
        refers = bool(re.search(r"\b(?:him|her|them|it|that one|this one|there)\b", r.said))  # to the earlier request
        if r.head and not refers:
            return False  # a command of its own ("save the list as packing.md"), never an answer
        return best is None or not r.head or best.search < _ANSWERED or any("cannot fill" in w for w in best.why)

    @staticmethod
    def _needs_search(choice: Any, tools: list[Offered]) -> bool:
        """Whether the tools in hand leave what the request asks undone: none matches its words
        well, or it says what to do ("pause the standup") and no tool in hand does that."""
        from core.demo.choose import head_words, profile

        best, r = choice.best, choice.reading
        heads = head_words(r.head) if not r.question else frozenset()
        if heads and best is not None and profile(best.tool).writes and heads & profile(best.tool).verbs:
            return False  # the best tool in hand does what the request says ("move" and schedule.update)
        if best is None or best.search < _CONFIDENT_IN_HAND:
            return True
        return bool(heads) and not any(heads & profile(t).verbs for t in tools if not t.name.startswith("tool."))

    @staticmethod
    def _search_query(reading: Any) -> str:
        """What to ask ``tool.search`` for: the request's words for what to do, with the kinds of
        the things it names ("pause the standup": "pause schedule")."""
        words = {"thread": "email", "sender": "email", "label": "email", "person": "contact", "business": "contact"}
        words["fact"] = "memory"
        kinds = [words.get(x.entity.kind, x.entity.kind) for x in reading.links[:2] if x.sure]
        return " ".join(dict.fromkeys([*reading.query.split(), *kinds]))[:120]

    @staticmethod
    def _which_action(choice: Any) -> str:
        """The question to ask when two writes of one family fit the request almost as well as
        each other ("stop the standup for good": pause it, or cancel it?): a wrong write is the
        one failure the demo may not make, so it asks rather than picks."""
        from core.demo.choose import profile, slot_of

        top = choice.chosen()[:2]
        if len(top) < 2 or top[0].score - top[1].score >= _CLEAR_LEAD:
            return ""
        first, second = (profile(s.tool) for s in top)
        family = first.name.rsplit(".", 1)[0] == second.name.rsplit(".", 1)[0]
        targets = [{p for p, req in s.tool.params if req and slot_of(p).startswith("id:")} for s in top]
        if not (first.writes and second.writes and family and targets[0] and targets[0] == targets[1]):
            return ""  # two ways to act on one thing (pause or cancel a schedule), not two things to make
        thing = next((x.entity.label for x in choice.reading.links if x.sure), "it")
        verbs = [s.tool.description.split()[0].lower() if s.tool.description else s.tool.name for s in top]
        return f"Should I {verbs[0]} \u201c{thing}\u201d or {verbs[1]} it? Say which, and I'll do it."

    @staticmethod
    def _written(done: list[skills.Done], by_name: dict[str, Offered]) -> Offered | None:
        """The tool a write in this turn already went to: the turn stays on it (what it wrote
        may have changed what the request names, a cancelled schedule no longer listed)."""
        from core.demo.choose import profile

        for d in reversed(done):
            tool = by_name.get(d.name)
            if tool is not None and d.ok and profile(tool).writes:
                return tool
        return None

    @staticmethod
    def _cannot(choice: Any, offered: int) -> str:
        """What the demo says when no tool of this chat fits the request well enough."""
        r = choice.reading
        near = choice.ranked[0] if choice.ranked else None
        if near is not None and r.links and near.score > 0:
            thing = r.links[0].entity.label
            return (
                f"I found “{thing}” in your data, but I can't tell what you want done with it. "
                f"Say it with a verb (for example “show”, “open”, “pause”, "
                f"“reply to”), or ask {REAL_MODEL}."
            )
        return skills.beyond(offered)

    def _done(self, turn: Step) -> list[skills.Done]:
        done = []
        for call in turn.calls:
            result = turn.results.get(call["id"])
            if result is None:
                continue
            given: dict[str, Any] = call["input"] if isinstance(call.get("input"), dict) else {}
            args = given.get("arguments") if call.get("name") == "tool.call" else given
            text = _result_text(result)
            done.append(
                skills.Done(
                    self._called_name(call) or "",
                    args if isinstance(args, dict) else {},
                    not result.get("is_error"),
                    text,
                    parse_json(text),
                )
            )
        return done

    def _reach(
        self, request: ModelRequest, ctx: skills.Context, action: skills.Call, tools: list[Offered]
    ) -> list[dict[str, Any]] | None:
        """The blocks that make ``action``'s call by the route the request offers, a
        ``tool.search`` for it first, or None when this chat cannot reach it."""
        last = next((d for d in reversed(ctx.done) if d.name != "tool.search"), None)
        if last is not None and not last.ok:  # never press on past a failure
            return [{"type": "text", "text": failure(last.name, last.text)}]
        target = self._resolve(action, tools)
        if target is None:
            query = action.search or " ".join(re.split(r"[._]", action.tool.rsplit(".", 1)[-1]))
            asked = {str(d.args.get("query")) for d in ctx.done if d.name == "tool.search"}
            if any(t.name == "tool.search" for t in tools) and query not in asked:
                return self._use(request, "tool.search", {"query": query}, "Let me look for a tool that can do that.")
            return None
        if any(d.name == target.name and d.args == action.args for d in ctx.done):
            return None  # the same call again would loop: let the generic policy sum up
        preface = " ".join(
            p for p in (action.preface, self._preface(target) if target.route != "direct" else "") if p
        ) or self._preface(target)
        return self._call(request, target, action.args, preface)

    @staticmethod
    def _resolve(action: skills.Call, tools: list[Offered]) -> Offered | None:
        found = [t for t in tools if t.name == action.tool or t.name.endswith("." + action.tool)]
        preferred = [t for t in found if action.prefer and action.prefer in t.name]
        return min(preferred or found, key=lambda t: t.name, default=None)

    # -- helpers ---------------------------------------------------------------------------------
    @staticmethod
    def _called_name(block: dict[str, Any] | None) -> str | None:
        if block is None:
            return None
        if block.get("name") == "tool.call" and isinstance(block.get("input"), dict):
            return block["input"].get("name")
        return block.get("name")

    @staticmethod
    def _preface(target: Offered) -> str:
        if target.route == "wrapper":
            return f"`{target.name}` is in the deferred tool index, so I'll call it through `tool.call`."
        if target.route == "native":
            return f"Searching the deferred tools for `{target.name}`."
        return f"Calling `{target.name}`."

    def _call(self, request: ModelRequest, tool: Offered, args: dict[str, Any], preface: str) -> list[dict[str, Any]]:
        if tool.route == "wrapper":
            return self._use(request, "tool.call", {"name": tool.name, "arguments": args}, preface)
        if tool.route == "native":
            sid = "srvtoolu_demo_" + _call_id(request, "search")[-12:]
            query = " ".join(query_words(tool.description or tool.name)[:4]) or tool.name
            return [
                {"type": "text", "text": preface},
                {"type": "server_tool_use", "id": sid, "name": "tool_search_tool_bm25", "input": {"query": query}},
                {
                    "type": "tool_search_tool_result",
                    "tool_use_id": sid,
                    "content": {
                        "type": "tool_search_tool_search_result",
                        "tool_references": [{"type": "tool_reference", "tool_name": tool.name}],
                    },
                },
                {"type": "tool_use", "id": _call_id(request, tool.name), "name": tool.name, "input": args},
            ]
        return self._use(request, tool.name, args, preface)

    @staticmethod
    def _use(request: ModelRequest, name: str, args: dict[str, Any], preface: str) -> list[dict[str, Any]]:
        return [
            {"type": "text", "text": preface},
            {"type": "tool_use", "id": _call_id(request, name), "name": name, "input": args},
        ]
