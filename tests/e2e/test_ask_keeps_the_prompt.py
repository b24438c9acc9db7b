"""``deferchat ask PROMPT --chat C`` never drops PROMPT without a word (found by the soak run,
tests/bench/soak.py; issue 11: "messages lost must be 0").

A chat whose last turn is parked (or was interrupted) has that turn finished first; the prompt
is sent only if it ends done (``core/cli/ask.py``, ``_ask``: ``if result.status != "done": return
exit_for(result.status)``). When the resumed turn fails (the provider errs), ``ask`` exits 1
having printed only the old turn's error: the new prompt is not in the store, and nothing says
it was not sent. The owner typed a message and it vanished.

Either way out is fine here: the prompt is kept (stored, and sent as the next turn once the old
one has ended), or the command says in so many words that it was not sent.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from core.providers.wirenames import encode
from tests.helpers import ROOT, subprocess_env
from tests.streaming_server import serve

ROSTER = {
    "agent": {"name": "keeper", "version": "1", "deferred": []},
    "configured": [
        {
            "name": "notes.erase",
            "description": "Erase a note for good.",
            "side_effect": "WORKSPACE_WRITE",
            "input_schema": {"type": "object", "properties": {"note_id": {"type": "string"}}, "required": ["note_id"]},
        },
    ],
    "servers": [],
}
WIRE = "openai-chat"


def deferchat(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import sys; from tui.main import main; sys.exit(main())", *argv],
        cwd=ROOT,
        env=subprocess_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )


def user_texts(home: Path) -> list[str]:
    db = sqlite3.connect(home / "deferchat.db")
    try:
        return [
            b["text"]
            for (content,) in db.execute("select content from messages where role = 'user'")
            for b in json.loads(content)
            if b.get("type") == "text"
        ]
    finally:
        db.close()


@pytest.mark.slow
def test_a_prompt_after_an_unfinished_turn_that_fails_is_kept_or_said_to_be_not_sent(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    roster = tmp_path / "roster.json"
    roster.write_text(json.dumps(ROSTER))
    script = [
        {
            "parts": [
                {"text": "Erasing it."},
                {"tool": encode("notes.erase"), "id": "call_erase", "input": {"note_id": "n1"}},
            ]
        },
        {"status": 500, "headers": {"x-should-retry": "false"}},  # the resumed turn's next request fails
        {"parts": [{"text": "Here is the answer to the second prompt."}]},
    ]
    with serve(script) as server:
        first = deferchat(
            home,
            "ask",
            "erase note n1",
            "--provider",
            WIRE,
            "--model",
            "m",
            "--base-url",
            server.url_for(WIRE),
            "--roster",
            str(roster),
            "--approve",
            "park",
        )
        assert first.returncode == 3, first.stderr  # parked on the write's approval
        chat = sqlite3.connect(home / "deferchat.db").execute("select id from chats").fetchone()[0]

        second = deferchat(home, "ask", "what is the second answer?", "--chat", chat, "--approve", "yes")

    assert "Traceback" not in second.stderr
    assert "provider.server_error" in second.stderr  # the old turn failed, and said so
    kept = "what is the second answer?" in user_texts(home)
    said = "not sent" in (second.stderr + second.stdout).lower()
    assert kept or said, (second.returncode, second.stderr)
