"""Stopping a turn (ChatSession.stop): against the loopback streaming server on every wire, the
stream is closed (the server sees the client go), the partial answer is kept and marked, a tool
call in flight is settled as a killed process's would be, and the next request is valid."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core import events as ev
from core.chat.session import ChatSession
from core.engine import ChatOptions, Engine
from core.pipeline import codes
from core.pipeline.approvals import Decision, FixedApprover, QueueApprover
from core.providers.wirenames import encode
from core.store import Store
from core.tools import ToolResult, ToolSpec
from tests.streaming_server import WIRES, StreamingServer, markdown_answer, serve

ROSTER = {
    "agent": {"name": "stopper", "version": "1", "deferred": []},
    "configured": [
        {
            "name": "notes.erase",
            "description": "Erase a note for good.",
            "side_effect": "WORKSPACE_WRITE",
            "input_schema": {"type": "object", "properties": {"note_id": {"type": "string"}}, "required": ["note_id"]},
        },
        {
            "name": "notes.read",
            "description": "Read a note.",
            "side_effect": "WORKSPACE_READ",
            "input_schema": {"type": "object", "properties": {"note_id": {"type": "string"}}, "required": ["note_id"]},
        },
    ],
    "servers": [],
}
LONG = {"parts": [{"markdown": 1500, "seed": 3}], "chunk_delay": 0.01}
NEXT = {"parts": [{"text": "Here is the next answer."}]}


class SlowTools:
    """The chat's tool host, but a call blocks until released (and counts how often it ran)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.runs: list[str] = []

    async def run(self, spec: ToolSpec, arguments: dict[str, Any], call_id: str) -> ToolResult:
        self.runs.append(spec.name)
        self.started.set()
        await self.release.wait()
        return ToolResult(content=[{"type": "text", "text": f"{spec.name} done"}])

    def live_pin(self, name: str) -> str | None:
        return self.inner.live_pin(name)


@pytest.fixture
def roster(home: Path, tmp_path: Path) -> str:
    path = tmp_path / "roster.json"
    path.write_text(json.dumps(ROSTER))
    return str(path)


async def open_chat(
    server: StreamingServer, wire: str, roster: str | None = None, approver: Any = None
) -> tuple[Engine, ChatSession, list[ev.Event]]:
    events: list[ev.Event] = []
    engine = Engine(Store())
    session = await engine.open_chat(
        None,
        ChatOptions(provider=wire, model="m", base_url=server.url_for(wire), roster=roster, start_demo_servers=False),
        approver=approver or FixedApprover(Decision.ALLOW_ONCE),
        subscribers=[events.append],
    )
    return engine, session, events


