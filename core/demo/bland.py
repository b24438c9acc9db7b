"""A Bland-like phone-call service, simulated: ``list_calls``, ``get_call`` (server
``bland_read``) and ``start_call`` (server ``bland_call``) share the ``calls`` table.

``start_call`` places no call. It records one that is in progress for ``call_seconds`` of
wall-clock time and then reads as completed, with a transcript written from the task.
"""

from __future__ import annotations

import hashlib
import sqlite3
import uuid
from typing import Annotated, Any, Literal

from pydantic import Field

from core.demo import demo_time
from core.demo.db import dumps, iso, loads, parse_time
from core.pipeline.canonical import CanonicalError, canonical_phone

CallStatus = Literal["queued", "in-progress", "completed", "failed", "no-answer"]
Voice = Literal["maya", "ryan", "june"]

# (phone, recipient, task, hours ago, seconds, status, summary, transcript, variables)
_SEED_CALLS: list[tuple[str, str, str, float, int, str, str, list[tuple[str, str]], dict[str, Any]]] = [
    (
        "+15550142",
        "Acme Supplies dispatch",
        "Confirm Thursday's delivery window for order 4471.",
        49.0,
        94,
        "completed",
        "Acme confirmed delivery on Thursday between 9 and 11 am; the driver will call ahead.",
        [
            ("agent", "Hi, this is Maya calling on behalf of Sam Rivera at Northwind about order 4471."),
            ("user", "Hi Maya, this is Tom in dispatch. What can I do for you?"),
            ("agent", "I'd like to confirm the delivery window for Thursday."),
            ("user", "Let me look... Thursday between nine and eleven in the morning. The driver calls ahead."),
            ("agent", "Perfect, thank you. That's all I needed."),
            ("user", "No problem. Bye now."),
        ],
        {"delivery_day": "Thursday", "window": "09:00-11:00"},
    ),
    (
        "+12025550190",
        "Smile Dental",
        "Move Sam's check-up with Dr. Chen to an afternoon this week.",
        121.0,
        132,
        "completed",
        "Check-up moved to {day+2} at 3:00 pm; the old slot is cancelled.",
        [
            ("agent", "Hello, I'm calling for Sam Rivera to move a check-up with Dr. Chen."),
            ("user", "Smile Dental, this is Ana. Sure, what works?"),
            ("agent", "Any afternoon this week."),
            ("user", "{day+2} at three o'clock is open."),
            ("agent", "Great, please book that and cancel the old slot."),
            ("user", "Done. See you then."),
        ],
        {"new_slot": "{day+2} 15:00"},
    ),
    (
        "+15550123",
        "Riverside Hall events",
        "Ask whether the venue is free on December 12 for 40 people.",
        26.0,
        31,
        "no-answer",
        "Nobody answered; no voicemail was left.",
        [],
        {},
    ),
]


def reset(conn: sqlite3.Connection) -> None:
    """Remove the call log (an older dataset's, before it is seeded again)."""
    conn.execute("DELETE FROM calls")


def seed(conn: sqlite3.Connection, now: float) -> None:
    from core.demo.gmail import dated

    for i, (phone, recipient, task, hours, secs, status, summary, transcript, variables) in enumerate(_SEED_CALLS):
        started = now - hours * 3600
        summary = dated(summary, now)
        transcript = [(who, dated(line, now)) for who, line in transcript]
        variables = {k: dated(v, now) for k, v in variables.items()}
        conn.execute(
            "INSERT INTO calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                f"call_{hashlib.sha256(f'seed{i}'.encode()).hexdigest()[:12]}",
                phone,
                task,
                None,
                "maya",
                5,
                started,
                started + secs,
                status,
                secs,
                recipient,
                summary,
                dumps([{"speaker": s, "text": t} for s, t in transcript]),
                dumps(variables),
            ),
        )


def _transcript(task: str, first_sentence: str | None, voice: str) -> list[dict[str, str]]:
    name = voice.capitalize()
    lines = [
        ("agent", first_sentence or f"Hi, this is {name}, an assistant calling on behalf of Sam Rivera."),
        ("user", "Hello, speaking. How can I help?"),
        ("agent", f"I'm calling about this: {task}"),
        ("user", "Okay, let me check that for you... Yes, we can take care of it."),
        ("agent", "Thank you. Could you confirm that it's noted on your side?"),
        ("user", "It's noted. Anything else?"),
        ("agent", "No, that's everything. Have a good day."),
        ("user", "You too. Goodbye."),
    ]
    return [{"speaker": s, "text": t} for s, t in lines]


