"""The demo model (provider ``demo``): an offline, deterministic model that behaves like a small agent.

It sees exactly what a real model would see (the system prompt with any deferred tool index,
the tools array, the history) and nothing else. For the owner's latest message it:

1. tries the everyday requests it knows by their shape (:mod:`core.demo.intents`: the
   calendar, the inbox, an email, newsletters, tasks, contacts, memory, notes, calls), which
   name the tool they need, read its arguments from the request and take the steps a careful
   agent takes (``time.now`` before "tomorrow", ``people.search`` before writing to a name,
   a list before picking from it); a reply to a question it asked counts with the request it
   answers;
2. otherwise scores every tool the request offers: definitions directly, index entries
   (reached through ``tool.call``), tools declared with ``defer_loading`` (reached through a
   native search it performs the way a provider's server would), and ``tool.search`` when
   the active-tools strategy offers it; when the best tool needs an id the message does not
   give (``schedule_id``), it first calls a list or search tool from the same family and
   picks the matching item; it fills the arguments it can read from the message (times,
   dates, weekdays, phone numbers, email addresses, enum values, topics), and when a call
   comes back ``tool.arguments_invalid`` with the tool's schema it fills again from the schema;
3. sums up the result (:mod:`core.demo.answers`): a list as a list, anything else in a
   sentence and a few fields.

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

from core.demo import intents
from core.demo.answers import failure, summarize
from core.demo.text import (
    ACTIONS,
    DAY_WORDS,
    EMAIL,
    ISO_DATE,
    PHONE,
    STOP,
    WEEKDAYS,
    find_items,
    keywords,
    owner_words,
    parse_json,
    phone,
    times,
    topic,
    words,
)
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


def _features(text: str) -> dict[str, bool]:
    return {"time": bool(times(text)), "phone": bool(PHONE.search(text)), "email": bool(EMAIL.search(text))}


def score(tool: Offered, message_words: list[str], feats: dict[str, bool]) -> float:
    name_words = set(words(tool.name.replace("mcp.", "")))
    desc_words = set(words(tool.description))
    param_words = {w for p, _ in tool.params for w in words(p)}
    s = 0.0
    for w in set(message_words):
        if w in name_words:
            s += 3.0
        elif w in desc_words:
            s += 1.0
        if w in param_words:
            s += 0.5
    pnames = " ".join(p for p, _ in tool.params).lower()
    if feats["time"] and re.search(r"\btime\b|start", pnames):
        s += 2.0
    if feats["phone"] and "phone" in pnames:
        s += 3.0
    if feats["email"] and re.search(r"\bto\b|email", pnames):
        s += 2.0
    if tool.name.startswith("tool."):
        s -= 100  # control tools are means, not ends
    return s


def fill(
    params: list[tuple[str, bool]], schema: dict[str, Any] | None, text: str, known: dict[str, Any]
) -> dict[str, Any]:
    """Arguments the owner's words (and what earlier steps found) can give."""
    props = (schema or {}).get("properties") or {}
    args: dict[str, Any] = {}
    said_times = times(text)
    emails = EMAIL.findall(text)
    lower = text.lower()
    for pname, required in params:
        p = props.get(pname) or {}
        kind = p.get("type", "string")
        key = pname.lower()
        value: Any = None
        if key in known:
            value = known[key]
        elif key.endswith("_id") or key == "id":
            value = known.get("_id")
        elif "phone" in key or (key == "to" and phone(text) and not emails):
            value = phone(text)
        elif key == "cc":
            value = None  # never a copy of the recipients: the mail intent reads an explicit cc
        elif key in ("to", "email", "recipients", "attendees") and emails:
            value = emails if kind == "array" or (key in ("to", "attendees") and not schema) else emails[0]
        elif key == "time" and said_times:
            value = said_times[-1]
        elif key in ("start", "due", "until", "date") and (date := ISO_DATE.search(text)):
            value = date.group(1)
        elif key == "days":
            if "weekday" in lower:
                value = WEEKDAYS[:5]
            else:
                days = [d for word, d in DAY_WORDS.items() if word in lower]
                value = days or None
        elif "enum" in p:
            value = next(
                (v for v in p["enum"] if isinstance(v, str) and re.search(rf"\b{re.escape(v)}\b", lower)), None
            )
        elif key in ("task", "subject", "topic", "reason"):
            value = topic(text)
        elif key in ("query", "pattern"):
            value = keywords(text)
        elif key in ("title", "name"):
            quoted = re.search(
                r"[\"\u201c']([^\"\u201d']{2,80})[\"\u201d']"
                r"|\b(?:called|titled|named)\s+(.+?)(?:[.,!?]|$)",
                text,
                re.I,
            )
            value = (quoted.group(1) or quoted.group(2)).strip() if quoted else (keywords(text) if required else None)
        elif key in ("body", "message", "fact", "content", "notes", "first_sentence"):
            value = text.strip() if required or key in ("body", "message", "fact", "content") else None
        elif kind in ("integer", "number") or key in ("limit", "max_results"):
            value = None
        if value is None and required and not (key.endswith("_id") or key == "id"):
            value = keywords(text) if kind == "string" else ([] if kind == "array" else None)
        if value is not None:
            args[pname] = value
    return args


