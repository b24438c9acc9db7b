"""The chat's "Allow for this chat" grants, as a person sees and takes them back.

A grant is given in the pipeline (:meth:`core.pipeline.pipeline.Pipeline._approval`: an
approval answered *allow for this chat*) and lasts, across restarts, until it is revoked here:
from the app's permissions screen or ``/permissions``, or ``deferchat chats grants ID --revoke
TOOL|--all``. A revoked grant keeps its row (shown as revoked), and the tool asks again at its
next call, in this process or another (the pipeline reads the store at every call). Each
revocation is a stored ``grant.revoked`` event, so the chat's log and audit show it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from core.events import EventSink, GrantRevoked

if TYPE_CHECKING:
    from core.store import GrantRow, Store

WHO = {
    "app": "you, in the app",
    "terminal": "you, at the terminal (deferchat ask)",
    "ask --approve": "deferchat ask --approve",
    "cli": "deferchat chats grants",
}
"""Who gave or took back a grant, in words (the stored value is the key)."""


def who(value: str | None) -> str:
    """Who, in words (an unknown or missing value: "unknown", e.g. a grant from before 0.1's
    grant history)."""
    return WHO.get(value or "", value or "unknown")


def when(ts: float | None) -> str:
    """A stored time as the person's local date and time, to the minute."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else ""


def state(g: GrantRow) -> str:
    """A grant in words, as the permissions screen, the tool's detail and ``chats grants`` say
    it: "allowed for this chat since <when>, by <who>", or when it was revoked and by whom."""
    given = f"{when(g.created_at)}, by {who(g.granted_by)}"
    if g.active:
        return f"allowed for this chat since {given}"
    return f"revoked {when(g.revoked_at)}, by {who(g.revoked_by)} (allowed {given})"


def chat_grants(store: Store, chat_id: str, *, revoked: bool = True) -> list[GrantRow]:
    """The chat's grants: the active ones first, then (with ``revoked``) the revoked, each
    group oldest first."""
    rows = store.grants(chat_id, revoked=revoked)
    return sorted(rows, key=lambda r: (not r.active, r.created_at, r.tool))


def revoke(
    store: Store, chat_id: str, tools: Iterable[str] | None, *, by: str, emit: EventSink | None = None
) -> list[GrantRow]:
    """Take back the chat's active grants of ``tools`` (None: every one). Each revoked grant is
    one ``grant.revoked`` event: through ``emit`` when the chat is open (the open session's
    event log stores and fans it out), else stored directly. Returns the revoked rows (a tool
    without an active grant is not among them)."""
    rows = store.revoke_grants(chat_id, None if tools is None else list(tools), by=by)
    for row in rows:
        event = GrantRevoked(chat_id=chat_id, tool=row.tool, by=by)
        if emit is not None:
            emit(event)
        else:
            store.add_event(chat_id, None, event.type, event.to_json())
    return rows
