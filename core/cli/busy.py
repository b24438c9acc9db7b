"""A chat whose turn runs in another process: ``ask --chat`` and ``resume`` are refused at once
(exit 4, before any server starts), or wait for it with ``--wait``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.store import Store


def check_busy(store: Store, chat: str | None, wait: bool) -> None:
    """Raise the chat's :class:`~core.store.errors.ChatBusy` now, unless ``wait``: then say once
    on stderr that this command waits (the turn loop does the waiting)."""
    row = store.find_chat(chat) if chat else None
    busy = store.busy(row.id) if row is not None else None
    if busy is None:
        return
    if not wait:
        raise busy
    from core.cli import output

    output.err(f"deferchat: chat {busy.chat_id} is busy (a turn runs in {busy.holder}); waiting for it to end")
