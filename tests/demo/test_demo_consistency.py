"""The demo's data agrees with itself: one name per person and per business across the contacts,
both mailboxes, the calendar, the call log and what the demo remembers, linked by email address
and phone number; a dataset change reseeds a demo file made by an older version."""

from __future__ import annotations

import re
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

from core.demo.dataset import open_demo_dataset
from core.demo.db import DATASET_VERSION, connect
from core.demo.gmail import OWNERS
from core.demo.servers import implementations
from core.pipeline.canonical import canonical_phone

OWNER = "Sam Rivera"  # the mailboxes' owner: not a contact of their own


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> sqlite3.Connection:
    path = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    conn = connect(path)
    for server in ("gmail_work", "gmail_personal", "bland_read"):
        implementations(server, conn, call_seconds=0)
    open_demo_dataset(path).close()
    return conn


def _named(text: str) -> tuple[str, str]:
    """("Name", "address") of ``Name <address>``."""
    m = re.fullmatch(r"\s*(.*?)\s*<([^>]+)>\s*", text)
    return (m.group(1), m.group(2).lower()) if m else ("", text.strip().lower())


def mentions(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    """(where, name, email or phone) for every place the data names someone with an address."""
    import json

    out = []
    for p in conn.execute("select * from people"):
        for email in [p["email"], *json.loads(p["other_emails"] or "[]")]:
            out += [("contacts", p["name"], email.lower()), ("contacts", p["company"] or p["name"], email.lower())]
        for phone in [p["phone"], *json.loads(p["other_phones"] or "[]")]:
            out += [("contacts", p["name"], phone), ("contacts", p["company"] or p["name"], phone)]
    for m in conn.execute("select sender, recipients, body from gmail_messages"):
        name, address = _named(m["sender"])
        out.append(("mail", name, address))
        for number in re.findall(r"\+\d[\d ]{8,}\d", m["body"]):
            out.append(("mail body", name, canonical_phone(number)))
    for c in conn.execute("select recipient, phone_number from calls"):
        out.append(("calls", c["recipient"], c["phone_number"]))
    return out


def test_one_name_per_email_address_and_phone_number(demo) -> None:
    names: dict[str, set[str]] = defaultdict(set)
    contact_names: dict[str, set[str]] = defaultdict(set)
    for where, name, address in mentions(demo):
        if where == "contacts":
            contact_names[address].add(name)
        else:
            names[address].add(name)
    for address, said in names.items():
        known = contact_names.get(address)
        if known:  # a contact's address: mail and calls call it by the contact's name or company
            assert said <= known, (address, said, known)
        elif not address.startswith("+"):
            assert len(said) == 1, (address, said)


def test_one_full_name_per_first_name(demo) -> None:
    """Marco is Bianchi everywhere, Priya Raman: a first name the data uses for two surnames is
    two people only when both are contacts (or one is the mailboxes' owner)."""
    full: dict[str, set[str]] = defaultdict(set)
    people = {p["name"] for p in demo.execute("select name from people")}
    texts = [r["sender"] for r in demo.execute("select sender from gmail_messages")]
    texts += [r["body"] for r in demo.execute("select body from gmail_messages")]
    texts += [r["fact"] for r in demo.execute("select fact from memory_facts")]
    texts += [r["title"] for r in demo.execute("select title from calendar_events")]
    for text in texts:
        for first, last in re.findall(r"\b([A-Z][a-z]+) ([A-Z][a-z]+)\b", text):
            full[first].add(f"{first} {last}")
    for first, names in full.items():
        if any(p.startswith(first + " ") for p in people):  # a contact's first name: no other surname
            assert names <= people | {OWNER}, (first, names)


def test_businesses_have_one_name(demo) -> None:
    """A business a contact works at is called by that name wherever its domain or number appears
    (the owner's own employer aside: its people and departments write from its domain)."""
    employer = {_named(o)[1].split("@")[1] for o in OWNERS.values()}
    companies = {
        p["email"].split("@")[1]: p["company"]
        for p in demo.execute("select email, company from people")
        if p["company"] and p["email"].split("@")[1] not in employer
    }
    for m in demo.execute("select sender from gmail_messages"):
        name, address = _named(m["sender"])
        company = companies.get(address.split("@")[1])
        if company and name not in {p["name"] for p in demo.execute("select name from people")}:
            assert company in name, (m["sender"], company)
    for fact in demo.execute("select fact from memory_facts"):
        for company in set(companies.values()):
            for word in company.split():
                if len(word) > 4 and word in fact["fact"]:
                    assert company in fact["fact"], (fact["fact"], company)


def test_every_attendee_and_person_named_in_a_title_is_a_contact(demo) -> None:
    import json

    people = list(demo.execute("select name, email from people"))
    emails = {p["email"] for p in people}
    firsts = {p["name"].split()[0] for p in people}
    for e in demo.execute("select title, attendees from calendar_events"):
        assert set(json.loads(e["attendees"])) <= emails, e["title"]
        for first in re.findall(r"\bwith ([A-Z][a-z]+)", e["title"]):
            assert first in firsts, e["title"]


def test_the_owner_is_the_mailboxes_owner(demo) -> None:
    assert {_named(o)[0] for o in OWNERS.values()} == {OWNER}
    assert not list(demo.execute("select 1 from people where name = ?", (OWNER,)))


def test_a_file_seeded_by_an_older_dataset_is_seeded_again(tmp_path: Path) -> None:
    path = tmp_path / "demo.sqlite"
    conn = connect(path)
    implementations("gmail_work", conn, call_seconds=0)
    db = open_demo_dataset(path)
    # as version 1 left it: Priya under another surname, a contact renamed, and a row of the owner's
    conn.execute(
        "update gmail_messages set sender = 'Priya Natarajan <priya@northwind.example>' where sender like 'Priya%'"
    )
    conn.execute("update people set company = 'Becker Property' where name = 'Tom Becker'")
    conn.execute("insert into tasks (title, status, demo) values ('made in a demo chat', 'open', 0)")
    conn.execute("update meta set value = '2026-01-05T09:00:00Z' where key like 'seeded:%'")  # no version: v1
    db.close()
    conn.close()

    conn = connect(path)
    implementations("gmail_work", conn, call_seconds=0)
    db = open_demo_dataset(path)
    senders = {r[0] for r in conn.execute("select sender from gmail_messages where sender like 'Priya%'")}
    assert senders == {"Priya Raman <priya.raman@northwind.example>"}
    assert next(db["people"].rows_where("name = 'Tom Becker'"))["company"] == "Harbor Property"
    assert db["tasks"].count_where("title = 'made in a demo chat'") == 0
    marks = {r[0]: r[1] for r in conn.execute("select key, value from meta")}
    assert all(v.startswith(f"v{DATASET_VERSION} ") for k, v in marks.items() if k.startswith("seeded:")), marks
