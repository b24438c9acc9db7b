"""The demo model's small text helpers: word lists and stems, phone numbers and addresses, the
JSON inside a tool result, sentences, and a span of days. Pure functions, no clock (dates and
times are read by :mod:`core.demo.when`, the request as a whole by :mod:`core.demo.reading`)."""

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
PHONE = re.compile(r"(?<![\w@])\+?\d[\d\s().-]{5,}\d\b")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
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
    """A crude, consistent stem: "-ing", "-ed" and a plural's "-s" ("-es" after s, x, z, ch and
    sh: "boxes", "schedules" -> "schedule", "notes" -> "note") come off a word of five letters or more."""
    if len(word) <= 4:
        return word
    if word.endswith(("sses", "xes", "zes", "ches", "shes")):
        return word[:-2]
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def words(text: str) -> list[str]:
    parts = re.split(r"[^a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower())
    return [stem(w) for w in parts if w and w not in STOP]


def normalise(text: str) -> str:
    """The owner's message for matching: lower case, curly quotes and apostrophes made plain,
    spaces collapsed ("what\u2019s" and "what's" read the same)."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    return " ".join(text.lower().split())


def phone(text: str) -> str | None:
    m = PHONE.search(text)
    if not m:
        return None
    return "+" + re.sub(r"\D", "", m.group(0))


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


def day_label(day: dt.date) -> str:
    return f"{WEEKDAY_NAMES[day.weekday()]} {day.isoformat()}"
