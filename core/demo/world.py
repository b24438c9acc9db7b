"""What the demo model knows of the demo's world: an entity index over the demo's data.

A model reads "the email from Acme Supplies about the overdue invoice" and knows Acme Supplies
is who wrote it, or "pause the plant watering" and knows there is a schedule for it. The demo
model gets that from this index: the people, businesses, mail threads, newsletters, schedules,
events, tasks, notes and files in the demo's database and workspace, each under the names a
person calls it by, and :meth:`World.link` finds which of them a request names. The index
routes a request and says which argument a word fills; ids and facts still come from the tools'
results in the turn (what the index holds may be older than what a tool says now).

It is read from ``demo.sqlite`` (seeded first when the demo model asks, as the demo's built-in tools
would on their first call, so a first question about a contact finds them) and the
demo workspace, afresh for each request (a few hundred rows).
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.demo.text import STOP, stem

_WORD = re.compile(r"[a-z0-9][a-z0-9'-]*")
# Words too common in names to link on their own ("the weekly planning": "weekly" alone is not it).
_WEAK = {
    "weekly",
    "daily",
    "new",
    "your",
    "with",
    "team",
    "notes",
    "review",
    "re",
    "fwd",
    "mail",
    "email",
    "news",
    "alert",
    "alerts",
    "reminder",
    "lunch",
    "dinner",
    "call",
    "book",
    "next",
    "ideas",
    "is",
    "for",
    "on",
    "up",
    "days",
    "day",
    "send",
    "buy",
    "return",
    "session",
    "meeting",
    "appointment",
    "event",
    "schedule",
    "list",
    "every",
    "each",
    "week",
    "weekday",
}


_KIND_LABELS = {"newsletters", "notes", "files", "tasks", "events", "calendar"}
_TITLED = {"thread", "event", "task", "note", "file", "fact"}


# Words that ask rather than name ("what did Tom write", "when is it"): never part of a name's match.
_ASKING = {"am", "was", "were", "been", "has", "have", "had", "will", "what", "when", "where", "who", "whom"}
_ASKING |= {"which", "why", "how", "what's", "when's", "where's", "who's", "how's", "i'm", "there", "here"}


def terms(text: str) -> list[str]:
    """A text's words as the index compares them: lower case, stemmed, stop words out."""
    out = []
    for w in _WORD.findall(text.lower().replace("\u2019", "'")):
        w = w.strip("'-").removesuffix("'s")
        if w in STOP or w in _ASKING or not w:
            continue
        w = stem(w)
        out.append(w[: -len("ation")] if w.endswith("ation") and len(w) > 8 else w)  # confirmation ~ confirm
    return out


@dataclass(frozen=True)
class Entity:
    kind: str  # person, business, thread, sender, label, newsletter, schedule, event, task, note, fact, file, folder
    key: str  # what a tool knows it by (an email, a title, a path, a thread subject)
    label: str  # how to say it
    names: tuple[str, ...]  # what a person may call it
    data: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Link:
    entity: Entity
    score: float  # how much of the request it explains
    words: frozenset[str]  # the request's terms it used
    whole: bool = True  # every strong word of one of its names is in the request
    coverage: float = 1.0  # the share of that name's distinctive weight the request said
    rare: bool = False  # the words it was named by are in hardly any other thing's names ("the invoice")

    @property
    def sure(self) -> bool:
        """Whether the request names it beyond doubt (what a write may target): a whole name."""
        return self.whole


_ALIAS = 0.8  # what a titled thing's other names (a thread's sender) count for against its title
_EXTRA = 1.5  # each distinctive word of the request another of its names explains
_RARE = 3  # a word in at most this many entities' names is distinctive enough to link on alone