def pick_item_id(result_text: str, message: str) -> str | None:
    items = find_items(parse_json(result_text))
    if not items:
        return None
    mwords = set(owner_words(message)) | set(words(message))
    said_times = set(times(message))

    def item_score(item: dict[str, Any]) -> float:
        s = 0.0
        for v in item.values():
            if isinstance(v, str):
                s += len(mwords & set(words(v)))
                if v in said_times:
                    s += 2
        return s

    best = max(items, key=item_score)  # the first among equals
    for k, v in best.items():
        if (k == "id" or k.endswith("_id")) and isinstance(v, (str, int)):
            return str(v)
    return None


def _call_id(request: ModelRequest, salt: str) -> str:
    first = _block_text(request.messages[0].get("content")) if request.messages else ""
    h = hashlib.sha256(f"{len(request.messages)}|{salt}|{first}".encode()).hexdigest()[:12]
    return f"toolu_demo_{len(request.messages):03d}_{h}"


class DemoProvider(ProviderBase):
    name = "demo"

    def __init__(self, model: str = "demo-1", *, delay: float = 0.0, min_score: float = 3.0):
        self.model = model
        self.delay = delay
        self.min_score = min_score

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
        turn = read_turn(request.messages)
        text = turn.text
        tools = offered_tools(request)
        by_name = {t.name: t for t in tools}
        mwords = owner_words(text)
        feats = _features(text)
        for t in tools:
            t.score = score(t, mwords, feats)
        ranked = sorted((t for t in tools if t.score >= self.min_score), key=lambda t: (-t.score, t.name))
        # A message that names something to do on its own is a new request, not an answer.
        known_request = self._by_intent(request, turn, tools, answers_question=not ranked)
        if known_request is not None:
            return known_request

        last = turn.calls[-1] if turn.calls else None
        last_result = turn.results.get(last["id"]) if last else None
        last_name = self._called_name(last) if last else None

        # After the target tool answered: sum up.
        target = self._target(ranked)
        if last is not None and last_result is not None and target is not None and last_name == target.name:
            body = _result_text(last_result)
            if (
                last_result.get("is_error")
                and "tool.arguments_invalid" in body
                and len(turn.calls) < 4
                and sum(1 for c in turn.calls if self._called_name(c) == target.name) == 1
            ):
                schema = parse_json(body.split("Its input schema:", 1)[-1])
                if isinstance(schema, dict):
                    args = fill(
                        [(p, p in (schema.get("required") or [])) for p in schema.get("properties", {})],
                        schema,
                        text,
                        self._known(turn),
                    )
                    return self._call(request, target, args, "The tool told me its schema; trying again with it.")
            return [{"type": "text", "text": summarize(target.name, body, bool(last_result.get("is_error")))}]
        if last is not None and last_result is not None and target is None:
            return [
                {
                    "type": "text",
                    "text": summarize(
                        last_name or "the tool", _result_text(last_result), bool(last_result.get("is_error"))
                    ),
                }
            ]

        searched = any(self._called_name(c) == "tool.search" for c in turn.calls)
        wanted = {w for w in mwords if w in ACTIONS}
        if (
            target is not None
            and "tool.search" in by_name
            and not searched
            and not turn.calls
            and wanted - set(words(target.name))
        ):
            target = None  # the best loaded tool cannot do what was asked: search the deferred ones first
        if target is None:
            if "tool.search" in by_name and not searched:
                query = " ".join(dict.fromkeys(w for w in mwords if w not in STOP))[:80] or text[:80]
                return self._use(request, "tool.search", {"query": query}, "Let me look for a tool that can do that.")
            return [
                {
                    "type": "text",
                    "text": (
                        "I'm deferchat's offline demo model, so I can only act through the tools this chat offers, "
                        "and none of them fits that. Try asking me to move a schedule, start a call, or search "
                        "your mail "
                        f"(this chat offers {len(tools)} tools)."
                    ),
                }
            ]

        # The target needs an id the owner did not give: look it up first with a read from its family.
        known = self._known(turn)
        args = fill(target.params, target.schema, text, known)
        missing_id = [p for p, req in target.params if req and (p.endswith("_id") or p == "id") and p not in args]
        if missing_id and "_looked_up" not in known:
            lister = self._lister(target, tools)
            if lister is not None:
                # Only what the lister requires: an optional filter could hide the item we need.
                largs = fill([(p, r) for p, r in lister.params if r], lister.schema, text, {})
                return self._call(
                    request,
                    lister,
                    largs,
                    f"First I'll look up the {missing_id[0].replace('_id', '')} with `{lister.name}`.",
                )
        return self._call(request, target, args, self._preface(target))

    # -- the everyday requests (core.demo.intents) --------------------------------------------------
    def _by_intent(
        self, request: ModelRequest, turn: Step, tools: list[Offered], *, answers_question: bool
    ) -> list[dict[str, Any]] | None:
        """The next step of the first intent that serves the request, or None (the generic policy).
        With ``answers_question``, a message no intent matches is read as the answer to the
        question the last reply asked, together with the request that led to it."""
        text = turn.text
        found = intents.matching(text)
        if not found and turn.follow_up and answers_question:
            text = f"{turn.follow_up} {text}"
            found = intents.matching(text)
        ctx = intents.Context(text=text, done=self._done(turn))
        for intent in found:
            action = intent.step(ctx)
            if isinstance(action, intents.Say):
                return [{"type": "text", "text": action.text}]
            if action is not None and (blocks := self._reach(request, ctx, action, tools)) is not None:
                return blocks
        return None

    def _done(self, turn: Step) -> list[intents.Done]:
        done = []
        for call in turn.calls:
            result = turn.results.get(call["id"])
            if result is None:
                continue
            given: dict[str, Any] = call["input"] if isinstance(call.get("input"), dict) else {}
            args = given.get("arguments") if call.get("name") == "tool.call" else given
            text = _result_text(result)
            done.append(
                intents.Done(
                    self._called_name(call) or "",
                    args if isinstance(args, dict) else {},
                    not result.get("is_error"),
                    text,
                    parse_json(text),
                )
            )
        return done

    def _reach(
        self, request: ModelRequest, ctx: intents.Context, action: intents.Call, tools: list[Offered]
    ) -> list[dict[str, Any]] | None:
        """The blocks that make ``action``'s call by the route the request offers, a
        ``tool.search`` for it first, or None when this chat cannot reach it."""
        last = next((d for d in reversed(ctx.done) if d.name != "tool.search"), None)
        if last is not None and not last.ok:  # never press on past a failure
            return [{"type": "text", "text": failure(last.name, last.text)}]
        target = self._resolve(action, tools)
        if target is None:
            query = action.search or " ".join(words(action.tool))
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
    def _resolve(action: intents.Call, tools: list[Offered]) -> Offered | None:
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

    def _target(self, ranked: list[Offered]) -> Offered | None:
        return ranked[0] if ranked else None

    def _known(self, turn: Step) -> dict[str, Any]:
        known: dict[str, Any] = {}
        for call in turn.calls:
            result = turn.results.get(call["id"])
            name = self._called_name(call) or ""
            if result is None or result.get("is_error") or name.startswith("tool."):
                continue
            if re.search(r"\.(list|search)", name):
                known["_looked_up"] = True
                item = pick_item_id(_result_text(result), turn.text)
                if item:
                    known["_id"] = item
        return known

    @staticmethod
    def _lister(target: Offered, tools: list[Offered]) -> Offered | None:
        family = target.name.rsplit(".", 1)[0]
        candidates = [
            t
            for t in tools
            if t.name.rsplit(".", 1)[0] == family
            and t.name != target.name
            and re.search(r"\.(list|search)", t.name)
            and t.route == "direct"
        ]
        return sorted(candidates, key=lambda t: (".list" not in t.name, t.name))[0] if candidates else None

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
            query = keywords(tool.description or tool.name, 4)
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
