"""The real ``deferchat`` binary in tmux against the loopback streaming server (a process of its
own, speaking OpenAI Chat Completions): a long Markdown answer grows on screen across captures
while the server is still sending it; Esc stops it at once (the server sees the connection
close); the partial answer stays on screen and in the store (``deferchat chats show``, which
marks the stopped turn); the next message gets the server's second answer, and the request
for it carried the partial answer.

tmux runs on a private socket, so the test never touches another tmux server."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from core.export import STOPPED_MARK
from tests.helpers import ROOT, subprocess_env
from tests.streaming_server import markdown_answer, serve_process
from tests.tui.test_tmux_smoke import Tmux, deferchat_binary
from tui.router import STOPPED_NOTE

TOKENS, SEED = 1500, 7
ANSWER = markdown_answer(TOKENS, seed=SEED)
SECOND = "Second answer: the chat goes on after the stop."
SCRIPT = {
    "responses": [
        {"parts": [{"markdown": TOKENS, "seed": SEED}], "chunk_delay": 0.03},
        {"parts": [{"text": SECOND}], "chunk_delay": 0.01},
    ]
}


def words(text: str) -> list[str]:
    """The answer's words as a screen shows them: no Markdown marks, no table or list furniture."""
    text = re.sub(r"[*`#|]", " ", text)
    return [w for w in text.split() if re.fullmatch(r"[A-Za-z][A-Za-z,.;!?'()-]*", w)]


ANSWER_WORDS = words(ANSWER)
ANSWER_TEXT = " ".join(ANSWER_WORDS)


def progress(screen: str) -> int:
    """How far into the answer the screen shows: the furthest position in the answer of a run
    of five or more of its words on one screen line (the log's columns: the roster is right)."""
    furthest = -1
    for line in screen.splitlines():
        shown = words(line[:78])
        for i in range(len(shown) - 4):
            run = " ".join(shown[i : i + 5])
            at = ANSWER_TEXT.find(run)
            if at >= 0:
                furthest = max(furthest, at + len(run))
    return furthest


def deferchat(home: Path, *args: str) -> str:
    return subprocess.run(
        [deferchat_binary(), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=subprocess_env(home),
        cwd=str(ROOT),
    ).stdout


def test_streaming_stop_keep_and_go_on_in_the_real_binary(tmp_path: Path) -> None:
    assert shutil.which("tmux"), "tmux is needed for this test (apt-get install tmux)"
    home = tmp_path / "home"
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    log = tmp_path / "server.log"
    with serve_process(script, log=log, timeout=300) as server:
        tmux = Tmux(f"deferchat-stream-{os.getpid()}", subprocess_env(home))
        app = [
            deferchat_binary(),
            "--provider",
            "openai-chat",
            "--model",
            "loopback",
            "--base-url",
            server.url_for("openai-chat"),
        ]
        tmux("-f", os.devnull, "new-session", "-d", "-s", "smoke", "-x", "120", "-y", "40", *app)
        try:
            tmux.wait_for("openai-chat/loopback", "defined", timeout=60)
            tmux("send-keys", "-t", "smoke", "-l", "write me the long answer")
            tmux("send-keys", "-t", "smoke", "Enter")

            # the text grows across captures while the server is still sending it
            seen: list[int] = []
            deadline = time.monotonic() + 60
            while len(set(seen)) < 4 and time.monotonic() < deadline:
                at = progress(tmux.screen())
                if at > 0 and (not seen or at > seen[-1]):
                    seen.append(at)
                time.sleep(0.3)
            [first] = server.wait_for(1, timeout=5)
            assert "outcome" not in first, "the answer only showed once the stream had ended"
            assert len(seen) >= 4 and seen == sorted(seen), seen

            # Esc stops it at once: the server sees the client hang up mid-stream
            tmux("send-keys", "-t", "smoke", "Escape")
            screen = tmux.wait_for(STOPPED_NOTE[:30], timeout=10)
            [first] = server.wait_for(1, outcome=True, timeout=10)
            assert first["outcome"] == "client_closed" and first["chunks"] < TOKENS
            shown_at_stop = progress(screen)
            assert shown_at_stop >= seen[-1]  # the partial answer is still on screen

            # ... and in the store, marked as stopped
            chats = [json.loads(line) for line in deferchat(home, "chats", "list", "--json").splitlines()]
            [chat] = chats
            shown = deferchat(home, "chats", "show", chat["id"])
            assert STOPPED_MARK in shown
            kept = shown.split("## Assistant", 1)[1].split(STOPPED_MARK, 1)[0]
            kept_words = words(kept)
            assert 50 < len(kept_words) < len(ANSWER_WORDS)
            assert ANSWER_TEXT.startswith(" ".join(kept_words))

            # the next message gets the second answer, from a history that holds the partial one
            tmux("send-keys", "-t", "smoke", "-l", "and then?")
            tmux("send-keys", "-t", "smoke", "Enter")
            tmux.wait_for(SECOND, timeout=30)
            second = server.wait_for(2, outcome=True, timeout=10)[1]
            assert second["outcome"] == "completed"
            sent = second["body"]["messages"]
            assert [m["role"] for m in sent if m["role"] != "system"][-3:] == ["user", "assistant", "user"]
            assistant = next(m for m in reversed(sent) if m["role"] == "assistant")
            assert words(assistant["content"]) == kept_words

            tmux.quit()
            assert not tmux.alive(), "deferchat did not exit on ctrl+q"
        finally:
            tmux("kill-server", check=False)


if __name__ == "__main__":  # pragma: no cover - run by hand: python -m tests.tui.test_tmux_streaming
    sys.exit(subprocess.call([sys.executable, "-m", "pytest", "-q", __file__]))
