"""Snapshots of the MCP room's screens at 80x24 (pytest-textual-snapshot): a server's form (the
booking the desk test server asks for, with a hostile title shown inert) and the servers screen
with a server that needs sign-in. Update: ``pytest tests/tui/test_mcp_snapshots.py --snapshot-update``."""

from __future__ import annotations

from typing import Any

from textual.app import App

from core.mcp.elicitation import ElicitationRequest, parse_form
from core.mcp.reports import ServerReport
from tests.mcp_servers.desk import BOOKING, ESC
from tui.screens.elicitation import FormScreen
from tui.screens.servers import ServersScreen


class Host(App[None]):
    CSS_PATH = "../../tui/app.tcss"

    def __init__(self, screen: Any) -> None:
        super().__init__()
        self.first = screen

    def on_mount(self) -> None:
        self.push_screen(self.first)


async def steady(pilot: Any) -> None:
    for widget in pilot.app.screen.query("Input"):
        widget.cursor_blink = False
    await pilot.pause(0.1)


def test_a_servers_form(snap_compare: Any) -> None:
    request = ElicitationRequest(
        id="1",
        server="desk",
        message=f"Book a table{ESC} at Chez Test: when, and for how many?",
        fields=parse_form(BOOKING),
    )
    assert snap_compare(Host(FormScreen(request)), terminal_size=(80, 24), run_before=steady)


def test_the_servers_screen(snap_compare: Any) -> None:
    reports = [
        ServerReport(
            name="linear",
            transport="http",
            target="http https://mcp.linear.app/mcp",
            status="needs_sign_in",
            message="needs you to sign in: run `deferchat servers --login linear`, or in the app open the servers "
            "screen or type /mcp login linear",
            auth="needs_sign_in",
        ),
        ServerReport(
            name="desk",
            transport="stdio",
            target="python -m tests.mcp_servers.desk",
            status="ready",
            tools=4,
            capabilities=["tools", "resources", "prompts"],
        ),
    ]
    assert snap_compare(Host(ServersScreen(reports)), terminal_size=(80, 24), run_before=steady)
