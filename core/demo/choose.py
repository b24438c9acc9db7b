"""Which of the chat's tools a request asks for: the demo model's choice, made the way a model
makes it, from the tools this chat offers and what the request names.

Every tool the request reaches is a candidate: the definitions, the deferred index's entries
(called through ``tool.call``), the tools a native search would load and, under active-tools,
those a ``tool.search`` found in this turn. Each is scored by

- **the tool search** (:class:`core.deferral.search.ToolSearchIndex`, the engine ``tool.search``
  and ``deferchat search`` use) for the request's query (:attr:`core.demo.reading.Reading.query`:
  its words without the names of things, the dates and the addresses), as a share of the best;
- **what it is about**: the kinds of thing its name and parameters name (``schedule_id``,
  ``calendar``, ``threads``, ``people``, ``path``) against the entities the request names
  (:meth:`core.demo.world.World.link`) and the kinds it names in general words ("an email");
- **the fit of its parameters** with what the request holds: a required parameter the request
  fills (a schedule for ``schedule_id``, a date for ``start``, a place for ``timezone``, an
  address or a person for ``to``, text for ``title``) counts for it, one it cannot fill and no
  lookup or question can, against it;
- **thin hints** of the wording: a question is answered by a tool that reads (a write never
  answers one); something one-off does not go to a tool for what repeats, nor the other way round.

The best tool is chosen when its score clears :data:`THRESHOLD`; the next ones are kept in order
for when the best one's step finds it cannot serve the request. Tools that differ only by their
server (``mcp.gmail_work.send_message`` and ``mcp.gmail_personal.send_message``) are one
candidate: which account a step uses comes from the data (the thread's, the contact's).
Deterministic: same request, same tools, same data, same choice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from core.demo.reading import KIND_WORDS, Reading
from core.demo.world import terms

if TYPE_CHECKING:
    from core.deferral.search import ToolSearchIndex
    from core.demo.model import Offered

THRESHOLD = 0.7
"""The score a tool needs to be chosen; below it the demo asks or says what it cannot do."""

# The verbs of tools that only read (a tool's verb: the first word of its own name or description).
READ_VERBS = frozenset({"list", "search", "get", "read", "find", "fetch", "return", "show", "look", "describe"})
# Words a tool's own name uses for what it does (a name made only of these says nothing of what
# it does it to, so its namespace does: "people.search").
_VERBISH = READ_VERBS | {"create", "update", "save", "add", "send", "start", "cancel", "pause", "resume", "complete"}
_VERBISH |= {"delete", "write", "remove", "set", "make", "place", "trash", "modify", "unsubscribe", "stop", "now"}
# What a kind of entity is for a tool: a sender is someone who wrote mail, a business someone to call or look up.
_AS_TOOL_KIND = {"sender": "thread", "label": "thread", "business": "person"}
_ID_KINDS = {"subscription": "newsletter", "contact": "person", "people": "person", "reply_to_thread": "thread"}

SLOTS: dict[str, tuple[str, ...]] = {
    "recipient": ("to", "recipients", "recipient", "attendees"),
    "copy": ("cc", "bcc"),
    "email": ("email", "emails", "email_address"),
    "callee": ("phone_number", "number", "callee"),
    "phone": ("phone", "phones", "mobile"),
    "place": ("timezone", "tz", "zone"),
    "date": ("start", "end", "due", "until", "since", "due_before", "date", "after", "before", "day"),
    "time": ("time", "at"),
    "days": ("days", "weekdays"),
    "path": ("path", "file", "filename"),
    "folder": ("glob", "folder", "directory", "dir"),
    "query": ("query", "pattern", "q", "search", "keywords"),
    "content": (
        "title",
        "body",
        "content",
        "fact",
        "task",
        "message",
        "text",
        "subject",
        "notes",
        "note",
        "description",
        "first_sentence",
        "name",
    ),
}
_SLOT_OF = {name: slot for slot, names in SLOTS.items() for name in names}


def slot_of(param: str) -> str:
    """What fills a parameter, by its name: ``id:<kind>``, one of :data:`SLOTS`, or ``other``."""
    key = param.lower()
    if key.endswith("_id") or key == "id":
        base = key.removesuffix("_id") or "id"
        kind = _ID_KINDS.get(base, base)
        return f"id:{kind}"
    return _SLOT_OF.get(key, "other")


@dataclass(frozen=True)
class Profile:
    """A candidate tool as the choice reads it."""

    tool: Offered
    own: str  # its own name, the last dotted part ("send_message")
    verb: str  # its first word, or its description's ("list", "send", "return")
    kinds: dict[str, float]  # the kinds of thing it is about: 1 by its own name or parameters, less by its namespace
    verbs: frozenset[str]  # the words that say what it does: its own name's and its description's first
    writes: bool
    repeats: bool  # it is for something that repeats ("a recurring schedule")
    once: bool  # it is for something that happens once ("a one-off event")

    @property
    def name(self) -> str:
        return self.tool.name


def _kinds_named(text: str) -> set[str]:
    said = set(terms(text.replace("_", " ").replace(".", " ")))
    return {kind for kind, words in KIND_WORDS.items() if any(t in said for w in words for t in terms(w))}


def profile(tool: Offered) -> Profile:
    head, _, own = tool.name.rpartition(".")
    own_terms = terms(own.replace("_", " "))
    lead = re.split(r"(?<=[.!?;:])\s", tool.description.strip(), maxsplit=1)[0].lower()
    lead_words = re.findall(r"[a-z]+", lead)
    verb = next((t for t in own_terms if t in READ_VERBS), "") or (lead_words[0] if lead_words else "")
    if own_terms and not verb:
        verb = own_terms[0]
    kinds = dict.fromkeys(_kinds_named(own), 1.0)
    # Its namespace says what it is about when its own name is only a verb ("people.search").
    only_verb = all(t in _VERBISH for t in own_terms)
    kinds = {**dict.fromkeys(_kinds_named(head.removeprefix("mcp.")), 1.0 if only_verb else 0.5), **kinds}
    for p, _required in tool.params:
        slot = slot_of(p)
        if slot.startswith("id:"):
            kinds[slot[3:]] = 1.0
        elif slot in ("path", "folder"):
            kinds["file" if slot == "path" else "folder"] = 1.0
        elif slot in ("recipient", "callee"):
            kinds["person"] = 1.0  # sending to or calling someone is about that someone
        elif slot == "place":
            kinds["place"] = 1.0
    return Profile(
        tool=tool,
        own=own,
        verb=verb,
        kinds=kinds,
        verbs=frozenset([*own_terms, *terms(lead_words[0] if lead_words else "")]),
        writes=verb not in READ_VERBS and own != "now",
        repeats=bool(re.search(r"\b(recurring|repeats|every day|weekly)\b", lead)),
        once=bool(re.search(r"\bone-off\b|\bonce\b", lead)),
    )


@dataclass(frozen=True)
class Scored:
    profile: Profile
    score: float
    search: float  # the tool search's share (0..1)
    about: float  # what it is about, against what the request names
    fit: float  # its parameters against what the request holds
    why: tuple[str, ...] = ()

    @property
    def tool(self) -> Offered:
        return self.profile.tool


@dataclass
class Choice:
    reading: Reading
    ranked: list[Scored] = field(default_factory=list)  # best first, one per own name
    unknown: tuple[str, ...] = ()  # the request's words no tool of the chat knows ("weather")

    @property
    def best(self) -> Scored | None:
        return self.ranked[0] if self.ranked and self.ranked[0].score >= THRESHOLD else None

    def chosen(self) -> list[Scored]:
        """The candidates that clear the threshold, best first."""
        return [s for s in self.ranked if s.score >= THRESHOLD]


# -- the search index over the chat's tools -------------------------------------------------------


def _schema(tool: Offered) -> dict[str, Any]:
    if tool.schema:
        return tool.schema
    return {"type": "object", "properties": {p: {} for p, _ in tool.params}}


@lru_cache(maxsize=16)
def _index(key: tuple[tuple[str, str, tuple[str, ...]], ...]) -> ToolSearchIndex:
    from core.deferral.search import SearchDoc, ToolSearchIndex

    return ToolSearchIndex(
        [
            SearchDoc(name, description, {"type": "object", "properties": {p: {} for p in params}})
            for name, description, params in key
        ]
    )


def search_index(tools: list[Offered]) -> ToolSearchIndex:
    """The tool search over ``tools`` (cached per set of tools: a chat's roster is stable)."""
    key = tuple(sorted((t.name, t.description, tuple(_schema(t)["properties"])) for t in tools))
    return _index(key)


_FULL_MATCH = 3.0  # a search score this high (every query word in the tool's text, its best BM25) counts fully


def search_shares(tools: list[Offered], query: str) -> dict[str, float]:
    """Each tool's tool-search score for ``query`` as a share of a full match (absent: no match)."""
    if not query.strip() or not tools:
        return {}
    hits = search_index(tools).search(query, k=len(tools))
    best = max((h.score for h in hits), default=0.0)
    if best <= 0:
        return {}
    return {h.name: min(1.0, h.score / _FULL_MATCH) for h in hits if h.score > 0}


# -- the fit of a tool with what the request holds ----------------------------------------------------


def _link_strength(reading: Reading, kind: str) -> float:
    """How strongly the request names one thing of ``kind``: its best link's score as a share of
    the request's best link, less for a thing named in part or through another (a thread by its
    sender's name)."""
    wanted = {k for k, as_tool in _AS_TOOL_KIND.items() if as_tool == kind} | {kind}
    found = [link for link in reading.links if link.entity.kind in wanted]
    if not found:
        return 0.0
    top = found[0]
    share = top.score / reading.links[0].score
    if top.entity.kind != kind:
        share *= _THROUGH
    if top.whole:
        return share
    return share * (max(0.5, top.coverage) if len(top.words) > 1 else top.coverage)


def _sender_strength(reading: Reading) -> float:
    found = [link for link in reading.links if link.entity.kind == "sender" and link.whole]
    return _THROUGH * found[0].score / reading.links[0].score if found else 0.0


def fills(slot: str, reading: Reading) -> float:
    """How well the request fills a parameter of ``slot``: 1 fully, less in part, 0 not."""
    if slot.startswith("id:"):
        strength = _link_strength(reading, slot[3:])
        sure = any(link.sure for link in reading.links if link.entity.kind == slot[3:])
        return strength if sure else 0.5 * strength
    if slot == "recipient":  # an address, a contact, or someone who wrote (a reply goes to them)
        return 1.0 if reading.emails else max(_link_strength(reading, "person"), _sender_strength(reading))
    if slot == "copy":
        return 0.0  # a copy is only ever what the request says in so many words (the mail step reads it)
    if slot == "email":
        return 1.0 if reading.emails else 0.0
    if slot == "callee":
        return 1.0 if reading.phones else max(_link_strength(reading, "person"), _link_strength(reading, "business"))
    if slot == "phone":
        return 1.0 if reading.phones else 0.0
    if slot == "place":
        return 1.0 if reading.place is not None else 0.0
    if slot == "date":
        return 1.0 if reading.dated() else 0.0
    if slot == "datetime":
        return 1.0 if reading.timed() else 0.4 if reading.dated() else 0.0
    if slot == "time":
        return 1.0 if reading.timed() else 0.0
    if slot == "days":
        return 1.0 if reading.repeats else 0.0
    if slot == "path":
        return 1.0 if reading.filename else _link_strength(reading, "file")
    if slot == "folder":
        return _link_strength(reading, "folder")
    if slot == "content":
        return 1.0 if reading.content else 0.5
    if slot == "query":
        return 1.0 if reading.links else 0.5
    return 0.0


# Words for things and whose they are: a description's word that is one of these says what a tool
# works on, not what it does ("Send an email": "email" asks for no sending).
_THING_TERMS = {t for words in KIND_WORDS.values() for w in words for t in terms(w)} | {"owner", "label"}
_THROUGH = 0.8  # a thing named through another (a thread by its sender) against the thing itself
_SPECIFIC = ("recipient", "callee", "place", "date", "datetime", "time", "days", "path", "folder")
_OPTIONAL_SPECIFIC = ("place", "days", "path", "folder")  # an optional date is a filter, not what a tool is for


def _param_slot(p: Profile, param: str) -> str:
    """:func:`slot_of`, and a date that must carry a time of day when its schema says so."""
    slot = slot_of(param)
    if slot == "date":
        described = str(((p.tool.schema or {}).get("properties", {}).get(param) or {}).get("description") or "")
        if "date-time" in described and "date or" not in described:
            return "datetime"
    return slot


def _fit(p: Profile, reading: Reading) -> tuple[float, list[str]]:
    """What the tool's parameters make of the request: a required one it fills counts for it
    (a specific thing more than text), one it cannot fill against it, unless a lookup or a
    question can fill it (which one of the schedules it names in general words) or a read can
    choose it itself (a range of days around today, the words to search for)."""
    score, why = 0.0, []
    for param, required in p.tool.params:
        slot = _param_slot(p, param)
        got = fills(slot, reading)
        if slot.startswith("id:") and not p.writes:
            continue  # a read is about what it names: what it is about already says so
        if required:
            if slot == "query":
                continue  # a search searches for what the request names: what it is about says that
            if got > 0:
                score += (0.8 if slot.startswith("id:") or slot in _SPECIFIC else 0.5) * got
            elif slot.startswith("id:") and slot[3:] in reading.kinds_said:
                score -= 0.1  # "cancel a schedule": which one, the demo can list and ask
            elif not p.writes and slot in ("date", "datetime"):
                continue
            else:
                score -= 0.6
                why.append(f"cannot fill {param}")
        elif got >= 0.99 and (slot.startswith("id:") or slot in _OPTIONAL_SPECIFIC):
            score += 0.3
            why.append(f"fills {param}")
    return score, why


def _given(p: Profile, reading: Reading) -> bool:
    """Whether the request gives what a write takes in so many words: a moment for a parameter
    that must have one, and the text to write ("remind me to call mom at 6pm": an event)."""
    slots = {_param_slot(p, param): required for param, required in p.tool.params}
    moment = any(slots.get(s) for s in ("datetime", "time")) and bool(reading.timed())
    file = bool(slots.get("path")) and bool(reading.filename)  # "save it as packing.md: ..."
    return (moment or file) and "content" in slots and bool(reading.content)


def _asked(p: Profile, reading: Reading, search: float, said: set[str]) -> bool:
    """Whether the request asks for what a write does: it says the tool's verb or an everyday
    word for it ("hold" for pause, "tell" for send), or gives what it writes in so many words."""
    if said & {t for v in p.verbs for w in (v, *_related(v)) for t in terms(w)}:
        return True
    if any(asks_for(reading, param) for param, _ in p.tool.params if slot_of(param).startswith("id:")):
        return True  # "reply to it": the purpose of reply_to_thread_id
    if search >= 0.3 and said & (set(terms(p.tool.description)) - _THING_TERMS):
        return True  # "archive the email": a word its description gives for what it does
    content = any(_param_slot(p, param) == "content" for param, _ in p.tool.params)
    return _given(p, reading) or (bool(reading.content) and content and search >= 0.2)


def _related(word: str) -> tuple[str, ...]:
    from core.deferral.search_vocab import related

    return related(word)


def _lost(p: Profile, reading: Reading) -> float:
    """What choosing the tool would lose of what the request says: a time of day, a date, a place
    or an address it has no parameter for ("remind me at 6pm" is not a task without a time)."""
    slots = {_param_slot(p, param) for param, _ in p.tool.params}
    lost = 0.0
    if reading.timed() and not slots & {"time", "datetime"}:
        lost += 0.6 if p.writes else 0.2
    if reading.dated() and not slots & {"date", "datetime", "days"}:
        lost += 0.3 if p.writes else 0.1
    if reading.place is not None and reading.place.zone and "place" not in slots:
        lost += 0.3
    if reading.filename and "path" not in slots:
        lost += 0.6 if p.writes else 0.2  # "save it as packing.md": a file, not a memory
    return lost


def _about(p: Profile, reading: Reading) -> float:
    """How much the tool is about what the request names: the strongest kind it shares with the
    request's entities, or with the kinds the request names in general words ("an email"); for a
    read that takes days, the days a question names beside a thing ("anything with Priya this week")."""
    strength = max((w * _link_strength(reading, kind) for kind, w in p.kinds.items()), default=0.0)
    if not p.writes and reading.question and reading.links and reading.dated():
        slots = {_param_slot(p, param) for param, _ in p.tool.params}
        if slots & {"date", "datetime"}:  # the days asked about count as much as who is named
            strength = max(strength, 1.0)
    general = max((w for kind, w in p.kinds.items() if kind in reading.kinds_said), default=0.0)
    return max(strength, general) + (0.3 if strength and general else 0.0)


def asks_for(reading: Reading, param: str) -> bool:
    """Whether the request's words name a parameter's purpose ("reply" for ``reply_to_thread_id``):
    the first word of its name, or an everyday synonym of it, is in the query."""
    from core.deferral.search_vocab import related

    first = param.split("_")[0].lower()
    wanted = {t for w in (first, *related(first)) for t in terms(w)}
    return bool(wanted & set(terms(reading.query)))


def _account_words(tools: list[Offered]) -> set[str]:
    """Words that only tell servers of the same tools apart (``work`` in ``gmail_work``): which
    one a step uses comes from the data, so they say nothing about which tool."""
    servers: dict[str, set[str]] = {}
    for t in tools:
        if t.name.startswith("mcp.") and t.name.count(".") == 2:
            _, server, own = t.name.split(".")
            servers.setdefault(own, set()).add(server)
    words: set[str] = set()
    for names in servers.values():
        if len(names) > 1:
            parts = [set(n.lower().split("_")) for n in names]
            common = set.intersection(*parts)
            words |= set.union(*parts) - common
    return words


def _without_accounts(query: str, tools: list[Offered]) -> str:
    accounts = _account_words(tools)
    return " ".join(w for w in query.split() if w.lower() not in accounts)


def head_words(head: str) -> frozenset[str]:
    """The stems of a request's first word and of its everyday synonyms (search_vocab)."""
    if not head:
        return frozenset()
    from core.deferral.search_vocab import related

    return frozenset(t for w in (head, *related(head)) for t in terms(w))


def rank(reading: Reading, tools: list[Offered]) -> Choice:
    """Every candidate tool scored for ``reading``, best first (control tools are means, not
    ends, and are left out)."""
    candidates = [t for t in tools if not t.name.startswith("tool.")]
    shares = search_shares(candidates, _without_accounts(reading.query, candidates))
    heads = head_words(reading.head)
    profiles = [profile(t) for t in candidates]
    # An imperative that opens with what a tool that writes does ("cancel", "send", "call").
    commanded = bool(heads) and any(heads & p.verbs for p in profiles if p.writes)
    named = any(link.sure or link.coverage >= 0.3 for link in reading.links)
    said = set(terms(reading.query))
    scored: dict[str, Scored] = {}
    for p in profiles:
        tool = p.tool
        search = shares.get(tool.name, 0.0)
        about = _about(p, reading)
        if named and not about:
            search *= 0.5  # the request names something this tool is not about: its words alone say less
        fit, why = _fit(p, reading)
        score = 2.0 * search + 2.0 * about + fit - _lost(p, reading)
        acts = bool(reading.head) and bool(heads & p.verbs)
        if acts:  # "pause the standup": the tool that pauses; "stop" it: less surely the one that pauses
            score += 0.8 if set(terms(reading.head)) & p.verbs else 0.4
        elif p.writes and not _asked(p, reading, search, said):
            score -= 2.0  # a write the request's words do not ask for ("check my email": no mail sent)
        if reading.question and p.writes:
            score -= 4.0  # a question is answered by reading, never by a write
        elif not reading.question and not p.writes and (commanded or reading.content):
            score -= 1.0  # "email Lena", "remind me to ...": a request to do something, not to read
        if reading.compose and p.writes:
            score -= 2.0
        if p.writes and p.repeats and not reading.repeats:
            score -= 2.5 if reading.dated() else 1.0  # "today at 6pm", "remind me to buy milk": once
        if p.writes and p.once and reading.repeats:
            score -= 1.0
        s = Scored(p, round(score, 4), round(search, 4), round(about, 4), round(fit, 4), tuple(why))
        previous = scored.get(p.own)
        if previous is None or (s.score, -len(s.tool.name)) > (previous.score, -len(previous.tool.name)):
            scored[p.own] = s
    ranked = sorted(scored.values(), key=lambda s: (-s.score, s.tool.name))
    return Choice(reading, ranked, _unknown(reading, candidates))


_THING = re.compile(r"\b(?:the|a|an|any|some|my|your|this|that|today's|tomorrow's)\s+([a-z][a-z-]+)")


def _unknown(reading: Reading, tools: list[Offered]) -> tuple[str, ...]:
    """The things the request asks about ("the weather", "a joke": a word after a determiner)
    that no tool knows, not even by a related word or a near spelling, and no entity explains:
    what it asks about is outside this chat's tools."""
    if not tools:
        return ()
    index = search_index(tools)
    known = {w for link in reading.links for w in link.words} | {t for m in reading.moments for t in terms(m.text)}
    if reading.place is not None:
        known |= set(terms(reading.place.name))
    things = [m.group(1) for m in _THING.finditer(reading.query.lower())]
    return tuple(
        w for w in things if len(w) > 2 and terms(w) and not set(terms(w)) & known and not index.search(w, k=1)
    )
