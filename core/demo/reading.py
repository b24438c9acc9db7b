"""A request read once, the way the demo model understands it: what it names in the demo's data,
what it gives to be written, and the few things its wording says.

:func:`read` splits the owner's words into

- the **intent**: the words that say what to do and to what ("reply to the Acme invoice email");
- the **content**: what the request gives to be said or written, where its wording marks it
  ("... *that* it was paid on Monday", "take a note*:* buy flour", "remind me *to* call mom",
  a quoted text), which never chooses a tool and never names a target;

and finds in them, by general means only:

- the entities of the demo's world the intent names (:meth:`core.demo.world.World.link`);
- dates and times (parsedatetime, :mod:`core.demo.when`), a place and its IANA zone, email
  addresses, phone numbers, a file name;
- the search query for the chat's own tool search: the intent's words without the entities'
  names, the dates and the addresses (those fill arguments; they say nothing about which tool).

The wording gives a few thin hints, and only these: whether the request is a question (a write
is never the answer to one), which part is negated ("don't send anything, just show me ..."
drops "send anything"; "I don't want X any more" asks to stop X), whether it asks for something
that repeats ("every Monday"), and whether it asks the demo to compose something (a poem, a
joke), which only a real model can. Which kind of request it is comes from the tool search and
the fit of each tool's parameters with what was found (:mod:`core.demo.choose`), not from here.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from core.demo.text import EMAIL, PHONE, normalise, phone
from core.demo.when import Moment, Place, moments, place_named
from core.demo.world import Link, World, terms

# Words that open a polite command ("can you pause ...?" asks for an action, not a fact).
_POLITE = re.compile(
    r"^(?:(?:hey|hi|ok|okay|so|and|also|then|now)\s*,?\s+)*"
    r"(?:(?:please|pls|plz|kindly)\s+|(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+|pls\s+)?"
    r"|i(?:'d| would) like (?:you )?to\s+|i (?:want|need) (?:you )?to\s+|go ahead and\s+)+"
)
_QUESTION = re.compile(
    r"^(?:what|whats|what's|when|whens|when's|where|wheres|where's|who|whos|who's|whom|whose|which|how|hows|"
    r"how's|why|do|does|did|is|isn't|are|aren't|am|was|were|have|has|had|any|anything|can i|could i|should i|"
    r"shall i|may i)\b"
)
# A question after a few words of its own ("honestly, what's ...", "ok so when is ..."): a
# question word, or "do", "is", "have" with their subject after them ("honestly, do I have ...",
# "ok is there ..."), never alone, as a command's own words hold them ("remind me to do the
# dishes", "tell me what is due").
_LATE_QUESTION = re.compile(
    r"^((?:[a-z']+[ ,]+){1,3}?)(?=(?:what|whats|what's|when|whens|when's|where|where's|who|who's|which|how)\b"
    r"|(?:do|does|did|have|has|had)\s+(?:i|we|you|they|he|she)\b"
    r"|(?:is|are|was|were|isn't|aren't)\s+(?:there|i|we|you|they|he|she)\b|am\s+i\b)"
)
_INFO = re.compile(r"^(?:tell me|show me|give me|let me (?:know|see)|remind me (?:what|when|where|who|how))\b")
_NEGATION = re.compile(
    r"\b(?:don'?t|do not|dont|never|no need to|without|not)\b(?P<rest>[^,.;!?]*?)"
    r"(?=\s*(?:[,.;!?]|\bjust\b|\bbut\b|\bonly\b|\binstead\b|\brather\b|$))"
)
_STOP_DOING = re.compile(r"\b(stop|quit|cease)\s+(?:\w+ing)\b", re.I)  # "stop sending me X": no more X
_DETERMINERS = {"the", "a", "an", "my", "this", "that", "these", "those", "our", "your", "his", "her", "their", "its"}
_DETERMINERS |= {"one", "both", "all", "some", "any", "yes", "no", "ok", "okay", "sure", "first", "second", "last"}
_LIGHT = {"put", "stick", "pop", "throw", "pencil", "slot", "get", "have", "make", "take", "turn", "switch"}
_INTO = re.compile(r"\b(?:on|in|into|onto|to)\s+(?:my|the|our)\s+[a-z-]+", re.I)
_NO_MORE = re.compile(r"\b(?:any ?more|no longer|any longer)\b")
_WANTS = re.compile(r"^\s*(?:want|need|like|wish to (?:get|receive)|care about)\b\s*")
_REPEATS = re.compile(
    r"\b(?:every|each|daily|weekly|monthly|fortnightly|hourly|weekdays|weekends|recurring|repeating|"
    r"mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)\b"
)
_COMPOSE = re.compile(
    r"\b(?:poem|haiku|limerick|sonnet|story|joke|essay|song|lyrics|riddle|recipe for|pun)s?\b|"
    r"\b(?:translate|explain|summari[sz]e (?:this|the article|a book)|advise|advice)\b|"
    r"\bhow (?:do|can|should) (?:i|you) (?:cook|make|fix|learn|bake|write|grow|clean)\b|"
    r"\b(?:who|what) are you\b|\bare you (?:real|human|an? ai|a bot)\b|\bmeaning of life\b"
)
# Where the wording marks what follows as content: said to someone, written down, reminded of.
_CONTENT = re.compile(
    r"(?P<lead>"
    r"\b(?:that|saying|to say|which says|that says|with the (?:message|text|note|body)|and say"
    r"|and tell (?:him|her|them)"
    r"|asking(?=\s+(?:if|whether|when|what|where|how|who|why|for)\b))\s*:?\s+"
    r"|\blet (?:me|him|her|them|us|[a-z]+) know(?: that)?\s+"
    r"|\btell(?:ing)? (?!me\b)(?:him|her|them|us|[A-Za-z]+)\b(?P<cut>(?: that)?\s+)(?=\w+\s+\w)"
    r"|\bask(?:ing)? (?:him|her|them|[A-Za-z]+) (?=(?:if|whether|when|what|where|how|who|why)\b)"
    r"|\b(?:me|him|her|them|us)\s+(?:to|that|about)\s+"
    r"|\b(?:remind|ask|tell)\s+(?:me|him|her|them|us|[A-Za-z]+)\b[^.]*?\s(?P<cut2>to)\s+(?=[a-z])"
    r"|:\s+"
    r")",
    re.IGNORECASE,
)
_CONTENT_AFTER = re.compile(  # a "that" which opens content only after a word that says or tells
    r"(?:(?:tell|tells|telling|told|remind|ask|asked|email|e-mail|mail|message|text|inform|notify|warn|"
    r"write to|reply to|answer)\s+[\w.@-]+(?:\s+[A-Z]?[a-z]+)?"
    r"|tell|tells|telling|told|say|says|saying|said|reply|replying|respond|answer|remember|remind|know|note|"
    r"mention|write|confirm|explain|him|her|them|me|us|sure|noted|jot down)\s*\Z"
)
_PART_OF_DAY = re.compile(r"(?:this |in the |the )?(?:morning|afternoon|evening|night|noon|midday)")
_COLON_AFTER = re.compile(
    r"^\W*(?:\S+\s+){0,3}\S+\s*\Z|\b(?:note|down|text|says?|saying|message|body|content|list|this|that|it|following|"
    r"with|reminder|task|to-?do|file|reads?|\.[a-z0-9]{1,5})\s*\Z"
)
_QUOTED = re.compile(r"[\"\u201c]([^\"\u201d]{1,500})[\"\u201d]")
_FILENAME = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.(?:txt|md|csv|json|pdf|docx?|xlsx?|ya?ml|log))\b")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\u2019-]*")


@dataclass(frozen=True)
class Reading:
    """One request as the demo model understands it."""

    text: str  # as typed (with the earlier request it answers, when it answers a question)
    intent: str  # the words that say what to do and to what
    content: str  # what the request gives to be said or written ("" when none)
    links: tuple[Link, ...]  # the demo's entities the intent names, best first
    moments: tuple[Moment, ...]  # the dates and times anywhere in the request
    place: Place | None
    emails: tuple[str, ...]
    phones: tuple[str, ...]
    filename: str  # a file name written out ("groceries.txt")
    query: str  # what the chat's tool search is asked
    question: bool  # it asks for a fact (a write never answers it)
    negated: bool  # part of it says what not to do
    repeats: bool  # it asks for something that happens again and again
    compose: bool  # it asks the demo to write or explain something of its own
    head: str = ""  # its first word when it opens with one (an imperative's verb: "pause", "email")
    asks: str = ""  # the question word of a question ("when", "where", "who")
    kinds_said: frozenset[str] = field(default_factory=frozenset)  # kinds of thing it names in general words
    targets: tuple[Link, ...] = ()  # the links outside the topic it gives ("email Priya *about the draft*")

    @property
    def said(self) -> str:
        return normalise(self.text)

    def best(self, kind: str, *, sure: bool = False) -> Link | None:
        """The best link of ``kind`` (None when none, or two tie). With ``sure``, only what a write
        may target: a thing named whole, or the only thing of its kind the request names at all
        with half its name or more ("the cookbook one" for Cookbook Corner)."""
        return _best(self.links, kind, sure)

    def target(self, kind: str, *, sure: bool = False) -> Link | None:
        """:meth:`best` among the things the request acts on, not those it only talks about
        ("call Alex about Mom's birthday dinner": Alex)."""
        return _best(self.targets, kind, sure)

    def of(self, kind: str) -> list[Link]:
        return [link for link in self.links if link.entity.kind == kind]

    def dated(self) -> list[Moment]:
        return [m for m in self.moments if m.has_date or m.week]

    def timed(self) -> list[Moment]:
        return [m for m in self.moments if m.has_time]


def _best(links: tuple[Link, ...], kind: str, sure: bool) -> Link | None:
    found = [link for link in links if link.entity.kind == kind]
    if sure:  # named whole; or the one thing of its kind named at all, by half its name or by a rare word
        found = [x for x in found if x.sure or (len(found) == 1 and (x.coverage >= 0.5 or x.rare))]
    if not found or (len(found) > 1 and found[1].score == found[0].score):
        return None
    return found[0]


_TOPIC = re.compile(r"\b(?:about|regarding|concerning|re|(?:with )?(?:the )?subject(?: line)?)\b", re.I)
_DESCRIBED = re.compile(r"\b(?:e-?mails?|mails?|messages?|threads?|ones?|notes?|files?|documents?)\s*\Z", re.I)


def outside_topic(intent: str) -> str:
    """The intent without the topic it gives ("email Priya *about the draft*", "call Alex *about
    dinner*"); an "about" that says which thing is meant ("the email about the lease") is kept."""
    for m in _TOPIC.finditer(intent):
        if not _DESCRIBED.search(intent[: m.start()]):
            return intent[: m.start()]
    return intent


# General words for kinds of things ("the schedule", "an email"): they say what a request is about
# without naming one thing, and tools name the same kinds (core.demo.choose).
KIND_WORDS: dict[str, tuple[str, ...]] = {
    "schedule": ("schedule", "routine", "recurring"),
    "task": ("task", "todo", "to-do", "chore"),
    "event": ("event", "calendar", "meeting", "appointment", "agenda"),
    "thread": ("thread", "email", "e-mail", "mail", "gmail", "message", "inbox", "mailbox"),
    "person": ("people", "contact", "person"),
    "newsletter": ("subscription", "newsletter"),
    "note": ("note", "notebook"),
    "fact": ("memory", "fact", "remember", "remembered"),
    "file": ("file", "workspace", "document", "doc"),
    "folder": ("folder", "directory"),
}
_SENDS = {*KIND_WORDS["thread"], "text", "ping", "dm"}  # kinds of message used as a verb: "email Lena", "text Sam"
_KIND_OF_TERM = {t: kind for kind, words in KIND_WORDS.items() for w in words for t in terms(w)}


def kinds_in(text: str) -> frozenset[str]:
    """The kinds of thing ``text`` names in general words."""
    return frozenset(_KIND_OF_TERM[t] for t in terms(text) if t in _KIND_OF_TERM)


def _reference() -> dt.datetime:
    return dt.datetime(2000, 1, 3, 12, 0)  # a Monday noon: enough to tell whether a date or time is said


def split_content(text: str) -> tuple[str, str]:
    """(intent, content): where the wording marks what follows as content, the text after it."""
    quoted = _QUOTED.search(text)
    for m in _CONTENT.finditer(text):
        lead = m.group("lead").strip().lower()
        cut = m.start()
        for name in ("cut", "cut2"):  # "tell Sam| that ...", "remind me every Monday| to ...": the verb stays
            if m.group(name) is not None:
                cut = m.start(name)
        before = text[:cut]
        if lead == "that" and not _CONTENT_AFTER.search(before.lower().rstrip()):
            continue  # "mark that task": a determiner
        if lead.startswith(":") and (not before.strip() or not _COLON_AFTER.search(before.lower())):
            continue  # "Interview feedback: Jordan Ellis" is a name; "take a note: ..." gives the note
        if lead.split()[0] in ("me", "him", "her", "them", "us") and not re.search(
            r"\b(?:remind|tell|ask|let|want|told|asked)\s*\Z", before.lower().rstrip()
        ):
            continue  # "send me the file": no content follows
        rest = text[m.end() :].strip()
        if len(rest) < 2:
            continue
        if quoted is not None and quoted.start() < m.start():
            break
        return before.strip(" ,"), rest
    if quoted is not None:
        return (text[: quoted.start()] + text[quoted.end() :]).strip(" ,"), quoted.group(1).strip()
    return text.strip(), ""


def _negations(text: str) -> tuple[str, bool]:
    """The text with negated clauses taken out, and whether there was one. "I don't want X any
    more" is a wish to stop X, so it reads as "stop X"."""
    out, negated = text, False
    for m in reversed(list(_NEGATION.finditer(text))):
        rest = m.group("rest")
        negated = True
        want = _WANTS.match(rest)
        if want is not None and (_NO_MORE.search(text[m.end() :][:40]) or _NO_MORE.search(rest)):
            out = out[: m.start()] + "stop " + _NO_MORE.sub("", rest[want.end() :]) + out[m.end() :]
        else:
            out = out[: m.start()] + " " + out[m.end() :]
    out = _NO_MORE.sub(" ", out) if negated else out
    return " ".join(out.split()), negated


# Contractions typed without their apostrophe ("whens", "dont"): the words they are.
_BARE = {
    "whats": "what's",
    "whens": "when's",
    "wheres": "where's",
    "whos": "who's",
    "hows": "how's",
    "dont": "don't",
    "doesnt": "doesn't",
    "didnt": "didn't",
    "cant": "can't",
    "wont": "won't",
    "isnt": "isn't",
    "im": "I'm",
    "ive": "I've",
    "u": "you",
    "ur": "your",
    "pls": "please",
    "plz": "please",
    "thx": "thanks",
}
_BARE_WORD = re.compile(r"\b(" + "|".join(_BARE) + r")\b", re.IGNORECASE)


_TO_DO = re.compile(r"\b(need|needs|have|has|got|things|stuff|anything|something|left|what|much)\s+to\s+do\b", re.I)


def plain_words(text: str) -> str:
    """``text`` with curly quotes made plain, bare contractions given their apostrophe, and
    "to do" written as the noun it is in "what do I need to do" (a to-do)."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    text = _TO_DO.sub(lambda m: f"{m.group(1)} to-do", text)
    return _BARE_WORD.sub(lambda m: _BARE[m.group(1).lower()], text).strip()


def read(text: str, world: World, now: dt.datetime | None = None, *, head: str | None = None) -> Reading:
    """Read ``text`` against ``world`` (dates against ``now``, the owner's time as ``time.now``
    gave it, or only to see whether one is said). ``head``: the verb to read it by, when it is an
    earlier request with the answer to a question after it ("cancel it")."""
    plain = plain_words(text)
    said = normalise(plain)
    intent, content = split_content(plain)
    intent, negated = _negations(intent)
    intent = _STOP_DOING.sub(r"\1", intent).strip(" ,;.")
    asked = normalise(intent)
    body = _POLITE.sub("", re.sub(r"^(?:just|only|simply)\s+", "", asked))
    question = bool(_QUESTION.match(body) or _INFO.match(body)) or (
        plain.endswith("?") and body == asked  # "can you pause it?" is a request, "standup at 9?" a question
    )
    if not question and (m := _LATE_QUESTION.match(body)):  # "honestly, what's Priya's number"
        body, question = body[m.end(1) :].lstrip(" ,"), True
    found = tuple(moments(plain, now or _reference()))
    emails = tuple(EMAIL.findall(plain))
    phones = tuple(p for p in ([phone(plain)] if PHONE.search(plain) else []) if p)
    name = _FILENAME.search(plain)
    place = place_named(plain)
    dated_terms = {t for m in found if not _PART_OF_DAY.fullmatch(m.text) for t in terms(m.text)}
    opening = re.match(r"[a-z][a-z'-]*", body)
    said_head = head
    head = opening.group(0) if opening else ""
    verb = head if head and head not in _DETERMINERS and not question else ""
    if head in _DETERMINERS:
        head = ""  # "the cookbook one": a thing named, no verb
    if said_head:
        head = said_head
    light = head if head in _LIGHT else ""
    if light:  # "put X on hold" says its action later, "put X on my list" adds it, "get me off X" stops
        # it, "turn it back on" resumes it
        head = (
            "stop"
            if re.search(r"\boff\b", body)
            else "resume"
            if re.search(r"\bback on\b|\bon again\b|\bon\W*\Z", body)
            else "add"
            if _INTO.search(body)
            else ""
        )
    # Neither the dates ("lunch tomorrow?" is not asked by "tomorrow") nor the verb that opens a
    # command ("read the email": "Books to read" is not named) name a thing.
    linked = _without(intent, emails)
    if head and not question:
        linked = re.sub(rf"^(.*?)\b{re.escape(head)}\b", r"\1 ", linked, count=1, flags=re.I)
    links = _undated(world.link(linked), dated_terms)
    # A date inside a thing's name ("Electricity bill for November") is part of the name, not a date asked.
    named_terms = {w for link in links if link.sure for w in link.words}
    found = tuple(m for m in found if not (set(terms(m.text)) and set(terms(m.text)) <= named_terms))
    outside = outside_topic(linked)
    targets = links if outside == linked else _undated(world.link(outside), dated_terms)
    return Reading(
        text=plain,
        intent=intent,
        content=content,
        links=links,
        moments=found,
        place=place,
        emails=emails,
        phones=phones,
        filename=name.group(1) if name else "",
        query=_query(
            _without(intent, (place.name,) if place is not None and place.zone else ()),  # "New York" fills a zone
            links,
            found,
            emails,
            phones,
            head if head in _SENDS else "",
            light,
        ),
        question=question,
        negated=negated,
        repeats=bool(_REPEATS.search(said)),
        compose=bool(_COMPOSE.search(said)),
        head=head,
        asks=next((w for w in ("when", "where", "who", "how long", "how much", "what time") if body.startswith(w)), ""),
        kinds_said=kinds_in(body[len(verb) :] if verb else asked),  # "schedule lunch": a verb, not a schedule
        targets=targets,
    )


def _undated(links: list[Link], dated: set[str]) -> tuple[Link, ...]:
    """The links not made by dates alone ("what's on tomorrow" names no "Lunch tomorrow?"; "the
    weekend hike email" names "Weekend hike")."""
    return tuple(link for link in links if not link.words <= dated)


def _without(text: str, *values: tuple[str, ...]) -> str:
    for group in values:
        for v in group:
            if v.strip():
                text = re.sub(re.escape(v), " ", text, flags=re.IGNORECASE)
    return text


def _query(
    intent: str,
    links: tuple[Link, ...],
    found: tuple[Moment, ...],
    emails: tuple[str, ...],
    phones: tuple[str, ...],
    sent: str = "",
    light: str = "",
) -> str:
    """The intent's words for the tool search: entity names, dates and addresses left out (they
    fill arguments), the rest in order. A request that opens with a kind of message for its verb
    ("email Lena", "message Sam") asks to send one."""
    text = _without(intent, emails)
    named = {w for link in links if link.sure for w in link.words}
    dated = {t for m in found for t in terms(m.text)}
    kept = []
    for i, token in enumerate(_WORD.findall(text)):
        if PHONE.fullmatch(token) or (i == 0 and token.lower() == light):
            continue
        term_list = terms(token)
        if term_list and all(t in named or t in dated for t in term_list):
            continue
        kept.append(token.lower())
    return " ".join(["send", *kept] if sent else kept)
