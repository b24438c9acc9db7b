"""What the demo model reads in the owner's words: word lists, times, dates, phone numbers,
addresses, and the JSON inside a tool result. Pure functions, no clock: a relative date
("tomorrow", "on Friday") is resolved against a ``today`` the caller got from ``time.now``."""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from typing import Any

STOP = set(
    [
        "a",
        "an",
        "the",
        "my",
        "me",
        "i",
        "to",
        "of",
        "for",
        "on",
        "in",
        "at",
        "by",
        "with",
        "and",
        "or",
        "please",
        "can",
        "could",
        "would",
        "you",
        "your",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "is",
        "are",
        "be",
        "do",
        "does",
        "did",
        "from",
        "into",
        "about",
        "up",
        "out",
        "as",
        "so",
        "just",
        "now",
        "then",
        "than",
        "some",
        "any",
        "all",
        "new",
        "get",
    ]
)
# Words people use for what tools call otherwise. Applied to the owner's words only.
SYNONYMS = {
    "move": "update",
    "change": "update",
    "reschedule": "update",
    "rename": "update",
    "shift": "update",
    "edit": "update",
    "push": "update",
    "phone": "call",
    "ring": "call",
    "dial": "call",
    "calling": "call",
    "email": "message",
    "mail": "message",
    "write": "message",
    "text": "message",
    "standup": "schedule",
    "reminder": "schedule",
    "recurring": "schedule",
    "meeting": "event",
    "appointment": "event",
    "todo": "task",
    "to-do": "task",
    "remember": "save",
    "forget": "cancel",
    "stop": "pause",
    "unpause": "resume",
    "restart": "resume",
    "delete": "cancel",
    "remove": "cancel",
    "inbox": "thread",
    "newsletter": "subscription",
    "newsletters": "subscription",
    "contact": "people",
    "person": "people",
    "look": "search",
    "find": "search",
    "show": "list",
    "what": "list",
}
# Words that name what the owner wants done; a tool whose name lacks the owner's action word
# is only a fallback when a search could find a better one.
ACTIONS = {
    "update",
    "cancel",
    "pause",
    "resume",
    "call",
    "start",
    "send",
    "unsubscribe",
    "subscription",
    "trash",
    "draft",
    "label",
    "create",
    "save",
    "complete",
}
VERBS = {
    "update",
    "call",
    "message",
    "send",
    "start",
    "list",
    "search",
    "create",
    "cancel",
    "pause",
    "resume",
    "save",
    "show",
    "find",
    "get",
    "make",
    "add",
    "set",
    "tell",
    "ask",
    "move",
    "change",
}

