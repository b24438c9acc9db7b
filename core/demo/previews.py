"""What a call of a demo server's write will do, in words: the approval's preview for the demo's
mail (``gmail_*``) and calls (``bland_call``), resolved in the demo database.

Only the chat's own demo servers get these (:class:`core.chat.servers.ChatServers` knows which
servers it started from the demo); a server of the same name the owner configured is described
from its arguments alone, as any MCP server is. Each hook reads the demo database the server
writes, read-only, with the server's own reading code (:class:`core.demo.gmail.Mailbox`), so the
preview shows what the server will do: the account a message goes from, the recipients in the
form the server stores them, the thread a reply joins, a draft's recipients, a thread's labels
before and after. A thread or draft that is not there says so; the call will fail.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.demo.gmail import Mailbox, reply_subject
from core.pipeline.preview import ActionPreview, PreviewField, change, decisive, detail, value_text

Hook = Callable[[str, dict[str, Any], sqlite3.Connection], ActionPreview]
DEMO_NOTE = "the demo's: nothing leaves this machine"


def describe(server: str, tool: str, arguments: dict[str, Any], db_path: str | Path) -> ActionPreview | None:
    """The preview of ``tool`` of the demo server ``server``, or None when it has no hook (or
    the demo database is not there yet)."""
    family = "gmail" if server.startswith("gmail_") else server
    hook = _HOOKS.get((family, tool))
    path = Path(db_path)
    if hook is None or not path.exists():
        return None
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    conn.row_factory = sqlite3.Row
    try:
        return hook(server, arguments, conn)
    finally:
        conn.close()


def _will_fail(exc: Exception) -> str:
    return f"{str(exc).strip(chr(39) + chr(34)).rstrip('.')}. The call will fail."


def _box(server: str, conn: sqlite3.Connection) -> Mailbox:
    return Mailbox(conn, server.removeprefix("gmail_"))


def _sender(box: Mailbox) -> PreviewField:
    return decisive("From", box.owner, kind="email", note=f"your {box.account} mailbox ({DEMO_NOTE})")


def _recipients(
    box: Mailbox, to: list[str], cc: list[str], problems: list[str], *, argued: bool = True
) -> list[PreviewField]:
    """To and Cc as the server stores them (canonical), or as given with the reason it refuses them."""
    try:
        to, cc = box._check_addresses(list(to), list(cc))
    except ValueError as exc:
        problems.append(_will_fail(exc))
    fields = [decisive("To", value_text(to) if to else "(nobody)", kind="email", argument="to" if argued else None)]
    if cc:
        fields.append(decisive("Cc", value_text(cc), kind="email", argument="cc" if argued else None))
    return fields


def _thread_field(box: Mailbox, thread_id: str, label: str, argument: str, problems: list[str]) -> PreviewField:
    try:
        _, messages = box._thread(thread_id)
    except LookupError as exc:
        problems.append(_will_fail(exc))
        return decisive(label, thread_id, note="no such thread", argument=argument)
    people = ", ".join(dict.fromkeys(m["sender"] for m in messages))
    subject = messages[0]["subject"] if messages else "(no messages)"
    return decisive(label, thread_id, note=f"\u201c{subject}\u201d with {people}", argument=argument)


def _message(box: Mailbox, args: dict[str, Any], problems: list[str]) -> list[PreviewField]:
    """A message being written (sent or saved as a draft): recipients, sender, the thread a reply
    joins, subject and body, as the server will store them."""
    fields = _recipients(box, args.get("to") or [], args.get("cc") or [], problems)
    fields.append(_sender(box))
    subject = str(args.get("subject", ""))
    reply = args.get("reply_to_thread_id")
    if reply:
        fields.append(_thread_field(box, str(reply), "In reply to", "reply_to_thread_id", problems))
        shown = reply_subject(subject)
        fields.append(detail("Subject", shown, argument="subject", note="" if shown == subject else "Re: added"))
    else:
        fields.append(detail("Subject", subject, argument="subject"))
    fields.append(detail("Body", args.get("body", ""), argument="body"))
    return fields


def _send_message(server: str, args: dict[str, Any], conn: sqlite3.Connection) -> ActionPreview:
    box = _box(server, conn)
    problems: list[str] = []
    fields = _message(box, args, problems)
    summary = f"Send the email \u201c{args.get('subject', '')}\u201d from your {box.account} mailbox"
    return ActionPreview(summary=summary, fields=fields, problems=problems)


def _create_draft(server: str, args: dict[str, Any], conn: sqlite3.Connection) -> ActionPreview:
    box = _box(server, conn)
    problems: list[str] = []
    fields = _message(box, args, problems)
    summary = f"Save the draft \u201c{args.get('subject', '')}\u201d in your {box.account} mailbox (nothing is sent)"
    return ActionPreview(summary=summary, fields=fields, problems=problems)


def _send_draft(server: str, args: dict[str, Any], conn: sqlite3.Connection) -> ActionPreview:
    from core.demo.db import loads

    box = _box(server, conn)
    draft_id = str(args.get("draft_id", ""))
    row = conn.execute(
        "SELECT m.* FROM gmail_drafts d JOIN gmail_messages m ON m.id = d.message_id WHERE d.id = ? AND d.account = ?",
        (draft_id, box.account),
    ).fetchone()
    if row is None:
        return ActionPreview(
            summary=f"Send the draft {draft_id} from your {box.account} mailbox",
            fields=[decisive("Draft", draft_id, note="no such draft", argument="draft_id"), _sender(box)],
            problems=[f"No draft with id {draft_id!r} in the {box.account} mailbox. The call will fail."],
        )
    problems: list[str] = []
    fields = [
        decisive("Draft", draft_id, note=f"\u201c{row['subject']}\u201d", argument="draft_id"),
        *_recipients(box, loads(row["recipients"]), loads(row["cc"]), problems, argued=False),
        _sender(box),
        detail("Subject", row["subject"]),
        detail("Body", row["body"]),
    ]
    return ActionPreview(
        summary=f"Send the draft \u201c{row['subject']}\u201d from your {box.account} mailbox",
        fields=fields,
        problems=problems,
    )


def _labels(
    server: str, args: dict[str, Any], conn: sqlite3.Connection, summary: str, after: Callable[[Mailbox, str], Any]
) -> ActionPreview:
    """A change of one thread's labels; ``summary`` has ``{what}`` (the thread) and ``{account}``."""
    box = _box(server, conn)
    thread_id = str(args.get("thread_id", ""))
    problems: list[str] = []
    target = _thread_field(box, thread_id, "Thread", "thread_id", problems)
    fields = [target]
    if not problems:
        try:
            before, now = after(box, thread_id)
            fields.append(change("Labels", ", ".join(before) or "(none)", ", ".join(now) or "(none)"))
        except (LookupError, ValueError) as exc:
            problems.append(_will_fail(exc))
    what = target.note.split(" with ")[0] if target.note and not problems else thread_id
    return ActionPreview(summary=summary.format(what=what, account=box.account), fields=fields, problems=problems)


