"""Mail: the inbox and a search of it, one thread read, an email to a person or an address, a
reply (to the sender, from the account that received it) and a forward (the message quoted),
the newsletters and leaving one."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from core.demo import answers
from core.demo.choose import asks_for
from core.demo.reading import KIND_WORDS
from core.demo.skills.base import (
    Action,
    Call,
    Context,
    Done,
    Say,
    answered,
    data,
    failed,
    rows_of,
    serves,
)
from core.demo.text import EMAIL, capitalise, find_items, sentence
from core.demo.world import Link, terms

_WORKISH = re.compile(r"work|colleague|manager|boss|team|client|co-?worker|report", re.I)
_ACCOUNTS = ("work", "personal")
_ACCOUNT_WORDS = {"work": ("work", "office", "job"), "personal": ("personal", "private", "home")}


def account_named(ctx: Context) -> str:
    """The mailbox the request names ("my work mail", "at the office"), or ""."""
    said = set(terms(ctx.reading.intent))
    named = [a for a, names in _ACCOUNT_WORDS.items() if said & {t for n in names for t in terms(n)}]
    return named[0] if len(named) == 1 else ""


def mailbox(name: str) -> str:
    return "work" if "work" in name else "personal" if "personal" in name else ""


def addresses(person: dict[str, Any], kind: str) -> list[str]:
    """A contact's emails or phones: a search row has one (``email``), a full record a list (``emails``)."""
    many = person.get(kind + "s")
    return [str(x) for x in many if x] if isinstance(many, list) else ([str(person[kind])] if person.get(kind) else [])


# -- reading mail -----------------------------------------------------------------------------------

_MAIL_TERMS = {t for w in (*KIND_WORDS["thread"], "mails", "emails", "messages", "box") for t in terms(w)}
_FLAG_WORDS = {
    "is:unread": ("unread", "new", "unopened"),
    "is:starred": ("starred", "flagged"),
    "in:sent": ("sent",),
}


def _thread_link(ctx: Context, *, relaxed: bool = False) -> Link | None:
    """The one thread the request names, by its subject or else by who sent it; None when it
    names none, or two as well as each other. ``relaxed`` (what a write on a thread may take): also
    the one thread named at all by its subject, in part, by half of it or by a rare word ("forward
    the invoice to Priya": the invoice, not Priya's mail)."""

    def thread_of(link: Link) -> str:
        return link.entity.key if link.entity.kind == "thread" else str(link.entity.data.get("thread_id"))

    def by_subject(link: Link) -> bool:
        return link.entity.kind == "thread" and bool(link.words & set(terms(link.entity.label)))

    found = [link for link in ctx.reading.links if link.entity.kind in ("thread", "sender")]
    subjects = [x for x in found if by_subject(x) and (x.sure or relaxed)]
    if subjects:
        found = subjects
    if not found or any(x.score == found[0].score and thread_of(x) != thread_of(found[0]) for x in found[1:]):
        return None
    wanted = thread_of(found[0])
    link = next((x for x in found if x.entity.kind == "thread" and x.entity.key == wanted), None)
    if link is None and found[0].entity.kind == "sender":
        link = next((x for x in ctx.reading.links if x.entity.kind == "thread" and x.entity.key == wanted), None)
    if relaxed and link is not None and not link.sure:
        # Named in part: beyond doubt only as the one thread so named, by half its subject or a rare word.
        if len(subjects) == 1 and (link.coverage >= 0.5 or link.rare):
            return replace(link, whole=True)
        return None
    return link


def thread_query(link: Link) -> str:
    """What to search a mailbox for to find the thread ``link`` names: the subject's words the
    request used, or its sender."""
    subject = set(terms(link.entity.label))
    kept = [w for w in link.entity.label.split() if set(terms(w)) & link.words & subject]
    if kept:
        return " ".join(w.strip(":,.?!") for w in kept[:3])
    senders = link.entity.data.get("senders") or []
    return f"from:{senders[0][1]}" if senders else link.entity.label


