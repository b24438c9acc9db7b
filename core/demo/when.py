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
    week: bool = False  # a whole week ("this week", "next week")
    month: bool = False


@cache
def _calendar() -> Any:
    import parsedatetime  # type: ignore[import-untyped]

    constants = parsedatetime.Constants("en_US")
    return parsedatetime.Calendar(constants, version=parsedatetime.VERSION_CONTEXT_STYLE)


def moments(text: str, now: dt.datetime) -> list[Moment]:
    """Every date and time expression in ``text``, read against ``now`` (naive, the owner's zone)."""
    said = normalise(text)
    found = _calendar().nlp(said, sourceTime=now) or ()
    out = []
    for when, ctx, start, end, words in found:
        phrase = words.strip()
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


def needs_today(text: str) -> bool:
    """Whether ``text`` names a day or a time at all (so ``time.now`` must say what today is)."""
    return bool(moments(text, dt.datetime(2000, 1, 3, 12, 0)))


def day_span(found: list[Moment], today: dt.date) -> tuple[dt.date, dt.date, str] | None:
    """The days the expressions name: (first, last, how it was said), or None."""
    dated = [m for m in found if m.has_date or m.week]
    if not dated:
        return None
    m = dated[0]
    day = m.when.date()
    if m.week:
        if "next" in m.text:
            monday = day - dt.timedelta(days=day.weekday())
            return monday, monday + dt.timedelta(days=6), "next week"
        if "weekend" in m.text:
            saturday = day - dt.timedelta(days=day.weekday()) + dt.timedelta(days=5)
            return max(saturday, today), saturday + dt.timedelta(days=1), "this weekend"
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
    if m := _IN_PLACE.search(text):
        return Place(m.group(1).rstrip(".?!"), None)
    return None