TIME = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?(?!\w)", re.I)
PHONE = re.compile(r"(?<![\w@])\+?\d[\d\s().-]{5,}\d\b")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
ISO_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
DAY_WORDS = {
    "monday": "mon",
    "tuesday": "tue",
    "wednesday": "wed",
    "thursday": "thu",
    "friday": "fri",
    "saturday": "sat",
    "sunday": "sun",
}
WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def stem(word: str) -> str:
    for suffix in ("ing", "es", "ed", "s"):
        if len(word) > 4 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def words(text: str) -> list[str]:
    parts = re.split(r"[^a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower())
    return [stem(w) for w in parts if w and w not in STOP]


def owner_words(text: str) -> list[str]:
    return [SYNONYMS.get(w, w) for w in words(text)]


def normalise(text: str) -> str:
    """The owner's message for matching: lower case, curly quotes and apostrophes made plain,
    spaces collapsed ("what\u2019s" and "what's" read the same)."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    return " ".join(text.lower().split())


def times(text: str) -> list[str]:
    """Times of day the text names, as HH:MM ("9am", "10:30", "3 pm", "noon"). A bare number is not a time."""
    out = []
    for m in TIME.finditer(text):
        hour, minute, ampm = int(m.group(1)), m.group(2), (m.group(3) or "").lower().replace(".", "")
        if not minute and not ampm:
            continue
        if ampm == "pm" and hour < 12:
            hour += 12
        if ampm == "am" and hour == 12:
            hour = 0
        if hour < 24:
            out.append(f"{hour:02d}:{minute or '00'}")
    if re.search(r"\bnoon\b|\bmidday\b", text, re.I):
        out.append("12:00")
    return out


def phone(text: str) -> str | None:
    m = PHONE.search(text)
    if not m:
        return None
    return "+" + re.sub(r"\D", "", m.group(0))


def topic(text: str) -> str:
    m = re.search(r"\babout\s+(.+?)(?:[.?!]|$)", text, re.I)
    if m:
        return m.group(1).strip()
    return text.strip()


def keywords(text: str, limit: int = 3) -> str:
    kept = [
        w
        for w in re.split(r"[^A-Za-z0-9@.+-]+", text)
        if w
        and w.lower() not in STOP
        and w.lower() not in VERBS
        and SYNONYMS.get(w.lower()) not in VERBS
        and not TIME.fullmatch(w)
    ]
    return " ".join(kept[:limit]) or text.strip()


def parse_json(text: str) -> Any:
    """The first JSON object or array in ``text`` (a tool result may sit inside an envelope)."""
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return None
    try:
        return json.JSONDecoder().raw_decode(text[start:])[0]
    except json.JSONDecodeError:
        return None


def find_items(value: Any) -> list[dict[str, Any]]:
    """The first list of objects in a JSON value (the rows a list or search tool returned)."""
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return value
    if isinstance(value, dict):
        for v in value.values():
            items = find_items(v)
            if items:
                return items
    return []


def capitalise(text: str) -> str:
    """The text with its first letter and the names of weekdays in capitals."""
    text = re.sub(r"\b(" + "|".join(DAY_WORDS) + r")\b", lambda m: m.group(1).capitalize(), text)
    return text[:1].upper() + text[1:]


def sentence(text: str) -> str:
    """``text`` as a sentence: capital first letter, a full stop unless it ends in one."""
    text = text.strip().strip("\"'").rstrip(",;: ").strip()
    if not text:
        return text
    text = capitalise(text)
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


# -- dates ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Span:
    """A range of whole days, ``first`` to ``last`` inclusive, and how the owner said it."""

    first: dt.date
    last: dt.date
    said: str  # "tomorrow", "on Friday", "this week", "in the next 7 days"

    @property
    def days(self) -> int:
        return (self.last - self.first).days + 1


_RELATIVE = re.compile(
    r"\b(today|tonight|tomorrow|tmrw|yesterday|this week|next week|this weekend|weekend|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|in \d+ days|next \d+ days|"
    r"coming week|day after tomorrow)\b"
)


def needs_today(text: str) -> bool:
    """Whether the text names a day only relative to today (so ``time.now`` must be asked first)."""
    return bool(_RELATIVE.search(normalise(text))) and not ISO_DATE.search(text)


def span(text: str, today: dt.date | None) -> Span | None:
    """The days the text names, or None when it names none (or only relative ones and no ``today``)."""
    t = normalise(text)
    if m := ISO_DATE.search(t):
        day = dt.date.fromisoformat(m.group(1))
        return Span(day, day, f"on {day.isoformat()}")
    if today is None:
        return None

    def one(offset: int, said: str) -> Span:
        day = today + dt.timedelta(days=offset)
        return Span(day, day, said)

    if "day after tomorrow" in t:
        return one(2, "the day after tomorrow")
    if re.search(r"\b(tomorrow|tmrw)\b", t):
        return one(1, "tomorrow")
    if re.search(r"\b(today|tonight)\b", t):
        return one(0, "today")
    if re.search(r"\byesterday\b", t):
        return one(-1, "yesterday")
    if m := re.search(r"\bin (\d+) days\b", t):
        return one(int(m.group(1)), f"in {m.group(1)} days")
    if m := re.search(r"\bnext (\d+) days\b", t):
        n = max(1, int(m.group(1)))
        return Span(today, today + dt.timedelta(days=n - 1), f"in the next {n} days")
    if re.search(r"\bnext week\b", t):
        monday = today + dt.timedelta(days=7 - today.weekday())
        return Span(monday, monday + dt.timedelta(days=6), "next week")
    if re.search(r"\b(this|the) weekend\b|\bweekend\b", t):
        saturday = today + dt.timedelta(days=(5 - today.weekday()) % 7)
        return Span(saturday, saturday + dt.timedelta(days=1), "this weekend")
    if re.search(r"\b(this|coming) week\b", t):
        return Span(today, today + dt.timedelta(days=6 - today.weekday()), "this week")
    for name, short in DAY_WORDS.items():
        if m := re.search(rf"\b(next )?{name}\b", t):
            ahead = (WEEKDAYS.index(short) - today.weekday()) % 7
            if m.group(1) and ahead == 0:
                ahead = 7
            return one(ahead, f"on {name.capitalize()}")
    return None


def day_label(day: dt.date) -> str:
    return f"{WEEKDAY_NAMES[day.weekday()]} {day.isoformat()}"
