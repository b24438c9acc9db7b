"""The project's ``.mcp.json`` asks first: a dialog before a chat starts its MCP servers.

A project file is written by whoever wrote the project, not by the owner, and names commands
that would run as the owner and ``${VAR}`` references that would read the owner's environment.
The core holds its servers back (``needs_approval``) until the owner approves that file's exact
content (:mod:`core.mcp.approval`); a running chat never starts a held server. So the app asks
*before* a chat opens (:meth:`ProjectConfigs.review`, awaited by the app's chat switch):

* **Approve**: the approval is recorded for the content shown (its sha256); the chat that opens
  next starts those servers. A file that changed while the dialog was up is refused, and the
  dialog comes back with the content as it is now.
* **Not now**: the chat opens without them; the roster shows them as needing approval (``?``).
  The app does not ask again for the same content while it runs; the palette's "Review the
  project's MCP config" shows the dialog again. An edited file asks again.

What the dialog shows is :meth:`~core.mcp.approval.ConfigSummary.lines`: the commands, URLs and
the *names* of the environment variables the file sets and reads, never a value, every string
display-safe. Nothing here reads a variable or starts a process.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, TypeVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from core.display import safe
from core.mcp.approval import ConfigSummary, approve_command, approve_config, describe_config
from core.mcp.config import McpConfigError, load_mcp_config

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel
    from textual.screen import Screen

Answer = Literal["approve", "later"]

EXPLANATION = (
    "Whoever wrote this project wrote this file, not you. It would run these commands as you and read the "
    "environment variables it names (they may hold your API keys). Nothing in it has run yet.\n"
    "Approve: this chat starts its servers, and so do later ones while the file stays as shown (an edit "
    "asks again). Not now: the chat opens without them (? in the roster)."
)
CHANGED = (
    "\u26a0 The file changed since it was shown, so nothing was approved. This is what it holds now: review it again."
)


class ProjectConfigDialog(ModalScreen[Answer]):
    """Shows what one project config would run; answers ``approve`` or ``later``.

    "Not now" has the focus, so Enter alone approves nothing; ``a`` approves, ``n`` and Escape
    say not now."""

    DEFAULT_CSS = """
    ProjectConfigDialog #project-config-body { height: auto; max-height: 60vh; margin: 0 0 1 0; }
    ProjectConfigDialog #project-config-lines { border: round $warning; padding: 0 1; height: auto; }
    ProjectConfigDialog #project-config-changed { color: $warning; text-style: bold; margin: 0 0 1 0; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "answer('approve')", "Approve", id="project_config_approve"),
        Binding("escape,n", "answer('later')", "Not now", id="project_config_later"),
    ]

    def __init__(self, summary: ConfigSummary, *, changed: bool = False) -> None:
        super().__init__(classes="dialog-screen")
        self.summary = summary
        self.changed = changed

    def shown_lines(self) -> list[str]:
        """The summary as the dialog shows it: its lines but the CLI's own approve hint, which
        the buttons replace (the command is named in the help line instead)."""
        return [line for line in self.summary.lines() if not line.lstrip().startswith("approved:")]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="project-config"):
            yield Static(Content.styled("A project MCP config wants to run commands", "bold"), classes="dialog-title")
            if self.changed:
                yield Static(Content(CHANGED), id="project-config-changed")
            with VerticalScroll(id="project-config-body"):
                yield Static(Content(EXPLANATION), classes="dialog-title", id="project-config-why")
                # already display-safe (core.mcp.approval); safe() again costs nothing. Wrapped,
                # never cut: the whole command is what the owner approves.
                yield Static(Content("\n".join(safe(line) for line in self.shown_lines())), id="project-config-lines")
                yield Static(Content(f"From a shell: {approve_command(self.summary.path)}"), classes="dialog-help")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Approve (a)", id="approve", variant="warning")
                yield Button("Not now (n)", id="later", variant="primary")

    def on_mount(self) -> None:
        box = self.query_one("#project-config", Vertical)
        box.styles.width = 100  # wider than the app's small dialogs (app.tcss .dialog), for commands
        box.styles.max_height = "100%"
        self.query_one("#later", Button).focus()

    def action_answer(self, answer: Answer) -> None:
        self.dismiss(answer)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss("approve" if event.button.id == "approve" else "later")


def awaiting_approval(mcp_config: str | None = None) -> list[str]:
    """The project files whose servers the next chat would hold back (absolute paths), from the
    working directory, as the chat's own start reads them. A config that cannot be read asks
    nothing here: opening the chat reports it."""
    try:
        return load_mcp_config([mcp_config] if mcp_config else []).awaiting_approval()
    except McpConfigError:
        if mcp_config:
            return awaiting_approval(None)
        return []


Result = TypeVar("Result")


class Asks(Protocol):
    """What the review needs of the app: a dialog to wait for, and a notice."""

    def notify(
        self, message: str, *, severity: SeverityLevel = "information", timeout: float | None = None
    ) -> None: ...

    async def push_screen_wait(self, screen: Screen[Result]) -> Result: ...


class ProjectConfigs:
    """The app's side of project-config approval: which content the owner said "not now" to
    in this run, and the dialog loop."""

    def __init__(self, app: Asks) -> None:
        self.app = app
        self.declined: set[tuple[str, str]] = set()  # (path, sha256) answered "Not now"

    async def review(self, mcp_config: str | None = None, *, again: bool = False) -> list[str]:
        """Ask about every project file that waits for approval; return the files approved now.

        Must run in a worker (the dialog is awaited). ``again``: ask even about content the
        owner said "not now" to (the palette command)."""
        pending = await asyncio.to_thread(awaiting_approval, mcp_config)
        return [path for path in pending if await self.review_file(path, again=again)]

    async def review_again(self, mcp_config: str | None = None) -> list[str]:
        """The palette's "Review the project's MCP config": ask again, "not now" or not; return
        the files approved now (and say so when none waits)."""
        approved = await self.review(mcp_config, again=True)
        if not approved and not await asyncio.to_thread(awaiting_approval, mcp_config):
            self.app.notify("No project MCP config here waits for your approval.")
        return approved

    async def review_file(self, path: str, *, again: bool = False) -> bool:
        """Show one file until the owner approves the content shown, or says not now."""
        shown: str | None = None  # the sha256 the owner last saw
        while True:
            try:
                summary = await asyncio.to_thread(describe_config, path)
            except McpConfigError as exc:
                self.app.notify(str(exc), severity="error")
                return False
            if summary.approved:
                return True
            changed = shown is not None and shown != summary.sha256
            key = (path, summary.sha256)
            if key in self.declined and not again and not changed:
                return False
            shown = summary.sha256
            answer = await self.app.push_screen_wait(ProjectConfigDialog(summary, changed=changed))
            if answer != "approve":
                self.declined.add(key)
                return False
            try:
                await asyncio.to_thread(approve_config, path, sha256=summary.sha256)
            except McpConfigError as exc:
                # the file changed since it was shown (approve_config refuses that content): the
                # loop shows it again as it is now; any other fault is said and approves nothing
                if await asyncio.to_thread(_digest_now, path) in (None, summary.sha256):
                    self.app.notify(str(exc), severity="error")
                    return False
                continue
            self.declined.discard(key)
            self.app.notify(f"Approved {safe(path)} as shown: its servers start with the chat.", timeout=4)
            return True


def _digest_now(path: str) -> str | None:
    try:
        return describe_config(path).sha256
    except McpConfigError:
        return None
