"""When a request says: its days and times of day (parsedatetime, read against the ``today`` and
time ``time.now`` gave in this turn) and the place whose time it asks for (the IANA zones of
``zoneinfo``).

parsedatetime is imported on first use, in the demo model only. It is deterministic: every
expression is read against the moment given, never the machine's clock. Two of its readings are
taken out, as the demo wants them: meals ("lunch", "dinner") name an event, not its hour, and a
"may" that opens a request ("may I see ...") is not the month.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from dataclasses import dataclass
from functools import cache
from typing import Any

from core.demo.text import normalise

_MEALS = ("breakfast", "lunch", "dinner")


@dataclass(frozen=True)
class Moment:
    """One date or time expression in a request."""

    text: str  # as written: "at 6pm today", "on friday", "this week"
    start: int  # where it is in the request
    end: int
    when: dt.datetime  # naive, in the owner's zone
    has_date: bool  # it names a day (today, Friday, December 12)
    has_time: bool  # it names a time of day (6pm, 10:30, noon)
    week: bool = False  # a whole week ("this week", "next week", "this weekend")
    month: bool = False
    days: int = 1  # how many days from ``when`` on ("the next 3 days": 3)


@cache
def _calendar() -> Any:
    import parsedatetime  # type: ignore[import-untyped]

    constants = parsedatetime.Constants("en_US")
    return parsedatetime.Calendar(constants, version=parsedatetime.VERSION_CONTEXT_STYLE)


# What parsedatetime does not read as a person means it (it reads "the day after tomorrow" as
# tomorrow, "the next 3 days" as the third day, and knows no weekend): read around its answer.
_SPAN_OF_DAYS = re.compile(
    r"\b(?:next|coming|following)\s+(\d{1,2}|two|three|four|five|six|seven|ten|fourteen)\s+days\b"
)
_NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "ten": 10, "fourteen": 14}
_WEEKEND = re.compile(r"\b(?:(this|next|the|over the|on the)\s+)?weekend\b")


_AT_HOUR = re.compile(r"\b(at|by|from|until|till|to)\s+(\d{1,2})(?![\d:.]|\s*(?:am|pm|a\.m\.|p\.m\.|h\b|hours?\b|min))")
# "to 10" is a time of day only after a word that moves something in time ("move my standup to
# 10", "push lunch to 1"); elsewhere it is a number ("set the count to 10").
_MOVED = re.compile(r"\b(?:move|moves|moved|moving|push|pushed|shift|shifted|reschedule|rescheduled|bump|bumped)\b")


def moments(text: str, now: dt.datetime) -> list[Moment]:
    """Every date and time expression in ``text``, read against ``now`` (naive, the owner's zone)."""
    said = normalise(text)
    # "at 8" is a time of day as people say it; parsedatetime wants "at 8:00". What is added is
    # taken out of the spans again, so they are where the words are in ``said``. A bare hour from
    # 1 to 7 is read in the afternoon ("lunch at 1", "call mom at 6"), as calendars read it: nobody
    # books a meeting at 3 in the night without saying so.
    added: list[tuple[int, int]] = []  # where each addition went, in the text parsedatetime reads, and its length
    parts, last = [], 0
    for m in _AT_HOUR.finditer(said):
        if m.group(1) == "to" and not _MOVED.search(said, 0, m.start()):
            continue
        # parsedatetime reads "to 10:00" as the end of a range: it is read as "at" (same length)
        said_to = said[last : m.start(1)] + "at" + said[m.end(1) : m.end()] if m.group(1) == "to" else None
        parts.append(said_to if said_to is not None else said[last : m.end()])
        extra = ":00pm" if 1 <= int(m.group(2)) <= 7 else ":00"
        added.append((sum(len(x) for x in parts), len(extra)))  # parts holds the earlier additions
        parts.append(extra)
        last = m.end()
    parsed = "".join(parts) + said[last:]

    def back(i: int) -> int:
        return i - sum(n for a, n in added if a < i)

    found = [
        (w, c, back(b), back(e), said[back(b) : back(e)])
        for w, c, b, e, _ in _calendar().nlp(parsed, sourceTime=now) or ()
    ]
    out = []
    for m in _WEEKEND.finditer(said):
        saturday = now.date() + dt.timedelta(days=(5 - now.weekday()) % 7 + (7 if m.group(1) == "next" else 0))
        out.append(
            Moment(m.group(0), m.start(), m.end(), dt.datetime.combine(saturday, dt.time(9)), True, False, week=True)
        )
    for when, ctx, start, end, words in found:
        phrase = words.strip()
        if any(o.start <= start < o.end for o in out):
            continue
        if phrase == "after tomorrow" and said[:start].rstrip().endswith("day"):
            phrase, start, when = "the day after tomorrow", said.rfind("day", 0, start), when + dt.timedelta(days=1)
            start = said.rfind("the", 0, start) if said[:start].rstrip().endswith("the") else start
        if days := _SPAN_OF_DAYS.search(phrase):
            n = _NUMBERS.get(days.group(1)) or int(days.group(1))
            out.append(Moment(phrase, start, end, dt.datetime.combine(now.date(), dt.time(9)), True, False, days=n))
            continue
        meal = re.match(rf"(?:{'|'.join(_MEALS)})\b\s*", phrase)
        if meal:  # "lunch with Marco at 1pm": the time is 1pm, lunch is what happens
            phrase, start = phrase[meal.end() :], start + meal.end()
            if not phrase:
                continue
        if phrase == "may" and not re.search(r"\bmay\s+\d", said[start:]):
            continue  # "may I ...": a verb
        if re.fullmatch(r"\d{1,2}", phrase):
            continue  # a bare number is not a time ("room 4", "42")
        has_time = bool(ctx.hasTime) and (
            bool(re.search(r"\d|noon|midnight|morning|afternoon|evening|night|tonight", phrase))
        )
        out.append(
            Moment(
                text=phrase,
                start=start,
                end=end,
                when=when,
                has_date=bool(ctx.hasDate) or "tonight" in phrase,
                has_time=has_time,
                week=bool(ctx.accuracy & ctx.ACU_WEEK),
                month=bool(ctx.accuracy & ctx.ACU_MONTH) and not bool(ctx.accuracy & ctx.ACU_DAY),
            )
        )
    return out


def day_span(found: list[Moment], today: dt.date) -> tuple[dt.date, dt.date, str] | None:
    """The days the expressions name: (first, last, how it was said), or None."""
    dated = [m for m in found if m.has_date or m.week]
    if not dated:
        return None
    m = dated[0]
    day = m.when.date()
    if m.days > 1:  # "the next 3 days"
        return today, today + dt.timedelta(days=m.days - 1), f"in the next {m.days} days"
    if m.week:
        if "weekend" in m.text:
            saturday = day - dt.timedelta(days=day.weekday()) + dt.timedelta(days=5)
            said = "next weekend" if "next" in m.text else "this weekend"
            return max(saturday, today), saturday + dt.timedelta(days=1), said
        if "next" in m.text:
            monday = day - dt.timedelta(days=day.weekday())
            return monday, monday + dt.timedelta(days=6), "next week"
        if "last" in m.text or "past" in m.text:
            monday = day - dt.timedelta(days=day.weekday())
            return monday, monday + dt.timedelta(days=6), "last week"
        return today, today + dt.timedelta(days=6 - today.weekday()), "this week"
    said = m.text.removeprefix("on ").strip()
    return day, day, said


def time_of_day(found: list[Moment]) -> str | None:
    """The first time of day named, as HH:MM."""
    timed = [m for m in found if m.has_time]
    return timed[0].when.strftime("%H:%M") if timed else None


# -- places ------------------------------------------------------------------------------------


def _plain(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).lower()


@cache
def _zones() -> dict[str, str]:
    """Place name (lower case, no accents) -> IANA zone, from the zone names themselves: the
    database names each zone after its best-known city (``Asia/Tokyo``, ``America/New_York``)."""
    import zoneinfo

    places: dict[str, str] = {}
    for key in sorted(zoneinfo.available_timezones()):
        if "/" not in key or key.startswith(("Etc/", "SystemV/", "US/", "posix/", "right/")):
            continue
        place = _plain(key.rsplit("/", 1)[1].replace("_", " "))
        places.setdefault(place, key)  # the canonical zone sorts before a link of the same city rarely; keep the first
    return places


@dataclass(frozen=True)
class Place:
    name: str  # as the request wrote it
    zone: str | None  # its IANA zone, or None when the zone database does not name it


_IN_PLACE = re.compile(r"\b(?:in|for|at)\s+((?:[A-Z][\w'.-]*)(?:\s+[A-Z][\w'.-]*){0,2})")


def place_named(text: str) -> Place | None:
    """The place a request asks the time of ("in Tokyo", "in New York"): its zone when the zone
    database names a zone after it, or an IANA name written out (``Europe/Berlin``)."""
    if m := re.search(r"\b([A-Z][a-z]+/[A-Za-z_]+(?:/[A-Za-z_]+)?)\b", text):
        import zoneinfo

        if m.group(1) in zoneinfo.available_timezones():
            return Place(m.group(1), m.group(1))
    zones = _zones()
    words = re.findall(r"[\w'.-]+", text)
    for size in (3, 2, 1):  # the longest place first: "New York" before "York"
        for i in range(len(words) - size + 1):
            name = " ".join(words[i : i + size])
            if _plain(name) in zones and name[:1].isupper():
                return Place(name, zones[_plain(name)])
    for m in re.finditer(r"\b(?:in|for)\s+((?:[a-z][\w'.-]*)(?:\s+[a-z][\w'.-]*){0,2})", text):
        tail = m.group(1).split()
        for size in (3, 2, 1):  # typed in lower case: "in tokyo", "in new york"
            name = " ".join(tail[:size]).rstrip(".?!,")
            if len(name) >= 4 and _plain(name) in zones:
                return Place(name.title(), zones[_plain(name)])
    if m := _IN_PLACE.search(text):
        return Place(m.group(1).rstrip(".?!"), None)
    return None
