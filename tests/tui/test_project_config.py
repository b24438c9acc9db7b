"""A project's ``.mcp.json`` asks first, in the TUI: a dialog before the chat starts its servers.

The project dir is the app's working directory; its file names a real stdio MCP server
(tests/mcp_servers/env_report.py) behind a one-line wrapper that writes a marker file the
moment it runs, so "no process" is a file that does not exist. Its entry reads ``${SOME_VAR}``:
the dialog names the variable, never its value. Approvals land in the shared ``home``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from core.mcp.approval import approvals_path
from tests.tui.conftest import make_app, opened, until
from tui.app import DeferchatApp
from tui.screens.project_config import ProjectConfigDialog

REPO = Path(__file__).resolve().parents[2]
SECRET = "value-of-some-var-must-not-show"
TOOL = "mcp.proj.environment"
# Writes the marker named by its first argument, then serves the env-reporting server.
RUN_AND_MARK = (
    "import pathlib, runpy, sys; pathlib.Path(sys.argv[1]).write_text('ran'); sys.argv = sys.argv[:1]; "
    "runpy.run_module('tests.mcp_servers.env_report', run_name='__main__')"
)


def write_project(root: Path, marker: Path, *, env_name: str = "GIVEN") -> Path:
    path = root / ".mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "proj": {
                        "command": sys.executable,
                        "args": ["-c", RUN_AND_MARK, str(marker)],
                        "cwd": str(REPO),
                        "env": {"PYTHONPATH": str(REPO), env_name: "${SOME_VAR}"},
                    }
                }
            }
        )
    )
    return path


@pytest.fixture
def project(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    root = tmp_path / "project"
    root.mkdir()
    marker = tmp_path / "started"
    monkeypatch.setenv("SOME_VAR", SECRET)
    monkeypatch.chdir(root)
    return write_project(root, marker), marker


def dialog_text(app: DeferchatApp) -> str:
    """What the dialog shows: the screen's lines, and the summary's text whole (a long command
    wraps on screen, so its pieces are read from the widget too)."""
    screen = app.screen
    assert isinstance(screen, ProjectConfigDialog)
    lines = screen.query_one("#project-config-lines", Static)
    return "\n".join([*(strip.text for strip in screen._compositor.render_strips()), str(lines.content)])


async def the_dialog(pilot: Any) -> ProjectConfigDialog:
    app = pilot.app
    await until(pilot, lambda: isinstance(app.screen, ProjectConfigDialog))
    await pilot.pause(0.05)
    screen = app.screen
    assert isinstance(screen, ProjectConfigDialog)
    return screen


def approved_hashes(path: Path) -> set[str]:
    try:
        data = json.loads(approvals_path().read_text())
    except FileNotFoundError:
        return set()
    return set(data["approved"].get(str(path.resolve()), {}))


async def test_not_now_opens_the_chat_without_the_server_and_nothing_runs(engine: Any, project: Any) -> None:
    path, marker = project
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await the_dialog(pilot)
        text = dialog_text(app)
        assert app.session is None  # the chat waits for the answer: its servers have not started
        assert sys.executable in text and "env_report" in text  # the command it would run
        assert "SOME_VAR" in text and "GIVEN" in text and SECRET not in text  # names, never values
        assert str(path.resolve()) in text and "Not now" in text and "Approve" in text
        assert app.focused is not None and app.focused.id == "later"  # Enter alone approves nothing
        await pilot.press("n")
        await opened(pilot)
        await pilot.pause(0.2)
        assert app.session is not None
        assert app.session.server_status["proj"].status == "needs_approval"
        assert app.roster.servers["proj"][0] == "needs_approval"
        assert "? proj" in str(app.roster.servers_line.render())
        assert TOOL not in {t.name for t in app.roster.plan.tools}
        # a new chat in this run does not ask again about the same content
        await pilot.press("ctrl+n")
        await pilot.pause(0.3)
        assert not isinstance(app.screen, ProjectConfigDialog)
    assert not marker.exists(), "the held server ran"
    assert approved_hashes(path) == set()


async def test_approve_starts_the_server_and_the_same_content_does_not_ask_again(engine: Any, project: Any) -> None:
    path, marker = project
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await the_dialog(pilot)
        assert not marker.exists()
        await pilot.press("a")
        await opened(pilot)
        assert marker.exists(), "approved, the server did not start"
        assert app.session is not None and app.session.server_status["proj"].status == "ready"
        assert TOOL in {t.name for t in app.roster.plan.tools}  # its tools reach the roster
        await until(pilot, lambda: app.roster.servers.get("proj", ("",))[0] == "ready")
    assert len(approved_hashes(path)) == 1

    # a second run with the same content does not ask: the chat opens by itself
    marker.unlink()
    again = make_app(engine)
    async with again.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        assert not isinstance(again.screen, ProjectConfigDialog)
        assert TOOL in {t.name for t in again.roster.plan.tools} and marker.exists()

    # an edited file asks again, and holds the server until it is answered
    marker.unlink()
    write_project(path.parent, marker, env_name="RENAMED")
    edited = make_app(engine)
    async with edited.run_test(size=(120, 40)) as pilot:
        await the_dialog(pilot)
        assert "RENAMED" in dialog_text(edited) and edited.session is None
        await pilot.press("escape")
        await opened(pilot)
        assert edited.session is not None and edited.session.server_status["proj"].status == "needs_approval"
    assert not marker.exists()


async def test_a_file_changed_while_shown_is_refused_and_shown_again(engine: Any, project: Any) -> None:
    path, marker = project
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        first = await the_dialog(pilot)
        shown = first.summary.sha256
        write_project(path.parent, marker, env_name="SWAPPED")  # edited behind the owner's back
        await pilot.click("#approve")
        await until(pilot, lambda: isinstance(app.screen, ProjectConfigDialog) and app.screen is not first)
        await pilot.pause(0.05)
        second = app.screen
        assert isinstance(second, ProjectConfigDialog) and second.changed and second.summary.sha256 != shown
        assert "changed since it was shown" in dialog_text(app) and "SWAPPED" in dialog_text(app)
        assert approved_hashes(path) == set() and app.session is None and not marker.exists()
        await pilot.click("#approve")  # what is shown now is what gets approved
        await opened(pilot)
        assert approved_hashes(path) == {second.summary.sha256}
        assert marker.exists() and app.session is not None
        assert app.session.server_status["proj"].status == "ready"


async def test_the_palette_asks_again_after_not_now_and_an_unused_chat_starts_the_server(
    engine: Any, project: Any
) -> None:
    path, marker = project
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await the_dialog(pilot)
        await pilot.press("n")
        await opened(pilot)
        first_chat = app.session.chat_id if app.session else None
        app.action_project_config()
        await the_dialog(pilot)
        await pilot.press("a")
        await until(
            pilot,
            lambda: app.session is not None and app.session.chat_id != first_chat and app.roster.plan is not None,
            timeout=15,
        )
        assert TOOL in {t.name for t in app.roster.plan.tools} and marker.exists()
        assert engine.store.chat(first_chat) is None  # the unused chat gave way, not kept beside it
    assert len(approved_hashes(path)) == 1