def mail_query(ctx: Context) -> str:
    """The Gmail query for what the request asks of the mailbox: its flags ("unread"), a sender
    it names, the words it searches for (never the words that asked for mail)."""
    r = ctx.reading
    said = set(re.findall(r"[a-z]+", r.intent.lower()))
    parts = [flag for flag, names in _FLAG_WORDS.items() if said & set(names)]
    sender = next((link for link in r.links if link.entity.kind == "sender" and link.sure), None)
    if sender is not None:
        parts.append(f"from:{sender.entity.key}")
    else:
        noise = _MAIL_TERMS | {t for names in _ACCOUNT_WORDS.values() for n in names for t in terms(n)}
        noise |= {t for names in _FLAG_WORDS.values() for n in names for t in terms(n)}
        dated = {t for m in r.moments for t in terms(m.text)}
        asked = [
            w
            for w in re.findall(r"[A-Za-z0-9][\w-]*", r.intent)
            if terms(w) and not set(terms(w)) & (noise | dated) and _topic_word(terms(w)[0])
        ]
        parts += list(dict.fromkeys(_singular(w.lower()) for w in asked))[:3]
    if not parts or "inbox" in said:
        parts.insert(0, "in:inbox")
    return " ".join(dict.fromkeys(parts))


_ASKING_WORDS = {"show", "list", "check", "read", "open", "find", "search", "look", "any", "got", "need", "pay"}
_ASKING_WORDS |= {"latest", "recent", "last", "today", "tell", "see", "give", "get", "write", "wrote", "say", "said"}
_ASKING_WORDS |= {"many", "much", "count", "number", "have", "there", "mine", "statu", "status", "update", "news"}


def _singular(word: str) -> str:
    """ "bills" is searched as "bill" (the mailbox matches words as written), "status" as it is."""
    return word[:-1] if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3 else word


def _topic_word(term: str) -> bool:
    """A word of the request that says what mail is about, not how it asks ("show", "any")."""
    return term not in _ASKING_WORDS and len(term) > 2 and not term.isdigit()


@serves("search_threads", "get_thread")
def mail_read(ctx: Context) -> Action | None:
    link = _thread_link(ctx)
    named = account_named(ctx)
    accounts = [named] if named else list(_ACCOUNTS)
    query = mail_query(ctx)
    if link is not None and link.sure:  # one thread the owner named: search its mailbox for it, then open it
        accounts = [str(link.entity.data.get("account", "work"))]
        query = thread_query(link)
    for account in accounts:
        if not any(account in d.name for d in ctx.all("search_threads")):
            return Call(
                "search_threads",
                {"query": query},
                f"Searching your {account} mail for `{query}`.",
                prefer=account,
                search="search email threads",
            )
    found = ctx.all("search_threads")
    if bad := next((failed(d) for d in found if not d.ok), None):
        return bad
    hits = [(d, t) for d in found for t in find_items(d.data)]
    if link is not None and link.sure:
        linked = [(d, t) for d, t in hits if t.get("thread_id") == link.entity.key]
        if not linked:
            return Say(f"I couldn't find \u201c{link.entity.label}\u201d in your mail any more.")
        thread = ctx.last("get_thread")
        if thread is None:
            d, t = linked[0]
            return Call(
                "get_thread",
                {"thread_id": t["thread_id"]},
                "Opening it.",
                prefer=mailbox(d.name),
                search="read email thread",
            )
        return Say(read_thread(thread))
    parts = [answers.threads(data(d), mailbox(d.name)) for d in found]
    return Say("\n\n".join(parts))


def read_thread(thread: Done) -> str:
    d = data(thread)
    messages = d.get("messages") or []
    if not thread.ok or not messages:
        return answers.failure(thread.name, thread.text)
    last = messages[-1]
    body = "\n".join(f"> {line}" if line else ">" for line in str(last.get("body", "")).splitlines())
    return f"**{d.get('subject')}**, from {last.get('from')} ({last.get('date')}):\n\n{body}"


# -- writing mail -----------------------------------------------------------------------------------


