"""Requests about one thing the demo's data holds: a thread to reply to or forward, a schedule to
pause, a file, a person's details, a place's time, a reminder at a time of day.

The target comes from linking the request's words to the demo's world (:mod:`core.demo.world`)
and then to what the tools list in this turn: a write goes ahead only when exactly one listed
row is the one the request names; otherwise the demo asks which one. Nothing is ever filled
from the request's leftover words.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from core.demo import answers
from core.demo.intents.base import TODAY_FIRST, Action, Call, Context, Done, Say, intent
from core.demo.intents.mail import addresses, mailbox, second_person
from core.demo.text import EMAIL, find_items, normalise, sentence
from core.demo.when import day_span, moments, place_named, time_of_day
from core.demo.world import Link, terms

REAL_MODEL = "a real model (set ANTHROPIC_API_KEY or OPENAI_API_KEY and start deferchat again)"


def _data(done: Done | None) -> dict[str, Any]:
    return done.data if done is not None and isinstance(done.data, dict) else {}


def _failed(done: Done | None) -> Say | None:
    return Say(answers.failure(done.name, done.text)) if done is not None and not done.ok else None


# -- the time in a place -------------------------------------------------------------------------


@intent(
    "time.place",
    r"\bwhat time is it\b|\bwhat'?s the time\b|\btime (?:is it )?(?:in|for)\b|\bcurrent time\b|\blocal time\b",
)
def time_in(ctx: Context) -> Action | None:
    place = place_named(ctx.text)
    if place is None:
        return None  # the owner's own time: the plain clock intent
    if place.zone is None:
        return Say(
            f"I can tell the time in a place by its IANA timezone, and the timezone database has no zone "
            f"named after {place.name}. Ask with the zone (for example \u201cwhat time is it in "
            f"America/Los_Angeles?\u201d), or ask {REAL_MODEL}, which knows where {place.name} is."
        )
    now = ctx.last("time.now")
    if now is None:
        return Call("time.now", {"timezone": place.zone}, f"Asking `time.now` for the time in {place.name}.")
    if failed := _failed(now):
        return failed
    d = _data(now)
    return Say(
        f"It is {d.get('time')} on {d.get('weekday')}, {d.get('date')} in {place.name} "
        f"({d.get('timezone')}, UTC{d.get('utc_offset')})."
    )


# -- a reminder at a time of day -----------------------------------------------------------------


@intent("reminder.timed", r"\bremind me\b|\bset (?:a|an) (?:reminder|alarm)\b")
def reminder(ctx: Context) -> Action | None:
    if re.search(r"\b(every|each|daily|weekly|weekdays|weekends)\b", ctx.said):
        return None  # a recurring one is a schedule
    made = ctx.last("calendar.create_event")
    if made is not None:
        if failed := _failed(made):
            return failed
        d = _data(made)
        day, start = answers.moment(str(d.get("start", "")))
        return Say(
            f"I put \u201c{d.get('title')}\u201d on your calendar for {day} at {start} as your reminder "
            "(the demo has no alarms: the calendar entry is the reminder)."
        )
    now = ctx.now()
    if now is None:
        if not moments(ctx.text, dt.datetime(2000, 1, 3, 12)):
            return None  # no time said: a to-do (tasks.create)
        return Call("time.now", {}, TODAY_FIRST)
    found = moments(ctx.text, now)
    at = time_of_day(found)
    if at is None:
        return None  # a day but no time of day: a task due that day
    span = day_span(found, now.date())
    on = span[0] if span else now.date()
    if span is None and dt.datetime.combine(on, dt.time.fromisoformat(at)) < now:
        on = on + dt.timedelta(days=1)  # "at 6pm" when it is later than that: tomorrow's
    title = _reminder_title(ctx.text, found)
    if not title:
        return Say("What should I remind you of? For example: \u201cremind me to call mom at 6pm\u201d.")
    return Call(
        "calendar.create_event",
        {"title": title, "start": f"{on.isoformat()}T{at}", "duration_minutes": 15},
        f"Adding \u201c{title}\u201d to your calendar at {at}.",
    )


def _reminder_title(text: str, found: list[Any]) -> str:
    said = normalise(text)
    for m in sorted(found, key=lambda m: -m.start):
        said = said[: m.start] + said[m.end :]
    m = re.search(r"\bremind me (?:to|that|about)\s+(.+)", said)
    body = m.group(1) if m else ""
    body = re.sub(r"\s+\b(?:at|on|by|for)\s*$", "", " ".join(body.split()).strip(" .,!?"))
    return sentence(body).rstrip(".") if body else ""


# -- files ---------------------------------------------------------------------------------------

_FILES = r"\b(files?|folders?|documents?|docs|directory|workspace)\b"


@intent("workspace.write", rf"\b(save|write|create|make|put)\b.*{_FILES}|\bsave (?:it|this|that) as\b")
def write_file(ctx: Context) -> Action | None:
    written = ctx.last("workspace.write_file")
    if written is not None:
        if failed := _failed(written):
            return failed
        d = _data(written)
        return Say(f"Saved {d.get('bytes')} bytes to **{d.get('path')}** in your workspace.")
    name = re.search(r"[\"\u201c']([^\"\u201d']+\.\w{1,5})[\"\u201d']|\b([\w-]+\.(?:txt|md|csv|json))\b", ctx.text)
    called = re.search(
        r"\b(?:called|named|titled)\s+[\"\u201c']?([^\"\u201d',.]+?)[\"\u201d']?(?:\s+with\b|[,.]|$)", ctx.text
    )
    path = (name.group(1) or name.group(2)) if name else (called.group(1).strip() + ".txt" if called else "")
    folder = ctx.world.one(ctx.text, ["folder"])
    if path and folder is not None and "/" not in path:
        path = f"{folder.entity.key}/{path}"
    content = re.search(
        r"\b(?:with|saying|containing|that says|with the text)\s*:?\s*(.+)$|:\s*(.+)$", ctx.text, re.IGNORECASE | re.S
    )
    body = (content.group(1) or content.group(2)).strip() if content else ""
    if not path:
        return Say("What should the file be called? For example: \u201csave a file called ideas.txt with ...\u201d.")
    if not body:
        return Say(f"What should {path} say? For example: \u201csave a file called {path} with buy milk\u201d.")
    return Call("workspace.write_file", {"path": path, "content": body + "\n"}, f"Writing {path} in your workspace.")


@intent("workspace.read", rf"{_FILES}|\.(?:txt|md|csv)\b|\b(?:open|read|show)\b")
def files(ctx: Context) -> Action | None:
    listed = ctx.last("workspace.search")
    opened = ctx.last("workspace.read_file")
    if opened is not None:
        if failed := _failed(opened):
            return failed
        return Say(f"**{_data(opened).get('path') or opened.args.get('path')}**:\n\n" + _file_text(opened.text))
    file = ctx.world.one(ctx.text, ["file"])
    if file is None and not re.search(_FILES, ctx.said):
        return None
    wants_list = bool(re.search(r"\b(what|which|list|show|any)\b.*\bfiles\b|\bin (?:my|the) \w+ folder\b", ctx.said))
    if file is not None and not wants_list:
        return Call("workspace.read_file", {"path": file.entity.key}, f"Opening {file.entity.key}.")
    if listed is not None:
        if failed := _failed(listed):
            return failed
        rows = [m["path"] for m in _data(listed).get("matches") or []]
        where = listed.args.get("glob", "").removesuffix("/*") or "your workspace"
        if not rows:
            return Say(f"There are no files in {where}.")
        return Say("\n".join([f"{len(rows)} files in {where}:", *(f"- {r}" for r in rows)]))
    folder = ctx.world.one(ctx.text, ["folder"])
    args: dict[str, Any] = {"pattern": "."}
    if folder is not None:
        args["glob"] = f"{folder.entity.key}/*"
    elif m := re.search(r"\b(?:my|the)\s+(\w+)\s+folder\b", ctx.said):
        return Say(f"You have no folder called {m.group(1).capitalize()} in your workspace.")
    return Call(
        "workspace.search", args, "Listing the files in " + (args.get("glob", "")[:-2] or "your workspace") + "."
    )


def _file_text(text: str) -> str:
    lines = text.splitlines()[1:]  # the header line: "path: lines 1-4 of 4"
    return "\n".join("> " + (line.split("\t", 1)[1] if "\t" in line else line) for line in lines if line.strip())


# -- schedules: a write names one schedule ------------------------------------------------------

_SCHEDULE_ACTS = {
    "schedule.pause": r"\b(pause|suspend|put on hold|hold off|skip|stop)\b",
    "schedule.resume": r"\b(resume|unpause|restart|start again|turn back on|reactivate)\b",
    "schedule.cancel": r"\b(cancel|delete|remove|get rid of|stop .* for good|drop)\b",
    "schedule.update": r"\b(move|change|reschedule|rename|shift|push|update|set)\b",
}


@intent(
    "schedule.write",
    r"\b(pause|suspend|resume|unpause|restart|cancel|delete|remove|get rid of|stop|move|change|reschedule|"
    r"rename|shift|push)\b",
    unless=r"\b(e-?mails?|mail|newsletters?|subscriptions?|task|to-?do|meeting invite|event)\b",
)
def schedule_write(ctx: Context) -> Action | None:
    tool = next((t for t, pattern in _SCHEDULE_ACTS.items() if re.search(pattern, ctx.said)), None)
    done = ctx.last(tool) if tool is not None else None
    if done is not None and tool is not None:
        if failed := _failed(done):
            return failed
        return Say(_schedule_done(tool, _data(done)))
    link = ctx.world.one(ctx.text, ["schedule"])
    said_times = [m for m in moments(ctx.text, dt.datetime(2000, 1, 3, 12)) if m.has_time]
    if link is None and not (said_times and re.search(r"\b(standup|routine|schedule|reminder)\b", ctx.said)):
        if re.search(r"\b(schedules?|routines?|recurring|reminders?)\b", ctx.said):
            listed = ctx.last("schedule.list")
            if listed is None:
                return Call("schedule.list", {"status": "all"}, "First I'll list your schedules.")
            return Say(answers.schedules(_data(listed)) + "\n\nWhich one do you mean? Name it as it is listed.")
        return None
    if tool is None:
        return None
    listed = ctx.last("schedule.list")
    if listed is None:
        return Call("schedule.list", {"status": "all"}, "First I'll find the schedule in your list.")
    if failed := _failed(listed):
        return failed
    rows = find_items(listed.data)
    chosen = _one_schedule(rows, link, said_times[0].when.strftime("%H:%M") if said_times else None)
    if chosen is None:
        return Say(
            answers.schedules(_data(listed))
            + "\n\nWhich of these do you mean? I'd rather ask than change the wrong one."
        )
    args: dict[str, Any] = {"schedule_id": chosen["id"]}
    label = f"\u201c{chosen['title']}\u201d"
    if tool == "schedule.pause" and chosen.get("status") == "paused":
        return Say(
            f"{label} is already paused" + (f" until {chosen['paused_until']}." if chosen.get("paused_until") else ".")
        )
    if tool == "schedule.resume" and chosen.get("status") == "active":
        return Say(f"{label} is not paused: it already runs at {chosen.get('time')}, {chosen.get('days_text')}.")
    if tool == "schedule.update":
        new_time = said_times[-1].when.strftime("%H:%M") if len(said_times) >= 2 or (said_times and link) else None
        if new_time is None or new_time == chosen.get("time"):
            return Say(f"What should change about {label}? For example: \u201cmove it to 10am\u201d.")
        args["time"] = new_time
    if tool == "schedule.pause":
        now = ctx.now()
        until = re.search(r"\buntil\b(.+)$", ctx.said)
        if until:
            if now is None:
                return Call("time.now", {}, TODAY_FIRST)
            span = day_span(moments(until.group(1), now), now.date())
            if span is not None:
                args["until"] = span[0].isoformat()
    verb = {"schedule.pause": "Pausing", "schedule.resume": "Resuming", "schedule.cancel": "Cancelling"}
    return Call(tool, args, f"{verb.get(tool, 'Changing')} {label}.", search=tool.replace(".", " "))


def _one_schedule(rows: list[dict[str, Any]], link: Link | None, at: str | None) -> dict[str, Any] | None:
    if link is not None:
        named = [r for r in rows if r.get("title") == link.entity.key]
        return named[0] if len(named) == 1 else None
    timed = [r for r in rows if at and r.get("time") == at]
    return timed[0] if len(timed) == 1 else None


def _schedule_done(tool: str, data: dict[str, Any]) -> str:
    s = data.get("schedule") or {}
    title = s.get("title", "the schedule")
    if tool == "schedule.update":
        changed = data.get("changed") or {}
        parts = [f"{k} {v['from']} \u2192 {v['to']}" for k, v in changed.items() if isinstance(v, dict)]
        return f"Updated \u201c{title}\u201d: " + (", ".join(parts) or "nothing changed") + "."
    if tool == "schedule.pause":
        until = f" until {s['paused_until']}" if s.get("paused_until") else " until you resume it"
        return f"Paused \u201c{title}\u201d{until}."
    if tool == "schedule.resume":
        return f"Resumed \u201c{title}\u201d: next at {s.get('next_run') or s.get('time')}."
    return f"Cancelled \u201c{title}\u201d for good (it stays in the history)."


@intent("schedule.ask", r"\b(when|what time|which days?|how often)\b", unless=r"\b(e-?mails?|mail|due|task)\b")
def schedule_ask(ctx: Context) -> Action | None:
    link = ctx.world.one(ctx.text, ["schedule"])
    if link is None or ctx.world.one(ctx.text, ["event"]) is not None:
        return None
    listed = ctx.last("schedule.list")
    if listed is None:
        return Call("schedule.list", {"status": "all"})
    if failed := _failed(listed):
        return failed
    rows = [r for r in find_items(listed.data) if r.get("title") == link.entity.key]
    if not rows:
        return Say(f"You have no schedule called \u201c{link.entity.label}\u201d any more.")
    r = rows[0]
    paused = " (paused)" if r.get("status") == "paused" else ""
    upcoming = r.get("next_run") or "not planned"
    return Say(f"\u201c{r['title']}\u201d is at {r['time']}, {r['days_text']}{paused}; next {upcoming}.")


# -- the calendar: a fact about one event -------------------------------------------------------


@intent(
    "calendar.fact",
    r"\bhow long\b|\bwhen is\b|\bwhere is\b|\bwhat time is (?:my|the)\b|\bwho(?:'s| is) (?:coming|attending|in)\b",
)
def event_fact(ctx: Context) -> Action | None:
    link = ctx.world.one(ctx.text, ["event"])
    if link is None:
        return None
    now = ctx.now()
    if now is None:
        return Call("time.now", {}, TODAY_FIRST)
    listed = ctx.last("calendar.list_events")
    if listed is None:
        first = now.date() - dt.timedelta(days=7)
        words = [w for w in link.entity.key.split() if len(w) > 3 and w[0].isalpha()][:1]
        args: dict[str, Any] = {"start": first.isoformat(), "end": (now.date() + dt.timedelta(days=30)).isoformat()}
        if words:
            args["query"] = words[0].strip(":").lower()
        return Call("calendar.list_events", args, f"Looking for \u201c{link.entity.label}\u201d on your calendar.")
    if failed := _failed(listed):
        return failed
    events = [e for e in _data(listed).get("events") or [] if e.get("title") == link.entity.key]
    if not events:
        return Say(f"\u201c{link.entity.label}\u201d is not on your calendar in the weeks around today.")
    e = min(events, key=lambda e: (str(e.get("start")) < now.isoformat(), str(e.get("start"))))
    day, start = answers.moment(str(e.get("start")))
    _, end = answers.moment(str(e.get("end")))
    place = f" at {e['location']}" if e.get("location") else ""
    if "how long" in ctx.said:
        return Say(
            f"\u201c{e['title']}\u201d lasts {_minutes(e.get('duration_minutes'))} ({start}\u2013{end} on {day})."
        )
    if "who" in ctx.said:
        people = ", ".join(e.get("attendees") or []) or "nobody else"
        return Say(f"\u201c{e['title']}\u201d on {day} at {start}: {people}.")
    return Say(f"\u201c{e['title']}\u201d is on {day}, {start}\u2013{end}{place}.")


def _minutes(n: Any) -> str:
    n = int(n or 0)
    hours, minutes = divmod(n, 60)
    if hours and minutes:
        return f"{hours} h {minutes} min"
    return f"{hours} hour{'s' if hours != 1 else ''}" if hours else f"{minutes} minutes"


# -- contacts: the detail asked for ------------------------------------------------------------

_DETAILS = (
    ("phone", r"\b(phone|number|mobile|cell|call (?:him|her|them) on)\b"),
    ("email", r"\be-?mail(?: address)?\b"),
    ("birthday", r"\bbirthday|born\b"),
    ("company", r"\bwhere does \w+ work\b|\bwho does \w+ work for\b|\bemployer\b|\bcompany\b|\bworks? at\b"),
    ("relationship", r"\bwho is\b|\bwho's\b|\bhow do i know\b"),
    ("notes", r"\bnotes? (?:on|about)\b|\bwhat do (?:i|you) know about\b"),
)


@intent(
    "people.detail",
    r"\b(phone|number|mobile|e-?mail address|birthday|born|work|employer|company|who is|who's|how do i know|"
    r"contact|reach|know about)\b",
    unless=r"\b(send|write|draft|reply|forward|call (?!(?:him|her|them) on)|ring|update|change|set)\b",
)
def person_detail(ctx: Context) -> Action | None:
    link = ctx.world.one(ctx.text, ["person"])
    if link is None:
        return None
    person = link.entity
    looked = ctx.last("people.search")
    if looked is None:
        return Call("people.search", {"query": person.key}, f"Looking up {person.key} in your contacts.")
    if failed := _failed(looked):
        return failed
    rows = [r for r in find_items(looked.data) if r.get("name") == person.key]
    if not rows:
        return Say(answers.people(_data(looked)))
    p = rows[0]
    detail = next((d for d, pattern in _DETAILS if re.search(pattern, ctx.said)), "relationship")
    if detail in ("phone", "email") and addresses(p, detail):
        word = "phone number" if detail == "phone" else "email address"
        return Say(f"{p['name']}'s {word} is {addresses(p, detail)[0]}.")
    if detail == "company":
        return Say(
            f"{p['name']} works at {p['company']} ({p.get('relationship') or 'a contact'})."
            if p.get("company")
            else f"Your contacts don't say where {p['name']} works."
        )
    full = ctx.last("people.get")
    if full is None:
        return Call("people.get", {"person_id": p["id"]}, f"Opening {p['name']}'s full record.")
    rec = _data(full)
    if detail == "birthday":
        return Say(
            f"{p['name']}'s birthday is {rec['birthday']}."
            if rec.get("birthday")
            else f"I don't have {p['name']}'s birthday."
        )
    company = f" at {rec['company']}" if rec.get("company") else ""
    notes = f" {rec['notes']}" if rec.get("notes") else ""
    return Say(f"{p['name']}: {rec.get('relationship') or 'a contact'}{company}.{notes}")


# -- mail: reply to and forward one thread ------------------------------------------------------


@intent("mail.reply", r"\b(reply|respond|answer|write back)\b", unless=r"\bunsubscribe\b")
def reply(ctx: Context) -> Action | None:
    return _about_thread(ctx, forward=False)


@intent("mail.forward", r"\bforward\b|\bpass (?:it|this|that|the \w+) on\b")
def forward(ctx: Context) -> Action | None:
    return _about_thread(ctx, forward=True)


def _thread_query(link: Link) -> str:
    subject = set(terms(link.entity.label))
    words = [w for w in link.entity.label.split() if set(terms(w)) & link.words & subject]
    if words:
        return " ".join(w.strip(":,.?!") for w in words[:3])
    senders = link.entity.data.get("senders") or []
    return f"from:{senders[0][1]}" if senders else link.entity.label


def _about_thread(ctx: Context, *, forward: bool) -> Action | None:
    link = ctx.world.one(ctx.text, ["thread"])
    sent = ctx.last("send_message")
    if sent is not None:
        if failed := _failed(sent):
            return failed
        what = "Forwarded" if forward else "Replied to"
        return Say(
            f"{what} \u201c{sent.args.get('subject', '').removeprefix('Re: ').removeprefix('Fwd: ')}\u201d: sent to "
            f"{', '.join(sent.args.get('to') or [])} from your {mailbox(sent.name)} mail. "
            "(The demo mailbox is simulated: nothing left this machine.)"
        )
    if link is None:
        return Say(
            "Which email do you mean? Tell me who sent it or what it is about, for example "
            f"\u201c{'forward' if forward else 'reply to'} the email from Acme Supplies\u201d."
        )
    account = link.entity.data.get("account", "work")
    searched = [d for d in ctx.all("search_threads") if account in d.name]
    if not searched:
        return Call(
            "search_threads",
            {"query": _thread_query(link)},
            f"First I'll find that email in your {account} mail.",
            prefer=account,
            search="search email threads",
        )
    if failed := _failed(searched[-1]):
        return failed
    hits = [t for t in find_items(searched[-1].data) if t.get("thread_id") == link.entity.key]
    if not hits:
        return Say(f"I couldn't find \u201c{link.entity.label}\u201d in your {account} mail any more.")
    thread = ctx.last("get_thread")
    if thread is None:
        return Call(
            "get_thread", {"thread_id": link.entity.key}, "Opening it.", prefer=account, search="read email thread"
        )
    if failed := _failed(thread):
        return failed
    messages = _data(thread).get("messages") or []
    theirs = [m for m in messages if "sam.rivera@" not in str(m.get("from", ""))]
    last = (theirs or messages)[-1] if messages else {}
    subject = str(_data(thread).get("subject") or link.entity.label)
    if forward:
        to, step = _recipient(ctx, link)
        if step is not None:
            return step
        quoted = "\n".join(f"> {line}" for line in str(last.get("body", "")).splitlines())
        note = _said_with(ctx.text)
        body = (f"{sentence(note)}\n\n" if note else "") + (
            f"---------- Forwarded message ----------\nFrom: {last.get('from')}\nSubject: {subject}\n\n{quoted}"
        )
        args = {"to": to, "subject": f"Fwd: {subject}", "body": body}
        return Call("send_message", args, f"Forwarding it to {', '.join(to)}.", prefer=account, search="send email")
    said = _said_with(ctx.text)
    if not said:
        return Say(
            f"What should the reply to \u201c{subject}\u201d say? For example: \u201creply that we paid it\u201d."
        )
    sender = re.search(r"<([^>]+)>", str(last.get("from", "")))
    to = [sender.group(1)] if sender else EMAIL.findall(str(last.get("from", "")))
    person = ctx.world.one(str(last.get("from", "")).split("<")[0], ["person"])
    greet = f"Hi {person.entity.key.split()[0]}," if person is not None else "Hello,"
    body = f"{greet}\n\n{sentence(second_person(said))}\n\nBest regards"
    args = {"to": to, "subject": f"Re: {subject}", "body": body, "reply_to_thread_id": link.entity.key}
    return Call(
        "send_message",
        args,
        f"Replying from your {account} mail to {', '.join(to)}.",
        prefer=account,
        search="send email",
    )


def _said_with(text: str) -> str:
    m = re.search(
        r"\b(?:reply|respond|answer|write back|say|saying|tell (?:them|him|her))\b[^.]*?\b(?:that|saying)\s+(.+)$",
        text,
        re.I,
    )
    if m is None:
        m = re.search(r"\b(?:saying|with the note|and say|and tell them)\s*:?\s*(.+)$", text, re.I)
    return m.group(1).strip(" .") if m else ""


def _recipient(ctx: Context, link: Link) -> tuple[list[str], Action | None]:
    tail = re.split(r"\bto\b", ctx.text)[-1] if re.search(r"\bto\b", ctx.text) else ""
    if found := EMAIL.findall(tail):
        return found, None
    person = ctx.world.one(tail, ["person"]) if tail else None
    if person is None:
        return [], Say("Who should I forward it to? Give me a name from your contacts or an email address.")
    looked = ctx.last("people.search")
    if looked is None:
        return [], Call(
            "people.search", {"query": person.entity.key}, f"Looking up {person.entity.key} in your contacts."
        )
    rows = [r for r in find_items(looked.data) if r.get("name") == person.entity.key and addresses(r, "email")]
    if not rows:
        return [], Say(f"I have no email address for {person.entity.key}. Tell me the address and I'll forward it.")
    return [addresses(rows[0], "email")[0]], None


# -- calls: who to call, and what about --------------------------------------------------------


@intent(
    "calls.start",
    r"^(?:please )?(?:can you |could you )?(?:call|phone|ring|dial)\b|\b(?:make|place|start) a (?:phone )?call\b",
    unless=r"\b(calls|call log|history|last call|recent)\b",
)
def call(ctx: Context) -> Action | None:
    started = ctx.last("start_call")
    if started is not None:
        if failed := _failed(started):
            return failed
        return Say(
            f"Call queued to {started.args.get('phone_number')} about: {started.args.get('task')} "
            "(deferchat demo: simulated; no real phone call is placed)."
        )
    from core.demo.text import phone

    number = phone(ctx.text)
    who = None if number else ctx.world.one(ctx.text, ["person", "business"])
    if number is None and who is None:
        return None
    m = re.search(
        r"\b(?:about|to (?:ask|tell|confirm|check|book|cancel|move|reschedule|say))\s+(.+?)[.?!]?$", ctx.text, re.I
    )
    task = m.group(0).strip().rstrip(".?!") if m else ""
    task = re.sub(r"^about\s+", "", task, flags=re.I)
    name = who.entity.label if who is not None else number
    if not task:
        return Say(f"What should the call to {name} be about? For example: \u201ccall {name} about the invoice\u201d.")
    if number is None and who is not None:
        number = who.entity.data.get("phone") or who.entity.data.get("phone_number")
        if not number:
            return Say(f"I have no phone number for {name}. Tell me the number and I'll place the call.")
    return Call(
        "start_call",
        {"phone_number": number, "task": task},
        f"Calling {name}.",
        search="start a phone call",
    )


# -- what the demo cannot do ---------------------------------------------------------------------


@intent(
    "web.lookup",
    r"\b(weather|forecast|news|headlines|stock|share price|exchange rate|capital of|who won|score|"
    r"search the web|look (?:it )?up online|google|on the internet)\b",
)
def web_lookup(ctx: Context) -> Action | None:
    found = ctx.last("web.search")
    if found is not None:
        if found.ok:
            return None  # a search engine is configured: the generic summary reads its results
        return Say(
            "I can't look that up: web.search has no search engine here. Set searxng_url in the [tools] "
            "table of config.toml to a SearXNG instance, and for questions about the world ask "
            f"{REAL_MODEL}."
        )
    query = re.sub(
        r"^(?:please\s+)?(?:can you\s+)?(?:search the web for|google|look up)\s+", "", ctx.text.strip(), flags=re.I
    )
    return Call("web.search", {"query": query.rstrip("?!. ")}, "Searching the web.")


@intent(
    "beyond.demo",
    r"\b(poem|story|joke|essay|haiku|song|translate|summari[sz]e (?:this|the article)|explain|advice|recipe for|"
    r"how do i (?:cook|make|fix|learn)|what is the meaning|who are you|are you (?:real|an? ai))\b",
)
def beyond(ctx: Context) -> Action | None:
    return Say(
        "I'm deferchat's offline demo model: I work only through this chat's tools on the demo's data "
        "(calendar, mail, tasks, contacts, schedules, notes, files, calls), so I can't write, explain or "
        f"advise. For that, ask {REAL_MODEL}."
    )
