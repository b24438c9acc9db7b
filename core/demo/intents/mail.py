"""Mail: an email to a person or an address, the inbox and a search of it, one thread read,
the newsletters and leaving one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from core.demo import answers
from core.demo.intents.base import (
    Action,
    Call,
    Context,
    Done,
    Say,
    best_row,
    intent,
    significant,
)
from core.demo.text import EMAIL, STOP, capitalise, find_items, normalise, sentence

_MAIL = r"\b(e-?mails?|mails?|messages?|line)\b"
_ACCOUNT = re.compile(
    r"\b(?:from|on|with|using|via|in|to) (?:my |the )?(work|personal)\b|"
    r"\b(work|personal|office|private) (?:e-?mail|mail|account|address|gmail|inbox)\b"
)
_WORKISH = re.compile(r"work|colleague|manager|boss|team|client|co-?worker|report", re.I)


def account_named(said: str) -> str:
    m = _ACCOUNT.search(said)
    if not m:
        return ""
    name = m.group(1) or m.group(2)
    return {"office": "work", "private": "personal"}.get(name, name)


@intent(
    "mail.send",
    rf"\b(send|write|draft|compose|shoot|drop)\b.*{_MAIL}|\bsend\b.*\bnote to\b|"
    r"^(?:please )?(?:can you |could you )?"
    r"(?:e-?mail|mail|message)\s+\S+|^(?:please )?(?:can you |could you )?(?:tell|let) (?!me\b|us\b)\w+ "
    r"(?:know )?that\b",
    unless=r"\bunsubscribe\b|\b(?:text|sms)\b",
)
def mail_send(ctx: Context) -> Action | None:
    letter = Letter.read(ctx.text)
    draft = bool(
        re.search(
            r"\b(?:draft|save) (?:an? |the )?(?:e-?mail|mail|message|reply|note)\b|\bas a draft\b|"
            r"^(?:please )?(?:can you )?draft\b",
            ctx.said,
        )
    )
    tool = "create_draft" if draft else "send_message"
    sent = ctx.last(tool)
    if sent is not None:
        if not sent.ok:
            return Say(answers.failure(sent.name, sent.text))
        who = ", ".join(sent.args.get("to") or [])
        what = "Saved a draft of" if draft else "Sent"
        note = " (The demo mailbox is simulated: nothing left this machine.)" if not draft else ""
        return Say(
            f"{what} \u201c{sent.args.get('subject')}\u201d to {who} from your "
            f"{'work' if '.gmail_work.' in sent.name else 'personal'} mail.{note}"
        )
    to, greet, account, step = recipients(ctx, letter)
    if step is not None:
        return step
    if not (letter.subject or letter.body or letter.about):
        return Say(
            f"What should the email to {greet or ', '.join(to)} say? For example: "
            f"\u201cemail {greet or to[0]} saying the draft is ready\u201d."
        )
    account = account_named(ctx.said) or account or "personal"
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
    """(addresses, the name to greet, the account the contact suggests, or the lookup to run first)."""
    if letter.to:
        local = letter.to[0].split("@")[0]
        return letter.to, re.split(r"[._+-]", local)[0].capitalize(), "", None
    if not letter.name:
        return [], "", "", Say("Who should I send it to? Give me a name from your contacts or an email address.")
    looked = ctx.last("people.search")
    if looked is None:
        return (
            [],
            "",
            "",
            Call("people.search", {"query": letter.name}, f"Looking up {letter.name.title()} in your contacts."),
        )
    rows = find_items(looked.data) if looked.ok else []
    people = [p for p in rows if addresses(p, "email")]
    if not people:
        return (
            [],
            "",
            "",
            Say(
                f"I couldn't find an email address for {letter.name.title()} in your contacts. "
                "Tell me the address and I'll send it."
            ),
        )
    person = people[0]
    account = (
        "work" if _WORKISH.search(f"{person.get('relationship') or ''} {person.get('company') or ''}") else "personal"
    )
    return [addresses(person, "email")[0]], str(person.get("name", "")).split()[0], account, None


def addresses(person: dict[str, Any], kind: str) -> list[str]:
    """A contact's emails or phones: a search row has one (``email``), a full record a list (``emails``)."""
    many = person.get(kind + "s")
    return [str(x) for x in many if x] if isinstance(many, list) else ([str(person[kind])] if person.get(kind) else [])