def _status(row: sqlite3.Row, now: float) -> str:
    if now < row["started_at"] + 0.5 and row["final_status"] == "completed":
        return "queued"
    if now < row["completes_at"]:
        return "in-progress"
    return str(row["final_status"])


def _summary(row: sqlite3.Row, now: float) -> dict[str, Any]:
    status = _status(row, now)
    return {
        "call_id": row["id"],
        "phone_number": row["phone_number"],
        "recipient": row["recipient"],
        "status": status,
        "started_at": iso(row["started_at"]),
        "duration_seconds": row["duration_seconds"] if status in ("completed", "no-answer", "failed") else None,
        "summary": row["summary"] if status == "completed" or status == "no-answer" else "Call in progress.",
    }


class Calls:
    """The call log of one demo database."""

    def __init__(self, conn: sqlite3.Connection, call_seconds: float):
        self.conn = conn
        self.call_seconds = call_seconds

    def _rows(self) -> list[sqlite3.Row]:
        return self.conn.execute("SELECT * FROM calls ORDER BY started_at DESC, id").fetchall()

    def list_calls(self, limit: int = 20, status: str | None = None, since: str | None = None) -> dict[str, Any]:
        now = demo_time()
        after = parse_time(since) if since else None
        calls = [_summary(r, now) for r in self._rows() if after is None or r["started_at"] > after]
        if status:
            calls = [c for c in calls if c["status"] == status]
        return {"calls": calls[:limit], "total": len(calls)}

    def get_call(self, call_id: str) -> dict[str, Any]:
        row = self.conn.execute("SELECT * FROM calls WHERE id = ?", (call_id,)).fetchone()
        if row is None:
            raise LookupError(f"no call with id {call_id!r}; list_calls shows the ids")
        now = demo_time()
        out = _summary(row, now)
        done = out["status"] in ("completed", "no-answer", "failed")
        out.update(
            {
                "task": row["task"],
                "voice": row["voice"],
                "first_sentence": row["first_sentence"],
                "max_duration_minutes": row["max_duration_minutes"],
                "recording_seconds": row["duration_seconds"] if out["status"] == "completed" else 0 if done else None,
                "outcome": out["summary"] if done else None,
                "transcript": loads(row["transcript"]) if done else [],
                "variables": loads(row["variables"]) if done else {},
            }
        )
        return out

    def start_call(
        self,
        phone_number: str,
        task: str,
        first_sentence: str | None = None,
        voice: str = "maya",
        max_duration_minutes: int = 5,
    ) -> dict[str, Any]:
        try:  # the form the hardline rules matched (core/pipeline/canonical.py)
            number = canonical_phone(phone_number)
        except CanonicalError:
            raise ValueError(f"phone_number {phone_number!r} is not in E.164 form, e.g. +15550100") from None
        if not task.strip():
            raise ValueError("task must say what the call is for")
        now = demo_time()
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        seconds = min(max_duration_minutes * 60, 45 + len(task) // 3)
        summary = (
            f"Reached the recipient and covered the task: {task.strip()[:160].rstrip('.')}. They confirmed it is noted."
        )
        self.conn.execute(
            "INSERT INTO calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                call_id,
                number,
                task,
                first_sentence,
                voice,
                max_duration_minutes,
                now,
                now + self.call_seconds,
                "completed",
                seconds,
                number,
                summary,
                dumps(_transcript(task, first_sentence, voice)),
                dumps({"acknowledged": True}),
            ),
        )
        return {
            "call_id": call_id,
            "status": "queued",
            "phone_number": number,
            "message": "Call queued. (deferchat demo: simulated; no real phone call is placed.)",
        }


def tool_functions(calls: Calls, server: str) -> dict[str, Any]:
    """The implementations for one server, their signatures mirroring the roster's schemas."""

    def list_calls(
        limit: Annotated[int, Field(ge=1, le=100)] = 20,
        status: CallStatus | None = None,
        since: str | None = None,
    ) -> dict[str, Any]:
        return calls.list_calls(limit, status, since)

    def get_call(call_id: str) -> dict[str, Any]:
        return calls.get_call(call_id)

    def start_call(
        phone_number: str,
        task: str,
        first_sentence: str | None = None,
        voice: Voice = "maya",
        max_duration_minutes: Annotated[int, Field(ge=1, le=30)] = 5,
    ) -> dict[str, Any]:
        return calls.start_call(phone_number, task, first_sentence, voice, max_duration_minutes)

    if server == "bland_read":
        return {"list_calls": list_calls, "get_call": get_call}
    if server == "bland_call":
        return {"start_call": start_call}
    raise KeyError(server)
