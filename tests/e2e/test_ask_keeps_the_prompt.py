"""``deferchat ask PROMPT --chat C`` never drops PROMPT (found by the soak run, tests/bench/soak.py;
issue 11: "messages lost must be 0"), and never refuses it (issue 19, item 4).

A chat whose last turn is parked (or was interrupted) takes the prompt: the unfinished turn is
closed as a stop closes one first (``core/chat/turn.py``: its approval cancelled, its call answered
as not run, the turn ``stopped``), and the prompt is sent as the next turn. ``deferchat resume``
continues the unfinished turn instead.
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
def test_a_prompt_after_an_unfinished_turn_closes_it_and_is_answered(tmp_path: Path) -> None:
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
        db = sqlite3.connect(home / "deferchat.db")
        chat = db.execute("select id from chats").fetchone()[0]
        db.close()

        second = deferchat(home, "ask", "what is the second answer?", "--chat", chat, "--approve", "yes")
        requests = list(server.requests)

    assert second.returncode == 0, second.stderr
    assert "Traceback" not in second.stderr
    assert "Here is the answer to the second prompt." in second.stdout
    assert user_texts(home) == ["erase note n1", "what is the second answer?"]
    db = sqlite3.connect(home / "deferchat.db")
    try:
        turns = [s for (s,) in db.execute("select status from turns order by started_at")]
        erase = db.execute("select status, error_code from invocations where call_id = 'call_erase'").fetchone()
        approvals = [s for (s,) in db.execute("select status from approvals")]
    finally:
        db.close()
    assert turns == ["stopped", "done"]
    assert erase == ("failed", "tool.stopped") and approvals == ["cancelled"]  # never run, never approved
    # the prompt's request answered the erase as not run before the new text
    sent = json.dumps(requests[-1].get("body", requests[-1]))
    assert "call_erase" in sent and "was not run" in sent and "what is the second answer?" in sent
