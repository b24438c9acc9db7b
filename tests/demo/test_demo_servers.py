"""The offline demo servers: they list exactly what the production roster says, they validate
what their schemas say, and a later read sees what a write did (state in SQLite)."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

import pytest
import pytest_asyncio

from core.demo import DEMO_SERVERS, demo_config, demo_mcp_config
from core.demo.servers import build_server, implementations, roster_servers
from core.mcp.client import McpManager

CALL_SECONDS = 0.4


def test_demo_servers_are_the_rosters_servers():
    assert sorted(DEMO_SERVERS) == sorted(roster_servers())
    gmail = [t["name"] for t in roster_servers()["gmail_work"]]
    assert gmail == [
        "search_threads",
        "get_thread",
        "list_labels",
        "send_message",
        "create_draft",
        "send_draft",
        "modify_labels",
        "trash_thread",
    ]
    assert [t["name"] for t in roster_servers()["gmail_personal"]] == gmail


@pytest.mark.parametrize("server", DEMO_SERVERS)
async def test_listing_is_exactly_the_roster(server, tmp_path):
    mcp = build_server(server, tmp_path / "demo.sqlite")
    listed = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in await mcp.list_tools()]
    assert listed == roster_servers()[server]


def _norm(schema: dict) -> dict:
    """What an argument schema constrains: per property its type, enum, bounds, item type; required."""
    props = {}
    for name, p in schema.get("properties", {}).items():
        options = [o for o in p.get("anyOf", [p]) if o.get("type") != "null"]
        assert len(options) == 1, (name, p)
        o = {**p, **options[0]}
        props[name] = {k: o.get(k) for k in ("type", "enum", "minimum", "maximum")}
        props[name]["items"] = (o.get("items") or {}).get("type")
    return {"properties": props, "required": sorted(schema.get("required", []))}


@pytest.mark.parametrize("server", DEMO_SERVERS)
def test_implementations_validate_what_the_schema_says(server, tmp_path):
    from mcp.server.mcpserver.tools.base import Tool

    from core.demo.db import connect

    impls = implementations(server, connect(tmp_path / "demo.sqlite"), call_seconds=0)
    for spec in roster_servers()[server]:
        derived = Tool.from_function(impls[spec["name"]]).parameters  # what the SDK validates against
        assert _norm(derived) == _norm(spec["inputSchema"]), spec["name"]
        for name, prop in spec["inputSchema"]["properties"].items():
            if "default" in prop:
                assert derived["properties"][name].get("default") == prop["default"], (spec["name"], name)


def test_demo_mcp_config(tmp_path):
    doc = demo_mcp_config(tmp_path / "d.sqlite", call_seconds=1)
    assert sorted(doc["mcpServers"]) == sorted(DEMO_SERVERS)
    entry = doc["mcpServers"]["bland_call"]
    assert entry["command"] == sys.executable
    assert entry["args"] == ["-m", "core.demo", "bland_call", "--db", str(tmp_path / "d.sqlite"), "--call-seconds", "1"]
    assert Path(entry["env"]["PYTHONPATH"], "core", "demo", "__init__.py").is_file()
    assert demo_config(tmp_path / "d.sqlite").names() == sorted(DEMO_SERVERS)


# --- over the wire: the four servers as deferchat starts them ----------------------------------

pytestmark_wire = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def demo(tmp_path_factory):
    db = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    manager = McpManager(demo_config(db, call_seconds=CALL_SECONDS))
    await manager.start()  # four processes seed one new file at once
    yield manager, db
    await manager.close()


def _rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


@pytestmark_wire
async def test_all_ready_and_listed_exactly_over_stdio(demo):
    manager, db = demo
    assert {r.name: (r.status, r.tools) for r in manager.servers()} == {
        "bland_call": ("ready", 1),
        "bland_read": ("ready", 2),
        "gmail_personal": ("ready", 8),
        "gmail_work": ("ready", 8),
    }
    for server in DEMO_SERVERS:
        assert manager.listing(server) == roster_servers()[server]
    # seeded exactly once although four processes raced for it
    assert _rows(db, "SELECT key FROM meta ORDER BY key") == [
        ("seeded:bland",),
        ("seeded:gmail:personal",),
        ("seeded:gmail:work",),
    ]
    assert _rows(db, "SELECT account, count(*) FROM gmail_threads GROUP BY account") == [("personal", 9), ("work", 9)]


@pytestmark_wire
async def test_started_call_is_listed_then_completes_with_transcript(demo):
    manager, _ = demo
    before = (await manager.call("mcp.bland_read.list_calls", {})).structured["total"]
    started = await manager.call(
        "mcp.bland_call.start_call",
        {"phone_number": "+1 555 0100", "task": "Ask about invoice INV-2291 and when payment is due."},
    )
    assert not started.is_error
    call = started.structured
    assert call["status"] == "queued" and call["phone_number"] == "+15550100"
    assert "no real phone call" in call["message"]
    listed = (await manager.call("mcp.bland_read.list_calls", {"limit": 1})).structured
    assert listed["total"] == before + 1
    assert listed["calls"][0]["call_id"] == call["call_id"]
    assert listed["calls"][0]["status"] in ("queued", "in-progress")
    await asyncio.sleep(CALL_SECONDS + 0.1)
    done = (await manager.call("mcp.bland_read.get_call", {"call_id": call["call_id"]})).structured
    assert done["status"] == "completed" and done["recording_seconds"] > 0
    assert any("INV-2291" in line["text"] for line in done["transcript"])
    completed = (await manager.call("mcp.bland_read.list_calls", {"status": "completed"})).structured
    assert call["call_id"] in [c["call_id"] for c in completed["calls"]]


@pytestmark_wire
async def test_bad_call_arguments_are_tool_errors(demo):
    manager, _ = demo
    bad_number = await manager.call("mcp.bland_call.start_call", {"phone_number": "call mom", "task": "hi"})
    assert bad_number.is_error and "E.164" in bad_number.text()
    bad_enum = await manager.call("mcp.bland_read.list_calls", {"status": "ringing"})
    assert bad_enum.is_error
    too_many = await manager.call("mcp.bland_read.list_calls", {"limit": 500})
    assert too_many.is_error
    missing = await manager.call("mcp.bland_read.get_call", {"call_id": "call_nope"})
    assert missing.is_error and "call_nope" in missing.text()


@pytestmark_wire
async def test_sent_message_appears_in_search_of_that_account_only(demo):
    manager, _ = demo
    sent = await manager.call(
        "mcp.gmail_work.send_message",
        {"to": ["billing@acme-supplies.example"], "subject": "Remittance for INV-2291", "body": "Paid by wire today."},
    )
    assert not sent.is_error and sent.structured["status"] == "sent"
    found = (await manager.call("mcp.gmail_work.search_threads", {"query": "in:sent remittance"})).structured
    assert [t["thread_id"] for t in found["threads"]] == [sent.structured["thread_id"]]
    assert found["threads"][0]["from"].startswith("Sam Rivera")
    thread = (await manager.call("mcp.gmail_work.get_thread", {"thread_id": sent.structured["thread_id"]})).structured
    assert thread["messages"][0]["body"] == "Paid by wire today."
    other = (await manager.call("mcp.gmail_personal.search_threads", {"query": "remittance"})).structured
    assert other["threads"] == []


@pytestmark_wire
async def test_reply_draft_labels_trash(demo):
    manager, _ = demo
    call = manager.call
    invoice = (await call("mcp.gmail_work.search_threads", {"query": "from:acme is:unread"})).structured["threads"][0]
    tid = invoice["thread_id"]
    # get_thread is a read: it changes nothing
    await call("mcp.gmail_work.get_thread", {"thread_id": tid})
    assert (await call("mcp.gmail_work.search_threads", {"query": "from:acme is:unread"})).structured["total"] == 1

    reply = await call(
        "mcp.gmail_work.send_message",
        {
            "to": ["billing@acme-supplies.example"],
            "subject": "INV-2291",
            "body": "Paying today.",
            "reply_to_thread_id": tid,
        },
    )
    assert reply.structured["thread_id"] == tid
    thread = (await call("mcp.gmail_work.get_thread", {"thread_id": tid})).structured
    assert [m["subject"] for m in thread["messages"]][-1] == "Re: INV-2291" and "SENT" in thread["labels"]

    draft = (
        await call(
            "mcp.gmail_work.create_draft",
            {"to": ["dana@globex.example"], "subject": "Renewal terms", "body": "Attached."},
        )
    ).structured
    assert (await call("mcp.gmail_work.search_threads", {"query": "in:drafts renewal"})).structured["total"] == 1
    sent = (await call("mcp.gmail_work.send_draft", {"draft_id": draft["draft_id"]})).structured
    assert sent["status"] == "sent"
    assert (await call("mcp.gmail_work.search_threads", {"query": "in:drafts renewal"})).structured["total"] == 0
    sent = await call("mcp.gmail_work.search_threads", {"query": 'in:sent "renewal terms"'})
    assert sent.structured["total"] == 1
    again = await call("mcp.gmail_work.send_draft", {"draft_id": draft["draft_id"]})
    assert again.is_error

    def unread(labels):
        return {x["name"]: x["threads_unread"] for x in labels["labels"]}

    before = unread((await call("mcp.gmail_work.list_labels", {})).structured)
    marked = await call("mcp.gmail_work.modify_labels", {"thread_id": tid, "remove": ["unread"], "add": ["Starred"]})
    assert "UNREAD" not in marked.structured["labels"] and "STARRED" in marked.structured["labels"]
    after = unread((await call("mcp.gmail_work.list_labels", {})).structured)
    assert after["UNREAD"] == before["UNREAD"] - 1 and after["Invoices"] == before["Invoices"] - 1
    unknown = await call("mcp.gmail_work.modify_labels", {"thread_id": tid, "add": ["NoSuchLabel"]})
    assert unknown.is_error and "NoSuchLabel" in unknown.text()

    await call("mcp.gmail_work.trash_thread", {"thread_id": tid})
    invoice = await call("mcp.gmail_work.search_threads", {"query": "INV-2291"})
    assert invoice.structured["total"] == 1  # the remittance
    assert tid in [
        t["thread_id"]
        for t in (await call("mcp.gmail_work.search_threads", {"query": "in:trash"})).structured["threads"]
    ]


@pytestmark_wire
async def test_state_outlives_the_servers(demo, tmp_path):
    manager, db = demo
    await manager.call(
        "mcp.gmail_personal.send_message",
        {"to": ["alex.rivera@mail.example"], "subject": "Cake ordered", "body": "Chocolate."},
    )
    only_personal = [s for s in demo_config(db).servers if s.name == "gmail_personal"]
    async with McpManager(only_personal) as fresh:
        found = (await fresh.call("mcp.gmail_personal.search_threads", {"query": 'subject:"cake ordered"'})).structured
        assert found["total"] == 1
    assert _rows(db, "SELECT count(*) FROM meta") == [(3,)]  # no second seed


def test_search_syntax(tmp_path):
    from core.demo import gmail
    from core.demo.db import connect, seed_once

    conn = connect(tmp_path / "s.sqlite")
    box = gmail.Mailbox(conn, "work")
    seed_once(conn, "gmail:work", gmail.seed("work"))

    def subjects(q, n=50):
        return [t["subject"] for t in box.search_threads(q, n)["threads"]]

    assert subjects("subject:globex") == ["Contract renewal: Globex"]
    assert subjects('label:"Clients/Globex"') == subjects("label:clients-globex") == ["Contract renewal: Globex"]
    assert subjects("from:dana") == ["Contract renewal: Globex"]
    assert subjects("to:dana@globex.example") == ["Contract renewal: Globex"]  # Sam's reply is in the thread
    assert subjects('"support SLA"') == ["Contract renewal: Globex"]
    assert set(subjects("is:unread")) == {
        "Invoice INV-2291 is 10 days overdue",
        "Weekly metrics: signups up 12%",
        "Security alert: new sign-in",
        "Interview feedback: Jordan Ellis",
    }
    assert subjects("is:unread newer_than:12h") == ["Security alert: new sign-in", "Weekly metrics: signups up 12%"]
    assert "Weekly metrics: signups up 12%" not in subjects("is:unread -metrics")
    assert subjects("older_than:5d") == ["Design review notes"]  # trash is left out...
    assert subjects("older_than:5d in:anywhere") == ["Design review notes", "This week in SaaS pricing"]
    assert subjects("pricing") == [] and subjects("in:trash") == ["This week in SaaS pricing"]
    assert subjects("has:attachment") == []
    assert len(subjects("")) == 8 and len(subjects("", 3)) == 3
    with pytest.raises(ValueError, match="newer_than:7d"):
        box.search_threads("newer_than:soon")
