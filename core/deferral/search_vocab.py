"""The words people use for what tools call otherwise: a small vocabulary of everyday requests.

A tool says "Send an email", "List the owner's to-do items", "Find files"; a person types
"reply to a mail", "what's on my to-do list", "what's in my Documents folder". BM25 only matches
the words a tool uses, so a request in other words ranks tools by whatever word happens to be
shared ("mail" in ``email.unsubscribe``'s "mailing list"). Each group below is a set of words
that mean the same thing *in requests to a personal assistant*: the first is the word tools
use (``email``, ``file``, ``event``, ``update``), the rest what people say for it. The groups
were written from the built-in tools' and the demo servers' own descriptions and from everyday
English, not from the evaluation queries.

:class:`core.deferral.search.ToolSearchIndex` adds a query word's group to the BM25 query, and
counts a tool that has only a related word as covering that query word at a lower credit
(:data:`RELATED_CREDIT`), so a tool that uses the person's own word still ranks first.
Only whole words: no stemming here, the index's tokenizer stems both sides.
"""

from __future__ import annotations

from functools import cache

RELATED_CREDIT = 0.75
"""How much a related word counts toward covering a query word (its own word counts 1)."""

GROUPS: tuple[tuple[str, ...], ...] = (
    # things
    ("email", "mail", "mails", "emails", "inbox", "e-mail", "gmail", "mailbox"),
    ("file", "document", "documents", "doc", "docs", "folder", "folders", "directory"),
    ("event", "meeting", "meetings", "appointment", "appointments", "calendar", "agenda", "busy"),
    ("task", "tasks", "todo", "to-do", "todos", "chore", "chores", "remind", "reminder"),
    ("people", "contact", "contacts", "person", "address book"),
    ("note", "notes", "notebook", "memo", "memos", "jot"),
    ("memory", "remember", "remembered", "memorise", "memorize"),
    ("subscription", "subscriptions", "newsletter", "newsletters", "mailing"),
    ("unsubscribe", "unsub", "optout", "stop"),
    ("web", "internet", "online", "website"),
    ("notification", "notify", "alert", "push"),
    ("due", "overdue", "late"),
    ("now", "current", "currently", "today", "date", "day"),
    # actions
    ("reply", "respond", "answer"),
    ("update", "change", "move", "reschedule", "edit", "rename", "modify", "shift", "push"),
    ("cancel", "delete", "remove", "drop", "permanently", "forever"),
    ("pause", "suspend", "hold", "stop", "skip"),
    ("resume", "unpause", "restart", "continue", "reactivate", "back"),
    ("call", "phone", "ring", "dial"),
    ("search", "find", "look", "list", "show"),
    ("read", "open", "view"),
    ("label", "star", "starred", "flag", "archive", "tag"),
    ("create", "add", "new", "make", "book", "arrange"),
    ("save", "store", "keep"),
    ("send", "shoot", "forward", "tell", "inform", "write"),
    ("complete", "done", "finish", "finished", "tick", "mark"),
)


@cache
def _related() -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for group in GROUPS:
        for word in group:
            out.setdefault(word, []).extend(w for w in group if w != word and w not in out[word])
    return {w: tuple(r) for w, r in out.items()}


def related(word: str) -> tuple[str, ...]:
    """The words that mean what ``word`` (lower case) means in a request, itself left out."""
    return _related().get(word, ())
