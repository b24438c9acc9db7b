"""How the demo uses a tool it has no skill of its own for (a roster's own tools, a server's):
each argument from what its parameter takes (:func:`core.demo.choose.slot_of`) and what the
request holds, an id from the row a list returned for the entity the request names, and a plain
question for what neither gives. Never the request's leftover words."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from core.demo import answers
from core.demo.choose import slot_of
from core.demo.skills.base import REAL_MODEL, TODAY_FIRST, Action, Call, Context, Say, failed, rows_of
from core.demo.when import day_span, moments, time_of_day

if TYPE_CHECKING:
    from core.demo.model import Offered


def cannot_fill(tool: str, params: list[str]) -> str:
    what = " and ".join(f"`{p}`" for p in params)
    return (
        f"To use `{tool}` I need {what}, and I can't tell {'them' if len(params) > 1 else 'it'} from what you wrote. "
        f"Say it in so many words (a name, a date, a quoted text), or ask {REAL_MODEL}."
    )


def lister_for(param: str, tool: Offered, tools: list[Offered]) -> Offered | None:
    """The tool that lists the ids ``param`` takes: the one its description names ("Identifier
    returned by schedule.list"), else a list or search tool of the same family."""
    schema = (tool.schema or {}).get("properties", {}).get(param) or {}
    described = str(schema.get("description") or "")
    for name in re.findall(r"[a-z_]+(?:\.[a-z_]+)+|[a-z]+_[a-z_]+", described):
        for t in tools:
            if t.name == name or t.name.endswith("." + name):
                return t
    family = tool.name.rsplit(".", 1)[0]
    found = [
        t
        for t in tools
        if t.name.rsplit(".", 1)[0] == family and t.name != tool.name and re.search(r"\.(list|search)", t.name)
    ]
    return sorted(found, key=lambda t: (".list" not in t.name, t.name))[0] if found else None


def generic(ctx: Context, tool: Offered, tools: list[Offered]) -> Action | None:
    """The next step toward calling ``tool`` for the request, or its summary once it answered."""
    mine = ctx.last(tool.name)
    if mine is not None:
        return Say(answers.summarize(tool.name, mine.text, not mine.ok))
    r = ctx.reading
    args: dict[str, Any] = {}
    missing: list[str] = []
    props = (tool.schema or {}).get("properties") or {}
    for param, required in tool.params:
        slot = slot_of(param)
        prop = props.get(param) or {}
        value: Any = None
        if slot.startswith("id:"):
            kind = slot[3:]
            link = r.best(kind, sure=True)
            lister = lister_for(param, tool, tools)
            if link is not None and lister is not None:
                listed = ctx.last(lister.name)
                if listed is None:
                    return Call(lister.name, {}, f"First I'll look up the {kind} with `{lister.name}`.")
                if bad := failed(listed):
                    return bad
                rows = [row for row in rows_of(listed) if link.entity.label in {str(v) for v in row.values()}]
                ids = [str(v) for row in rows[:1] for k, v in row.items() if k == "id" or k.endswith("_id")]
                value = ids[0] if len(rows) == 1 and ids else None
        elif slot == "place" and r.place is not None:
            value = r.place.zone
        elif slot in ("date", "time") and r.moments:
            now = ctx.now()
            if now is None and required:
                return Call("time.now", {}, TODAY_FIRST)
            if now is not None:
                found = moments(ctx.text, now)
                span = day_span(found, now.date())
                at = time_of_day(found)
                if slot == "time":
                    value = at
                elif span is not None:
                    value = span[0].isoformat() + (f"T{at}" if at else "")
        elif slot in ("recipient", "email") and r.emails:
            value = list(r.emails) if prop.get("type") == "array" or (not prop and slot == "recipient") else r.emails[0]
        elif slot in ("callee", "phone") and r.phones:
            value = r.phones[0]
        elif slot == "path" and (r.filename or r.best("file")):
            link = r.best("file")
            value = r.filename or (link.entity.key if link else None)
        elif slot == "folder" and (link := r.best("folder", sure=True)) is not None:
            value = f"{link.entity.key}/*"
        elif slot == "query":
            value = r.links[0].entity.label if r.links else r.query or None
        elif slot == "content" and r.content:
            value = r.content
        elif isinstance(prop.get("enum"), list):
            value = next(
                (v for v in prop["enum"] if isinstance(v, str) and re.search(rf"\b{re.escape(v)}\b", r.said)), None
            )
        if value is not None:
            args[param] = value
        elif required:
            missing.append(param)
    if missing:
        return Say(cannot_fill(tool.name, missing))
    return Call(tool.name, args)