@serves("send_message", "create_draft")
def mail_write(ctx: Context) -> Action | None:
    draft = ctx.goal.endswith("create_draft")
    tool = "create_draft" if draft else "send_message"
    sent = ctx.last(tool)
    thread = _thread_link(ctx, relaxed=True)
    if thread is not None and (not thread.sure or thread.entity not in {x.entity for x in ctx.reading.targets}):
        thread = None  # "email Priya about the budget draft": what the new mail is about, not a mail to send on
    if sent is not None:
        if bad := failed(sent):
            return bad
        who = ", ".join(sent.args.get("to") or [])
        box = mailbox(sent.name)
        if sent.args.get("reply_to_thread_id"):
            subject = str(sent.args.get("subject", "")).removeprefix("Re: ")
            return Say(
                f"Replied to \u201c{subject}\u201d: sent to {who} from your {box} mail. "
                "(The demo mailbox is simulated: nothing left this machine.)"
            )
        if str(sent.args.get("subject", "")).startswith("Fwd: "):
            return Say(
                f"Forwarded \u201c{str(sent.args['subject']).removeprefix('Fwd: ')}\u201d: sent to {who} from your "
                f"{box} mail. (The demo mailbox is simulated: nothing left this machine.)"
            )
        what = "Saved a draft of" if draft else "Sent"
        note = "" if draft else " (The demo mailbox is simulated: nothing left this machine.)"
        return Say(f"{what} \u201c{sent.args.get('subject')}\u201d to {who} from your {box} mail.{note}")
    letter = Letter.read(ctx)
    others = [p for p in ctx.reading.targets if p.entity.kind == "person" and not _is_sender(p, thread)]
    reply = asks_for(ctx.reading, "reply_to_thread_id")
    if reply and thread is None:
        return Say(
            "Which email do you mean? Tell me who sent it or what it is about, for example "
            "\u201creply to the email from Acme Supplies\u201d."
        )
    named = thread is not None and bool(thread.words & set(terms(thread.entity.label)))  # by its subject
    if thread is not None and (reply or (named and not (letter.to or others))):
        return _reply(ctx, thread, letter, tool)
    if thread is not None and named:
        return _forward(ctx, thread, letter, tool)
    return _new(ctx, letter, tool, draft)  # a thread named only by who sent it is not what is being sent


def _is_sender(person: Link, thread: Link | None) -> bool:
    if thread is None:
        return False
    mine = {str(person.entity.data.get("email") or "").lower()}
    mine |= {str(e).lower() for e in person.entity.data.get("other_emails") or [] if isinstance(e, str)}
    return bool(mine & {str(a).lower() for _, a in thread.entity.data.get("senders") or []})


def _found(ctx: Context, thread: Link) -> Action | None:
    """The search of its mailbox that must find the thread first (its id comes from the search's
    rows, never from the index alone), or its failure; None once it found it."""
    account = str(thread.entity.data.get("account", "work"))
    searched = [d for d in ctx.all("search_threads") if account in d.name]
    if not searched:
        return Call(
            "search_threads",
            {"query": thread_query(thread)},
            f"First I'll find that email in your {account} mail.",
            prefer=account,
            search="search email threads",
        )
    if bad := failed(searched[-1]):
        return bad
    if not [t for t in find_items(searched[-1].data) if t.get("thread_id") == thread.entity.key]:
        return Say(f"I couldn't find \u201c{thread.entity.label}\u201d in your {account} mail any more.")
    return None


def _opened(ctx: Context, thread: Link) -> tuple[dict[str, Any] | None, Action | None]:
    """The thread as ``get_thread`` returned it, or the search and the open that come first."""
    account = str(thread.entity.data.get("account", "work"))
    if step := _found(ctx, thread):
        return None, step
    opened = ctx.last("get_thread")
    if opened is None:
        return None, Call(
            "get_thread", {"thread_id": thread.entity.key}, "Opening it.", prefer=account, search="read email thread"
        )
    if bad := failed(opened):
        return None, bad
    return data(opened), None


def _last_theirs(opened: dict[str, Any], thread: Link) -> tuple[dict[str, Any], str]:
    """A thread's last message from someone other than the owner (the one to answer or pass on), and its subject."""
    messages = opened.get("messages") or []
    theirs = [m for m in messages if "sam.rivera@" not in str(m.get("from", ""))]
    return ((theirs or messages)[-1] if messages else {}), str(opened.get("subject") or thread.entity.label)