class World:
    def __init__(self, entities: Iterable[Entity]):
        self.entities = list(entities)
        self._df: dict[str, int] = {}
        for entity in self.entities:
            for term in {t for name in entity.names for t in terms(name)}:
                self._df[term] = self._df.get(term, 0) + 1

    def _idf(self, term: str) -> float:
        return math.log(1.0 + len(self.entities) / (1 + self._df.get(term, 0)))

    def link(self, text: str, kinds: Iterable[str] | None = None) -> list[Link]:
        """The entities ``text`` names, best first.

        A name links *whole* when every one of its strong words is in the text (a person's first
        name, "the standup" for "Team standup"), or, for a title of three strong words or more,
        by most of them ("the flight confirmation" for "Your flight to Chicago is confirmed").
        It links *in part* when the text has only some of its strong words but each of those is
        distinctive (at most a few entities' names have it: "my lease" for "Lease renewal for
        apartment 4B"); such a link scores by the share of the name's weight it explains, so a
        whole name always ranks above it. The score grows with the words a link explains."""
        said = set(terms(text))
        wanted = set(kinds) if kinds is not None else None
        best: dict[Entity, Link] = {}
        for entity in self.entities:
            if wanted is not None and entity.kind not in wanted:
                continue
            for i, name in enumerate(entity.names):
                words = terms(name)
                strong = [w for w in dict.fromkeys(words) if w not in _WEAK and len(w) > 1]
                hit = [w for w in strong if w in said]
                if not strong or not hit:
                    continue
                mass = sum(self._idf(w) for w in strong)
                coverage = sum(self._idf(w) for w in hit) / mass
                whole = len(hit) == len(strong) or (
                    entity.kind in _TITLED and len(strong) >= 3 and 2 * len(hit) >= len(strong)
                )
                if not whole and any(self._df.get(w, 0) > _RARE for w in hit):
                    continue  # a common word alone ("review", "dinner") names nothing in particular
                used = frozenset(w for w in words if w in said)
                score = len(used) + 0.5 * len(hit) + (1.0 + coverage + len(used) / len(set(words)) if whole else 0.0)
                if not whole:
                    score *= coverage
                if i and entity.kind in _TITLED | {"newsletter"}:
                    score *= _ALIAS  # a thread by its sender's name, not by its subject
                rare = all(self._df.get(w, 0) <= 2 for w in hit)
                link = Link(entity, round(score, 6), used, whole, round(coverage, 6), rare)
                if entity not in best or best[entity].score < link.score:
                    best[entity] = link
        for entity, link in list(best.items()):
            # What its other names explain too ("what did Tom Becker write about the lease": the
            # thread from Tom whose subject is the lease): distinctive words only.
            extra = {
                t
                for name in entity.names
                for t in terms(name)
                if t in said and t not in link.words and self._df.get(t, 0) <= _RARE and t not in _WEAK
            }
            if extra:
                # Two distinctive words across its names ("the Acme invoice email") name it as surely as a whole one.
                sure = link.whole or len({t for t in link.words | extra if self._df.get(t, 0) <= _RARE}) >= 2
                best[entity] = Link(
                    entity,
                    round(link.score + _EXTRA * len(extra), 6),
                    link.words | extra,
                    sure,
                    link.coverage,
                    link.rare,
                )
        return sorted(best.values(), key=lambda link: (-link.score, link.entity.kind, link.entity.key))

    def one(self, text: str, kinds: Iterable[str], *, sure: bool = False) -> Link | None:
        """The single best entity the text names, of the first of ``kinds`` (in order) it names
        any of; None when it names none, or two tie for best. With ``sure``, only a link that
        names it beyond doubt (:attr:`Link.sure`) counts: what a write may target."""
        for kind in kinds:
            found = [link for link in self.link(text, [kind]) if link.sure or not sure]
            if found:
                return None if len(found) > 1 and found[1].score == found[0].score else found[0]
        return None

    def of(self, kind: str) -> list[Entity]:
        return [e for e in self.entities if e.kind == kind]


def _rows(conn: sqlite3.Connection, sql: str) -> list[sqlite3.Row]:
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.Error:
        return []  # a table the demo has not made yet (its servers never ran)


def _person_names(name: str, relationship: str | None, company: str | None) -> tuple[str, ...]:
    first = name.split()[0]
    names = [name, first]
    rel = (relationship or "").lower()
    roles = ("mom", "mother", "dad", "father", "sister", "brother", "landlord", "dentist", "manager", "boss")
    names += [r for r in roles if re.search(rf"\b{r}\b", rel) or (r == "boss" and "manager" in rel)]
    if role_map := {"mom": "mum", "mother": "mom"}.get(rel.split()[0] if rel else ""):
        names.append(role_map)
    if company:
        names.append(company)
    return tuple(dict.fromkeys(names))


def _linkable(names: Iterable[str]) -> tuple[str, ...]:
    """The names a request can name a thing by: not empty, and with a word of their own (a mail
    host's "mail" from an address names nothing)."""
    return tuple(n for n in dict.fromkeys(names) if n and any(w not in _WEAK and len(w) > 1 for w in terms(n)))


def _display(sender: str) -> tuple[str, str]:
    m = re.fullmatch(r"\s*(.*?)\s*<([^>]+)>\s*", sender)
    return (m.group(1), m.group(2).lower()) if m else (sender, sender.lower())


