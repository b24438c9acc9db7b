"""Tasks, schedules, the time, contacts, memory, notes and calls."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from core.demo import answers
from core.demo.intents.base import (
    Action,
    Call,
    Context,
    Say,
    best_row,
    days_asked,
    intent,
    significant,
)
from core.demo.intents.mail import addresses
from core.demo.text import STOP, find_items, sentence

_TASK = r"\b(tasks?|to-?dos?|to do list|to-do list|todo list)\b"


@intent(
    "tasks.complete",
    rf"\b(mark|tick|check off|cross off|complete|finish|finished|done with|i did|i've done)\b.*"
    rf"({_TASK}|\bas (?:done|complete|finished)\b)",
)
def tasks_complete(ctx: Context) -> Action | None:
    done = ctx.last("tasks.complete")
    if done is not None:
        data = done.data if isinstance(done.data, dict) else {}
        return Say(
            f"Marked \u201c{data.get('title')}\u201d as done." if done.ok else answers.failure(done.name, done.text)
        )
    listed = ctx.last("tasks.list")
    if listed is None:
        return Call("tasks.list", {"status": "open"}, "First I'll find the task in your list.")
    rows = find_items(listed.data) if listed.ok else []
    noise = {"mark", "tick", "check", "cross", "off", "complete", "finish", "finished", "done", "task", "todo", "list"}
    chosen = best_row(rows, significant(ctx.text, noise), ("title", "notes"))
    if chosen is None:
        return Say(
            answers.tasks(listed.data if isinstance(listed.data, dict) else {})
            + "\n\nWhich one is done? For example: \u201cmark the passport task as done\u201d."
        )
    return Call("tasks.complete", {"task_id": chosen["id"]}, f"Marking \u201c{chosen.get('title')}\u201d as done.")


@intent(
    "tasks.create",
    rf"\b(add|create|new|put|make)\b.*{_TASK}|\bremind me to\b|^(?:please )?(?:add )?to-?do:",
    unless=r"\b(every|each|daily|weekly|weekdays|at \d)\b|\bwhat\b",
)
def tasks_create(ctx: Context) -> Action | None:
    made = ctx.last("tasks.create")
    if made is not None:
        data = made.data if isinstance(made.data, dict) else {}
        due = f", due {data['due']}" if data.get("due") else ""
        return Say(
            f"Added \u201c{data.get('title')}\u201d to your tasks{due}."
            if made.ok
            else answers.failure(made.name, made.text)
        )
    days, first = days_asked(ctx)
    if first is not None:
        return first
    title = task_title(ctx.text)
    args: dict[str, Any] = {"title": title}
    if days is not None:
        args["due"] = days.first.isoformat()
    return Call("tasks.create", args, f"Adding \u201c{title}\u201d to your tasks.")


def task_title(text: str) -> str:
    t = re.sub(r"^(?:please\s+|can you\s+|could you\s+)*", "", text.strip(), flags=re.I)
    t = re.sub(
        r"^(?:remind me to|(?:add|create|make|put)\s+(?:a\s+|an\s+|new\s+)*(?:task|to-?do)(?:\s+item)?"
        r"(?:\s+(?:to|for))?\s*:?|(?:add\s+)?to-?do\s*:)\s*",
        "",
        t,
        flags=re.I,
    )
    t = re.sub(r"^add\s+", "", t, flags=re.I)
    t = re.sub(r"\s*\b(?:to|on)\s+my\s+(?:to-?do list|task list|tasks?|to-?dos?|list)\b", "", t, flags=re.I)
    t = re.sub(
        r"\s*\b(?:by|due|before|on)?\s*(?:today|tonight|tomorrow|(?:next\s+)?(?:monday|tuesday|wednesday|"
        r"thursday|friday|saturday|sunday)|\d{4}-\d{2}-\d{2})\b",
        "",
        t,
        flags=re.I,
    )
    t = " ".join(t.strip(" .,!?:").split())
    return (t[:1].upper() + t[1:]) if t else "New task"


@intent(
    "tasks.list",
    rf"{_TASK}|\bwhat do i (?:need|have) to do\b|\bwhat'?s due\b"
    r"|\b(?:what'?s|what is|anything) (?:overdue|late|past due)\b",
)
def tasks_list(ctx: Context) -> Action | None:
    listed = ctx.last("tasks.list")
    if listed is not None and listed.ok and re.search(r"\b(overdue|late|past due|behind)\b", ctx.said):
        late = [t for t in find_items(listed.data) if t.get("overdue")]
        if not late:
            return Say("Nothing is overdue.")
        lines = [f"- {t['title']} \u00b7 was due {t['due']}" for t in late]
        return Say("\n".join([f"{len(late)} overdue:", *lines]))
    if listed is not None:
        return Say(
            answers.tasks(listed.data if isinstance(listed.data, dict) else {})
            if listed.ok
            else answers.failure(listed.name, listed.text)
        )
    said = ctx.said
    status = (
        "done"
        if re.search(r"\b(done|finished|completed)\b", said)
        else "all"
        if re.search(r"\ball\b", said)
        else "open"
    )
    args: dict[str, Any] = {"status": status}
    if re.search(r"\bdue\b|\btoday\b|\btomorrow\b|\bthis week\b", said):
        days, first = days_asked(ctx)
        if first is not None:
            return first
        if days is not None:
            args["due_before"] = (days.last + dt.timedelta(days=1)).isoformat()
    return Call("tasks.list", args)


@intent(
    "schedule.list",
    r"\b(schedules|routines|recurring|reminders)\b",
    unless=r"\b(add|create|new|set up|make|cancel|delete|remove|pause|resume|move|change|update)\b",
)
def schedules(ctx: Context) -> Action | None:
    listed = ctx.last("schedule.list")
    if listed is not None:
        return Say(
            answers.schedules(listed.data if isinstance(listed.data, dict) else {})
            if listed.ok
            else answers.failure(listed.name, listed.text)
        )
    status = "all" if re.search(r"\ball\b", ctx.said) else "paused" if "paused" in ctx.said else None
    return Call("schedule.list", {"status": status} if status else {})


@intent(
    "time.now",
    r"\bwhat time is it\b|\bwhat'?s the (?:time|date)\b|\bwhat (?:day|date) is (?:it|today)\b|"
    r"\btoday'?s date\b|\bcurrent time\b|\bwhat'?s today\b",
)
def clock(ctx: Context) -> Action | None:
    now = ctx.last("time.now")
    if now is None:
        return Call("time.now", {})
    return Say(
        answers.clock(now.data) if now.ok and isinstance(now.data, dict) else answers.failure(now.name, now.text)
    )


_CONTACT = re.compile(
    r"\b([a-z][\w-]+)'s (?:phone|number|mobile|cell|e-?mail|address|birthday|contact)|"
    r"\b(?:phone number|number|e-?mail address|e-?mail|contact details|contact info|birthday) "
    r"(?:for|of) ([a-z][\w-]+)|\bwho is ([a-z][\w-]+)|\bhow do i reach ([a-z][\w-]+)|"
    r"\b(?:find|look up|search for) (?:the )?contact (?:for )?([a-z][\w-]+)|"
    r"\bwhen is ([a-z][\w-]+)'s birthday"
)


@intent("people.search", _CONTACT.pattern, unless=r"\b(send|write|call|ring|dial)\b|\bmy (?:phone|number)\b")
def contact(ctx: Context) -> Action | None:
    m = _CONTACT.search(ctx.said)
    name = next((g for g in (m.groups() if m else ()) if g), "")
    if not name or name in STOP:
        return None
    looked = ctx.last("people.search")
    if looked is None:
        return Call("people.search", {"query": name}, f"Looking up {name.title()} in your contacts.")
    if not looked.ok:
        return Say(answers.failure(looked.name, looked.text))
    rows = find_items(looked.data)
    if not rows:
        return Say(answers.people(looked.data if isinstance(looked.data, dict) else {}))
    p = rows[0]
    said = ctx.said
    if re.search(r"\b(phone|number|mobile|cell)\b", said) and addresses(p, "phone"):
        return Say(f"{p['name']}'s phone number is {addresses(p, 'phone')[0]}.")
    if re.search(r"\be-?mail\b", said) and addresses(p, "email"):
        return Say(f"{p['name']}'s email address is {addresses(p, 'email')[0]}.")
    if "birthday" in said:
        record = ctx.last("people.get")
        if "birthday" not in p and record is None and p.get("id"):
            return Call("people.get", {"person_id": p["id"]}, f"Opening {p['name']}'s full record.")
        full = record.data if record is not None and record.ok and isinstance(record.data, dict) else p
        return Say(
            f"{p['name']}'s birthday is {full['birthday']}."
            if full.get("birthday")
            else f"I don't have {p['name']}'s birthday."
        )
    return Say(answers.people(looked.data))


@intent(
    "memory.save",
    r"^(?:please )?(?:remember|note|keep in mind|don't forget)(?: that)?\b",
    unless=r"\bnotes?\b|\bto\s+\w+\b.*\b(every|at \d)",
)
def remember(ctx: Context) -> Action | None:
    saved = ctx.last("memory.save")
    if saved is not None:
        data = saved.data if isinstance(saved.data, dict) else {}
        if not saved.ok:
            return Say(answers.failure(saved.name, saved.text))
        return Say(
            f"Saved to memory: {data.get('fact')}"
            if data.get("saved", True)
            else f"I already had that in memory: {data.get('fact')}"
        )
    fact = re.sub(
        r"^(?:please\s+)?(?:remember|note|keep in mind|don't forget)(?:\s+that)?\s*", "", ctx.text.strip(), flags=re.I
    )
    fact = sentence(re.sub(r"\bI'm\b", "I am", fact))
    known = ctx.last("memory.search")
    if known is None:  # what is remembered already needs no second copy (nor an approval for one)
        return Call("memory.search", {"query": fact.rstrip(".")}, "First I'll check what I already remember.")
    same = [f for f in find_items(known.data) if str(f.get("fact", "")).lower().rstrip(".") == fact.lower().rstrip(".")]
    if same:
        return Say(f"I already had that in memory: {same[0]['fact']}")
    return Call("memory.save", {"fact": fact}, "Saving that to memory.")


@intent(
    "memory.search",
    r"\bwhat'?s my\b|\bwhat is my\b|\bwhat are my\b|\bdo you (?:know|remember)\b|"
    r"\bwhat do you know about\b|\bwho is my\b|\bam i allergic\b",
    unless=r"\b(calendar|tasks?|to-?dos?|inbox|e-?mails?|mail|schedules?|standup|calls?|notes?|newsletters?|"
    r"phone number|number)\b",
)
def recall(ctx: Context) -> Action | None:
    found = ctx.last("memory.search")
    if found is not None:
        return Say(
            answers.facts(found.data if isinstance(found.data, dict) else {})
            if found.ok
            else answers.failure(found.name, found.text)
        )
    noise = {"what", "whats", "know", "remember", "about", "tell", "who", "allergic", "do", "you"}
    kept = [w for w in re.findall(r"[\w-]+", ctx.said) if w not in STOP and w not in noise and w != "s"]
    if "allergic" in ctx.said:
        kept.insert(0, "allergic")
    return Call("memory.search", {"query": " ".join(kept[:3]) or ctx.text})


@intent("notes.create", r"\b(take|make|write|add|create|jot)\b(?: down)?\s+(?:a |an )?(?:new )?note\b|^note:")
def note_create(ctx: Context) -> Action | None:
    made = ctx.last("notes.create")
    if made is not None:
        data = made.data if isinstance(made.data, dict) else {}
        return Say(
            f"Saved the note \u201c{data.get('title')}\u201d." if made.ok else answers.failure(made.name, made.text)
        )
    body = re.sub(r"^.*?\bnote\b\s*(?:that|saying|about|:)?\s*", "", ctx.text.strip(), count=1, flags=re.I)
    body = sentence(body) if body else "(empty)"
    title = " ".join(re.split(r"(?<=[.!?])\s", body)[0].split()[:6]).rstrip(".!?,;:")
    return Call("notes.create", {"title": title or "Note", "body": body}, "Saving that as a note.")


@intent("notes.search", r"\bnotes?\b", unless=r"\b(take|make|write|add|create|jot)\b")
def note_search(ctx: Context) -> Action | None:
    found = ctx.last("notes.search")
    if found is not None:
        return Say(
            answers.notes(found.data if isinstance(found.data, dict) else {})
            if found.ok
            else answers.failure(found.name, found.text)
        )
    noise = {
        "note",
        "notes",
        "find",
        "search",
        "show",
        "look",
        "list",
        "any",
        "have",
        "did",
        "what",
        "my",
        "about",
        "for",
        "on",
        "in",
        "with",
        "mention",
        "mentioning",
        "where",
        "i",
        "wrote",
        "written",
        "the",
    }
    link = ctx.world.one(ctx.text, ["note"])
    if link is not None:  # a note the owner named: its title finds it
        return Call("notes.search", {"query": link.entity.key})
    kept = [w for w in re.findall(r"[\w-]+", ctx.said) if w not in STOP and w not in noise and len(w) > 1]
    return Call("notes.search", {"query": " ".join(kept[:3]) or "*"})


@intent(
    "calls.list",
    r"\b(calls?|call log|call history)\b",
    unless=r"\b(start|make|place|phone|ring|dial)\b|\bcall (?:\+|\d|to\b)|\bcalls? [a-z]+ (?:about|to)\b",
)
def calls_list(ctx: Context) -> Action | None:
    if not re.search(r"\b(recent|list|show|my calls|log|history|last|latest|any|what|how many|status)\b", ctx.said):
        return None
    found = ctx.last("list_calls")
    if found is not None:
        return Say(
            answers.calls(found.data if isinstance(found.data, dict) else {})
            if found.ok
            else answers.failure(found.name, found.text)
        )
    return Call("list_calls", {}, search="list recent calls")
