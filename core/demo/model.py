"""The demo model (provider ``demo``): an offline, deterministic model that behaves like a small agent.

It sees exactly what a real model would see (the system prompt with any deferred tool index,
the tools array, the history) and nothing else. For the owner's latest message it:

1. scores every tool the request offers: definitions directly, index entries (reached
   through ``tool.call``), tools declared with ``defer_loading`` (reached through a native
   search it performs the way a provider's server would), and ``tool.search`` when the
   active-tools strategy offers it;
2. when the best tool needs an id the message does not give (``schedule_id``), it first
   calls a list or search tool from the same family and picks the matching item;
3. fills the arguments it can read from the message (times, dates, weekdays, phone numbers,
   email addresses, enum values, topics), and when a call comes back
   ``tool.arguments_invalid`` with the tool's schema it fills again from the schema;
4. sums up the result in a sentence and a few fields.

Same request, same response: no randomness, no clock (dates are resolved from the owner's
words only when they name one).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

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

STOP = set("""a an the my me i to of for on in at by with and or please can could would you your it its this that
these those is are be do does did from into about up out as so just now then than some any all new get""".split())  # noqa: SIM905
# Words people use for what tools call otherwise. Applied to the owner's words only.
SYNONYMS = {
    "move": "update", "change": "update", "reschedule": "update", "rename": "update", "shift": "update",
    "edit": "update", "push": "update",
    "phone": "call", "ring": "call", "dial": "call", "calling": "call",
    "email": "message", "mail": "message", "write": "message", "text": "message",
    "standup": "schedule", "reminder": "schedule", "recurring": "schedule", "meeting": "event",
    "appointment": "event", "todo": "task", "to-do": "task", "remember": "save", "forget": "cancel",
    "stop": "pause", "unpause": "resume", "restart": "resume", "delete": "cancel", "remove": "cancel",
    "inbox": "thread", "newsletter": "subscription", "newsletters": "subscription", "contact": "people",
    "person": "people", "look": "search", "find": "search", "show": "list", "what": "list",
}
# Words that name what the owner wants done; a tool whose name lacks the owner's action word
# is only a fallback when a search could find a better one.
ACTIONS = {"update", "cancel", "pause", "resume", "call", "start", "send", "unsubscribe", "subscription", "trash",
           "draft", "label", "create", "save", "complete"}
VERBS = {"update", "call", "message", "send", "start", "list", "search", "create", "cancel", "pause", "resume",
         "save", "show", "find", "get", "make", "add", "set", "tell", "ask", "move", "change"}

_TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?\b", re.I)
_PHONE = re.compile(r"(?<![\w@])\+?\d[\d\s().-]{5,}\d\b")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_INDEX_LINE = re.compile(r"^(?P<name>[A-Za-z0-9_.:-]+)\((?P<params>[^)]*)\)(?: \u2014 (?P<desc>.*))?$")
_WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
_DAY_WORDS = {"monday": "mon", "tuesday": "tue", "wednesday": "wed", "thursday": "thu", "friday": "fri",
              "saturday": "sat", "sunday": "sun"}


def _stem(word: str) -> str:
    for suffix in ("ing", "es", "ed", "s"):
        if len(word) > 4 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def words(text: str) -> list[str]:
    parts = re.split(r"[^a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower())
    return [_stem(w) for w in parts if w and w not in STOP]


def owner_words(text: str) -> list[str]:
    return [SYNONYMS.get(w, w) for w in words(text)]


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
    for m in messages[start + 1:]:
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
            m = _INDEX_LINE.match(line.strip())
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
    return {"time": bool(_times(text)), "phone": bool(_PHONE.search(text)), "email": bool(_EMAIL.search(text))}


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


def _times(text: str) -> list[str]:
    out = []
    for m in _TIME.finditer(text):
        hour, minute, ampm = int(m.group(1)), m.group(2), (m.group(3) or "").lower().replace(".", "")
        if not minute and not ampm:
            continue  # a bare number is not a time
        if ampm == "pm" and hour < 12:
            hour += 12
        if ampm == "am" and hour == 12:
            hour = 0
        if hour < 24:
            out.append(f"{hour:02d}:{minute or '00'}")
    return out


def _phone(text: str) -> str | None:
    m = _PHONE.search(text)
    if not m:
        return None
    digits = re.sub(r"\D", "", m.group(0))
    return "+" + digits


def _topic(text: str) -> str:
    m = re.search(r"\babout\s+(.+?)(?:[.?!]|$)", text, re.I)
    if m:
        return m.group(1).strip()
    return text.strip()


def _keywords(text: str, limit: int = 3) -> str:
    kept = [w for w in re.split(r"[^A-Za-z0-9@.+-]+", text) if w and w.lower() not in STOP
            and w.lower() not in VERBS and SYNONYMS.get(w.lower()) not in VERBS and not _TIME.fullmatch(w)]
    return " ".join(kept[:limit]) or text.strip()


def fill(params: list[tuple[str, bool]], schema: dict[str, Any] | None, text: str,
         known: dict[str, Any]) -> dict[str, Any]:
    """Arguments the owner's words (and what earlier steps found) can give."""
    props = (schema or {}).get("properties") or {}
    args: dict[str, Any] = {}
    times = _times(text)
    emails = _EMAIL.findall(text)
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
        elif "phone" in key or (key == "to" and _phone(text) and not emails):
            value = _phone(text)
        elif key in ("to", "cc", "email", "recipients", "attendees") and emails:
            value = emails if kind == "array" or (key in ("to", "cc", "attendees") and not schema) else emails[0]
        elif key == "time" and times:
            value = times[-1]
        elif key in ("start", "due", "until", "date") and (date := _DATE.search(text)):
            value = date.group(1)
        elif key == "days":
            if "weekday" in lower:
                value = _WEEKDAYS[:5]
            else:
                days = [d for word, d in _DAY_WORDS.items() if word in lower]
                value = days or None
        elif "enum" in p:
            value = next((v for v in p["enum"] if isinstance(v, str) and re.search(rf"\b{re.escape(v)}\b", lower)),
                         None)
        elif key in ("task", "subject", "topic", "reason"):
            value = _topic(text)
        elif key in ("query", "pattern"):
            value = _keywords(text)
        elif key in ("title", "name"):
            quoted = re.search(r"[\"\u201c']([^\"\u201d']{2,80})[\"\u201d']"
                               r"|\b(?:called|titled|named)\s+(.+?)(?:[.,!?]|$)", text, re.I)
            value = (quoted.group(1) or quoted.group(2)).strip() if quoted else (_keywords(text) if required else None)
        elif key in ("body", "message", "fact", "content", "notes", "first_sentence"):
            value = text.strip() if required or key in ("body", "message", "fact", "content") else None
        elif kind in ("integer", "number") or key in ("limit", "max_results"):
            value = None
        if value is None and required and not (key.endswith("_id") or key == "id"):
            value = _keywords(text) if kind == "string" else ([] if kind == "array" else None)
        if value is not None:
            args[pname] = value
    return args


