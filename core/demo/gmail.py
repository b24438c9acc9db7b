"""A Gmail-like mailbox, simulated, one per account (servers ``gmail_work``, ``gmail_personal``).

Reads: ``search_threads`` (a useful subset of Gmail's query syntax), ``get_thread``,
``list_labels``. Writes: ``send_message``, ``create_draft``, ``send_draft``, ``modify_labels``,
``trash_thread``. A sent message lands in the same mailbox (label ``SENT``), so a later search
finds it; nothing is delivered anywhere.

Query syntax: words and ``"quoted phrases"`` (subject, body, sender, recipients),
``from:`` ``to:`` ``cc:`` ``subject:`` ``label:`` ``in:`` (``inbox``, ``sent``, ``drafts``,
``trash``, ``spam``, ``starred``, ``important``, ``anywhere``), ``is:`` (``unread``, ``read``,
``starred``, ``important``), ``newer_than:`` / ``older_than:`` (``7d``, ``12h``, ``2m``, ``1y``),
``after:`` / ``before:`` (``2026/11/01``), ``has:attachment``; ``-`` negates a term. Terms are
ANDed. Trash and spam are left out unless the query names them or says ``in:anywhere``.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import time
import uuid
from typing import Annotated, Any

from pydantic import Field

from core.demo.db import dumps, iso, loads, parse_time

SYSTEM_LABELS = ("INBOX", "SENT", "DRAFT", "UNREAD", "STARRED", "IMPORTANT", "TRASH", "SPAM")

OWNERS = {
    "work": "Sam Rivera <sam.rivera@northwind.example>",
    "personal": "Sam Rivera <sam.rivera@mail.example>",
}

# (subject, [(sender, recipients, hours ago, body)], labels)
_Thread = tuple[str, list[tuple[str, list[str], float, str]], list[str]]

_SEED: dict[str, tuple[list[str], list[_Thread]]] = {
    "work": (
        ["Invoices", "Clients/Globex", "Travel", "Hiring"],
        [
            (
                "Invoice INV-2291 is 10 days overdue",
                [
                    (
                        "Acme Supplies Billing <billing@acme-supplies.example>",
                        ["sam.rivera@northwind.example"],
                        20,
                        "Hi Sam,\n\nOur records show invoice INV-2291 ($4,180.00, due November 18) is still open. "
                        "If it has been paid, please send the remittance details. Questions? Call accounts "
                        "receivable at +1 555 0100.\n\nThanks,\nLinda Park\nAcme Supplies",
                    )
                ],
                ["INBOX", "UNREAD", "IMPORTANT", "Invoices"],
            ),
            (
                "Q4 planning offsite: agenda draft",
                [
                    (
                        "Priya Natarajan <priya@northwind.example>",
                        ["team@northwind.example"],
                        30,
                        "Team, attached is the first cut of the offsite agenda: roadmap review Tuesday morning, "
                        "hiring plan after lunch, customer panel Wednesday. Comments by Friday please.\n\nPriya",
                    )
                ],
                ["INBOX"],
            ),
            (
                "Contract renewal: Globex",
                [
                    (
                        "Dana Whitfield <dana@globex.example>",
                        ["sam.rivera@northwind.example"],
                        75,
                        "Sam, our contract ends December 31. We'd like to renew for two years if the price holds. "
                        "Can you send the renewal terms?\n\nDana",
                    ),
                    (
                        "Sam Rivera <sam.rivera@northwind.example>",
                        ["dana@globex.example"],
                        70,
                        "Hi Dana, glad to hear it. Two years at the current rate works; I'll have the paperwork "
                        "to you next week.\n\nSam",
                    ),
                    (
                        "Dana Whitfield <dana@globex.example>",
                        ["sam.rivera@northwind.example"],
                        26,
                        "Great. Please include the updated support SLA in the renewal.\n\nDana",
                    ),
                ],
                ["INBOX", "Clients/Globex", "STARRED"],
            ),
            (
                "Your flight to Chicago is confirmed",
                [
                    (
                        "FlyRight <travel@flyright.example>",
                        ["sam.rivera@northwind.example"],
                        96,
                        "Confirmation ZX81QK. Departs Tuesday 7:05 am, seat 14C. Check in opens 24 hours before.",
                    )
                ],
                ["INBOX", "Travel"],
            ),
            (
                "Weekly metrics: signups up 12%",
                [
                    (
                        "Metrics Bot <metrics-bot@northwind.example>",
                        ["sam.rivera@northwind.example"],
                        6,
                        "Signups 1,284 (+12% week over week). Churn 1.9% (-0.3 pt). Support tickets 212.",
                    )
                ],
                ["INBOX", "UNREAD"],
            ),
            (
                "Lunch Thursday?",
                [
                    (
                        "Marco Bellini <marco@northwind.example>",
                        ["sam.rivera@northwind.example"],
                        50,
                        "Want to grab lunch Thursday at the Thai place? 12:30?",
                    )
                ],
                ["INBOX"],
            ),
            (
                "Design review notes",
                [
                    (
                        "Lee Chen <lee@northwind.example>",
                        ["sam.rivera@northwind.example"],
                        140,
                        "Notes from today's design review are in the doc. Main open question: onboarding flow.",
                    ),
                    (
                        "Sam Rivera <sam.rivera@northwind.example>",
                        ["lee@northwind.example"],
                        138,
                        "Thanks Lee. Let's settle the onboarding flow in Monday's sync.",
                    ),
                ],
                ["SENT"],
            ),
            (
                "Security alert: new sign-in",
                [
                    (
                        "Accounts <no-reply@accounts.example>",
                        ["sam.rivera@northwind.example"],
                        3,
                        "A new sign-in to your account from Chrome on Linux. If this was you, no action is needed.",
                    )
                ],
                ["INBOX", "UNREAD"],
            ),
            (
                "Interview feedback: Jordan Ellis",
                [
                    (
                        "Recruiting <recruiting@northwind.example>",
                        ["sam.rivera@northwind.example"],
                        44,
                        "Please submit your feedback for Jordan Ellis (Senior Engineer) by end of day tomorrow.",
                    )
                ],
                ["INBOX", "Hiring", "UNREAD"],
            ),
            (
                "This week in SaaS pricing",
                [
                    (
                        "Pricing Weekly <news@pricingweekly.example>",
                        ["sam.rivera@northwind.example"],
                        200,
                        "Five pricing page experiments that worked in Q3.",
                    )
                ],
                ["TRASH"],
            ),
        ],
    ),
    "personal": (
        ["Receipts", "Bills", "Family", "Newsletters"],
        [
            (
                "Reminder: dental cleaning next Wednesday",
                [
                    (
                        "Bright Smiles Dental <hello@brightsmiles.example>",
                        ["sam.rivera@mail.example"],
                        10,
                        "Your cleaning is booked for Wednesday at 3:30 pm. Reply C to confirm or call +1 555 0199.",
                    )
                ],
                ["INBOX", "UNREAD"],
            ),
            (
                "Your order has shipped",
                [
                    (
                        "ShopMart <orders@shopmart.example>",
                        ["sam.rivera@mail.example"],
                        30,
                        "Order #88-1203 (hiking boots, size 10) has shipped. Arrives Friday.",
                    )
                ],
                ["INBOX", "Receipts"],
            ),
            (
                "Mom's birthday dinner",
                [
                    (
                        "Alex Rivera <alex.rivera@mail.example>",
                        ["sam.rivera@mail.example"],
                        60,
                        "Booked Luigi's for Saturday at 7 for Mom's birthday. Can you pick up the cake?",
                    ),
                    (
                        "Sam Rivera <sam.rivera@mail.example>",
                        ["alex.rivera@mail.example"],
                        58,
                        "Yes, I'll get the cake from Rosa's bakery. Chocolate as usual?",
                    ),
                ],
                ["INBOX", "Family", "STARRED"],
            ),
            (
                "Electricity bill for November",
                [
                    (
                        "City Power <billing@citypower.example>",
                        ["sam.rivera@mail.example"],
                        15,
                        "Your November bill is $86.40, due December 15. Autopay is off for this account.",
                    )
                ],
                ["INBOX", "UNREAD", "Bills"],
            ),
            (
                "Book club: next pick",
                [
                    (
                        "Jen Okafor <jen.okafor@mail.example>",
                        ["bookclub@lists.example"],
                        80,
                        "Next month we're reading 'The Left Hand of Darkness'. Meeting at mine on the 14th.",
                    )
                ],
                ["INBOX"],
            ),
            (
                "Flight deals to Lisbon from $389",
                [
                    (
                        "Fare Alerts <deals@farealerts.example>",
                        ["sam.rivera@mail.example"],
                        100,
                        "Round trips to Lisbon from $389 in January. Book by Sunday.",
                    )
                ],
                ["INBOX", "Newsletters"],
            ),
            (
                "Lease renewal for apartment 4B",
                [
                    (
                        "Harbor Property <leasing@harborproperty.example>",
                        ["sam.rivera@mail.example"],
                        22,
                        "Your lease ends January 31. Please tell us by December 20 whether you will renew; the "
                        "new rent would be $2,150 per month.",
                    )
                ],
                ["INBOX", "UNREAD", "IMPORTANT"],
            ),
            (
                "Weekend hike",
                [
                    (
                        "Chris Doyle <chris.doyle@mail.example>",
                        ["sam.rivera@mail.example"],
                        120,
                        "Up for Mount Tam on Sunday? Leaving 8 am.",
                    ),
                    (
                        "Sam Rivera <sam.rivera@mail.example>",
                        ["chris.doyle@mail.example"],
                        118,
                        "I'm in. I'll bring snacks.",
                    ),
                ],
                ["SENT"],
            ),
        ],
    ),
}


def _id(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:16]


def seed(account: str) -> Any:
    """The seed function for one account (for :func:`core.demo.db.seed_once`)."""

    def run(conn: sqlite3.Connection, now: float) -> None:
        user_labels, threads = _SEED[account]
        for name in SYSTEM_LABELS:
            conn.execute("INSERT OR IGNORE INTO gmail_labels VALUES (?,?,?)", (account, name, "system"))
        for name in user_labels:
            conn.execute("INSERT OR IGNORE INTO gmail_labels VALUES (?,?,?)", (account, name, "user"))
        for t, (subject, messages, labels) in enumerate(threads):
            tid = _id(account, "thread", str(t))
            conn.execute("INSERT INTO gmail_threads VALUES (?,?,?)", (tid, account, dumps(labels)))
            for m, (sender, to, hours, body) in enumerate(messages):
                subj = subject if m == 0 else f"Re: {subject}"
                conn.execute(
                    "INSERT INTO gmail_messages VALUES (?,?,?,?,?,?,?,?,?)",
                    (
                        _id(account, "msg", str(t), str(m)),
                        tid,
                        account,
                        sender,
                        dumps(to),
                        dumps([]),
                        subj,
                        body,
                        now - hours * 3600,
                    ),
                )

    return run


# --- queries -----------------------------------------------------------------------------------

_TERM = re.compile(r'(-?)(?:([a-z_]+):)?("([^"]*)"|\S+)', re.IGNORECASE)
_AGE = re.compile(r"(\d+)([hdmy])")  # fullmatch
_AGE_SECONDS = {"h": 3600, "d": 86400, "m": 30 * 86400, "y": 365 * 86400}
_IN = {
    "inbox": "INBOX",
    "sent": "SENT",
    "drafts": "DRAFT",
    "draft": "DRAFT",
    "trash": "TRASH",
    "spam": "SPAM",
    "starred": "STARRED",
    "important": "IMPORTANT",
    "unread": "UNREAD",
}


def _norm_label(name: str) -> str:
    return re.sub(r"[/\s]+", "-", name.strip().lower())


class Mailbox:
    """One account's mail in the demo database."""

    def __init__(self, conn: sqlite3.Connection, account: str):
        if account not in OWNERS:
            raise KeyError(f"no demo mailbox {account!r}; there are {', '.join(OWNERS)}")
        self.conn = conn
        self.account = account
        self.owner = OWNERS[account]
        self.address = self.owner.split("<")[1].rstrip(">")

    # -- reading --

    def _thread(self, thread_id: str) -> tuple[sqlite3.Row, list[sqlite3.Row]]:
        row = self.conn.execute(
            "SELECT * FROM gmail_threads WHERE id = ? AND account = ?", (thread_id, self.account)
        ).fetchone()
        if row is None:
            raise LookupError(
                f"no thread with id {thread_id!r} in the {self.account} mailbox; search_threads shows ids"
            )
        messages = self.conn.execute(
            "SELECT * FROM gmail_messages WHERE thread_id = ? ORDER BY date, id", (thread_id,)
        ).fetchall()
        return row, messages

    def _all(self) -> list[tuple[sqlite3.Row, list[sqlite3.Row]]]:
        threads = self.conn.execute("SELECT * FROM gmail_threads WHERE account = ?", (self.account,)).fetchall()
        msgs: dict[str, list[sqlite3.Row]] = {}
        for m in self.conn.execute("SELECT * FROM gmail_messages WHERE account = ? ORDER BY date, id", (self.account,)):
            msgs.setdefault(m["thread_id"], []).append(m)
        return [(t, msgs.get(t["id"], [])) for t in threads if msgs.get(t["id"])]

    def _labels(self) -> dict[str, str]:
        rows = self.conn.execute("SELECT name FROM gmail_labels WHERE account = ?", (self.account,)).fetchall()
        return {_norm_label(r["name"]): r["name"] for r in rows}

    def _summary(self, thread: sqlite3.Row, messages: list[sqlite3.Row]) -> dict[str, Any]:
        last = messages[-1]
        labels = loads(thread["labels"])
        return {
            "thread_id": thread["id"],
            "from": last["sender"],
            "subject": messages[0]["subject"],
            "date": iso(last["date"]),
            "snippet": " ".join(last["body"].split())[:120],
            "labels": labels,
            "unread": "UNREAD" in labels,
            "messages": len(messages),
        }

    def search_threads(self, query: str, max_results: int = 10) -> dict[str, Any]:
        now = time.time()
        tests: list[tuple[bool, Any]] = []
        include_hidden = False
        for m in _TERM.finditer(query):
            negate, op, raw, quoted = m.group(1) == "-", (m.group(2) or "").lower(), m.group(3), m.group(4)
            value = (quoted if quoted is not None else raw).strip()
            if op in ("in", "label") and _norm_label(value) in ("trash", "spam", "anywhere"):
                include_hidden = True
            tests.append((negate, self._term(op, value, now)))
        found = []
        for thread, messages in self._all():
            labels = loads(thread["labels"])
            if not include_hidden and ({"TRASH", "SPAM"} & set(labels)):
                continue
            if all(test(thread, labels, messages) != negate for negate, test in tests):
                found.append(self._summary(thread, messages))
        found.sort(key=lambda s: (s["date"], s["thread_id"]), reverse=True)
        return {"query": query, "threads": found[:max_results], "total": len(found)}

    def _term(self, op: str, value: str, now: float) -> Any:
        v = value.lower()

        def text_of(ms: list[sqlite3.Row], *fields: str) -> str:
            return "\n".join(str(m[f]) for m in ms for f in fields).lower()

        if op == "from":
            return lambda t, labels, ms: v in text_of(ms, "sender")
        if op in ("to", "cc"):
            return lambda t, labels, ms: v in text_of(ms, "recipients" if op == "to" else "cc")
        if op == "subject":
            return lambda t, labels, ms: v in text_of(ms, "subject")
        if op in ("label", "in", "is"):
            wanted = _IN.get(v) if op != "label" else None
            norm = _norm_label(value)
            if op == "in" and v == "anywhere":
                return lambda t, labels, ms: True
            if op == "is" and v == "read":
                return lambda t, labels, ms: "UNREAD" not in labels
            return lambda t, labels, ms: (wanted in labels) if wanted else norm in {_norm_label(x) for x in labels}
        if op in ("newer_than", "older_than"):
            age = _AGE.fullmatch(v)
            if not age:
                raise ValueError(f"{op}:{value}: use a number and d, h, m or y, e.g. {op}:7d")
            cutoff = now - int(age.group(1)) * _AGE_SECONDS[age.group(2)]
            if op == "newer_than":
                return lambda t, labels, ms: ms[-1]["date"] >= cutoff
            return lambda t, labels, ms: ms[-1]["date"] < cutoff
        if op in ("after", "before"):
            try:
                when = parse_time(value)
            except ValueError:
                raise ValueError(f"{op}:{value}: use a date like 2026/11/01") from None
            if op == "after":
                return lambda t, labels, ms: ms[-1]["date"] >= when
            return lambda t, labels, ms: ms[-1]["date"] < when
        if op == "has":
            return lambda t, labels, ms: False  # the demo mailbox has no attachments
        needle = f"{op}:{v}" if op else v
        return lambda t, labels, ms: needle in text_of(ms, "subject", "body", "sender", "recipients")

    def get_thread(self, thread_id: str) -> dict[str, Any]:
        thread, messages = self._thread(thread_id)
        return {
            "thread_id": thread_id,
            "subject": messages[0]["subject"] if messages else "",
            "labels": loads(thread["labels"]),
            "messages": [
                {
                    "message_id": m["id"],
                    "from": m["sender"],
                    "to": loads(m["recipients"]),
                    "cc": loads(m["cc"]),
                    "date": iso(m["date"]),
                    "subject": m["subject"],
                    "body": m["body"],
                }
                for m in messages
            ],
        }

    def list_labels(self) -> dict[str, Any]:
        threads = self._all()
        out = []
        for row in self.conn.execute(
            "SELECT name, type FROM gmail_labels WHERE account = ? ORDER BY type DESC, name", (self.account,)
        ):
            name = row["name"]
            having = [loads(t["labels"]) for t, _ in threads if name in loads(t["labels"])]
            if name not in ("TRASH", "SPAM"):
                having = [labels for labels in having if not {"TRASH", "SPAM"} & set(labels)]
            out.append(
                {
                    "name": name,
                    "type": row["type"],
                    "threads_total": len(having),
                    "threads_unread": sum("UNREAD" in labels for labels in having),
                }
            )
        return {"labels": out}

    # -- writing --

    def _set_labels(self, thread_id: str, labels: list[str]) -> None:
        self.conn.execute("UPDATE gmail_threads SET labels = ? WHERE id = ?", (dumps(labels), thread_id))

    def _insert_message(self, thread_id: str, to: list[str], cc: list[str], subject: str, body: str) -> str:
        mid = uuid.uuid4().hex[:16]
        self.conn.execute(
            "INSERT INTO gmail_messages VALUES (?,?,?,?,?,?,?,?,?)",
            (mid, thread_id, self.account, self.owner, dumps(to), dumps(cc), subject, body, time.time()),
        )
        return mid

    @staticmethod
    def _check_addresses(to: list[str], cc: list[str]) -> tuple[list[str], list[str]]:
        """``to`` and ``cc`` in canonical form: the one the hardline rules matched."""
        from core.pipeline.canonical import CanonicalError, canonical_email

        if not to:
            raise ValueError("'to' needs at least one address")
        clean: list[str] = []
        bad: list[str] = []
        for address in [*to, *cc]:
            try:
                clean.append(canonical_email(address))
            except CanonicalError:
                bad.append(address)
                continue
            if "." not in clean[-1].rpartition("@")[2]:
                bad.append(address)
        if bad:
            raise ValueError(f"not an email address: {', '.join(bad)}")
        return clean[: len(to)], clean[len(to) :]

    def send_message(
        self, to: list[str], subject: str, body: str, cc: list[str] | None = None, reply_to_thread_id: str | None = None
    ) -> dict[str, Any]:
        to, cc = self._check_addresses(to, cc or [])
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            if reply_to_thread_id:
                thread, _ = self._thread(reply_to_thread_id)
                tid = thread["id"]
                labels = loads(thread["labels"])
                if "SENT" not in labels:
                    labels.append("SENT")
                self._set_labels(tid, labels)
                if not subject.lower().startswith("re:"):
                    subject = f"Re: {subject}"
            else:
                tid = uuid.uuid4().hex[:16]
                labels = ["SENT"]
                self.conn.execute("INSERT INTO gmail_threads VALUES (?,?,?)", (tid, self.account, dumps(labels)))
            mid = self._insert_message(tid, to, cc, subject, body)
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return {
            "message_id": mid,
            "thread_id": tid,
            "labels": labels,
            "status": "sent",
            "note": "deferchat demo: delivered to the simulated mailbox only; no email left this machine.",
        }

    def create_draft(self, to: list[str], subject: str, body: str) -> dict[str, Any]:
        to, _ = self._check_addresses(to, [])
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            tid = uuid.uuid4().hex[:16]
            self.conn.execute("INSERT INTO gmail_threads VALUES (?,?,?)", (tid, self.account, dumps(["DRAFT"])))
            mid = self._insert_message(tid, to, [], subject, body)
            did = f"r{uuid.uuid4().hex[:15]}"
            self.conn.execute("INSERT INTO gmail_drafts VALUES (?,?,?,?)", (did, self.account, tid, mid))
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return {"draft_id": did, "thread_id": tid, "message_id": mid, "status": "draft saved"}

    def send_draft(self, draft_id: str) -> dict[str, Any]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            row = self.conn.execute(
                "SELECT * FROM gmail_drafts WHERE id = ? AND account = ?", (draft_id, self.account)
            ).fetchone()
            if row is None:
                raise LookupError(f"no draft with id {draft_id!r} in the {self.account} mailbox")
            thread, _ = self._thread(row["thread_id"])
            labels = [x for x in loads(thread["labels"]) if x != "DRAFT"] + ["SENT"]
            self._set_labels(row["thread_id"], labels)
            self.conn.execute("UPDATE gmail_messages SET date = ? WHERE id = ?", (time.time(), row["message_id"]))
            self.conn.execute("DELETE FROM gmail_drafts WHERE id = ?", (draft_id,))
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return {
            "message_id": row["message_id"],
            "thread_id": row["thread_id"],
            "labels": labels,
            "status": "sent",
            "note": "deferchat demo: delivered to the simulated mailbox only; no email left this machine.",
        }

    def modify_labels(
        self, thread_id: str, add: list[str] | None = None, remove: list[str] | None = None
    ) -> dict[str, Any]:
        known = self._labels()
        unknown = [x for x in [*(add or []), *(remove or [])] if _norm_label(x) not in known]
        if unknown:
            raise ValueError(f"unknown label(s) {', '.join(map(repr, unknown))}; labels: {', '.join(known.values())}")
        thread, _ = self._thread(thread_id)
        labels = loads(thread["labels"])
        for x in remove or []:
            name = known[_norm_label(x)]
            labels = [y for y in labels if y != name]
        for x in add or []:
            name = known[_norm_label(x)]
            if name not in labels:
                labels.append(name)
        self._set_labels(thread_id, labels)
        return {"thread_id": thread_id, "labels": labels}

    def trash_thread(self, thread_id: str) -> dict[str, Any]:
        thread, _ = self._thread(thread_id)
        labels = [x for x in loads(thread["labels"]) if x != "INBOX"]
        if "TRASH" not in labels:
            labels.append("TRASH")
        self._set_labels(thread_id, labels)
        return {"thread_id": thread_id, "labels": labels, "status": "moved to trash"}