def _modify_labels(server: str, args: dict[str, Any], conn: sqlite3.Connection) -> ActionPreview:
    def after(box: Mailbox, thread_id: str) -> Any:
        return box.labels_after_modify(thread_id, args.get("add"), args.get("remove"))

    preview = _labels(server, args, conn, "Change the labels of {what} in your {account} mailbox", after)
    preview.fields += [
        detail("Add", value_text(args.get("add") or []), argument="add"),
        detail("Remove", value_text(args.get("remove") or []), argument="remove"),
    ]
    return preview


def _trash_thread(server: str, args: dict[str, Any], conn: sqlite3.Connection) -> ActionPreview:
    return _labels(
        server,
        args,
        conn,
        "Move {what} to the trash in your {account} mailbox",
        lambda box, t: box.labels_after_trash(t),
    )


def _start_call(server: str, args: dict[str, Any], conn: sqlite3.Connection) -> ActionPreview:
    from core.pipeline.canonical import CanonicalError, canonical_phone

    raw = str(args.get("phone_number", ""))
    problems: list[str] = []
    try:
        number = canonical_phone(raw)
    except CanonicalError:
        number = raw
        problems.append(f"phone_number {raw!r} is not in E.164 form (e.g. +15550100). The call will fail.")
    return ActionPreview(
        summary=f"Place a phone call to {number}",
        fields=[
            decisive(
                "Number", number, kind="phone", argument="phone_number", note="the demo simulates it: no phone rings"
            ),
            detail("Task", args.get("task", ""), argument="task"),
            detail("First sentence", args.get("first_sentence") or "(the voice's own)", argument="first_sentence"),
            detail("Voice", args.get("voice", "maya"), argument="voice"),
            detail("At most", f"{args.get('max_duration_minutes', 5)} minutes", argument="max_duration_minutes"),
        ],
        problems=problems,
    )


_HOOKS: dict[tuple[str, str], Hook] = {
    ("gmail", "send_message"): _send_message,
    ("gmail", "create_draft"): _create_draft,
    ("gmail", "send_draft"): _send_draft,
    ("gmail", "modify_labels"): _modify_labels,
    ("gmail", "trash_thread"): _trash_thread,
    ("bland_call", "start_call"): _start_call,
}