_NOT_A_NAME = set(
    [
        "a",
        "an",
        "the",
        "me",
        "my",
        "him",
        "her",
        "them",
        "us",
        "it",
        "know",
        "say",
        "saying",
        "that",
        "about",
        "and",
        "with",
        "subject",
        "everyone",
        "to",
        "for",
        "from",
        "on",
        "in",
        "at",
        "this",
        "new",
        "quick",
        "short",
        "email",
        "e-mail",
        "mail",
        "message",
        "note",
        "line",
        "draft",
        "reply",
    ]
)
_PRONOUNS = (
    (r"\bhe's\b|\bshe's\b|\bthey're\b", "you're"),
    (r"\bhe is\b|\bshe is\b|\bthey are\b", "you are"),
    (r"\bhe was\b|\bshe was\b", "you were"),
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
    name: str  # a person to look up when no address is given
    subject: str
    body: str
    about: str

    @classmethod
    def read(cls, text: str) -> Letter:
        plain = text.strip()
        cc_part = re.search(
            r"\b(?:and\s+)?cc(?:'?ing)?\s*:?\s*((?:[\w.+-]+@[\w-]+(?:\.[\w-]+)+[\s,and]*)+)", plain, re.I
        )
        cc = EMAIL.findall(cc_part.group(1)) if cc_part else []
        if cc_part:
            plain = (plain[: cc_part.start()] + plain[cc_part.end() :]).strip()
        to = EMAIL.findall(plain)
        subject = ""
        if m := re.search(
            r"\b(?:with )?(?:the )?(?:subject(?: line)?|titled|entitled)\s*(?:is\s*|:\s*)?"
            r"[\"']?(?P<s>[^\"'.;]+?)[\"']?(?=\s+(?:and|saying|with|body)\b|[.;,]|$)",
            plain,
            re.I,
        ):
            subject = m.group("s").strip()
            plain = (plain[: m.start()] + plain[m.end() :]).strip()
        head = plain  # where the recipient is named
        body = ""
        for pattern, ask in (
            (
                r"\b(?:saying|that says|to say|and say|and tell (?:him|her|them)|telling (?:him|her|them)"
                r"|with the message|body\s*:|message\s*:)\s*(?P<b>.+)$",
                False,
            ),
            (r"\b(?:tell|let)\s+\S+(?:\s+know)?\s+(?:that\s+)?(?P<b>.+)$", False),
            (r"\bask\s+\S+\s+(?P<b>(?:if|whether|when|what|where|how|who|to)\b.+)$", True),
            (r"\b(?:e-?mail|mail|message|write|note)\s+(?:to\s+)?\S+\s+that\s+(?P<b>.+)$", False),
        ):
            if m := re.search(pattern, plain, re.I):
                body = second_person(m.group("b").strip())
                if ask:
                    question = re.sub(
                        r"^(?:if|whether)\s+(?:you\s+(?:are|were|can|could|will|would|have|has)\s+)?",
                        "",
                        body,
                        flags=re.I,
                    ).rstrip(" .?")
                    subject = subject or question[:1].upper() + question[1:] + "?"
                    body = "Could you let me know " + body.rstrip(" .?") + "?"
                plain = plain[: m.start()].strip()
                break
        about = ""
        if m := re.search(r"\babout\s+(?P<t>.+?)(?:[.?!]|$)", plain, re.I):
            about = m.group("t").strip()
            plain = plain[: m.start()].strip()
        name = ""
        tokens = re.findall(r"[A-Za-z][\w'-]*", head) if not to else []
        for before, word, after in zip(tokens, tokens[1:], [*tokens[2:], ""], strict=False):
            first = word.removesuffix("'s")
            if (
                re.fullmatch(r"to|e-?mail|mail|message|tell|ask|let|write", before, re.I)
                and first.lower() not in _NOT_A_NAME
                and first.lower() not in STOP
            ):
                surname = after[:1].isupper() and after.lower() not in _NOT_A_NAME
                name = first + (f" {after}" if surname else "")
                break
        return cls(to=to, cc=cc, name=name, subject=subject, body=body, about=about)

    def subject_line(self) -> str:
        if self.subject or self.about:
            return capitalise(self.subject or self.about)
        first = re.split(r"(?<=[.!?])\s", self.body.strip())[0]
        return capitalise(" ".join(first.split()[:8]).rstrip(" .,!?;:")) or "Hello"

    def compose(self, greet: str) -> str:
        said = sentence(self.body) if self.body else f"I wanted to get in touch about {self.about}."
        return f"Hi {greet or 'there'},\n\n{said}\n\nBest regards"


_UNSUB = (
    r"\bunsubscribe\b|\bopt out\b|\bstop (?:getting|receiving)\b|\bget me off\b|"
    r"\bno more\b.*\b(newsletters?|emails)\b"
)
_LIST_NOISE = {
    "unsubscribe",
    "newsletter",
    "subscription",
    "list",
    "mail",
    "email",
    "opt",
    "stop",
    "get",
    "getting",
    "receiving",
    "off",
    "more",
    "please",
    "mailing",
    "weekly",
    "daily",
    "thank",
    "thanks",
    "archive",
    "old",
    "one",
    "messages",
    "them",
    "those",
    "want",
    "don",
    "anymore",
    "any",
    "also",
}


@intent("mail.unsubscribe", _UNSUB)
def unsubscribe(ctx: Context) -> Action | None:
    done = ctx.last("email.unsubscribe")
    if done is not None:
        if not done.ok:
            return Say(answers.failure(done.name, done.text))
        data = done.data if isinstance(done.data, dict) else {}
        archived = f" I archived its {data['archived_messages']} messages too." if data.get("archived_messages") else ""
        return Say(
            f"You're unsubscribed from **{data.get('list')}** ({data.get('account')} mail).{archived} "
            "(The demo's mail is simulated: the list is marked unsubscribed here, no request was sent.)"
        )
    listed = ctx.last("email.subscriptions")
    if listed is None:
        return Call(
            "email.subscriptions", {}, "Let me see which newsletters you get.", search="newsletter subscriptions"
        )
    if not listed.ok:
        return Say(answers.failure(listed.name, listed.text))
    rows = find_items(listed.data)
    if not rows:
        return Say("You are not subscribed to any newsletters.")
    link = ctx.world.one(ctx.text, ["newsletter"])
    chosen = next((r for r in rows if link is not None and r.get("list") == link.entity.key), None)
    if chosen is None and link is None:
        other = ctx.world.one(ctx.text, ["sender", "thread", "business", "person"])
        if other is not None:  # a sender the owner named, who sends no newsletter
            where = (
                f" (it writes to your {other.entity.data['account']} mail)" if other.entity.data.get("account") else ""
            )
            return Say(
                f"{other.entity.label} isn't one of your newsletters{where}, so there is no list to leave. "
                + answers.subscriptions(listed.data)
                + "\n\nIs it one of these?"
            )
    if chosen is None:
        busiest = rows[0].get("list", "")
        return Say(
            answers.subscriptions(listed.data) + "\n\nWhich one should I unsubscribe you from? For example: "
            f"\u201cunsubscribe me from {busiest}\u201d."
        )
    args: dict[str, Any] = {"subscription_id": chosen["id"]}
    if re.search(r"\barchive\b|\bclean (?:up|out)\b|\bdelete (?:the|its|their|old)\b", ctx.said):
        args["archive_existing"] = True
    return Call(
        "email.unsubscribe", args, f"Unsubscribing you from {chosen.get('list')}.", search="unsubscribe newsletter"
    )


@intent("mail.subscriptions", r"\b(newsletters?|subscriptions?|mailing lists?)\b")
def subscriptions(ctx: Context) -> Action | None:
    listed = ctx.last("email.subscriptions")
    if listed is None:
        account = account_named(ctx.said)
        return Call("email.subscriptions", {"account": account} if account else {}, search="newsletter subscriptions")
    return Say(answers.subscriptions(listed.data) if listed.ok else answers.failure(listed.name, listed.text))


_MAIL_NOISE = {
    "inbox",
    "mail",
    "email",
    "e-mail",
    "emails",
    "mails",
    "messages",
    "message",
    "show",
    "list",
    "check",
    "read",
    "open",
    "latest",
    "recent",
    "new",
    "unread",
    "search",
    "find",
    "look",
    "any",
    "what",
    "have",
    "got",
    "there",
    "work",
    "personal",
    "box",
    "account",
    "today",
    "starred",
    "important",
    "sent",
    "last",
    "did",
    "gmail",
    "thread",
    "threads",
    "mailbox",
}


@intent(
    "mail.read",
    r"\b(inbox|e-?mails?|mail|messages|mailbox|gmail|bills?|invoices?|receipts?|shipped)\b",
    unless=r"\b(send|write|compose|draft|reply|forward)\b|\bunsubscribe\b|\bnewsletters?\b|\bsubscriptions?\b|"
    r"'s e-?mail|\be-?mail address",
)
def mail_read(ctx: Context) -> Action | None:
    said = ctx.said
    named = account_named(said) or next((a for a in ("work", "personal") if re.search(rf"\b{a}\b", said)), "")
    accounts = [named] if named else ["work", "personal"]
    query = mail_query(ctx.text)
    opening = bool(re.search(r"\b(read|open)\b", said))
    link = ctx.world.one(ctx.text, ["thread"])
    if link is not None:  # one thread the owner named: search its mailbox for it, then open it
        from core.demo.intents.targets import _thread_query

        accounts = [str(link.entity.data.get("account", "work"))]
        query = _thread_query(link)
        opening = opening or bool(
            re.search(r"\b(say|says|said|what'?s in|details|tell me|about|when|how much)\b", said)
        )
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
    failed = [d for d in found if not d.ok]
    if failed:
        return Say(answers.failure(failed[0].name, failed[0].text))
    if opening:
        thread = ctx.last("get_thread")
        hits = [(d, t) for d in found for t in find_items(d.data)]
        if thread is None and hits:
            wanted = significant(query, _MAIL_NOISE)
            linked = [t for _, t in hits if link is not None and t.get("thread_id") == link.entity.key]
            best = linked[0] if linked else best_row([t for _, t in hits], wanted, ("subject", "snippet", "from"))
            if best is None:
                if len(hits) > 1:
                    parts = [
                        answers.threads(d.data if isinstance(d.data, dict) else {}, mailbox(d.name)) for d in found
                    ]
                    return Say("\n\n".join(parts) + "\n\nWhich one should I open?")
                best = hits[0][1]
            d, t = next(h for h in hits if h[1] is best)
            return Call(
                "get_thread",
                {"thread_id": t.get("thread_id")},
                "Opening the latest match.",
                prefer=d.name.split(".")[1] if d.name.count(".") >= 2 else "",
                search="read email thread",
            )
        if thread is not None:
            return Say(read_thread(thread))
    parts = [answers.threads(d.data if isinstance(d.data, dict) else {}, mailbox(d.name)) for d in found]
    return Say("\n\n".join(parts))


def mailbox(name: str) -> str:
    return "work" if "work" in name else "personal" if "personal" in name else ""


def mail_query(text: str) -> str:
    said = normalise(text)
    terms: list[str] = []
    if (m := re.search(r"\bfrom\s+([\w.@+-]+)", said)) and m.group(1) not in ("my", "the", "work", "personal"):
        terms.append(f"from:{m.group(1)}")
    if re.search(r"\b(unread|new)\b", said):
        terms.append("is:unread")
    if re.search(r"\bstarred\b", said):
        terms.append("is:starred")
    if re.search(r"\bsent\b", said):
        terms.append("in:sent")
    if m := re.search(r"\b(?:about|for|mentioning|regarding|re|on)\s+(.+?)(?:[.?!]|$)", said):
        kept = [w for w in re.findall(r"[\w-]+", m.group(1)) if w not in STOP and w not in _MAIL_NOISE]
        terms += kept[:3]
    if not terms and (topic := re.search(r"\b(bill|invoice|receipt|order|flight)s?\b", said)):
        terms.append(topic.group(1))  # what the mail is, when no sender or subject is named
    if not terms or re.search(r"\binbox\b", said):
        terms.insert(0, "in:inbox")
    return " ".join(dict.fromkeys(terms))


def read_thread(thread: Done) -> str:
    data = thread.data if isinstance(thread.data, dict) else {}
    messages = data.get("messages") or []
    if not thread.ok or not messages:
        return answers.failure(thread.name, thread.text)
    last = messages[-1]
    body = "\n".join(f"> {line}" if line else ">" for line in str(last.get("body", "")).splitlines())
    return f"**{data.get('subject')}**, from {last.get('from')} ({last.get('date')}):\n\n{body}"
