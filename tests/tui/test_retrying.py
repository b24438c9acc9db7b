"""While a provider's retry waits, the status line says "retrying in N s (attempt k): reason",
counting down, and the stop key still stops the turn: the real app against the loopback
streaming server (tests/streaming_server.py) answering 429 with ``retry-after`` first."""

from __future__ import annotations

import asyncio
from typing import Any

from core.events import ModelTextDelta, ProviderRetrying, TurnCompleted
from tests.streaming_server import serve
from tests.tui.conftest import make_app, opened, send, settled, until
from tui.app import DeferchatApp
from tui.retry_status import RetryCountdown, retry_text
from tui.router import STOPPED_NOTE
from tui.state import AssistantItem, NoteItem

ANSWER = "The answer, after the wait."


def status(app: DeferchatApp) -> str:
    return str(app.status_line.render()) if app.status_line.display else ""


async def test_the_wait_counts_down_on_the_status_line_and_the_answer_arrives(engine: Any) -> None:
    # the answer streams for a while, so its text starts while the turn still runs
    script = [{"status": 429, "retry_after": 2}, {"parts": [{"text": ANSWER, "chunk_chars": 4}], "chunk_delay": 0.1}]
    with serve(script) as server:
        app = make_app(engine, provider="openai-chat", model="m", base_url=server.url_for("openai-chat"))
        async with app.run_test(size=(120, 40)) as pilot:
            await opened(pilot)
            written: list[str] = []  # every text the status line is given, in order
            set_status = app.set_status

            def record(text: str) -> None:
                written.append(text)
                set_status(text)

            app.set_status = record  # type: ignore[method-assign]
            await send(pilot, "hello")
            await until(pilot, lambda: status(app).startswith("retrying in"), timeout=10)
            assert app.turn_running and len(server.requests) == 1
            await until(pilot, lambda: not app.turn_running, timeout=15)
            await settled(pilot)
            working = "Working\u2026 (Esc stops)"
            reason = "(attempt 1): rate limited (HTTP 429) \u2014 Esc stops"
            shown = [t for t in written if t]
            # the turn's status, the wait counting down each second, the turn's status again once
            # the wait is over (the model then speaks), and the line is clear when the turn ends
            assert shown[:3] == [working, f"retrying in 2 s {reason}", f"retrying in 1 s {reason}"], written
            assert shown[-1] == working and written[-1] == "", written
            assert all(t.startswith("retrying") for t in shown[1:-1]), written
            assert status(app) == "" and not app.retry_status.active
            answers = [i.text for i in app.log_view.items if isinstance(i, AssistantItem)]
            assert answers == [ANSWER]
            assert [r.get("outcome") for r in server.requests] == ["status", "completed"]
            gap = server.requests[1]["received"] - server.requests[0]["received"]
            assert gap >= 1.9  # the retry-after was honoured, not skipped


async def test_esc_during_the_wait_stops_the_turn_at_once(engine: Any) -> None:
    script = [{"status": 429, "retry_after": 30}, {"parts": [{"text": ANSWER}]}]
    with serve(script) as server:
        app = make_app(engine, provider="openai-chat", model="m", base_url=server.url_for("openai-chat"))
        async with app.run_test(size=(120, 40)) as pilot:
            await opened(pilot)
            await send(pilot, "hello")
            await until(pilot, lambda: status(app).startswith("retrying in 30 s"), timeout=10)
            loop = asyncio.get_running_loop()
            pressed = loop.time()
            await pilot.press("escape")
            await until(pilot, lambda: not app.turn_running, timeout=3)
            assert loop.time() - pressed < 2
            await settled(pilot)
            assert not status(app).startswith("retrying") and not app.retry_status.active
            notes = [i.text for i in app.log_view.items if isinstance(i, NoteItem)]
            assert STOPPED_NOTE in notes
            assert len(server.requests) == 1  # the retry never went
            chat_id = app.session.chat_id
            assert engine.store.events(chat_id, ("turn.completed",))[-1]["status"] == "stopped"


class FakeHost:
    """The status line and timer of an app, for the countdown's own rules."""

    def __init__(self) -> None:
        self.status_text = "Working\u2026 (Esc stops)"
        self.callbacks: list[Any] = []
        self.stopped = 0

    def set_status(self, text: str) -> None:
        self.status_text = text

    def set_interval(self, interval: float, callback: Any) -> Any:
        self.callbacks.append(callback)
        host = self

        class Timer:
            def stop(self) -> None:
                host.stopped += 1

        return Timer()


def test_the_countdown_gives_the_line_back_and_never_takes_it_from_someone_else() -> None:
    now = [100.0]
    host = FakeHost()
    countdown = RetryCountdown(host, clock=lambda: now[0])
    countdown.see(ProviderRetrying(seconds=2.5, attempt=1, reason="overloaded (HTTP 529)"))
    assert (
        host.status_text
        == retry_text(2.5, 1, "overloaded (HTTP 529)")
        == "retrying in 3 s (attempt 1): overloaded (HTTP 529) \u2014 Esc stops"
    )
    now[0] += 2.6
    host.callbacks[0]()
    assert host.status_text.startswith("retrying now (attempt 1)")
    countdown.see(ModelTextDelta(text="Hi"))  # the model speaks: the line says "Working" again
    assert host.status_text == "Working\u2026 (Esc stops)" and not countdown.active and host.stopped == 1

    countdown.see(ProviderRetrying(seconds=5, attempt=2, reason="rate limited (HTTP 429)"))
    host.set_status("Stopping\u2026")  # the app took the line
    host.callbacks[1]()
    assert host.status_text == "Stopping\u2026" and not countdown.active
    countdown.see(TurnCompleted(turn_id="t", status="stopped"))
    assert host.status_text == "Stopping\u2026"
