"""A chat's history, held in memory across steps and turns.

The store is the source of truth: another process (``deferchat ask --chat`` beside the app) may
add to the same chat between two turns of this one. So the history is read whole once, then kept
and extended with what this process writes. Before each request (:meth:`ChatHistory.sync`), SQLite's
``data_version`` and the store's own count of message writes (:meth:`core.store.Store.changes`)
tell whether anything but this history may have written; only then does one query on the chat's
index (:meth:`core.store.Store.messages_mark`: the newest message's id and content) say whether the
chat's messages changed, and only then is the branch read again (entries it already holds are kept,
so what was made of them stays made).

Each stored message becomes one engine-shaped dict (``{"role", "content"}``, its blocks made
readable by :func:`core.chat.blocks.well_formed`) once, and stays the same object for as long as
the message is in the branch: the rooms that read the history (the conversion for a target API,
the strategies, the adapters, :mod:`core.memo`) recognise a message they already read by that
identity. Nothing may mutate a message dict it was handed. Each entry also keeps its size, and its
token count once one was needed (:mod:`core.context.budget`), which is kept in the store beside the
message (:meth:`core.store.Store.keep_token_counts`) so that a later process need not count it again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from core.chat.blocks import well_formed
from core.store import MessageRow, Store


@dataclass(eq=False)
class Entry:
    """One message of the branch: its row id, its engine-shaped message, what it costs."""

    id: str
    turn_id: str | None
    message: dict[str, Any]
    _size: int | None = field(default=None, repr=False)
    tokens: int | None = field(default=None, repr=False)  # counted when a budget needed it
    # the count an earlier process kept in the store and the key it was made for, until checked
    kept: tuple[int, str] | None = field(default=None, repr=False)

    @property
    def role(self) -> str:
        return str(self.message["role"])

    @property
    def size(self) -> int:
        """The UTF-8 bytes of the message's canonical JSON: an upper bound on its tokens (every
        cl100k token is at least one byte), known without the tokenizer."""
        if self._size is None:
            from core.tools import canonical_json

            self._size = len(canonical_json(self.message).encode("utf-8", "surrogatepass"))
        return self._size

    @property
    def text(self) -> str:
        """The message as the budget counts it: its canonical JSON (made again on each call)."""
        from core.tools import canonical_json

        return canonical_json(self.message)

    def known_tokens(self) -> int | None:
        """Its token count if one is known without the tokenizer: counted in this process, or kept
        in the store by an earlier one for this very text and encoding (the key says so)."""
        if self.tokens is None and self.kept is not None:
            from core.tokens import content_key

            count, key = self.kept
            if key == content_key(self.text):
                self.tokens = count
            self.kept = None  # checked once: a count for another text is never read
        return self.tokens


def _entry(row: MessageRow) -> Entry:
    kept = (row.tokens, row.tokens_key) if row.tokens is not None and row.tokens_key else None
    return Entry(row.id, row.turn_id, {"role": row.role, "content": well_formed(row.content)}, kept=kept)


class ChatHistory:
    """The chat's current branch (see the module)."""

    def __init__(self, store: Store, chat_id: str):
        self.store = store
        self.chat_id = chat_id
        self._entries: list[Entry] | None = None
        self._messages: list[dict[str, Any]] = []
        self._mark: tuple[str | None, str | None] | None = None
        self._changes: tuple[int, int] | None = None  # the store's changes() when the mark was read
        self.reloads = 0  # times the branch was read whole (a test reads it)

    # -- reading ---------------------------------------------------------------------------------------
    def entries(self) -> list[Entry]:
        """The branch's entries, oldest first, as of the last :meth:`sync` (the history's own
        list: read it, never change it)."""
        if self._entries is None:
            self.sync()
        assert self._entries is not None
        return self._entries

    def messages(self) -> list[dict[str, Any]]:
        """The branch as engine-shaped messages, oldest first, as of the last :meth:`sync` (the
        same dicts from call to call; the list is the caller's own)."""
        if self._entries is None:
            self.sync()
        return list(self._messages)

    def sync(self) -> bool:
        """Read the branch again if the store's messages of the chat changed since this history
        last saw them (another process wrote); True when it did. The turn loop syncs before each
        request and at each turn's start; between those, the history is what this process wrote."""
        changes = self.store.changes()
        if self._entries is not None and changes == self._changes:
            return False  # nothing but this history wrote since it last looked
        mark = self.store.messages_mark(self.chat_id)
        self._changes = changes
        if self._entries is not None and mark == self._mark:
            return False
        known = {e.id: e for e in self._entries or ()}
        entries = []
        for row in self.store.messages(self.chat_id):
            old = known.get(row.id)
            content = well_formed(row.content)
            entries.append(old if old is not None and old.message["content"] == content else _entry(row))
        self._set(entries, mark)
        self.reloads += 1
        return True

    def _set(self, entries: list[Entry], mark: tuple[str | None, str | None]) -> None:
        self._entries = entries
        self._messages = [e.message for e in entries]
        self._mark = mark

    @property
    def last_id(self) -> str | None:
        entries = self.entries()
        return entries[-1].id if entries else None

    # -- writing ---------------------------------------------------------------------------------------
    def add(
        self,
        role: str,
        content: list[dict[str, Any]],
        *,
        turn_id: str | None,
        parent_id: str | None,
        replaces: str | None = None,
    ) -> str:
        """Store a message and extend the branch with it. A message sent in the place of another
        (``replaces``: an edit, a retry) or under a parent other than the branch's end changes
        the branch itself, which is then read again."""
        entries = self.entries()
        msg_id = self.store.add_message(
            self.chat_id, role, content, turn_id=turn_id, parent_id=parent_id, replaces=replaces
        )
        mark = self.store.messages_mark(self.chat_id)
        at_end = parent_id == (entries[-1].id if entries else None)
        if replaces is None and at_end and mark == (msg_id, _stored(content)):  # the newest is this one
            entry = Entry(msg_id, turn_id, {"role": role, "content": well_formed(content)})
            entries.append(entry)
            self._messages.append(entry.message)
            self._mark, self._changes = mark, self.store.changes()
        else:
            self._entries = None  # the branch itself changed: read it again
            self.sync()
        return msg_id

    def set_turn(self, msg_id: str, turn_id: str) -> None:
        self.store.set_message_turn(msg_id, turn_id)
        for e in reversed(self._entries or ()):
            if e.id == msg_id:
                e.turn_id = turn_id
                break

    def rewrite_last(self, content: list[dict[str, Any]]) -> None:
        """The newest message's content replaced (in the store, and here as a new dict)."""
        entries = self.entries()
        if not entries:
            return
        last = entries[-1]
        self.store.rewrite_message(last.id, content)
        fresh = Entry(last.id, last.turn_id, {"role": last.role, "content": well_formed(content)})
        entries[-1] = fresh
        self._messages[-1] = fresh.message
        self._mark, self._changes = self.store.messages_mark(self.chat_id), self.store.changes()


def _stored(content: list[dict[str, Any]]) -> str:
    """``content`` as the store writes it (:func:`core.store.store._dumps`)."""
    return json.dumps(content, ensure_ascii=False, separators=(",", ":"))
