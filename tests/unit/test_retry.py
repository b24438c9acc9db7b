"""Retry and edit-last-message in core (core.chat.retry, ChatSession.retry / send(replaces=)),
against the loopback streaming server: the history stays valid, nothing that ran runs twice,
a replaced turn leaves what the model is sent but stays in the store, the audit and the
invocation rows. The store's side is tests/unit/test_store_branches.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from core import events as ev
from core.chat.session import ChatSession
from core.engine import ChatOptions, Engine
from core.errors import UsageError
from core.pipeline.approvals import Decision, FixedApprover
from core.providers.wirenames import encode
from core.store import Store
from tests.streaming_server import StreamingServer, serve

ROSTER = {
    "agent": {"name": "retrier", "version": "1", "deferred": []},
    "configured": [
        {
            "name": "notes.read",
            "description": "Read a note.",
            "side_effect": "WORKSPACE_READ",
            "input_schema": {"type": "object", "properties": {"note_id": {"type": "string"}}, "required": ["note_id"]},
        },
    ],
    "servers": [],
}
FAIL = {"parts": [], "status": 400}  # not retried by the adapter: the turn fails at once
LONG = {"parts": [{"markdown": 1500, "seed": 1}], "chunk_delay": 0.01}


def answer(text: str) -> dict[str, Any]:
    return {"parts": [{"text": text}]}


@pytest.fixture
def roster(home: Path, tmp_path: Path) -> str:
    path = tmp_path / "roster.json"
    path.write_text(json.dumps(ROSTER))
    return str(path)


async def open_chat(
    server: StreamingServer, roster: str, events: list[ev.Event] | None = None
) -> tuple[Engine, ChatSession]:
    engine = Engine(Store())
    session = await engine.open_chat(
        None,
        ChatOptions(
            provider="anthropic",
            model="m",
            base_url=server.url_for("anthropic"),
            roster=roster,
            start_demo_servers=False,
        ),
        approver=FixedApprover(Decision.ALLOW_ONCE),
        subscribers=[events.append] if events is not None else [],
    )
    return engine, session


def texts(body: dict[str, Any]) -> list[str]:
    """The text of every message block a request carried, in order."""
    out: list[str] = []
    for m in body["messages"]:
        content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        out.extend(b["text"] for b in content if b.get("type") == "text")
    return out


async def test_retry_after_a_provider_error_asks_again_in_the_same_turn(roster: str) -> None:
    with serve([FAIL, answer("It works now.")]) as server:
        engine, session = await open_chat(server, roster)
        try:
            failed = await session.send("hello?")
            assert failed.status == "failed"
            plan = session.retry_plan()
            assert plan.kind == "continue" and plan.prompt.text == "hello?"
            result = await session.retry()
            assert result.status == "done" and result.text == "It works now." and result.turn_id == failed.turn_id
            store = engine.store
            assert [(m.role, m.blocks[0].get("text")) for m in store.messages(session.chat_id)] == [
                ("user", "hello?"),
                ("assistant", "It works now."),
            ]
            first, second = server.requests[0]["body"], server.requests[1]["body"]
            assert first["messages"] == second["messages"]  # the same question, not a second copy of it
            assert store.turn(failed.turn_id).status == "done"
        finally:
            await session.close()


async def test_retry_after_a_tool_ran_does_not_run_it_again(roster: str) -> None:
    read = {"parts": [{"tool": encode("notes.read"), "id": "call_1", "input": {"note_id": "n1"}}]}
    with serve([read, FAIL, answer("The note says hi.")]) as server:
        engine, session = await open_chat(server, roster)
        try:
            assert (await session.send("read n1")).status == "failed"
            assert len(engine.store.invocations(session.chat_id)) == 1
            assert session.retry_plan().kind == "continue"
            assert (await session.retry()).status == "done"
            assert [i.call_id for i in engine.store.invocations(session.chat_id)] == ["call_1"]
            # the retried request carries the tool's result, answered once
            sent = server.requests[2]["body"]["messages"]
            results = [
                b
                for m in sent
                if isinstance(m["content"], list)
                for b in m["content"]
                if b.get("type") == "tool_result"
            ]
            assert [r["tool_use_id"] for r in results] == ["call_1"]
        finally:
            await session.close()


async def test_retry_after_a_stop_sends_the_message_again_in_the_stopped_turns_place(roster: str) -> None:
    with serve([LONG, answer("A short answer.")]) as server:
        events: list[ev.Event] = []
        engine, session = await open_chat(server, roster, events)
        try:
            turn = asyncio.create_task(session.send("write me something long"))
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            while sum(isinstance(e, ev.ModelTextDelta) for e in events) < 5:
                assert loop.time() < deadline
                await asyncio.sleep(0.01)
            assert session.stop()
            stopped = await asyncio.wait_for(turn, 5)
            assert stopped.status == "stopped"
            store = engine.store
            partial = store.messages(session.chat_id)[-1].blocks[0]["text"]
            plan = session.retry_plan()
            assert plan.kind == "resend" and plan.status == "stopped"
            result = await session.retry()
            assert result.status == "done" and result.turn_id != stopped.turn_id
            branch_now = store.messages(session.chat_id)
            assert [(m.role, m.blocks[0]["text"]) for m in branch_now] == [
                ("user", "write me something long"),
                ("assistant", "A short answer."),
            ]
            # the model was not sent the stopped attempt; the store still has it
            assert partial not in json.dumps(server.requests[1]["body"])
            assert texts(server.requests[1]["body"]) == ["write me something long"]
            everything = store.db.execute(
                "select count(*) from messages where chat_id = ?", [session.chat_id]
            ).fetchone()[0]
            assert everything == 4 and store.turn(stopped.turn_id).status == "stopped"
            assert [e["status"] for e in store.events(session.chat_id, ("turn.completed",))] == ["stopped", "done"]
        finally:
            await session.close()


async def test_editing_the_last_message_replaces_its_turn_and_keeps_what_ran(roster: str) -> None:
    read = {"parts": [{"tool": encode("notes.read"), "id": "call_n1", "input": {"note_id": "n1"}}]}
    with serve([answer("First answer."), read, answer("Read it."), answer("Second answer.")]) as server:
        engine, session = await open_chat(server, roster)
        try:
            assert (await session.send("first question")).status == "done"
            assert (await session.send("read n1")).status == "done"
            prompt = session.last_prompt()
            assert prompt is not None and prompt.text == "read n1"
            result = await session.send("actually, just say hi", replaces=prompt.message_id)
            assert result.status == "done"
            store = engine.store
            assert [m.blocks[0].get("text") for m in store.messages(session.chat_id)] == [
                "first question",
                "First answer.",
                "actually, just say hi",
                "Second answer.",
            ]
            assert texts(server.requests[3]["body"]) == ["first question", "First answer.", "actually, just say hi"]
            assert "call_n1" not in json.dumps(server.requests[3]["body"])
            # what the replaced turn ran stays in the audit and the invocation rows
            assert [i.call_id for i in store.invocations(session.chat_id)] == ["call_n1"]
            assert any(e.get("call_id") == "call_n1" for e in store.events(session.chat_id, ("tool.requested",)))
            assert store.message(prompt.message_id) is not None
            assert session.last_prompt().text == "actually, just say hi"
            with pytest.raises(UsageError):
                await session.send("not mine", replaces=store.messages(session.chat_id)[-1].id)
        finally:
            await session.close()


async def test_nothing_to_retry_in_a_new_chat(roster: str) -> None:
    with serve([]) as server:
        _, session = await open_chat(server, roster)
        try:
            with pytest.raises(UsageError):
                session.retry_plan()
            assert session.last_prompt() is None
        finally:
            await session.close()