def _find_items(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return value
    if isinstance(value, dict):
        for v in value.values():
            items = _find_items(v)
            if items:
                return items
    return []


def _parse_json(text: str) -> Any:
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return None
    try:
        return json.JSONDecoder().raw_decode(text[start:])[0]
    except json.JSONDecodeError:
        return None


def pick_item_id(result_text: str, message: str) -> str | None:
    items = _find_items(_parse_json(result_text))
    if not items:
        return None
    mwords = set(owner_words(message)) | set(words(message))
    times = set(_times(message))

    def item_score(item: dict[str, Any]) -> float:
        s = 0.0
        for v in item.values():
            if isinstance(v, str):
                s += len(mwords & set(words(v)))
                if v in times:
                    s += 2
        return s

    best = max(items, key=item_score)  # the first among equals
    for k, v in best.items():
        if (k == "id" or k.endswith("_id")) and isinstance(v, (str, int)):
            return str(v)
    return None


def _brief(value: Any, depth: int = 0) -> str:
    """One line for a JSON value: scalars as they are, changes as from -> to, nesting shallow."""
    if isinstance(value, dict):
        if set(value) == {"from", "to"}:
            return f"{value['from']} \u2192 {value['to']}"
        if depth >= 1:
            return f"{len(value)} fields"
        return ", ".join(f"{k} {_brief(v, depth + 1)}" for k, v in list(value.items())[:5])
    if isinstance(value, list):
        if all(isinstance(v, (str, int, float)) for v in value) and len(value) <= 7:
            return ", ".join(str(v) for v in value)
        return f"{len(value)} item{'s' if len(value) != 1 else ''}"
    return str(value)


def summarize(name: str, result_text: str, is_error: bool) -> str:
    short = name.rsplit(".", 1)[-1].replace("_", " ")
    if is_error:
        first = result_text.strip().splitlines()[0] if result_text.strip() else "no details"
        return f"I couldn't {short}: {first}"
    data = _parse_json(result_text)
    lines = [f"Done: `{name}` finished."]
    if isinstance(data, dict):
        for k, v in list(data.items())[:6]:
            lines.append(f"- **{k}**: {_brief(v)}")
    elif isinstance(data, list):
        lines.append(f"It returned {len(data)} item{'s' if len(data) != 1 else ''}.")
    else:
        body = "\n".join(line for line in result_text.strip().splitlines() if "EXTERNAL_UNTRUSTED" not in line)
        if body:
            lines.append(body[:400])
    return "\n".join(lines)


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
        usage = Usage(input_tokens=len(request.system) // 4 + len(json.dumps(request.tools)) // 4
                      + len(json.dumps(request.messages)) // 4,
                      output_tokens=max(1, len(json.dumps(content)) // 4))
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

        last = turn.calls[-1] if turn.calls else None
        last_result = turn.results.get(last["id"]) if last else None
        last_name = self._called_name(last) if last else None

        # After the target tool answered: sum up.
        target = self._target(ranked)
        if last is not None and last_result is not None and target is not None and last_name == target.name:
            body = _result_text(last_result)
            if last_result.get("is_error") and "tool.arguments_invalid" in body and len(turn.calls) < 4 \
                    and sum(1 for c in turn.calls if self._called_name(c) == target.name) == 1:
                schema = _parse_json(body.split("Its input schema:", 1)[-1])
                if isinstance(schema, dict):
                    args = fill([(p, p in (schema.get("required") or [])) for p in schema.get("properties", {})],
                                schema, text, self._known(turn))
                    return self._call(request, target, args, "The tool told me its schema; trying again with it.")
            return [{"type": "text", "text": summarize(target.name, body, bool(last_result.get("is_error")))}]
        if last is not None and last_result is not None and target is None:
            return [{"type": "text", "text": summarize(last_name or "the tool", _result_text(last_result),
                                                       bool(last_result.get("is_error")))}]

        searched = any(self._called_name(c) == "tool.search" for c in turn.calls)
        wanted = {w for w in mwords if w in ACTIONS}
        if target is not None and "tool.search" in by_name and not searched and not turn.calls \
                and wanted - set(words(target.name)):
            target = None  # the best loaded tool cannot do what was asked: search the deferred ones first
        if target is None:
            if "tool.search" in by_name and not searched:
                query = " ".join(dict.fromkeys(w for w in mwords if w not in STOP))[:80] or text[:80]
                return self._use(request, "tool.search", {"query": query}, "Let me look for a tool that can do that.")
            return [{"type": "text", "text": (
                "I'm deferchat's offline demo model, so I can only act through the tools this chat offers, "
                "and none of them fits that. Try asking me to move a schedule, start a call, or search your mail "
                f"(this chat offers {len(tools)} tools).")}]

        # The target needs an id the owner did not give: look it up first with a read from its family.
        known = self._known(turn)
        args = fill(target.params, target.schema, text, known)
        missing_id = [p for p, req in target.params if req and (p.endswith("_id") or p == "id") and p not in args]
        if missing_id and "_looked_up" not in known:
            lister = self._lister(target, tools)
            if lister is not None:
                # Only what the lister requires: an optional filter could hide the item we need.
                largs = fill([(p, r) for p, r in lister.params if r], lister.schema, text, {})
                return self._call(request, lister, largs,
                                  f"First I'll look up the {missing_id[0].replace('_id', '')} with `{lister.name}`.")
        return self._call(request, target, args, self._preface(target))

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
        candidates = [t for t in tools if t.name.rsplit(".", 1)[0] == family and t.name != target.name
                      and re.search(r"\.(list|search)", t.name) and t.route == "direct"]
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
            query = _keywords(tool.description or tool.name, 4)
            return [
                {"type": "text", "text": preface},
                {"type": "server_tool_use", "id": sid, "name": "tool_search_tool_bm25", "input": {"query": query}},
                {"type": "tool_search_tool_result", "tool_use_id": sid,
                 "content": {"type": "tool_search_tool_search_result",
                             "tool_references": [{"type": "tool_reference", "tool_name": tool.name}]}},
                {"type": "tool_use", "id": _call_id(request, tool.name), "name": tool.name, "input": args},
            ]
        return self._use(request, tool.name, args, preface)

    @staticmethod
    def _use(request: ModelRequest, name: str, args: dict[str, Any], preface: str) -> list[dict[str, Any]]:
        return [{"type": "text", "text": preface},
                {"type": "tool_use", "id": _call_id(request, name), "name": name, "input": args}]
