"""A switch in the real ``deferchat`` binary, in tmux: the chat opens on the offline demo, the
model picker (F10) moves it to an OpenAI-compatible endpoint (the loopback streaming server, a
process of its own, found through ``OPENAI_BASE_URL``), the header changes, and the next answer
streams from the server. tmux runs on a private socket."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from tests.helpers import subprocess_env
from tests.streaming_server import serve_process
from tests.tui.test_tmux_smoke import Tmux, deferchat_binary
from tests.tui.test_tmux_streaming import deferchat

ANSWER = "Streaming from the loopback endpoint after the switch."
SCRIPT = {"responses": [{"parts": [{"text": ANSWER}], "chunk_delay": 0.02}], "models": [{"id": "loopback-1"}]}


def test_the_model_picker_switches_the_chat_and_the_next_answer_streams(tmp_path: Path) -> None:
    assert shutil.which("tmux"), "tmux is needed for this test (apt-get install tmux)"
    home = tmp_path / "home"
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    with serve_process(script, log=tmp_path / "server.log", timeout=300) as server:
        env = subprocess_env(home, OPENAI_BASE_URL=server.url_for("openai-chat"))
        tmux = Tmux(f"deferchat-switch-{os.getpid()}", env)
        tmux("-f", os.devnull, "new-session", "-d", "-s", "smoke", "-x", "120", "-y", "40", deferchat_binary())
        try:
            tmux.wait_for("demo/demo-1", "defined", timeout=60)
            tmux("send-keys", "-t", "smoke", "F10")
            tmux.wait_for("Switch model", "openai-chat/loopback-1", timeout=20)  # listed by the server
            tmux("send-keys", "-t", "smoke", "-l", "openai-chat:loopback-1")
            tmux("send-keys", "-t", "smoke", "Enter")
            screen = tmux.wait_for("openai-chat/loopback-1", "active-tools", timeout=20)
            assert "switched from demo/demo-1 to openai-chat/loopback-1" in " ".join(screen.split())

            tmux("send-keys", "-t", "smoke", "-l", "hello after the switch")
            tmux("send-keys", "-t", "smoke", "Enter")
            tmux.wait_for(ANSWER, timeout=30)
            deadline = time.monotonic() + 10
            while not [r for r in server.requests if r["wire"] == "openai-chat" and "outcome" in r]:
                assert time.monotonic() < deadline, server.requests
                time.sleep(0.05)
            # the picker listed the server's models (GET /v1/models); the one turn went to Chat Completions
            assert {r["wire"] for r in server.requests} == {"models", "openai-chat"}
            [request] = [r for r in server.requests if r["wire"] == "openai-chat"]
            assert request["outcome"] == "completed"
            assert request["body"]["model"] == "loopback-1"

            tmux.quit()
        finally:
            tmux("kill-server", check=False)
    listed = deferchat(home, "chats", "list", "--json")
    [chat] = [json.loads(line) for line in listed.splitlines()]
    assert (chat["provider"], chat["model"], chat["strategy"]) == ("openai-chat", "loopback-1", "active-tools")
