"""The cost meter counts every request the provider received (issue 19, item 8): one it refused
(a 429 before a retry, a 500 after the retries), one stopped mid-answer, one broken off
mid-answer. The provider's usage is kept where it came (Anthropic's ``message_start``), the rest
is estimated and marked; a request the provider never answered (the connection refused) is not
counted. Against the loopback streaming server, on every wire, through the real engine."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from core import events as ev
from core.chat.meter import chat_usage, row_cells, totals_text
from core.engine import ChatOptions, Engine
from core.pipeline.approvals import Decision, FixedApprover
from core.store import Store
from tests.helpers import deferchat
from tests.streaming_server import WIRES, serve
from tests.unit.test_stop import until

USAGE = {"input_tokens": 120, "output_tokens": 40, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
ANSWER = {"parts": [{"text": "The answer."}], "usage": USAGE}
LONG = {"parts": [{"markdown": 1500, "seed": 3}], "chunk_delay": 0.01, "usage": USAGE}


async def open_chat(url: str, wire: str) -> tuple[Engine, Any, list[ev.Event]]:
    events: list[ev.Event] = []
    engine = Engine(Store())
    session = await engine.open_chat(
        None,
        ChatOptions(provider=wire, model="m", base_url=url, start_demo_servers=False),
        approver=FixedApprover(Decision.ALLOW_ONCE),
        subscribers=[events.append],
    )
    return engine, session, events


def usage_events(events: list[ev.Event]) -> list[ev.UsageEvent]:
    return [e for e in events if isinstance(e, ev.UsageEvent)]


@pytest.mark.parametrize("wire", WIRES)
async def test_a_refused_attempt_before_the_retry_is_a_request_of_its_own(home: Path, wire: str) -> None:
    with serve([{"status": 429, "retry_after": 0}, ANSWER]) as server:
        engine, session, events = await open_chat(server.url_for(wire), wire)
        try:
            result = await session.send("hello")
            assert result.status == "done" and len(server.requests) == 2
            refused, done = usage_events(events)
            assert (refused.status, refused.http_status, refused.estimated) == ("failed", 429, False)
            assert (refused.input_tokens, refused.output_tokens, refused.cost_usd) == (0, 0, 0.0)
            assert done.status == "done" and done.input_tokens + done.cache_read_input_tokens == 120
            meter = chat_usage(engine.store, session.chat_id)
            assert meter.totals.requests == 2 and meter.totals.estimated == 0
            assert row_cells(meter.requests[0])[0] == "1 refused (HTTP 429)"
        finally:
            await session.close()


@pytest.mark.parametrize("wire", WIRES)
async def test_a_stopped_request_is_counted_with_an_estimate_marked_as_such(home: Path, wire: str) -> None:
    with serve([LONG, ANSWER]) as server:
        engine, session, events = await open_chat(server.url_for(wire), wire)
        try:
            turn = asyncio.create_task(session.send("write me something long"))
            await until(lambda: len("".join(e.text for e in events if isinstance(e, ev.ModelTextDelta))) >= 300)
            assert session.stop()
            assert (await asyncio.wait_for(turn, 5)).status == "stopped"
            [stopped] = usage_events(events)
            assert stopped.status == "stopped" and stopped.estimated and stopped.output_tokens > 20
            if wire == "anthropic":  # message_start said the prompt's tokens: the provider's, kept
                assert stopped.input_tokens == 120
            else:  # the prompt estimated from the request
                assert stopped.input_tokens > 0
            # the usage comes after the partial answer's text, as a finished request's does
            kinds = [e.type for e in events]
            assert kinds.index("model.text") < kinds.index("usage") < kinds.index("turn.completed")

            await session.send("and then?")
            meter = chat_usage(engine.store, session.chat_id)
            assert meter.totals.requests == 2 and meter.totals.estimated == 1
            assert meter.requests[0].ended == "stopped" and row_cells(meter.requests[0])[3].startswith("~")
            assert "1 estimated" in totals_text(meter.totals)
            assert meter.to_json(session.chat_id)["requests"][0]["status"] == "stopped"
        finally:
            await session.close()


@pytest.mark.parametrize("wire", WIRES)
async def test_a_request_broken_off_mid_answer_and_one_refused_after_the_retries_both_count(
    home: Path, wire: str
) -> None:
    script = [
        {"parts": [{"text": "The start of an answer that never ends. " * 20}], "cut_after_chunks": 30},
        *[{"status": 500}] * 3,  # the adapter's two retries, then the failure
    ]
    with serve(script) as server:
        engine, session, events = await open_chat(server.url_for(wire), wire)
        try:
            assert (await session.send("hello")).status == "failed"
            [cut] = usage_events(events)
            assert (cut.status, cut.estimated, cut.http_status) == ("failed", True, None) and cut.output_tokens > 0
            events.clear()
            assert (await session.retry()).status == "failed"
            assert [(u.status, u.http_status) for u in usage_events(events)] == [("failed", 500)] * 3
            assert chat_usage(engine.store, session.chat_id).totals.requests == 4
        finally:
            await session.close()


async def test_a_request_the_provider_never_received_is_not_counted(home: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    engine, session, events = await open_chat(f"http://127.0.0.1:{port}/v1", "openai-chat")
    try:
        assert (await session.send("hello")).status == "failed"
        assert usage_events(events) == [] and chat_usage(engine.store, session.chat_id).totals.requests == 0
    finally:
        await session.close()


def test_chats_show_usage_lists_the_unfinished_requests(tmp_path: Path) -> None:
    """The real command reads them back from the stored events."""
    home = tmp_path / "home"
    home.mkdir()
    store = Store(home / "deferchat.db")
    chat = store.create_chat(title="t", provider="anthropic", model="claude-sonnet-4-5", strategy="wrapper")
    for e in (
        ev.UsageEvent(provider="anthropic", model="claude-sonnet-4-5", status="failed", http_status=529, cost_usd=0.0),
        ev.UsageEvent(
            provider="anthropic",
            model="claude-sonnet-4-5",
            input_tokens=1000,
            output_tokens=50,
            status="stopped",
            estimated=True,
            cost_usd=0.00375,
        ),
        ev.UsageEvent(
            provider="anthropic", model="claude-sonnet-4-5", input_tokens=1000, output_tokens=10, cost_usd=0.003
        ),
    ):
        store.add_event(chat, "turn_1", e.type, e.to_json())
    run = deferchat(home, "chats", "show", chat, "--usage")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[1].startswith("1 refused (HTTP 529)") and lines[2].startswith("2 stopped")
    assert "~1,000" in lines[2] and "~$0.0037" in lines[2]
    assert "3 requests" in lines[-1] and "~$0.0067" in lines[-1] and "1 estimated" in lines[-1]
    shown = json.loads(deferchat(home, "chats", "show", chat, "--usage", "--json").stdout)
    assert shown["totals"]["estimated_requests"] == 1
    assert [r["status"] for r in shown["requests"]] == ["failed", "stopped", "done"]
