"""Permissions: the open chat's "allow for this chat" grants, seen and taken back.

The store holds the grants (:mod:`core.pipeline.grants`); this room shows them, on the
permissions screen (the palette's *Permissions: this chat's grants*, ``/permissions``) and as the roster's
*allowed* rows, and revokes them through the open session, so the chat's log stores the
``grant.revoked`` event and shows it. What it shows is read from the store when the chat opens,
when the screen opens, and after each event that can change it: a grant given or used
(``tool.approved`` for the chat), a revoke (``grant.revoked``), and an approval asked for a tool
the roster showed as allowed (another process, ``deferchat chats grants --revoke``, took it back).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.events import Event, GrantRevoked, ToolApprovalRequired, ToolApproved
from core.pipeline import grants
from tui.controllers.host import Host
from tui.slash import SlashCommand

if TYPE_CHECKING:
    from core.store import GrantRow, Store
    from tui.screens.permissions import PermissionsScreen

BY = "app"  # who revokes here, as core.pipeline.grants.WHO says it


def active_grants(store: Store, chat_id: str) -> dict[str, str]:
    """The chat's active grants: tool -> since when and by whom, in words (the roster's marks
    and the tool screen's line)."""
    return {g.tool: grants.state(g) for g in store.grants(chat_id)}


class Permissions:
    """The room, and the permissions screen's :class:`~tui.screens.permissions.GrantOperations`."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self._screen: PermissionsScreen | None = None
        host.slash_commands.add(
            SlashCommand(
                "permissions",
                "This chat's grants: what it may do without asking; take them back",
                action="permissions",
            )
        )

    # -- the open chat's grants ---------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the open chat's grants again: the roster's marks, and the screen if it is open."""
        session = self.host.session
        self.host.roster.set_grants(active_grants(self.host.store, session.chat_id) if session else {})
        if self._screen is not None and self._screen.is_attached:
            self._screen.refresh_rows()

    def seen(self, event: Event) -> None:
        """An event of the open chat, after the log showed it."""
        match event:
            case ToolApproved(scope="chat") | GrantRevoked():
                self.refresh()
            case ToolApprovalRequired(name=name) if name in self.host.roster.grants:
                self.refresh()  # its grant was taken back elsewhere: the tool asks again

    # -- the screen ---------------------------------------------------------------------------------
    def show(self) -> None:
        session = self.host.session
        if session is None:
            self.host.notify("No chat is open.", severity="warning")
            return
        from tui.screens.permissions import PermissionsScreen

        self.refresh()  # another process may have changed them
        self._screen = PermissionsScreen(self, self.host.router.displays)
        self.host.push_screen(self._screen, lambda _: self._closed())

    def _closed(self) -> None:
        self._screen = None

    # -- GrantOperations ----------------------------------------------------------------------------
    def list_grants(self) -> list[GrantRow]:
        session = self.host.session
        return grants.chat_grants(self.host.store, session.chat_id) if session is not None else []

    def revoke(self, tools: list[str] | None) -> list[GrantRow]:
        """Take back the open chat's grants of ``tools`` (None: all of them), through the session
        so the log stores and shows each ``grant.revoked``; the tools ask again at their next call."""
        session = self.host.session
        if session is None:
            return []
        return grants.revoke(self.host.store, session.chat_id, tools, by=BY, emit=session.emit)
