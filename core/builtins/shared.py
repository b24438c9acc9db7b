"""What every built-in module uses: registration, argument models and errors, shared parsing.

A built-in is an async function ``(args, ctx) -> ToolResult`` registered with :func:`tool`
under its configured name, with its description and its argument model (an :class:`Args`
subclass, one field per argument; the tool's input schema is generated from it, see
:mod:`core.builtins.schema`; a field's ``description`` is the argument's description).
Anything the caller got wrong (an unknown id, a bad time, a path outside the workspace, a
state change that is not allowed) is raised as :class:`ToolError` and comes back as
``ToolResult(is_error=True)`` with a message that says what was wrong and what to do
instead. Bugs are not dressed up as tool errors: unexpected exceptions propagate to the
pipeline.

State lives in the tables of :mod:`core.builtins.data`; ids are shown with a prefix
(``sch_3``, ``tsk_4``, ``per_12`` ...). Times are shown in the owner's timezone
(``ctx.timezone``) unless a row names its own.

Settings read from ``ctx.settings`` (the ``[tools]`` table of config.toml, plus what tests
inject) are listed in the module of the tool that reads them; ``now`` is read here: a
timezone-aware ``datetime`` (or a callable returning one, or an ISO string) that replaces the
clock.

Only the standard library and pydantic are imported at module level: the roster loader
imports every built-in module to read their schemas, and ``deferchat plan`` should start fast.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from core.builtins import Builtin, BuiltinTool, ToolContext, register
from core.tools import ToolResult

UTC = dt.UTC


# --- registration, arguments and errors ---------------------------------------------------------------


class ToolError(Exception):
    """A mistake in the call (not a bug): becomes an error result with this message."""


class Args(BaseModel):
    """The arguments of one built-in: unknown arguments are refused, values are read-only."""

    model_config = ConfigDict(extra="forbid", frozen=True)


A = TypeVar("A", bound=Args)
Impl = Callable[[A, ToolContext], Awaitable[ToolResult]]


def tool(name: str, model: type[A], description: str) -> Callable[[Impl[A]], Builtin]:
    """Register the decorated function as the built-in ``name``, its arguments parsed with ``model``."""

    def wrap(fn: Impl[A]) -> Builtin:
        @functools.wraps(fn)
        async def run(arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
            if arguments is not None and not isinstance(arguments, dict):
                return error_result(f"Invalid arguments: expected a JSON object, got {type(arguments).__name__}.")
            try:
                args = model.model_validate({} if arguments is None else arguments)
            except ValidationError as exc:
                return error_result(explain(exc, model))
            try:
                return await fn(args, ctx)
            except ToolError as exc:
                return error_result(str(exc))

        register(BuiltinTool(name=name, description=description, args=model, run=run))
        return run

    return wrap


def error_result(message: str) -> ToolResult:
    return ToolResult.of_text(message, is_error=True)


def explain(exc: ValidationError, model: type[Args]) -> str:
    """What was wrong with the arguments, in words a model can act on."""
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()))
        if err["type"] == "extra_forbidden":
            problems.append(f"unexpected argument '{where}'")
        elif err["type"] == "missing":
            problems.append(f"missing required argument '{where}'")
        else:
            got = json.dumps(err.get("input"), ensure_ascii=False, default=str)
            got = got if len(got) <= 80 else got[:77] + "..."
            problems.append(f"{where or 'arguments'}: {err['msg']} (got {got})")
    return f"Invalid arguments: {'; '.join(problems)}. This tool accepts: {', '.join(model.model_fields)}."


# Required free text: surrounding whitespace is dropped and it may not be empty.
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Day = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
HHMM = Annotated[str, Field(pattern=r"^[0-2][0-9]:[0-5][0-9]$")]


# --- time and zones -----------------------------------------------------------------------------------


def current_time(ctx: ToolContext) -> dt.datetime:
    """The current moment (aware), or the clock injected through ``ctx.settings['now']``."""
    fixed = ctx.settings.get("now")
    if callable(fixed):
        fixed = fixed()
    if isinstance(fixed, str):
        fixed = dt.datetime.fromisoformat(fixed)
    if isinstance(fixed, dt.datetime):
        return fixed if fixed.tzinfo else fixed.replace(tzinfo=UTC)
    return dt.datetime.now(UTC)


def parse_zone(name: str, what: str = "timezone") -> ZoneInfo:
    try:
        if not name or name != name.strip():
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolError(
            f"Unknown {what} {name!r}: use an IANA timezone name such as Europe/Berlin, America/New_York or UTC."
        ) from None


def owner_zone(ctx: ToolContext) -> ZoneInfo:
    return parse_zone(ctx.timezone, "owner timezone (ctx.timezone)")


def now_stamp(ctx: ToolContext) -> float:
    """The current moment as the epoch seconds rows store."""
    return round(current_time(ctx).timestamp(), 6)


def when(ts: float | None, tz: ZoneInfo) -> str | None:
    """A stored epoch time as an ISO moment in ``tz``."""
    if ts is None:
        return None
    return dt.datetime.fromtimestamp(ts, tz).isoformat(timespec="minutes")


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")  # fullmatch


def parse_date(text: str, what: str) -> dt.date:
    text = text.strip()
    try:
        if not _DATE.fullmatch(text):
            raise ValueError
        return dt.date.fromisoformat(text)
    except ValueError:
        raise ToolError(f"Bad {what} {text!r}: expected a date as YYYY-MM-DD, e.g. 2026-03-14.") from None


def parse_moment(text: str, tz: ZoneInfo, what: str) -> tuple[dt.datetime, bool]:
    """An ISO 8601 date or date-time as an aware datetime in ``tz``, and whether it was a bare date."""
    text = text.strip()
    if _DATE.fullmatch(text):
        return dt.datetime.combine(parse_date(text, what), dt.time(0), tz), True
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ToolError(f"Bad {what} {text!r}: expected ISO 8601 such as 2026-03-14 or 2026-03-14T15:30.") from None
    return (moment.replace(tzinfo=tz) if moment.tzinfo is None else moment.astimezone(tz)), False


# --- ids and rows -------------------------------------------------------------------------------------


def _prefixes() -> dict[str, str]:
    from core.builtins.data import ID_PREFIXES  # the tables module; the tools only need it when they run

    return ID_PREFIXES


def format_id(table: str, number: int) -> str:
    return f"{_prefixes()[table]}_{number}"


_NOUNS = {
    "schedules": "schedule",
    "tasks": "task",
    "notes": "note",
    "memory_facts": "memory fact",
    "people": "contact",
    "calendar_events": "event",
    "email_subscriptions": "subscription",
    "notifications": "notification",
}
_LIST_TOOL = {
    "schedules": "schedule.list",
    "tasks": "tasks.list",
    "people": "people.search",
    "email_subscriptions": "email.subscriptions",
}


def parse_id(table: str, raw: str) -> int | None:
    match = re.fullmatch(rf"{_prefixes()[table]}_(\d+)", raw.strip())
    return int(match.group(1)) if match else None


def find_row(ctx: ToolContext, table: str, raw: str) -> dict[str, Any]:
    """The row ``raw`` (an id like ``sch_3``) names, or a ToolError saying why there is none."""
    prefixes = _prefixes()
    noun, lister = _NOUNS[table], _LIST_TOOL.get(table, "")
    hint = f" Use {lister} to find the right id." if lister else ""
    number = parse_id(table, raw)
    if number is None:
        other = next((t for t, p in prefixes.items() if re.fullmatch(rf"{p}_\d+", raw.strip())), None)
        if other:
            raise ToolError(
                f"{raw!r} is a {_NOUNS[other]} id, not a {noun} id ({noun} ids look like {prefixes[table]}_3).{hint}"
            )
        raise ToolError(f"{raw!r} is not a {noun} id ({noun} ids look like {prefixes[table]}_3).{hint}")
    rows = list(ctx.db[table].rows_where("id = ?", [number]))
    if not rows:
        raise ToolError(f"No {noun} with id {raw.strip()}.{hint}")
    return rows[0]


def json_list(text: str | None) -> list[Any]:
    return json.loads(text) if text else []


# --- words and search ---------------------------------------------------------------------------------


def words_of(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def like_pattern(term: str) -> str:
    """A LIKE pattern (``escape '\\'``) that matches ``term`` anywhere."""
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


_STOPWORDS = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "at",
        "do",
        "for",
        "i",
        "in",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "the",
        "to",
        "what",
        "when",
        "where",
        "which",
        "who",
        "with",
    )
)


def fts_query(text: str) -> str:
    """An FTS5 query matching any of the words (best matches first via bm25), prefixes included."""
    words = words_of(text)
    meaningful = [w for w in words if w not in _STOPWORDS] or words
    if not meaningful:
        raise ToolError(f"The query {text!r} has no words to search for.")
    return " OR ".join(f'"{w}"*' for w in dict.fromkeys(meaningful))


_EMAIL = re.compile(r"[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+")  # fullmatch


def check_email(value: str) -> str:
    """The address in canonical form (core/pipeline/canonical.py): the one hardline rules match."""
    from core.pipeline.canonical import CanonicalError, canonical_email

    try:
        address = canonical_email(value)
    except CanonicalError:
        address = ""
    if not _EMAIL.fullmatch(address):
        raise ToolError(f"Bad email address {value.strip()!r}: expected something like name@example.com.")
    return address
