"""SIGTERM and SIGHUP end the full-screen app the way a quit does (issue 23, item 8).

They killed the app mid-answer: the partial answer was lost and the turn left ``running``. Now
each calls ``DeferchatApp.stop_and_quit`` (the turn stopped as Esc stops it, its partial answer
kept) and the app exits 143 or 129. With Pilot the handler is called as the loop would call it
(a Pilot app runs in pytest's own process, whose signals it does not take); in the real binary
in tmux, the process gets the real signals, and a closed terminal (tmux's kill-session).
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from core.export import STOPPED_MARK
from tests.helpers import subprocess_env
from tests.streaming_server import serve, serve_process
from tests.tui.conftest import make_app, opened, send, until
from tests.tui.test_tmux_quits import LONG, say, script, the_chat, turns
from tests.tui.test_tmux_smoke import Tmux, deferchat_binary
from tests.tui.test_tmux_streaming import ANSWER_TEXT, deferchat, words
from tui.controllers.quit_signals import QuitSignals
from tui.state import AssistantItem


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
async def test_a_quit_signal_mid_stream_stops_the_turn_keeps_the_answer_and_sets_the_exit_code(
    engine, sig: signal.Signals
) -> None:
    words_out = {"parts": [{"text": "word " * 400, "chunk_chars": 5}], "chunk_delay": 0.02}
    with serve([words_out]) as server:
        app = make_app(engine, provider="openai-chat", model="m", base_url=server.url_for("openai-chat"))
        async with app.run_test(size=(110, 32)) as pilot:
            await opened(pilot)
            chat_id = app.session.chat_id  # type: ignore[union-attr]
            await send(pilot, "go on and on")
            await until(pilot, lambda: any(isinstance(i, AssistantItem) and i.text for i in app.log_view.items))
            app.quit_signals.received(int(sig))  # what the event loop calls when the signal comes
            await until(pilot, lambda: not app.is_running)
    assert app.quit_signals.exit_code(app.return_value) == 128 + sig
    rows = engine.store.db.execute("select status from turns where chat_id = ?", [chat_id]).fetchall()
    assert [s for (s,) in rows] == ["stopped"]
    [answer] = [m for m in engine.store.messages(chat_id) if m.role == "assistant"]
    assert answer.blocks[0]["text"].startswith("word word")


def test_a_second_signal_exits_at_once_and_no_signal_keeps_the_apps_own_code() -> None:
    calls: list[object] = []

    class App:
        async def stop_and_quit(self) -> None:
            calls.append("stop_and_quit")

        def exit(self, result: object = None, return_code: int = 0, message: object = None) -> None:
            calls.append(("exit", result))

    import asyncio

    async def scenario() -> None:
        signals = QuitSignals(App())
        assert signals.exit_code(None) == 0 and signals.exit_code(3) == 3
        signals.received(int(signal.SIGTERM))
        await asyncio.sleep(0)
        signals.received(int(signal.SIGHUP))
        assert signals.exit_code(0) == 143

    asyncio.run(scenario())
    assert calls == ["stop_and_quit", ("exit", 128 + signal.SIGHUP)]


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "terminal closed"])
def test_the_real_app_stops_the_turn_on_a_quit_signal_and_keeps_the_partial_answer(tmp_path: Path, how: str) -> None:
    """The real binary in tmux, under a shell that writes down its exit code: ``kill`` and a
    hangup mid-answer, or the window closed (tmux's kill-session hangs up its terminal)."""
    assert shutil.which("tmux"), "tmux is needed for this test (apt-get install tmux)"
    home = tmp_path / "home"
    code_file = tmp_path / "exit-code"
    with serve_process(script(tmp_path, LONG), log=tmp_path / "server.log", timeout=300) as server:
        url = server.url_for("openai-chat")
        tmux = Tmux(f"deferchat-signals-{os.getpid()}-{how.replace(' ', '-')}", subprocess_env(home))
        app = f"{deferchat_binary()} --provider openai-chat --model loopback --base-url {url}"
        try:
            tmux("-f", os.devnull, "new-session", "-d", "-s", "smoke", "-x", "120", "-y", "40")
            tmux("send-keys", "-t", "smoke", "-l", f"{app}; echo $? > {code_file}")
            tmux("send-keys", "-t", "smoke", "Enter")
            tmux.wait_for("openai-chat/loopback", "defined", timeout=60)
            say(tmux, "write me the long answer")
            server.wait_for(1, timeout=20)
            time.sleep(1.5)  # well into the answer
            shell = int(tmux("display-message", "-p", "-t", "smoke", "#{pane_pid}").stdout.strip())
            [pid] = [int(p) for p in Path(f"/proc/{shell}/task/{shell}/children").read_text().split()]
            if how == "terminal closed":
                tmux("kill-session", "-t", "smoke")  # the window goes: the app gets SIGHUP
            else:
                os.kill(pid, getattr(signal, how))
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.2)
            assert not _alive(pid), f"deferchat did not end ({how})"
            if how != "terminal closed":  # its shell is still there to say how it ended
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and not code_file.exists():
                    time.sleep(0.1)
                assert int(code_file.read_text()) == 128 + getattr(signal, how), tmux.screen()
            [first] = server.wait_for(1, outcome=True, timeout=10)
            assert first["outcome"] == "client_closed"  # stopped mid-stream, the connection closed
        finally:
            tmux("kill-server", check=False)
    assert turns(home) == ["stopped"]
    shown = deferchat(home, "chats", "show", the_chat(home))
    kept = words(shown.split("## Assistant", 1)[1].split(STOPPED_MARK, 1)[0])
    assert len(kept) > 10 and ANSWER_TEXT.startswith(" ".join(kept))
    db = sqlite3.connect(home / "deferchat.db")
    try:
        assert db.execute("select count(*) from messages where role = 'user'").fetchone() == (1,)
    finally:
        db.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] not in ("Z", "X")
    except OSError:
        return False
