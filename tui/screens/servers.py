"""The servers screen: every MCP server of the chat, what it offers, whether it needs you to sign
in, and the sign-in and sign-out buttons.

A server that needs sign-in is marked so (the roster's server line says it too); *Sign in*
dismisses the screen with ``("sign_in", name)`` and the app signs in without blocking the chat
(:mod:`tui.controllers.mcp`); *Sign out* with ``("sign_out", name)``. Every name and message is
the server's or its config's and passes :func:`core.display.safe`."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from core.display import safe
from core.mcp.reports import ServerReport

AUTH_WORDS = {"signed_in": "signed in", "needs_sign_in": "needs you to sign in", "none": ""}
STATE_STYLE = {"ready": "green", "failed": "bold red", "needs_sign_in": "bold yellow", "needs_approval": "yellow"}


def remote(report: ServerReport) -> bool:
    return report.transport in ("http", "sse")


class ServersScreen(ModalScreen[tuple[str, str] | None]):
    """The chat's servers; dismisses with an action and a server name, or None."""

    DEFAULT_CSS = """
    ServersScreen .servers-dialog { width: 90; }
    ServersScreen .servers-list { height: auto; max-height: 70vh; }
    ServersScreen .server-head { margin: 1 0 0 0; }
    ServersScreen .server-buttons { height: auto; }
    ServersScreen .server-buttons Button { margin: 0 1 0 0; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close", id="servers_close")]

    def __init__(self, reports: list[ServerReport]) -> None:
        super().__init__(classes="dialog-screen")
        self.reports = reports

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog servers-dialog"):
            yield Static(Content.assemble(("MCP servers", "bold")), classes="dialog-title")
            with VerticalScroll(classes="servers-list"):
                if not self.reports:
                    yield Static("This chat runs no MCP servers.")
                for i, r in enumerate(self.reports):
                    yield from self._row(i, r)
            yield Static(Content("Escape closes"), classes="dialog-help")

    def _row(self, i: int, r: ServerReport) -> ComposeResult:
        state = "needs sign-in" if r.status == "needs_sign_in" else r.status.replace("_", " ")
        parts: list[tuple[str, str] | str] = [(safe(r.name), "bold"), "  ", (state, STATE_STYLE.get(r.status, "dim"))]
        if r.status == "ready":
            parts += ["  ", (f"{r.tools} tools", "dim")]
        if r.auth == "signed_in":
            parts += ["  ", (AUTH_WORDS[r.auth], "green")]
        head = Content.assemble(*parts)
        yield Static(head, classes="server-head")
        offers = ", ".join(r.capabilities) or "nothing yet"
        yield Static(Content.styled(f"{safe(r.target)} \u00b7 offers {safe(offers)}", "dim"), classes="server-detail")
        if r.message and r.status != "ready":
            yield Static(Content(safe(r.message, max_len=400)), classes="server-message")
        if remote(r) and not r.needs_approval:
            with Horizontal(classes="server-buttons"):
                if r.status == "needs_sign_in" or r.auth != "signed_in":
                    yield Button(
                        "Sign in", id=f"sign-in-{i}", variant="primary" if r.status == "needs_sign_in" else "default"
                    )
                if r.auth == "signed_in":
                    yield Button("Sign out", id=f"sign-out-{i}")

    def on_mount(self) -> None:
        buttons = self.query(Button)
        if buttons:
            buttons.first().focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        action, _, index = (event.button.id or "").rpartition("-")
        report = self.reports[int(index)]
        self.dismiss(("sign_in" if action == "sign-in" else "sign_out", report.name))

    def action_close(self) -> None:
        self.dismiss(None)