def _reply(ctx: Context, thread: Link, letter: Letter, tool: str) -> Action:
    account = str(thread.entity.data.get("account", "work"))
    opened, step = _opened(ctx, thread)
    if step is not None:
        return step
    assert opened is not None
    last, subject = _last_theirs(opened, thread)
    if not letter.body:
        return Say(
            f"What should the reply to \u201c{subject}\u201d say? For example: \u201creply that we paid it\u201d."
        )
    sender = re.search(r"<([^>]+)>", str(last.get("from", "")))
    to = [sender.group(1)] if sender else EMAIL.findall(str(last.get("from", "")))
    person = ctx.world.one(str(last.get("from", "")).split("<")[0], ["person"])
    greet = f"Hi {person.entity.key.split()[0]}," if person is not None else "Hello,"
    body = f"{greet}\n\n{sentence(letter.body)}\n\nBest regards"
    args: dict[str, Any] = {"to": to, "subject": f"Re: {subject}", "body": body}
    if tool == "send_message":
        args["reply_to_thread_id"] = thread.entity.key
    return Call(
        tool, args, f"Replying from your {account} mail to {', '.join(to)}.", prefer=account, search="send email"
    )


def _forward(ctx: Context, thread: Link, letter: Letter, tool: str) -> Action:
    account = str(thread.entity.data.get("account", "work"))
    to, _greet, _account, step = recipients(ctx, letter)
    if step is not None:
        return step
    opened, step = _opened(ctx, thread)
    if step is not None:
        return step
    assert opened is not None
    last, subject = _last_theirs(opened, thread)
    quoted = "\n".join(f"> {line}" for line in str(last.get("body", "")).splitlines())
    note = letter.body
    body = (f"{sentence(note)}\n\n" if note else "") + (
        f"---------- Forwarded message ----------\nFrom: {last.get('from')}\nSubject: {subject}\n\n{quoted}"
    )
    args = {"to": to, "subject": f"Fwd: {subject}", "body": body}
    return Call(tool, args, f"Forwarding it to {', '.join(to)}.", prefer=account, search="send email")


def _new(ctx: Context, letter: Letter, tool: str, draft: bool) -> Action:
    person = ctx.reading.target("person")
    if not (letter.to or letter.subject or letter.body or letter.about) and person is not None:
        first = person.entity.key.split()[0]
        return Say(
            f"What should the email to {first} say? For example: \u201cemail {first} saying the draft is ready\u201d."
        )
    to, greet, account, step = recipients(ctx, letter)
    if step is not None:
        return step
    if not (letter.subject or letter.body or letter.about):
        return Say(
            f"What should the email to {greet or ', '.join(to)} say? For example: "
            f"\u201cemail {greet or to[0]} saying the draft is ready\u201d."
        )
    account = account_named(ctx) or account or "personal"
    args: dict[str, Any] = {"to": to, "subject": letter.subject_line(), "body": letter.compose(greet)}
    if letter.cc and not draft:
        args["cc"] = letter.cc
    verb = "Drafting" if draft else "Writing"
    return Call(
        tool,
        args,
        f"{verb} the email to {greet or to[0]} from your {account} mail.",
        prefer=account,
        search="send an email message",
    )


def recipients(ctx: Context, letter: Letter) -> tuple[list[str], str, str, Action | None]:
    """(addresses, the name to greet, the account the contact suggests, or the step to take first):
    an address written out, else the contact the request names, looked up for their address."""
    if letter.to:
        local = letter.to[0].split("@")[0]
        return letter.to, re.split(r"[._+-]", local)[0].capitalize(), "", None
    person = ctx.reading.target("person")
    if person is None:
        return [], "", "", Say("Who should I send it to? Give me a name from your contacts or an email address.")
    name = person.entity.key
    looked = ctx.last("people.search")
    if looked is None:
        return [], "", "", Call("people.search", {"query": name}, f"Looking up {name} in your contacts.")
    rows = [p for p in rows_of(looked) if p.get("name") == name and addresses(p, "email")]
    if not rows:
        return (
            [],
            "",
            "",
            Say(f"I couldn't find an email address for {name} in your contacts. Tell me the address and I'll send it."),
        )
    p = rows[0]
    account = "work" if _WORKISH.search(f"{p.get('relationship') or ''} {p.get('company') or ''}") else "personal"
    return [addresses(p, "email")[0]], str(p.get("name", "")).split()[0], account, None


_PRONOUNS = (
    (r"\bhe's\b|\bshe's\b|\bthey're\b", "you're"),
    (r"\bhe is\b|\bshe is\b|\bthey are\b", "you are"),
    (r"\bhe was\b|\bshe was\b", "you were"),
    (r"\bhe has\b|\bshe has\b", "you have"),
    (r"\bhe\b|\bshe\b|\bthey\b", "you"),
    (r"\bhis\b|\btheir\b", "your"),
    (r"\bhim\b|\bthem\b", "you"),
)