async def until(condition: Callable[[], object], within: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not condition():
        assert loop.time() < deadline, f"timed out waiting for {condition}"
        await asyncio.sleep(0.01)


def deltas(events: list[ev.Event]) -> str:
    return "".join(e.text for e in events if isinstance(e, ev.ModelTextDelta))


def tool_results_answer_every_use(messages: list[dict[str, Any]]) -> None:
    """The history a provider gets: every tool_use is answered by the next message's tool_result."""
    for i, m in enumerate(messages):
        uses = [b["id"] for b in m["content"] if b.get("type") == "tool_use"]
        if uses:
            nxt = messages[i + 1]["content"] if i + 1 < len(messages) else []
            answered = {b.get("tool_use_id") for b in nxt if b.get("type") == "tool_result"}
            assert set(uses) <= answered, f"tool uses {uses} have no results in {nxt}"


@pytest.mark.parametrize("wire", WIRES)
async def test_stop_mid_stream_closes_the_stream_keeps_the_partial_answer_and_the_chat_goes_on(
    home: Path, wire: str
) -> None:
    with serve([LONG, NEXT]) as server:
        engine, session, events = await open_chat(server, wire)
        try:
            turn = asyncio.create_task(session.send("write me something long"))
            await until(lambda: len(deltas(events)) > 200)
            assert session.turn_running and session.stop()
            result = await asyncio.wait_for(turn, 5)
            # the server saw the client hang up mid-stream
            [record] = server.wait_for(1, outcome=True, timeout=5)
            assert record["outcome"] == "client_closed"
            shown = deltas(events)
            assert result.status == "stopped" and result.text == shown
            assert shown and markdown_answer(1500, seed=3).startswith(shown) and len(shown) < 5000
            assert not session.turn_running and not session.stop()

            # kept and marked in the store: the partial text, the turn stopped, the event
            store = engine.store
            messages = store.messages(session.chat_id)
            assert [m.role for m in messages] == ["user", "assistant"]
            assert messages[-1].blocks == [{"type": "text", "text": shown}]
            turn_row = store.db["turns"].get(result.turn_id)
            assert turn_row["status"] == "stopped" and turn_row["error"] == "stopped by the owner"
            completed = [e for e in store.events(session.chat_id, ("turn.completed",))]
            assert completed[-1]["status"] == "stopped" and completed[-1]["stop_reason"] == "owner"
            assert store.events(session.chat_id, ("model.text",))[-1]["text"] == shown
            assert session.parked() is None

            # the next message gets an answer, and the model read the partial answer
            nxt = await session.send("and now?")
            assert nxt.status == "done" and nxt.text == "Here is the next answer."
            body = json.dumps(server.requests[1]["body"])
            assert json.dumps(shown[-40:])[1:-1] in body
        finally:
            await session.close()


async def test_stop_while_a_write_runs_makes_its_outcome_unknown_and_it_never_runs_again(
    home: Path, roster: str
) -> None:
    erase = {
        "parts": [
            {"text": "Erasing it."},
            {"tool": encode("notes.erase"), "id": "call_erase", "input": {"note_id": "n1"}},
        ]
    }
    with serve([erase, NEXT]) as server:
        engine, session, events = await open_chat(server, "anthropic", roster)
        slow = SlowTools(session.turns.tools)
        session.turns.tools = slow
        try:
            turn = asyncio.create_task(session.send("erase note n1"))
            await asyncio.wait_for(slow.started.wait(), 10)
            assert session.stop()
            result = await asyncio.wait_for(turn, 5)
            assert result.status == "stopped"
            inv = engine.store.invocation(session.chat_id, "call_erase")
            assert inv is not None and inv.status == "unknown" and inv.error_code == codes.OUTCOME_UNKNOWN
            failed = [e for e in events if isinstance(e, ev.ToolFailed)]
            assert failed and failed[-1].code == codes.OUTCOME_UNKNOWN and failed[-1].name == "notes.erase"

            history = [{"role": m.role, "content": m.blocks} for m in engine.store.messages(session.chat_id)]
            tool_results_answer_every_use(history)
            [answer] = [b for b in history[-1]["content"] if b.get("type") == "tool_result"]
            assert answer["is_error"] and codes.OUTCOME_UNKNOWN in answer["content"]

            # the next turn goes on from a valid history; the write was run once, never again
            slow.release.set()
            nxt = await session.send("did it work?")
            assert nxt.status == "done" and slow.runs == ["notes.erase"]
            sent = server.requests[1]["body"]["messages"]
            results = [
                b
                for m in sent
                for b in (m["content"] if isinstance(m["content"], list) else [])
                if b.get("type") == "tool_result"
            ]
            assert [r["tool_use_id"] for r in results] == ["call_erase"]
        finally:
            await session.close()


async def test_stop_while_a_read_runs_fails_it_as_stopped_and_answers_the_calls_not_yet_run(
    home: Path, roster: str
) -> None:
    both = {
        "parts": [
            {"tool": encode("notes.read"), "id": "call_read", "input": {"note_id": "n1"}},
            {"tool": encode("notes.erase"), "id": "call_later", "input": {"note_id": "n2"}},
        ]
    }
    with serve([both, NEXT]) as server:
        engine, session, _ = await open_chat(server, "openai-chat", roster)
        slow = SlowTools(session.turns.tools)
        session.turns.tools = slow
        try:
            turn = asyncio.create_task(session.send("read n1 then erase n2"))
            await asyncio.wait_for(slow.started.wait(), 10)
            session.stop()
            assert (await asyncio.wait_for(turn, 5)).status == "stopped"
            store = engine.store
            read = store.invocation(session.chat_id, "call_read")
            later = store.invocation(session.chat_id, "call_later")
            assert read is not None and read.status == "failed" and read.error_code == codes.STOPPED
            assert later is not None and later.status == "failed" and later.error_code == codes.STOPPED
            assert slow.runs == ["notes.read"]  # the erase after it never started
            history = [{"role": m.role, "content": m.blocks} for m in store.messages(session.chat_id)]
            tool_results_answer_every_use(history)
            assert (await session.send("go on")).status == "done"
        finally:
            await session.close()


async def test_stop_while_an_approval_waits_withdraws_it(home: Path, roster: str) -> None:
    erase = {"parts": [{"tool": encode("notes.erase"), "id": "call_ask", "input": {"note_id": "n1"}}]}
    approver = QueueApprover()
    with serve([erase, NEXT]) as server:
        engine, session, _ = await open_chat(server, "openai", roster, approver=approver)
        try:
            turn = asyncio.create_task(session.send("erase n1"))
            request = await asyncio.wait_for(approver.next_request(), 10)
            session.stop()
            assert (await asyncio.wait_for(turn, 5)).status == "stopped"
            assert not approver.answer(request.approval_id, Decision.ALLOW_ONCE)  # nobody waits any more
            assert engine.store.pending_approvals(session.chat_id) == []
            inv = engine.store.invocation(session.chat_id, "call_ask")
            assert inv is not None and inv.status == "failed" and inv.error_code == codes.STOPPED
            assert session.parked() is None
            assert (await session.send("never mind")).status == "done"
        finally:
            await session.close()


async def test_a_cancellation_that_is_not_a_stop_leaves_the_turn_open(home: Path) -> None:
    """The app closing mid-turn is a killed process: nothing is settled, the turn is resumable."""
    with serve([LONG]) as server:
        _, session, events = await open_chat(server, "openai-chat")
        try:
            turn = asyncio.create_task(session.send("long one"))
            await until(lambda: len(deltas(events)) > 50)
            turn.cancel()
            with pytest.raises(asyncio.CancelledError):
                await turn
            assert session.parked() is not None and not session.turn_running
        finally:
            await session.close()


def test_ask_stops_on_sigint_with_exit_130_and_keeps_the_message_and_the_partial_answer(
    home: Path, tmp_path: Path
) -> None:
    import signal

    from tests.e2e.test_signals import read_until, start_ask

    with serve([LONG]) as server:
        proc = start_ask(server, home, tmp_path)  # the same process as tests/e2e/test_signals.py's
        try:
            shown = read_until(proc, 300)
            assert len(shown) >= 300, "no streamed text on stdout"
            proc.send_signal(signal.SIGINT)
            rest, err = proc.communicate(timeout=15)
        finally:
            if proc.poll() is None:
                proc.kill()
        [record] = server.wait_for(1, outcome=True, timeout=5)
    assert proc.returncode == 130, err.decode()
    assert record["outcome"] == "client_closed"
    assert b"[stopped: the partial answer is kept]" in err and b"Traceback" not in err
    printed = (shown + rest).decode().rstrip("\n")
    store = Store(home / "deferchat.db")
    [chat] = store.chats()
    messages = store.messages(chat.id)
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[0].blocks[0]["text"] == "write me a long answer"
    kept = messages[1].blocks[0]["text"]
    assert kept.startswith(printed[:300]) and markdown_answer(1500, seed=3).startswith(kept)


async def test_chats_show_marks_the_stopped_turn_after_its_partial_answer(home: Path) -> None:
    from core.export import STOPPED_MARK, chat_markdown

    with serve([LONG, NEXT]) as server:
        engine, session, events = await open_chat(server, "openai-chat")
        try:
            turn = asyncio.create_task(session.send("long one"))
            await until(lambda: len(deltas(events)) > 100)
            session.stop()
            partial = (await asyncio.wait_for(turn, 5)).text
            await session.send("next")
            text = chat_markdown(engine.store, session.chat_id)
        finally:
            await session.close()
    assert text.count(STOPPED_MARK) == 1
    before, after = text.split(STOPPED_MARK)
    assert partial.rstrip()[-30:] in before and "Here is the next answer." in after
