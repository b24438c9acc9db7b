"""The permissions screen: the open chat's "allow for this chat" grants, each with the tool (the
name its rows show and its own name), whether it is active or revoked, when and by whom; Enter
or r takes back the selected one, a takes back all of them (after a confirmation). A revoked
grant stays listed as revoked; its tool asks for approval again at its next call.

The screen does not know the app: it is handed :class:`GrantOperations`
(:class:`tui.controllers.permissions.Permissions` is one). Tool names can be a server's: every
one is shown through :func:`core.display.safe`."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar, Protocol

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from core.display import safe
from core.pipeline import grants

if TYPE_CHECKING:
    from core.store import GrantRow

EMPTY = (
    "No grants: every tool that needs your approval asks for it in this chat. "
    "\u201cAllow for this chat\u201d in an approval gives one; it lasts until you take it back here."
)
ABOUT = (
    "A tool allowed for this chat runs without asking, after a restart too. Take a grant back and "
    "the tool asks again at its next call."
)
HELP = "Enter or r take back the selected grant \u00b7 a takes back all \u00b7 Escape closes"
ACTIVE, REVOKED = "allowed", "revoked"  # the state column (ABOUT and the line under the table say what each means)


class GrantOperations(Protocol):
    """What the permissions screen needs: the chat's grants, and taking them back."""

    def list_grants(self) -> list[GrantRow]: ...

    def revoke(self, tools: list[str] | None) -> list[GrantRow]: ...


def row_cells(g: GrantRow, display: str) -> tuple[str, ...]:
    """One grant as the table's columns: tool, its own name, state, when, by whom (for a revoked
    grant, when and by whom it was taken back; the line under the table says both)."""
    shown = display.split(" (", 1)[0] if display else g.tool  # "start_call (mcp.x.start_call)": its short name
    own = g.tool if g.tool != shown else ""  # a built-in's row name is its own
    if g.active:
        return (shown, own, ACTIVE, grants.when(g.created_at), grants.who(g.granted_by))
    return (shown, own, REVOKED, grants.when(g.revoked_at), grants.who(g.revoked_by))


class PermissionsScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close", id="permissions_close"),
        Binding("enter,r", "revoke", "Take back", id="permissions_revoke", priority=True),
        Binding("a", "revoke_all", "Take back all", id="permissions_revoke_all"),
    ]

    def __init__(self, ops: GrantOperations, displays: Mapping[str, str] | None = None) -> None:
        super().__init__(classes="panel-screen")
        self.ops = ops
        self.displays = dict(displays or {})
        self.rows: list[GrantRow] = []

    def compose(self) -> ComposeResult:
        with Vertical(classes="panel"):
            yield Static(
                Content("Permissions \u00b7 this chat's grants"), classes="panel-title", id="permissions-title"
            )
            yield Static(Content(ABOUT), classes="note")
            yield Static(Content(EMPTY), id="permissions-empty", classes="note")
            yield DataTable(id="permissions-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="permissions-detail", classes="note")
            yield Static(Content(HELP), classes="panel-help")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("tool", "its own name", "state", "when", "by")
        self.refresh_rows()
        table.focus()

    def refresh_rows(self) -> None:
        """Read the grants again (after a revoke here or an event from the chat), the cursor kept."""
        table = self.query_one(DataTable)
        keep = self.selected()
        self.rows = self.ops.list_grants()
        table.clear()
        for g in self.rows:
            table.add_row(*(Text(safe(cell)) for cell in row_cells(g, self.displays.get(g.tool, ""))), key=g.tool)
        self.query_one("#permissions-empty").display = not self.rows
        table.display = bool(self.rows)
        active = sum(g.active for g in self.rows)
        self.query_one("#permissions-title", Static).update(
            Content(f"Permissions \u00b7 this chat's grants: {active} active, {len(self.rows) - active} revoked")
        )
        if keep is not None:
            with contextlib.suppress(Exception):  # its row is gone
                table.move_cursor(row=table.get_row_index(keep.tool))
        self._show_detail()

    def selected(self) -> GrantRow | None:
        table = self.query_one(DataTable)
        if not table.row_count or not self.rows:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return next((g for g in self.rows if g.tool == key), None)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail()

    def _show_detail(self) -> None:
        g = self.selected()
        line = f"{g.tool}: {grants.state(g)}" if g is not None else ""
        self.query_one("#permissions-detail", Static).update(Content(safe(line)))

    def action_revoke(self) -> None:
        g = self.selected()
        if g is None:
            return
        if not g.active:
            self.notify(f"{safe(g.tool)} is already revoked: it asks at each call.", timeout=3)
            return
        if self.ops.revoke([g.tool]):
            self.notify(f"Took back {safe(g.tool)}: it asks for your approval again at its next call.", timeout=4)
        self.refresh_rows()

    @work
    async def action_revoke_all(self) -> None:
        from tui.screens.dialogs import Confirm

        active = [g for g in self.rows if g.active]
        if not active:
            self.notify("No active grant to take back.", timeout=3)
            return
        names = ", ".join(safe(g.tool) for g in active)
        question = (
            f"Take back all {len(active)} grants of this chat ({names})? Each tool asks for your "
            "approval again at its next call."
        )
        if not await self.app.push_screen_wait(Confirm(question, yes="Take back all", default_no=True)):
            return
        revoked = self.ops.revoke(None)
        self.notify(f"Took back {len(revoked)} grant{'s' if len(revoked) != 1 else ''}.", timeout=4)
        self.refresh_rows()
