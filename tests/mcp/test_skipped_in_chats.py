"""The tools a server listed unusable reach a chat's plan too: the ``plan`` event of ``ask``
and the TUI's roster panel show the same skipped entries as ``deferchat plan``."""

from __future__ import annotations

import json
import subprocess
import sys

from core.config import Settings
from core.engine import Engine
from core.store import Store
from tests.helpers import subprocess_env
from tests.mcp.test_listing import BAD_REASONS, _bad_server
from tests.tui.conftest import make_app, opened


def _config(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"mcpServers": {"bad": _bad_server()}}))
    return path


def test_the_plan_event_of_ask_names_the_rejected_tools(tmp_path):
    home = tmp_path / "home"
    roster, script = tmp_path / "roster.json", tmp_path / "script.json"
    roster.write_text(json.dumps({"agent": {"name": "t", "version": "1"}}))
    script.write_text(json.dumps({"turns": [[{"type": "text", "text": "Hello."}]]}))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tui.main",
            "ask",
            "hi",
            "--roster",
            str(roster),
            "--script",
            str(script),
            "--mcp-config",
            str(_config(tmp_path)),
            "--json",
        ],
        env=subprocess_env(home),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    plan = next(e for e in events if e["type"] == "plan")
    assert set(BAD_REASONS) <= set(plan["skipped_tool_names"])
    assert "\x1b" not in proc.stdout


async def test_the_roster_panel_lists_the_rejected_tools(home, tmp_path):
    engine = Engine(store=Store(home / "deferchat.db"), settings=Settings(), demo_delay=0)
    app = make_app(engine, mcp_config=str(_config(tmp_path)))
    async with app.run_test(size=(140, 40)) as pilot:
        await opened(pilot)
        plan = app.roster.plan
        assert set(BAD_REASONS) <= set(plan.skipped_tool_names)
        headings = [str(o.prompt) for o in app.roster.options.options if (o.id or "").startswith("section:")]
        assert headings[-1] == f"\u25be Skipped {len(plan.skipped_tool_names)}"  # shown, not folded
        shown = app.roster.shown_names()
        for name, fragment in BAD_REASONS.items():
            assert name in shown
            row = plan.placement_of(name)
            assert row is not None and row.rejected and fragment in row.reason