def second_person(text: str) -> str:
    for pattern, replacement in _PRONOUNS:
        text = re.sub(pattern, replacement, text, flags=re.I)
    return text


@dataclass
class Letter:
    """What the owner said an email should carry."""

    to: list[str]
    cc: list[str]
    subject: str
    body: str
    about: str

    @classmethod
    def read(cls, ctx: Context) -> Letter:
        r = ctx.reading
        plain = r.text
        cc_part = re.search(
            r"\b(?:and\s+)?cc(?:'?ing)?\s*:?\s*((?:[\w.+-]+@[\w-]+(?:\.[\w-]+)+[\s,and]*)+)", plain, re.I
        )
        cc = EMAIL.findall(cc_part.group(1)) if cc_part else []
        head = r.intent
        if cc_part:
            head = head.replace(cc_part.group(0), " ")
        to = [e for e in EMAIL.findall(head) if e not in cc]
        subject = ""
        if m := re.search(
            r"\b(?:with )?(?:the )?(?:subject(?: line)?|titled|entitled)\s*(?:is\s*|:\s*)?"
            r"[\"']?(?P<s>[^\"'.;]+?)[\"']?(?=\s+(?:and|saying|with|body)\b|[.;,]|$)",
            plain,
            re.I,
        ):
            subject = m.group("s").strip()
        body = r.content.strip()
        if cc_part and cc_part.group(0) in body:
            body = body.replace(cc_part.group(0), "").strip(" ,")
        if subject and body.lower().startswith(subject.lower()):
            body = body[len(subject) :].strip(" ,")
        body = re.sub(r"^(?:and\s+)?(?:say|saying|tell (?:him|her|them))\s+(?:that\s+)?", "", body, flags=re.I)
        question = re.match(r"(?:asking\s+)?(?:if|whether)\s+(?P<q>.+?)\s*\Z", body, re.I)
        if question:
            q = second_person(question.group("q")).rstrip(" .?")
            ask = re.sub(r"^you\s+(?:are|were|can|could|will|would|have|has|still have)\s+", "", q, flags=re.I)
            subject = subject or capitalise(ask) + "?"
            body = f"Could you let me know {'if' if body.lower().startswith(('if', 'asking if')) else 'whether'} {q}?"
        elif body:
            body = second_person(body)
        about = ""
        if not body and (m := re.search(r"\babout\s+(?P<t>.+?)(?:[.?!]|$)", head, re.I)):
            about = m.group("t").strip()
        return cls(to=to, cc=cc, subject=subject, body=body, about=about)

    def subject_line(self) -> str:
        if self.subject or self.about:
            return capitalise(self.subject or self.about)
        first = re.split(r"(?<=[.!?])\s", self.body.strip())[0]
        return capitalise(" ".join(first.split()[:8]).rstrip(" .,!?;:")) or "Hello"

    def compose(self, greet: str) -> str:
        said = sentence(self.body) if self.body else f"I wanted to get in touch about {self.about}."
        return f"Hi {greet or 'there'},\n\n{said}\n\nBest regards"


# -- newsletters --------------------------------------------------------------------------------------


@serves("email.unsubscribe")
def unsubscribe(ctx: Context) -> Action | None:
    done = ctx.last("email.unsubscribe")
    if done is not None:
        if bad := failed(done):
            return bad
        d = data(done)
        archived = f" I archived its {d['archived_messages']} messages too." if d.get("archived_messages") else ""
        return Say(
            f"You're unsubscribed from **{d.get('list')}** ({d.get('account')} mail).{archived} "
            "(The demo's mail is simulated: the list is marked unsubscribed here, no request was sent.)"
        )
    listed = ctx.last("email.subscriptions")
    if listed is None:
        return Call(
            "email.subscriptions", {}, "Let me see which newsletters you get.", search="newsletter subscriptions"
        )
    if bad := failed(listed):
        return bad
    rows = find_items(listed.data)
    if not rows:
        return Say("You are not subscribed to any newsletters.")
    link = ctx.reading.best("newsletter", sure=True)
    chosen = next((r for r in rows if link is not None and r.get("list") == link.entity.key), None)
    if chosen is None and link is None:
        other = next(
            (x for x in ctx.reading.links if x.sure and x.entity.kind in ("sender", "thread", "business", "person")),
            None,
        )
        if other is not None:  # a sender the owner named, who sends no newsletter
            account = other.entity.data.get("account")
            where = f" (it writes to your {account} mail)" if account else ""
            return Say(
                f"{other.entity.label} isn't one of your newsletters{where}, so there is no list to leave. "
                + answers.subscriptions(data(listed))
                + "\n\nIs it one of these?"
            )
    if chosen is None:
        busiest = rows[0].get("list", "")
        return Say(
            answers.subscriptions(data(listed)) + "\n\nWhich one should I unsubscribe you from? For example: "
            f"\u201cunsubscribe me from {busiest}\u201d."
        )
    args: dict[str, Any] = {"subscription_id": chosen["id"]}
    if re.search(r"\barchive\b|\bclean (?:up|out)\b|\bdelete (?:the|its|their|old)\b", ctx.said):
        args["archive_existing"] = True
    return Call(
        "email.unsubscribe", args, f"Unsubscribing you from {chosen.get('list')}.", search="unsubscribe newsletter"
    )


