"""Tasks, the time, contacts, memory, notes, calls and the web."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from core.demo import answers
from core.demo.skills.base import (
    REAL_MODEL,
    Action,
    Call,
    Context,
    Say,
    answered,
    asked_fields,
    data,
    days_asked,
    failed,
    named_rows,
    rows_of,
    serves,
    title_of,
)
from core.demo.skills.mail import addresses
from core.demo.text import find_items, sentence
from core.demo.world import terms

# -- tasks ------------------------------------------------------------------------------------------


@serves("tasks.list")
def tasks_list(ctx: Context) -> Action | None:
    listed = ctx.last("tasks.list")
    if listed is not None:
        if bad := failed(listed):
            return bad
        rows = find_items(listed.data)
        flags = [f for f in asked_fields(ctx, rows[0], {}) if isinstance(rows[0].get(f), bool)] if rows else []
        if flags:  # "what is overdue": the rows the field the request names is true for
            wanted = [t for t in rows if t.get(flags[0])]
            word = flags[0].replace("_", " ")
            if not wanted:
                return Say(f"Nothing is {word}.")
            lines = [f"- {t['title']} \u00b7 was due {t['due']}" if t.get("due") else f"- {t['title']}" for t in wanted]
            return Say("\n".join([f"{len(wanted)} {word}:", *lines]))
        return Say(answers.tasks(data(listed)))
    said = set(terms(ctx.reading.intent))
    status = (
        "done" if said & {"done", "finish", "finished", "complet"} else "all" if "all" in ctx.said.split() else "open"
    )
    args: dict[str, Any] = {"status": status}
    if ctx.reading.dated():
        days, first = days_asked(ctx)
        if first is not None:
            return first
        if days is not None:
            args["due_before"] = (days.last + dt.timedelta(days=1)).isoformat()
    return Call("tasks.list", args)


@serves("tasks.create")
def tasks_create(ctx: Context) -> Action | None:
    if end := answered(ctx, "tasks.create", _task_added):
        return end
    days, first = days_asked(ctx)
    if first is not None:
        return first
    title = title_of(ctx, "task")
    if not title:
        return Say("What should the task say? For example: \u201cadd a task to renew my passport\u201d.")
    args: dict[str, Any] = {"title": title}
    if days is not None:
        args["due"] = days.first.isoformat()
    return Call("tasks.create", args, f"Adding \u201c{title}\u201d to your tasks.")


def _task_added(d: dict[str, Any]) -> str:
    due = f", due {d['due']}" if d.get("due") else ""
    return f"Added \u201c{d.get('title')}\u201d to your tasks{due}."


@serves("tasks.complete")
def tasks_complete(ctx: Context) -> Action | None:
    if end := answered(ctx, "tasks.complete", lambda d: f"Marked \u201c{d.get('title')}\u201d as done."):
        return end
    listed = ctx.last("tasks.list")
    if listed is None:
        return Call("tasks.list", {"status": "open"}, "First I'll find the task in your list.")
    if bad := failed(listed):
        return bad
    link = ctx.reading.best("task", sure=True)
    rows = named_rows(rows_of(listed), "title", link.entity.key) if link is not None else []
    if len(rows) != 1:
        return Say(
            answers.tasks(data(listed))
            + "\n\nWhich one is done? For example: \u201cmark the passport task as done\u201d."
        )
    chosen = rows[0]
    return Call("tasks.complete", {"task_id": chosen["id"]}, f"Marking \u201c{chosen.get('title')}\u201d as done.")


# -- the time ---------------------------------------------------------------------------------------


@serves("time.now")
def clock(ctx: Context) -> Action | None:
    place = ctx.reading.place
    if place is not None and place.zone is None:
        return Say(
            f"I can tell the time in a place by its IANA timezone, and the timezone database has no zone "
            f"named after {place.name}. Ask with the zone (for example \u201cwhat time is it in "
            f"America/Los_Angeles?\u201d), or ask {REAL_MODEL}, which knows where {place.name} is."
        )
    now = ctx.last("time.now")
    if now is None:
        if place is not None:
            return Call("time.now", {"timezone": place.zone}, f"Asking `time.now` for the time in {place.name}.")
        return Call("time.now", {})
    if bad := failed(now):
        return bad
    d = data(now)
    if place is not None:
        return Say(
            f"It is {d.get('time')} on {d.get('weekday')}, {d.get('date')} in {place.name} "
            f"({d.get('timezone')}, UTC{d.get('utc_offset')})."
        )
    return Say(answers.clock(d))


# -- contacts ---------------------------------------------------------------------------------------

# The everyday words for a contact's fields ("born" asks the birthday).
PERSON_FIELDS: dict[str, tuple[str, ...]] = {
    "phone": ("phone", "number", "mobile", "cell", "ring", "text"),
    "email": ("email", "e-mail", "mail", "address"),
    "birthday": ("birthday", "born", "birth", "age", "old"),
    "company": ("work", "works", "working", "employer", "company", "job", "firm"),
    "relationship": ("who", "relationship", "know", "related"),
    "notes": ("notes", "know about", "remember about", "anything about"),
}
_REACH = ("reach", "contact", "get hold", "details", "info")


@serves("people.search", "people.get")
def person(ctx: Context) -> Action | None:
    link = ctx.reading.best("person") or ctx.reading.best("business")
    if link is None:
        return None
    person_key = link.entity.key if link.entity.kind == "person" else link.entity.label
    looked = ctx.last("people.search")
    if looked is None:
        return Call("people.search", {"query": person_key}, f"Looking up {person_key} in your contacts.")
    if bad := failed(looked):
        return bad
    rows = named_rows(rows_of(looked), "name", person_key) or (
        rows_of(looked)[:1] if link.entity.kind == "business" else []
    )
    if not rows:
        return Say(answers.people(data(looked)))
    p = rows[0]
    full = ctx.last("people.get")
    record = {**p, **data(full)} if full is not None and full.ok else p
    asked = asked_fields(ctx, {k: record.get(k) for k in PERSON_FIELDS}, PERSON_FIELDS)
    reach = any(w in ctx.said for w in _REACH)
    what = asked[0] if asked else ("email" if reach else "relationship")
    if what in ("phone", "email") and addresses(record, what):
        word = "phone number" if what == "phone" else "email address"
        line = f"{p['name']}'s {word} is {addresses(record, what)[0]}."
        if reach and what == "email" and addresses(record, "phone"):
            line += f" Their phone number is {addresses(record, 'phone')[0]}."
        return Say(line)
    if what == "company":
        return Say(
            f"{p['name']} works at {p['company']} ({p.get('relationship') or 'a contact'})."
            if p.get("company")
            else f"Your contacts don't say where {p['name']} works."
        )
    if full is None and ctx.offers("people.get") and p.get("id"):
        return Call("people.get", {"person_id": p["id"]}, f"Opening {p['name']}'s full record.")
    if what == "birthday":
        return Say(
            f"{p['name']}'s birthday is {record['birthday']}."
            if record.get("birthday")
            else f"I don't have {p['name']}'s birthday."
        )
    if what in ("phone", "email"):
        return Say(f"I have no {'phone number' if what == 'phone' else 'email address'} for {p['name']}.")
    company = f" at {record['company']}" if record.get("company") else ""
    notes = f" {record['notes']}" if record.get("notes") else ""
    return Say(f"{p['name']}: {record.get('relationship') or 'a contact'}{company}.{notes}")


# -- memory -----------------------------------------------------------------------------------------


@serves("memory.save")
def remember(ctx: Context) -> Action | None:
    if end := answered(ctx, "memory.save", _saved):
        return end
    fact = _fact(ctx)
    if not fact:
        return Say("What should I remember? For example: \u201cremember that my gym locker is number 42\u201d.")
    known = ctx.last("memory.search")
    if known is None:  # what is remembered already needs no second copy (nor an approval for one)
        return Call("memory.search", {"query": fact.rstrip(".")}, "First I'll check what I already remember.")
    same = [f for f in find_items(known.data) if str(f.get("fact", "")).lower().rstrip(".") == fact.lower().rstrip(".")]
    if same:
        return Say(f"I already had that in memory: {same[0]['fact']}")
    return Call("memory.save", {"fact": fact}, "Saving that to memory.")


def _saved(d: dict[str, Any]) -> str:
    return (
        f"Saved to memory: {d.get('fact')}"
        if d.get("saved", True)
        else f"I already had that in memory: {d.get('fact')}"
    )


_REMEMBER = re.compile(
    r"^(?:please\s+)?(?:remember|memori[sz]e|keep in mind|don't forget|note|store|save)(?:\s+that)?\s+", re.I
)


def _fact(ctx: Context) -> str:
    """What to remember: the content the request gives, or what follows the word that asks to
    remember it ("remember *my locker is 42*"); nothing else of the request (it would be leftover)."""
    said = _REMEMBER.match(ctx.text.strip())
    text = ctx.reading.content or (ctx.text.strip()[said.end() :] if said else "")
    text = re.sub(r"^(?:that\s+)", "", text.strip(), flags=re.I)
    return sentence(re.sub(r"\bI'm\b", "I am", text)) if text.strip() else ""


@serves("memory.search")
def recall(ctx: Context) -> Action | None:
    if end := answered(ctx, "memory.search", answers.facts):
        return end
    fact = ctx.reading.best("fact")
    query = _asked_words(ctx, fact.words if fact is not None else frozenset())
    return Call("memory.search", {"query": query or ctx.reading.query or ctx.text})


_ASKING = {"remember", "know", "tell", "recall", "memory", "thing", "anything", "something", "take", "like", "do"}


def _asked_words(ctx: Context, linked: frozenset[str]) -> str:
    """The words the request asks about, in its own spelling: those that linked, else the query's
    content words."""
    tokens = re.findall(r"[\w-]+", ctx.reading.intent.lower())
    if linked:
        kept = [t for t in tokens if set(terms(t)) & linked]
    else:
        kept = [t for t in tokens if terms(t) and not (set(terms(t)) & _ASKING) and t in ctx.reading.query.split()]
    return " ".join(dict.fromkeys(kept))[:80]


# -- notes ------------------------------------------------------------------------------------------


@serves("notes.search")
def note_search(ctx: Context) -> Action | None:
    found = ctx.last("notes.search")
    link = ctx.reading.best("note")
    if found is not None:
        if bad := failed(found):
            return bad
        said = answers.notes(data(found))
        rows = named_rows(rows_of(found), "title", link.entity.key) if link is not None else []
        shown = " ".join(str(rows[0].get("snippet") or "").replace("**", "").split()) if rows else ""
        if link is not None and rows and shown.rstrip(".").lower() == link.entity.key.lower():  # only the title
            said += (
                "\n\nThat is all I can show of it: notes.search gives a few words around what matched (here the "
                "title), and this chat has no tool that reads a whole note. Ask for words in it, for example "
                f"\u201csearch my notes for {_example_word(link.entity.key)}\u201d."
            )
        return Say(said)
    if link is not None:  # a note the owner named: its title finds it, or the words of it they used
        return Call("notes.search", {"query": link.entity.key if link.whole else _asked_words(ctx, link.words)})
    noise = {t for w in ("note", "notes", "notebook", "wrote", "write", "written", "down", "jot") for t in terms(w)}
    kept = [t for t in re.findall(r"[\w-]+", ctx.reading.query) if terms(t) and not set(terms(t)) & noise]
    kept = [t for t in kept if t not in ("find", "search", "show", "look", "list", "any", "have", "did", "mention")]
    return Call("notes.search", {"query": " ".join(kept[:3]) or "*"})


def _example_word(title: str) -> str:
    return next((w for w in re.findall(r"[A-Za-z]{4,}", title) if w.lower() not in ("ideas", "notes", "with")), title)


@serves("notes.create")
def note_create(ctx: Context) -> Action | None:
    if end := answered(ctx, "notes.create", lambda d: f"Saved the note \u201c{d.get('title')}\u201d."):
        return end
    body = ctx.reading.content or re.sub(
        r"^.*?\bnote\b\s*(?:that|saying|about|:)?\s*", "", ctx.text.strip(), count=1, flags=re.I
    )
    if not body.strip():
        return Say("What should the note say? For example: \u201ctake a note: buy more flour\u201d.")
    body = sentence(body)
    title = " ".join(re.split(r"(?<=[.!?])\s", body)[0].split()[:6]).rstrip(".!?,;:")
    return Call("notes.create", {"title": title or "Note", "body": body}, "Saving that as a note.")


# -- calls ------------------------------------------------------------------------------------------


@serves("start_call")
def call(ctx: Context) -> Action | None:
    started = ctx.last("start_call")
    if started is not None:
        if bad := failed(started):
            return bad
        return Say(
            f"Call queued to {started.args.get('phone_number')} about: {started.args.get('task')} "
            "(deferchat demo: simulated; no real phone call is placed)."
        )
    number = ctx.reading.phones[0] if ctx.reading.phones else None
    who = None if number else (ctx.reading.target("person", sure=True) or ctx.reading.target("business", sure=True))
    if number is None and who is None:
        return Say("Who should I call? Give me a name from your contacts or a phone number.")
    name = who.entity.label if who is not None else number
    task = _call_task(ctx)
    if not task:
        return Say(f"What should the call to {name} be about? For example: \u201ccall {name} about the invoice\u201d.")
    if number is None and who is not None:
        number = who.entity.data.get("phone") or who.entity.data.get("phone_number")
        if not number:
            return Say(f"I have no phone number for {name}. Tell me the number and I'll place the call.")
    return Call("start_call", {"phone_number": number, "task": task}, f"Calling {name}.", search="start a phone call")


def _call_task(ctx: Context) -> str:
    """What the call is for: the request's content, or what follows "about" or "to ask"."""
    if ctx.reading.content:
        return ctx.reading.content.rstrip(".?!")
    m = re.search(
        r"\b(?:about|regarding|to (?:ask|tell|confirm|check|book|cancel|move|reschedule|say|see|find out))"
        r"\s+(.+?)[.?!]?\s*\Z",
        ctx.text,
        re.I,
    )
    return re.sub(r"^(?:about|regarding)\s+", "", m.group(0).strip().rstrip(".?!"), flags=re.I) if m else ""


