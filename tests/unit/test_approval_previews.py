"""Approvals a person can check (issue 19 item 2, issue 23 item 3): every built-in write names its
target in words and shows the change as before -> after, from the values the tool will run with.

Each test runs a real chat (the engine, a scripted model, the production roster, the pipeline and
its canonical values, the built-ins' database, the demo's MCP servers in this process) and reads
what the approval showed: the :class:`~core.pipeline.preview.ActionPreview` the approver was
given, which is also stored with the approval and sent on ``tool.approval_required``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.chat.options import ChatOptions
from core.engine import Engine
from core.pipeline.approvals import ApprovalRequest, Decision, FixedApprover
from core.pipeline.preview import ActionPreview, PreviewField, layout
from core.store import Store

WEEKDAYS = json.dumps(["mon", "tue", "wed", "thu", "fri"])


def use(i: int, name: str, arguments: dict[str, Any], *, deferred: bool = False) -> dict[str, Any]:
    if deferred:
        return {"type": "tool_use", "id": f"t{i}", "name": "tool.call", "input": {"name": name, "arguments": arguments}}
    return {"type": "tool_use", "id": f"t{i}", "name": name, "input": arguments}


def seed(db: Any) -> None:
    """The owner's own data in the built-ins' tables (a real user's database)."""
    db["tasks"].insert({"title": "Buy milk", "due": "2026-03-14", "status": "open", "created_at": 0, "demo": 0})
    db["schedules"].insert(
        {
            "title": "Team standup",
            "time": "09:00",
            "days": WEEKDAYS,
            "timezone": "Europe/Berlin",
            "status": "active",
            "created_at": 0,
            "updated_at": 0,
            "demo": 0,
        }
    )
    db["email_subscriptions"].insert(
        {
            "account": "work",
            "list_name": "Metrics Weekly",
            "sender": "Metrics Bot <news@metricsbot.example>",
            "per_month": 4,
            "last_message_on": "2026-01-01",
            "messages_in_inbox": 14,
            "list_unsubscribe": "<https://metricsbot.example/u/1>, <mailto:leave@metricsbot.example>",
            "one_click": 1,
            "status": "subscribed",
        }
    )
    db["people"].insert(
        {
            "name": "Dana Whitfield",
            "company": "Globex",
            "email": "dana@globex.example",
            "phone": "+15550100",
            "birthday": "1990-04-01",
            "demo": 0,
            "updated_at": 0,
        }
    )
    db["notes"].insert(
        {"title": "Groceries", "body": "eggs", "tags": "[]", "created_at": 0, "updated_at": 0, "demo": 0}
    )
    db["memory_facts"].insert({"fact": "Sam takes the train", "topic": "travel", "created_at": 0, "demo": 0})


async def asked(
    home: Path, uses: list[dict[str, Any]], *, demo_servers: bool = False, decision: Decision = Decision.DENY
) -> tuple[list[ApprovalRequest], Store]:
    """Run one turn whose model makes ``uses``; the approvals asked, in order, and the store."""
    script = home / "script.json"
    script.write_text(json.dumps({"turns": [uses, [{"type": "text", "text": "done"}]]}))
    store = Store(home / "db.sqlite")
    seed(store.db)
    approver = FixedApprover(decision)
    chat = await Engine(store).open_chat(
        None, ChatOptions(script=str(script), start_demo_servers=demo_servers), approver=approver
    )
    try:
        await chat.send("go")
    finally:
        await chat.close()
    return approver.asked, store


def field(preview: ActionPreview | None, label: str) -> PreviewField:
    assert preview is not None
    found = [f for f in preview.fields if f.label == label]
    assert found, (label, [f.label for f in preview.fields])
    return found[0]


def shown(preview: ActionPreview | None) -> str:
    """Everything the person reads, as one text (the CLI and the TUI lay out these lines)."""
    assert preview is not None
    return "\n".join(f"{x.label}: {x.text} ({x.note})" for x in layout(preview, expanded=True))


# --- each built-in write -------------------------------------------------------------------------


async def test_tasks_name_the_task_and_show_its_status_before_and_after(home: Path) -> None:
    (done, missing, created), _ = await asked(
        home,
        [
            use(1, "tasks.complete", {"task_id": "tsk_1"}),
            use(2, "tasks.complete", {"task_id": "tsk_9"}),
            use(3, "tasks.create", {"title": "  Call the bank ", "due": "2026-05-01"}),
        ],
    )
    assert done.preview is not None and done.preview.summary == "Mark the task \u201cBuy milk\u201d as done"
    task = field(done.preview, "Task")
    assert task.decisive and task.value == "tsk_1" and "Buy milk" in task.note
    assert (field(done.preview, "Status").before, field(done.preview, "Status").value) == ("open", "done")
    assert missing.preview is not None and "no such task" in field(missing.preview, "Task").note
    assert any("No task with id tsk_9" in p and "will fail" in p for p in missing.preview.problems)
    assert created.preview is not None
    assert created.preview.summary == "Add the task \u201cCall the bank\u201d to your to-do list, due 2026-05-01"


async def test_schedules_name_the_schedule_and_show_the_time_before_and_after(home: Path) -> None:
    (update, pause, cancel), _ = await asked(
        home,
        [
            use(1, "schedule.update", {"schedule_id": "sch_1", "time": "10:00"}, deferred=True),
            use(2, "schedule.pause", {"schedule_id": "sch_1", "until": "2099-01-10"}, deferred=True),
            use(3, "schedule.cancel", {"schedule_id": "sch_1", "reason": "team disbanded"}, deferred=True),
        ],
    )
    assert update.via == "tool.call" and update.preview is not None
    assert "Team standup" in update.preview.summary and "09:00 \u2192 10:00" in update.preview.summary
    target = field(update.preview, "Schedule")
    assert target.decisive and "Team standup" in target.note and "weekdays at 09:00" in target.note
    time = field(update.preview, "Time")
    assert (time.before, time.value) == ("09:00", "10:00")
    status = field(pause.preview, "Status")
    assert (status.before, status.value) == ("active", "paused until 2099-01-10")
    assert (field(cancel.preview, "Status").before, field(cancel.preview, "Status").value) == ("active", "cancelled")
    assert field(cancel.preview, "Reason").value == "team disbanded"


async def test_unsubscribe_names_the_newsletter_its_sender_and_list(home: Path) -> None:
    (unsub,), _ = await asked(home, [use(1, "email.unsubscribe", {"subscription_id": "sub_1"}, deferred=True)])
    preview = unsub.preview
    assert preview is not None
    assert preview.summary == "Unsubscribe from \u201cMetrics Weekly\u201d (Metrics Bot <news@metricsbot.example>)"
    assert "Metrics Weekly" in field(preview, "Newsletter").note
    assert field(preview, "Sender").value == "Metrics Bot <news@metricsbot.example>"
    assert field(preview, "Mail account").value == "work"
    how = field(preview, "Unsubscribe by")
    assert how.decisive and how.kind == "url" and how.value == "https://metricsbot.example/u/1"
    assert (field(preview, "Status").before, field(preview, "Status").value) == ("subscribed", "unsubscribed")


async def test_people_update_names_the_contact_and_shows_the_canonical_change(home: Path) -> None:
    (upd,), _ = await asked(
        home, [use(1, "people.update", {"person_id": "per_1", "email": "Dana.W@Globex.Example", "notes": "VIP"})]
    )
    preview = upd.preview
    assert preview is not None and preview.summary == "Change the contact Dana Whitfield (Globex)"
    email = field(preview, "Email")
    assert (email.before, email.value) == ("dana@globex.example", "dana.w@globex.example")  # as the tool stores it
    assert (field(preview, "Notes").before, field(preview, "Notes").value) == ("(none)", "VIP")


async def test_notes_memory_and_calendar_say_what_they_write_and_whom_they_invite(home: Path) -> None:
    (note, fact, event), _ = await asked(
        home,
        [
            use(1, "notes.create", {"title": "Groceries", "body": "milk\nbread", "tags": ["#Home"]}),
            use(2, "memory.save", {"fact": "sam takes the train", "topic": "Travel"}),
            use(
                3,
                "calendar.create_event",
                {
                    "title": "Renewal call",
                    "start": "2026-05-04T15:30",
                    "attendees": ["DANA@globex.example", "x@y.example"],
                },
            ),
        ],
    )
    assert (
        note.preview is not None and note.preview.summary == "Write a new note \u201cGroceries\u201d in your notebook"
    )
    assert "already have a note with this title (note_1)" in field(note.preview, "Title").note
    assert field(note.preview, "Tags").value == "home"
    assert "already remembered as mem_1" in field(fact.preview, "Fact").note
    assert field(fact.preview, "Topic").value == "travel"
    attendees = field(event.preview, "Attendees")
    assert attendees.decisive and attendees.value == "dana@globex.example, x@y.example"
    assert "Dana Whitfield (Globex)" in attendees.note and "no invitation is sent" in attendees.note
    assert event.preview is not None and "Mon 04 May 2026, 15:30\u201316:00" in event.preview.summary


async def test_workspace_writes_show_the_resolved_path_and_the_file_before(home: Path) -> None:
    workspace = home / "workspace"
    (workspace / "pub").mkdir(parents=True)
    (workspace / "private").mkdir()
    (workspace / "private" / "c.txt").write_text("one\ntwo\n")
    (workspace / "pub" / "link").symlink_to(workspace / "private")
    (replace, create, refused), store = await asked(
        home,
        [
            use(1, "workspace.write_file", {"path": "pub/../private/c.txt", "content": "new", "overwrite": True}),
            use(2, "workspace.write_file", {"path": "pub/link/d/e.txt", "content": "x"}),
            use(3, "workspace.write_file", {"path": "private/c.txt", "content": "x"}),
            use(4, "workspace.write_file", {"path": "../escape.txt", "content": "x"}),
        ],
    )
    path = field(replace.preview, "Path")
    assert path.decisive and path.kind == "path" and path.value == str((workspace / "private" / "c.txt").resolve())
    assert path.note.startswith("private/c.txt in your workspace")  # the file the rules judged, as it will be written
    assert (field(replace.preview, "File").before, field(replace.preview, "File").value) == (
        "8 bytes, 2 lines",
        "3 bytes, 1 line",
    )
    assert replace.preview is not None and replace.preview.summary == "Replace the file private/c.txt in your workspace"
    made = field(create.preview, "Path")
    assert made.value == str((workspace / "private" / "d" / "e.txt").resolve())  # the symlink followed
    assert field(create.preview, "File").before == "(does not exist)"
    assert field(create.preview, "File").note == "creates the folder private/d"
    assert field(create.preview, "File").value == "1 byte, 1 line"
    assert refused.preview is not None and any("overwrite is false" in p for p in refused.preview.problems)
    # a path out of the workspace has no canonical form there: refused before anyone is asked
    (escape,) = [inv for inv in store.invocations(store.chats()[0].id) if "escape" in (inv.arguments or "")]
    assert escape.status == "failed" and "workspace" in (escape.error_message or ""), escape


async def test_notify_says_where_the_notification_goes(home: Path) -> None:
    (notify,), _ = await asked(home, [use(1, "notify.owner", {"message": "Leave now"})])
    assert notify.preview is not None and "local outbox" in notify.preview.summary
    assert field(notify.preview, "Sent to").decisive


# --- mail and calls: the demo's MCP servers ------------------------------------------------------


def _demo_draft(home: Path) -> str:
    """A draft in the demo's work mailbox, made the way its server makes one."""
    from core.demo import demo_db_path, gmail
    from core.demo.db import connect, seed_once

    conn = connect(demo_db_path())
    try:
        seed_once(conn, "gmail:work", gmail.seed("work"))
        return gmail.Mailbox(conn, "work").create_draft(["Dana@Globex.example"], "Renewal terms", "Attached.")[
            "draft_id"
        ]
    finally:
        conn.close()


async def test_mail_names_the_recipients_the_account_and_the_thread(home: Path) -> None:
    from core.demo.gmail import _id

    draft = _demo_draft(home)
    thread = _id("work", "thread", "2")  # "Contract renewal: Globex"
    (send, reply, queued, trash), _ = await asked(
        home,
        [
            use(
                1,
                "mcp.gmail_work.send_message",
                {"body": "b" * 4000, "subject": "Hello", "to": ["DANA@globex.example"]},
            ),
            use(
                2,
                "mcp.gmail_work.send_message",
                {"to": ["dana@globex.example"], "subject": "Terms", "body": "ok", "reply_to_thread_id": thread},
            ),
            use(3, "mcp.gmail_work.send_draft", {"draft_id": draft}, deferred=True),
            use(4, "mcp.gmail_work.trash_thread", {"thread_id": thread}, deferred=True),
        ],
        demo_servers=True,
    )
    to = field(send.preview, "To")
    assert to.decisive and to.value == "dana@globex.example"  # canonical: what the hardline rule and server see
    assert "Dana Whitfield (Globex)" in to.note
    sender = field(send.preview, "From")
    assert sender.decisive and sender.value == "Sam Rivera <sam.rivera@northwind.example>"
    assert (
        send.preview is not None and send.preview.summary == "Send the email \u201cHello\u201d from your work mailbox"
    )
    assert send.preview.server is not None and send.preview.server.server == "gmail_work"
    assert send.preview.server.claims == {
        "read_only": False,
        "open_world": True,
        "destructive": False,
        "idempotent": False,
    }
    replied = field(reply.preview, "In reply to")
    assert "Contract renewal: Globex" in replied.note and "Dana Whitfield" in replied.note
    assert field(reply.preview, "Subject").value == "Re: Terms"
    assert field(queued.preview, "To").value == "dana@globex.example"  # the draft's recipient, resolved
    assert "Renewal terms" in field(queued.preview, "Draft").note
    labels = field(trash.preview, "Labels")
    assert "INBOX" in (labels.before or "") and "TRASH" in labels.value and "INBOX" not in labels.value
    assert trash.preview is not None and "Contract renewal: Globex" in trash.preview.summary


async def test_a_call_names_the_number_and_whom_it_reaches(home: Path) -> None:
    (call,), _ = await asked(
        home,
        [use(1, "mcp.bland_call.start_call", {"phone_number": "+1 (555) 0100", "task": "Confirm the order"})],
        demo_servers=True,
    )
    number = field(call.preview, "Number")
    assert number.decisive and number.kind == "phone" and number.value == "+15550100"
    assert "Dana Whitfield (Globex)" in number.note
    assert call.preview is not None and call.preview.summary == "Place a phone call to +15550100"


async def test_a_mail_with_an_invisible_character_in_its_recipient_shows_it(home: Path) -> None:
    from core.cli.approver import approval_prompt

    (send,), _ = await asked(
        home,
        [use(1, "mcp.gmail_work.send_message", {"to": ["ceo\ufe0f@company.example"], "subject": "s", "body": "b"})],
        demo_servers=True,
    )
    prompt = approval_prompt(send)
    assert "ceo\\ufe0f@company.example" in prompt and "\ufe0f" not in prompt
    assert "not in your contacts" in prompt


# --- what the approval keeps --------------------------------------------------------------------


async def test_the_preview_is_stored_with_the_approval_and_shown_again_after_a_park(home: Path) -> None:
    """A parked approval answered in another process shows what the person was first shown."""
    (first,), store = await asked(home, [use(1, "tasks.complete", {"task_id": "tsk_1"})], decision=Decision.PARK)
    row = store.pending_approvals(store.chats()[0].id)[0]
    assert row.preview is not None and json.loads(row.preview)["summary"] == first.preview.summary  # type: ignore[union-attr]
    required = store.events(row.chat_id, ("tool.approval_required",))
    assert required and required[0]["preview"]["summary"] == "Mark the task \u201cBuy milk\u201d as done"
    store.db["tasks"].update(1, {"title": "Buy oat milk"})  # the task changes meanwhile

    again = Store(home / "db.sqlite")  # another process's store
    approver = FixedApprover(Decision.DENY)
    chat = await Engine(again).open_chat(row.chat_id, ChatOptions(start_demo_servers=False), approver=approver)
    try:
        await chat.resume()
    finally:
        await chat.close()
    assert [r.preview for r in approver.asked] == [first.preview]


def test_every_built_in_write_has_a_describe_hook() -> None:
    from core.builtins import builtin_tool
    from core.roster.loader import load_roster

    writes = [t.name for t in load_roster("production").configured if not t.side_effect.is_read]
    assert writes
    missing = [name for name in writes if (tool := builtin_tool(name)) is None or tool.describe is None]
    assert missing == []


@pytest.mark.parametrize("label", ["Body"])
async def test_long_details_are_folded_and_decisive_fields_never(home: Path, label: str) -> None:
    (send,), _ = await asked(
        home,
        [use(1, "mcp.gmail_work.send_message", {"body": "word " * 2000, "subject": "s", "to": ["a@b.example"] * 3})],
        demo_servers=True,
    )
    assert send.preview is not None
    lines = {line.label: line for line in layout(send.preview)}
    assert lines[label].folded and len(lines[label].text) <= 161
    assert lines["To"].text == "a@b.example, a@b.example, a@b.example" and not lines["To"].folded
    assert "word " * 2000 in shown(send.preview).replace("\n", " ") + " "


# --- an MCP server's own tool ---------------------------------------------------------------------


async def test_a_server_tool_shows_its_arguments_its_title_and_its_claims(home: Path, tmp_path: Path) -> None:
    """A real MCP server (tests/mcp_servers/titled.py): its fields in a readable list, the decisive
    ones first whatever the model's order, the server's own title and annotations as its claims."""
    import sys

    from core.cli.approver import approval_prompt
    from tests.helpers import ROOT

    server = {"command": sys.executable, "args": ["-m", "tests.mcp_servers.titled"], "env": {"PYTHONPATH": str(ROOT)}}
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"billing": server}}))
    (tmp_path / "roster.json").write_text(json.dumps({"agent": {"name": "billing", "version": "1"}}))
    memo = "Quarterly services.\n" * 40
    arguments = {
        "memo": memo,
        "amount": "4180.00",
        "invoice_id": "INV-2291",
        "payee_account": "DE89 3704 0044 0532 0130 00",
        "callback_url": "https://pay.example/done",
    }
    script = tmp_path / "script.json"
    call = {"type": "tool_use", "id": "p1", "name": "mcp.billing.pay_invoice", "input": arguments}
    script.write_text(json.dumps({"turns": [[call], [{"type": "text", "text": "done"}]]}))
    approver = FixedApprover(Decision.DENY)
    chat = await Engine(Store(home / "db.sqlite")).open_chat(
        None,
        ChatOptions(
            roster=str(tmp_path / "roster.json"),
            mcp_config=str(tmp_path / "mcp.json"),
            script=str(script),
            start_demo_servers=False,
        ),
        approver=approver,
    )
    try:
        await chat.send("pay it")
    finally:
        await chat.close()
    (request,) = approver.asked
    preview = request.preview
    assert preview is not None
    assert preview.summary == "Run \u201cPay an invoice\u201d (pay_invoice) on the MCP server billing"
    assert preview.server is not None and preview.server.title == "Pay an invoice"
    assert preview.server.claims == {"read_only": False, "open_world": True, "destructive": True, "idempotent": False}
    assert [f.argument for f in preview.decisive] == ["invoice_id", "payee_account", "callback_url"]
    assert [f.argument for f in preview.details] == ["memo", "amount"]
    prompt = approval_prompt(request)
    assert "from the MCP server billing, untrusted" in prompt
    assert "destructive: yes" in prompt and "its title for the tool: \u201cPay an invoice\u201d" in prompt
    assert prompt.index("DE89 3704 0044 0532 0130 00") < prompt.index("Quarterly services.")
    assert "more lines" in prompt  # the memo is folded ...
    expanded = approval_prompt(request, expanded=True)  # ... and d shows it whole (and in the raw JSON)
    assert expanded.count("Quarterly services.") == 40 + 40  # the field, and the raw JSON's string


def test_finish_shows_an_argument_no_hook_described_and_a_checked_one_as_decisive() -> None:
    """What the tool receives is shown, whatever a description left out; an argument a hardline
    rule checks decides where the action goes, whatever its name says."""
    from core.pipeline.preview import detail, finish

    schema = {"type": "object", "properties": {"note": STRING, "dest": STRING, "extra": STRING}}
    arguments = {"extra": "x", "note": "n", "dest": "+15550100"}
    preview = finish(ActionPreview(summary="s", fields=[detail("Note", "n", argument="note")]), arguments, schema)
    assert [f.argument for f in preview.fields] == ["note", "dest", "extra"]  # the schema's order
    checked = finish(ActionPreview(summary="s"), {"extra": "somewhere"}, schema, kinds={"extra": "text"})
    assert checked.fields[0].decisive and checked.fields[0].kind == "target"


STRING = {"type": "string"}