@serves("email.subscriptions")
def subscriptions(ctx: Context) -> Action | None:
    if end := answered(ctx, "email.subscriptions", answers.subscriptions):
        return end
    account = account_named(ctx)
    return Call("email.subscriptions", {"account": account} if account else {}, search="newsletter subscriptions")


# -- one thread: archived, marked, starred, trashed -------------------------------------------------

# What the label tool's own description says its labels do ("INBOX to archive, UNREAD to mark read").
_LABEL_CHANGES: tuple[tuple[str, tuple[list[str], list[str]], str], ...] = (
    (r"\bunarchive\b|\bback (?:in|to) (?:the |my )?inbox\b", (["INBOX"], []), "moved back to your inbox"),
    (r"\barchive\b", ([], ["INBOX"]), "archived"),
    (r"\bmark(?:ed)? (?:it |them |this |that )?(?:as )?unread\b", (["UNREAD"], []), "marked unread"),
    (r"\bmark(?:ed)? (?:it |them |this |that |.* )?(?:as )?read\b", ([], ["UNREAD"]), "marked read"),
    (r"\bunstar\b|\bremove the star\b", ([], ["STARRED"]), "unstarred"),
    (r"\bstar\b|\bflag\b", (["STARRED"], []), "starred"),
    (r"\bimportant\b", (["IMPORTANT"], []), "marked important"),
)


def _label_change(ctx: Context) -> tuple[dict[str, list[str]], str] | None:
    said = ctx.reading.said
    for pattern, (add, remove), done in _LABEL_CHANGES:
        if re.search(pattern, said):
            return {k: v for k, v in (("add", add), ("remove", remove)) if v}, done
    label = next((x for x in ctx.reading.links if x.entity.kind == "label" and x.sure), None)
    if label is not None:  # "label it Travel", "move it to Invoices"
        return {"add": [label.entity.key]}, f"labelled {label.entity.key}"
    return None


@serves("modify_labels", "trash_thread")
def thread_write(ctx: Context) -> Action | None:
    trash = ctx.goal.endswith("trash_thread")
    tool = "trash_thread" if trash else "modify_labels"
    done = ctx.last(tool)
    if done is not None:
        if bad := failed(done):
            return bad
        what = (
            "moved to the trash (it is deleted after 30 days)" if trash else (_label_change(ctx) or ({}, "changed"))[1]
        )
        subject = ctx.last("get_thread") or ctx.last("search_threads")
        title = next((str(t.get("subject")) for t in find_items(subject.data)), "") if subject is not None else ""
        return Say(f"\u201c{title or 'The email'}\u201d is {what}. (The demo mailbox is simulated.)")
    thread = _thread_link(ctx, relaxed=True)
    if thread is None or not thread.sure:
        return Say("Which email do you mean? Tell me who sent it or what it is about.")
    change = None if trash else _label_change(ctx)
    if not trash and change is None:
        return Say(f"What should I do with \u201c{thread.entity.label}\u201d: archive it, mark it read, or star it?")
    account = str(thread.entity.data.get("account", "work"))
    if step := _found(ctx, thread):
        return step
    args: dict[str, Any] = {"thread_id": thread.entity.key, **(change[0] if change else {})}
    verb = "Moving it to the trash" if trash else "Changing its labels"
    return Call(tool, args, f"{verb}: \u201c{thread.entity.label}\u201d.", prefer=account, search="email labels")
