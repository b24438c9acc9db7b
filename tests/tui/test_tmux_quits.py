"""Quits that lose nothing (issue 19, item 4), in the real binary in tmux against the loopback
streaming server: ctrl+q while an answer streams, and while an approval waits, asks first; "Quit
and stop" stops the turn as Esc does (the partial answer kept, the turn stopped); the reopened
chat shows what was stored and takes the next message at once. A chat whose process was killed
(kill -9) mid-answer reopens with its unfinished turn: f5 resumes it, and a message after that
is answered too.

tmux runs on a private socket, so the test never touches another tmux server."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from core.export import STOPPED_MARK
from core.providers.wirenames import encode
from tests.helpers import subprocess_env
from tests.streaming_server import serve_process
from tests.tui.test_tmux_smoke import Tmux, deferchat_binary
from tests.tui.test_tmux_streaming import ANSWER_TEXT, deferchat, progress, words
from tui.controllers.approvals import UNFINISHED

LONG = {"parts": [{"markdown": 1500, "seed": 7}], "chunk_delay": 0.03}


def script(tmp_path: Path, *responses: dict) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"responses": list(responses)}), encoding="utf-8")
    return path


def start(tmux: Tmux, *args: str) -> None:
    tmux("-f", os.devnull, "new-session", "-d", "-s", "smoke", "-x", "120", "-y", "40", deferchat_binary(), *args)


def ended(tmux: Tmux, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while tmux.alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    return not tmux.alive()


def say(tmux: Tmux, text: str) -> None:
    tmux("send-keys", "-t", "smoke", "-l", text)
    tmux("send-keys", "-t", "smoke", "Enter")


def the_chat(home: Path) -> str:
    [chat] = [json.loads(line) for line in deferchat(home, "chats", "list", "--json").splitlines()]
    return chat["id"]


def turns(home: Path) -> list[str]:
    db = sqlite3.connect(home / "deferchat.db")
    try:
        return [s for (s,) in db.execute("select status from turns order by started_at")]
    finally:
        db.close()


@pytest.mark.slow
@pytest.mark.timeout(300)  # three starts of the real app, on a shared machine
def test_quit_mid_stream_and_mid_approval_asks_keeps_the_answer_and_the_chat_takes_the_next_message(
    tmp_path: Path,
) -> None:
    assert shutil.which("tmux"), "tmux is needed for this test (apt-get install tmux)"
    home = tmp_path / "home"
    note = {"tool": encode("notes.create"), "id": "call_note", "input": {"title": "groceries", "body": "milk"}}
    responses = (
        LONG,
        {"parts": [{"text": "Second answer, after the quit."}]},
        {"parts": [{"text": "I will write that note."}, note]},
        {"parts": [{"text": "Third answer, after the second quit."}]},
    )
    with serve_process(script(tmp_path, *responses), log=tmp_path / "server.log", timeout=300) as server:
        url = server.url_for("openai-chat")
        tmux = Tmux(f"deferchat-quits-{os.getpid()}", subprocess_env(home))
        try:
            start(tmux, "--provider", "openai-chat", "--model", "loopback", "--base-url", url)
            tmux.wait_for("openai-chat/loopback", "defined", timeout=60)
            say(tmux, "write me the long answer")
            server.wait_for(1, timeout=20)
            time.sleep(1.5)  # well into the answer
            tmux("send-keys", "-t", "smoke", "C-q")
            tmux.wait_for("A turn is running. Quit and stop it?", "Stay (n)", timeout=10)
            tmux("send-keys", "-t", "smoke", "n")  # stay: the answer goes on
            tmux.wait_for("Esc stops", timeout=5)
            assert tmux.alive()
            tmux("send-keys", "-t", "smoke", "C-q")
            tmux.wait_for("Quit and stop (y)", timeout=10)
            tmux("send-keys", "-t", "smoke", "y")
            assert ended(tmux), "deferchat did not quit"
            [first] = server.wait_for(1, outcome=True, timeout=10)
            assert first["outcome"] == "client_closed"  # stopped mid-stream, not finished
            chat = the_chat(home)
            assert turns(home) == ["stopped"]
            shown = deferchat(home, "chats", "show", chat)
            kept = words(shown.split("## Assistant", 1)[1].split(STOPPED_MARK, 1)[0])
            assert len(kept) > 20 and ANSWER_TEXT.startswith(" ".join(kept))  # the partial answer, stored

            # reopened: what was stored is shown, and the next message is answered at once
            start(tmux, "--chat", chat)
            deadline = time.monotonic() + 60
            while progress(tmux.screen()) <= 0 and time.monotonic() < deadline:  # the partial answer's words
                time.sleep(0.2)
            assert progress(tmux.screen()) > 0, tmux.screen()
            say(tmux, "and then?")
            tmux.wait_for("Second answer, after the quit.", timeout=30)

            # mid-approval: ctrl+q asks, and the quit cancels the approval with the turn
            say(tmux, "write a note")
            tmux.wait_for("Waiting for your approval", timeout=30)
            tmux("send-keys", "-t", "smoke", "C-q")
            tmux.wait_for("A turn is running and waits for your approval. Quit and stop it?", timeout=10)
            tmux("send-keys", "-t", "smoke", "y")
            assert ended(tmux), "deferchat did not quit"
            assert turns(home) == ["stopped", "done", "stopped"]
            start(tmux, "--chat", chat)
            tmux.wait_for("I will write that note.", timeout=60)
            say(tmux, "never mind, just answer")
            tmux.wait_for("Third answer, after the second quit.", timeout=30)
            assert "Waiting for your approval" not in tmux.screen()
            tmux("send-keys", "-t", "smoke", "C-q")  # no turn runs: it quits without asking
            assert ended(tmux)
        finally:
            tmux("kill-server", check=False)
    assert turns(home) == ["stopped", "done", "stopped", "done"]
    db = sqlite3.connect(home / "deferchat.db")
    try:
        assert [s for (s,) in db.execute("select status from approvals")] == ["cancelled"]
        assert db.execute("select status from invocations where call_id = 'call_note'").fetchone() == ("failed",)
    finally:
        db.close()


@pytest.mark.slow
@pytest.mark.timeout(300)  # three starts of the real app, on a shared machine
def test_a_chat_killed_mid_answer_reopens_f5_resumes_it_and_the_next_message_is_answered(tmp_path: Path) -> None:
    assert shutil.which("tmux"), "tmux is needed for this test (apt-get install tmux)"
    home = tmp_path / "home"
    responses = (
        LONG,
        {"parts": [{"text": "Resumed: the answer once more, whole."}]},
        {"parts": [{"text": "And the next message is answered too."}]},
    )
    with serve_process(script(tmp_path, *responses), log=tmp_path / "server.log", timeout=300) as server:
        url = server.url_for("openai-chat")
        tmux = Tmux(f"deferchat-kill-{os.getpid()}", subprocess_env(home))
        try:
            start(tmux, "--provider", "openai-chat", "--model", "loopback", "--base-url", url)
            tmux.wait_for("openai-chat/loopback", "defined", timeout=60)
            say(tmux, "write me the long answer")
            server.wait_for(1, timeout=20)
            time.sleep(1.0)
            pid = int(tmux("display-message", "-p", "-t", "smoke", "#{pane_pid}").stdout.strip())
            os.kill(pid, signal.SIGKILL)  # nothing is stopped, nothing is stored beyond what was
            assert ended(tmux)
            chat = the_chat(home)
            assert turns(home) == ["running"]  # left unfinished

            start(tmux, "--chat", chat)
            tmux.wait_for(UNFINISHED[:40], timeout=60)
            tmux("send-keys", "-t", "smoke", "F5")
            tmux.wait_for("Resumed: the answer once more, whole.", timeout=30)
            say(tmux, "thanks")
            tmux.wait_for("And the next message is answered too.", timeout=30)
            tmux("send-keys", "-t", "smoke", "C-q")
            assert ended(tmux)
        finally:
            tmux("kill-server", check=False)
    assert turns(home) == ["done", "done"]
