"""The chats list: open, new, rename, delete, export to Markdown, copy a chat's id (what
``deferchat --chat ID``, ``deferchat ask --chat ID`` and ``/resume ID`` take).

The screen does not know the app: it is handed :class:`ChatOperations` (the app is one), so
it neither imports the app nor reaches into it."""

from __future__ import annotations

import contextlib
from datetime import datetime
from pathlib import Path
from typing import ClassVar, Protocol

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from core.display import safe
from core.store import ChatRow


class ChatOperations(Protocol):
    """What the chats list needs: the stored chats, and the operations on one. Each operation
    asks the owner what it needs (a title, a confirmation, a path) and says whether it did it."""

    def list_chats(self) -> list[ChatRow]: ...

    async def rename_chat(self, chat_id: str) -> bool: ...

    async def delete_chat(self, chat_id: str) -> bool: ...

    async def export_chat(self, chat_id: str) -> Path | None: ...


def when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M") if ts else ""


class ChatsScreen(ModalScreen[tuple[str, str] | None]):
    """Dismisses with ("open", chat_id), ("new", "") or None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Close", id="chats_close"),
        Binding("enter", "open", "Open", id="chats_open", priority=True),
        Binding("n", "new", "New", id="chats_new"),
        Binding("r", "rename", "Rename", id="chats_rename"),
        Binding("d", "delete", "Delete", id="chats_delete"),
        Binding("e", "export", "Export", id="chats_export"),
        Binding("c", "copy_id", "Copy id", id="chats_copy_id"),
    ]

    def __init__(self, chats: ChatOperations, current: str | None) -> None:
        super().__init__(classes="panel-screen")
        self.chats = chats
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(classes="panel"):
            yield Static(Content("Chats"), classes="panel-title")
            yield DataTable(id="chats-table", cursor_type="row", zebra_stripes=True)
            yield Static(
                Content(
                    "Enter open \u00b7 n new \u00b7 r rename \u00b7 d delete \u00b7 e export Markdown "
                    "\u00b7 c copy id \u00b7 Escape close"
                ),
                classes="panel-help",
            )

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("", "title", "id", "status", "model", "strategy", "updated")
        self.refresh_rows()
        table.focus()

    def refresh_rows(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        for row in self.chats.list_chats():
            table.add_row(
                "\u25cf" if row.id == self.current else "",
                Text(safe(row.title or "New chat")),
                row.id,
                row.status,
                f"{row.provider}/{row.model}",
                row.strategy,
                when(row.updated_at),
                key=row.id,
            )
        if table.row_count and self.current is not None:
            with contextlib.suppress(Exception):  # the current chat is not stored (yet)
                table.move_cursor(row=table.get_row_index(self.current))

    def selected(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        return str(key.value) if key.value is not None else None

    def action_open(self) -> None:
        chat_id = self.selected()
        if chat_id:
            self.dismiss(("open", chat_id))

    def action_new(self) -> None:
        self.dismiss(("new", ""))

    def action_copy_id(self) -> None:
        chat_id = self.selected()
        if chat_id:
            self.app.copy_to_clipboard(chat_id)
            self.notify(f"Copied {chat_id}: deferchat --chat {chat_id} opens it.", timeout=4)

    @work
    async def action_rename(self) -> None:
        chat_id = self.selected()
        if chat_id and await self.chats.rename_chat(chat_id):
            self.refresh_rows()

    @work
    async def action_delete(self) -> None:
        chat_id = self.selected()
        if chat_id and await self.chats.delete_chat(chat_id):
            if chat_id == self.current:
                self.current = None
            self.refresh_rows()

    @work
    async def action_export(self) -> None:
        chat_id = self.selected()
        if chat_id:
            await self.chats.export_chat(chat_id)