def load_world(
    db_path: str | Path | None = None, workspace: str | Path | None = None, *, seeded: bool = False
) -> World:
    """The entity index of the demo's data as it is now (empty where there is none yet). With
    ``seeded``, the demo's dataset and workspace are seeded first if they are not yet (what the
    demo's built-in tools do on their first call), so a first question about a contact finds them."""
    from core.demo import demo_db_path

    path = Path(db_path) if db_path is not None else demo_db_path()
    if seeded and db_path is None and workspace is None:
        from core.demo.dataset import demo_tool_database, demo_workspace

        demo_tool_database()
        demo_workspace()
    found: list[Entity] = []
    if path.is_file():
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        conn.row_factory = sqlite3.Row
        try:
            found += _from_database(conn)
        finally:
            conn.close()
    root = Path(workspace) if workspace is not None else path.parent / "demo-workspace"
    if root.is_dir():
        for file in sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")):
            rel = file.relative_to(root).as_posix()
            spoken = re.sub(r"[-_]+", " ", file.stem)  # "onboarding-flow" is said "onboarding flow"
            found.append(Entity("file", rel, rel, tuple(dict.fromkeys((file.stem, spoken, file.name)))))
        for folder in sorted(p for p in root.iterdir() if p.is_dir()):
            found.append(Entity("folder", folder.name, folder.name, (folder.name, folder.name.rstrip("s"))))
    return World(found)


def _from_database(conn: sqlite3.Connection) -> list[Entity]:
    found: list[Entity] = []
    emails: dict[str, str] = {}
    for p in _rows(conn, "select * from people"):
        data = dict(p)
        found.append(
            Entity("person", p["name"], p["name"], _person_names(p["name"], p["relationship"], p["company"]), data)
        )
        if p["email"]:
            emails[p["email"].lower()] = p["name"]
        for other in json.loads(p["other_emails"] or "[]"):
            emails[str(other).lower()] = p["name"]
        if p["company"]:
            found.append(Entity("business", p["company"], p["company"], (p["company"],), data))
    for kind, sql in (
        ("schedule", "select * from schedules where status != 'cancelled'"),
        ("event", "select * from calendar_events"),
        ("task", "select * from tasks"),
        ("note", "select * from notes"),
    ):
        found.extend(Entity(kind, r["title"], r["title"], (r["title"],), dict(r)) for r in _rows(conn, sql))
    found.extend(
        Entity("fact", r["fact"], r["fact"], (r["fact"],), dict(r)) for r in _rows(conn, "select * from memory_facts")
    )
    for s in _rows(conn, "select * from email_subscriptions where status = 'subscribed'"):
        sender = s["sender"].split("@")[1].split(".")[0]
        found.append(Entity("newsletter", s["list_name"], s["list_name"], (s["list_name"], sender), dict(s)))
    threads: dict[str, dict[str, Any]] = {}
    for m in _rows(
        conn,
        "select m.*, t.labels from gmail_messages m join gmail_threads t on t.id = m.thread_id order by m.date, m.id",
    ):
        thread = threads.setdefault(
            m["thread_id"],
            {"subject": m["subject"], "account": m["account"], "senders": [], "labels": json.loads(m["labels"])},
        )
        name, address = _display(m["sender"])
        if not address.startswith("sam.rivera@"):
            thread["senders"].append((name, address))
    for tid, t in threads.items():
        names = [t["subject"]]
        for name, address in t["senders"]:
            names += [name, emails.get(address, ""), name.split()[0] if len(name.split()) == 2 else ""]
            org = address.split("@")[1].split(".")[0].replace("-", " ")
            names.append(org)
        if "TRASH" in t["labels"]:
            continue
        found.append(Entity("thread", tid, t["subject"], _linkable(names), {**t, "thread_id": tid}))
        for name, address in t["senders"]:
            found.append(Entity("sender", address, name, (name,), {"account": t["account"], "thread_id": tid}))
    for lb in _rows(conn, "select * from gmail_labels where type = 'user'"):
        if lb["name"].lower() in _KIND_LABELS:
            continue  # "Newsletters": a kind of thing the request names in general words
        parts = lb["name"].split("/")  # "Clients/Globex": the client, and clients
        found.append(Entity("label", lb["name"], lb["name"], tuple(dict.fromkeys([parts[-1], *parts])), dict(lb)))
    calls = _rows(conn, "select recipient, phone_number from calls")
    found.extend(Entity("business", c["recipient"], c["recipient"], (c["recipient"],), dict(c)) for c in calls)
    return found