@serves("list_calls", "get_call")
def calls_list(ctx: Context) -> Action | None:
    if end := answered(ctx, "list_calls", answers.calls):
        return end
    days, first = days_asked(ctx)
    if first is not None:
        return first
    args = {"since": f"{days.first.isoformat()}T00:00:00"} if days is not None else {}
    return Call("list_calls", args, search="list recent calls")


# -- the web ----------------------------------------------------------------------------------------


@serves("web.search")
def web_lookup(ctx: Context) -> Action | None:
    found = ctx.last("web.search")
    if found is not None:
        if found.ok:
            return Say(answers.summarize(found.name, found.text, False))
        return Say(
            "I can't look that up: web.search has no search engine here. Set searxng_url in the [tools] "
            f"table of config.toml to a SearXNG instance, and for questions about the world ask {REAL_MODEL}."
        )
    query = re.sub(
        r"^(?:please\s+)?(?:can you\s+)?(?:search the web for|google|look up)\s+", "", ctx.text.strip(), flags=re.I
    )
    return Call("web.search", {"query": query.rstrip("?!. ")}, "Searching the web.")


def beyond(offered: int = 0) -> str:
    """What the demo says to an ask no tool of this chat answers."""
    tools = f" ({offered} of them)" if offered else ""
    return (
        "I'm deferchat's offline demo model: I can only act through the tools this chat offers"
        f"{tools} on the demo's own data (calendar, mail, tasks, contacts, schedules, notes, files, calls), "
        f"and none of them answers that. Writing, explaining and advice need {REAL_MODEL}; a web search "
        "needs a search engine (searxng_url in the [tools] table of config.toml)."
    )
