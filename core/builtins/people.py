"""``people.search``, ``people.get`` and ``people.update``: the owner's contacts (table ``people``)."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import Field

from core.builtins import ToolContext
from core.builtins.shared import (
    Args,
    Text,
    ToolError,
    check_email,
    current_time,
    find_row,
    format_id,
    json_list,
    like_pattern,
    now_stamp,
    owner_zone,
    parse_date,
    tool,
    when,
)
from core.tools import ToolResult


class PeopleSearchArgs(Args):
    query: Text = Field(description="Name, company, email address or phone number to match.")
    limit: int = Field(10, ge=1, le=50, description="Maximum number of contacts to return.")


class PeopleGetArgs(Args):
    person_id: Text = Field(description="Contact id returned by people.search, e.g. per_12.")


class PeopleUpdateArgs(Args):
    person_id: Text = Field(description="Contact id returned by people.search.")
    email: str | None = Field(None, description="Primary email address.")
    phone: str | None = Field(None, description="Primary phone number in E.164 form, e.g. +15550100.")
    birthday: str | None = Field(None, description="Birthday as YYYY-MM-DD or --MM-DD when the year is unknown.")
    notes: str | None = Field(None, description="Free-form notes about the contact; replaces the existing notes.")


_PHONE_CHARS = re.compile(r"[+\d\s().-]+")  # fullmatch


def _person_summary(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": format_id("people", row["id"]),
        "name": row["name"],
        "company": row["company"],
        "email": row["email"],
        "phone": row["phone"],
        "relationship": row["relationship"],
    }


@tool(
    "people.search",
    PeopleSearchArgs,
    "Find people in the owner's contacts by name, company, email address or phone number. Returns matching "
    "contacts with their ids and primary contact details.",
)
async def people_search(args: PeopleSearchArgs, ctx: ToolContext) -> ToolResult:
    digits = re.sub(r"\D", "", args.query)
    if _PHONE_CHARS.fullmatch(args.query) and len(digits) >= 4:
        # A phone number: compare digits only, against the primary and the other numbers.
        where = "(coalesce(phone, '') || ' ' || coalesce(other_phones, '')) like ?"
        params: list[Any] = [like_pattern(digits)]
    else:
        haystack = (
            "lower(name || ' ' || coalesce(company, '') || ' ' || coalesce(email, '') || ' ' || "
            "coalesce(other_emails, '') || ' ' || coalesce(relationship, ''))"
        )
        terms = args.query.lower().split()
        where = " and ".join(f"{haystack} like ? escape '\\'" for _ in terms)
        params = [like_pattern(t) for t in terms]
    rows = ctx.db["people"].rows_where(where, params, order_by="name, id", limit=args.limit)
    people = [_person_summary(r) for r in rows]
    return ToolResult.of_json({"query": args.query, "count": len(people), "people": people})


def _person_view(row: dict[str, Any], tz: ZoneInfo) -> dict[str, Any]:
    return {
        "id": format_id("people", row["id"]),
        "name": row["name"],
        "company": row["company"],
        "emails": [e for e in [row["email"], *json_list(row["other_emails"])] if e],
        "phones": [p for p in [row["phone"], *json_list(row["other_phones"])] if p],
        "birthday": row["birthday"],
        "relationship": row["relationship"],
        "notes": row["notes"],
        "updated_at": when(row["updated_at"], tz),
    }


@tool(
    "people.get",
    PeopleGetArgs,
    "Get one contact's full record: emails, phone numbers, birthday, notes and how the owner knows them.",
)
async def people_get(args: PeopleGetArgs, ctx: ToolContext) -> ToolResult:
    return ToolResult.of_json(_person_view(find_row(ctx, "people", args.person_id), owner_zone(ctx)))


def _clean_phone(value: str) -> str:
    """E.164, by the one definition the hardline rules use (core/pipeline/canonical.py)."""
    from core.pipeline.canonical import CanonicalError, canonical_phone

    try:
        return canonical_phone(value)
    except CanonicalError:
        raise ToolError(
            f"Bad phone number {value!r}: use E.164 form, a + and 7 to 15 digits, e.g. +15550100."
        ) from None


def _clean_birthday(value: str, today: dt.date) -> str:
    value = value.strip()
    try:
        if re.fullmatch(r"--\d{2}-\d{2}", value):
            dt.date.fromisoformat("2000" + value[1:])  # a leap year, so --02-29 is fine
            return value
        born = parse_date(value, "birthday")
    except (ValueError, ToolError):
        raise ToolError(f"Bad birthday {value!r}: use YYYY-MM-DD, or --MM-DD when the year is unknown.") from None
    if born > today:
        raise ToolError(f"Bad birthday {value!r}: it is in the future.")
    return value


@tool(
    "people.update",
    PeopleUpdateArgs,
    "Update a contact's details. Only the fields you pass change; pass an empty string to clear a field.",
)
async def people_update(args: PeopleUpdateArgs, ctx: ToolContext) -> ToolResult:
    row = find_row(ctx, "people", args.person_id)
    tz = owner_zone(ctx)
    given = {k: v for k, v in args.model_dump(exclude={"person_id"}).items() if v is not None}
    if not given:
        raise ToolError(
            "Nothing to change: pass at least one of email, phone, birthday or notes (an empty string clears a field)."
        )
    new: dict[str, Any] = {}
    for key, value in given.items():
        if value.strip() == "":
            new[key] = None
        elif key == "email":
            new[key] = check_email(value)
        elif key == "phone":
            new[key] = _clean_phone(value)
        elif key == "birthday":
            new[key] = _clean_birthday(value, current_time(ctx).astimezone(tz).date())
        else:
            new[key] = value.strip()
    changes = {k: {"from": row[k], "to": v} for k, v in new.items() if row[k] != v}
    if changes:
        update: dict[str, Any] = {k: c["to"] for k, c in changes.items()}
        if "email" in update:  # a secondary address promoted to primary is not kept twice
            update["other_emails"] = json.dumps([e for e in json_list(row["other_emails"]) if e != update["email"]])
        if "phone" in update:
            update["other_phones"] = json.dumps([p for p in json_list(row["other_phones"]) if p != update["phone"]])
        update["updated_at"] = now_stamp(ctx)
        ctx.db["people"].update(row["id"], update)
    result = {
        "id": format_id("people", row["id"]),
        "name": row["name"],
        "changed": changes,
        "contact": _person_view(ctx.db["people"].get(row["id"]), tz),
    }
    if not changes:
        result["note"] = "Nothing changed: the contact already had these values."
    return ToolResult.of_json(result)