def tool_functions(box: Mailbox) -> dict[str, Any]:
    """The implementations, their signatures mirroring the roster's schemas."""

    def search_threads(query: str, max_results: Annotated[int, Field(ge=1, le=50)] = 10) -> dict[str, Any]:
        return box.search_threads(query, max_results)

    def get_thread(thread_id: str) -> dict[str, Any]:
        return box.get_thread(thread_id)

    def list_labels() -> dict[str, Any]:
        return box.list_labels()

    def send_message(
        to: list[str], subject: str, body: str, cc: list[str] | None = None, reply_to_thread_id: str | None = None
    ) -> dict[str, Any]:
        return box.send_message(to, subject, body, cc, reply_to_thread_id)

    def create_draft(to: list[str], subject: str, body: str) -> dict[str, Any]:
        return box.create_draft(to, subject, body)

    def send_draft(draft_id: str) -> dict[str, Any]:
        return box.send_draft(draft_id)

    def modify_labels(thread_id: str, add: list[str] | None = None, remove: list[str] | None = None) -> dict[str, Any]:
        return box.modify_labels(thread_id, add, remove)

    def trash_thread(thread_id: str) -> dict[str, Any]:
        return box.trash_thread(thread_id)

    return {
        f.__name__: f
        for f in (
            search_threads,
            get_thread,
            list_labels,
            send_message,
            create_draft,
            send_draft,
            modify_labels,
            trash_thread,
        )
    }
