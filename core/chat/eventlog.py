"""The persistence and fan-out of one chat's events.

Every event the chat emits is stored (all but text deltas, which the final ``model.text``
repeats whole) and handed to each subscriber; a broken subscriber never breaks a turn.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from core.events import Event
from core.store import Store

log = logging.getLogger("deferchat.chat")

Subscriber = Callable[[Event], None]

_NOT_STORED = frozenset({"model.text.delta"})


class EventLog:
    """Stores and fans out one chat's events. ``chat_id`` and ``turn_id`` are set as the chat opens
    and turns start; an event emitted before the chat has an id is only fanned out."""

    def __init__(self, store: Store, subscribers: Iterable[Subscriber] = ()):
        self.store = store
        self.subscribers: list[Subscriber] = list(subscribers)
        self.chat_id = ""
        self.turn_id: str | None = None

    def subscribe(self, fn: Subscriber) -> None:
        self.subscribers.append(fn)

    def emit(self, event: Event) -> None:
        if self.chat_id and event.chat_id is None:
            event.chat_id = self.chat_id
        if self.chat_id and event.type not in _NOT_STORED:
            self.store.add_event(self.chat_id, self.turn_id, event.type, event.to_json())
        for fn in list(self.subscribers):
            try:
                fn(event)
            except Exception:  # a broken subscriber never breaks a turn
                log.exception("event subscriber failed on %s", event.type)

    def store_only(self, event: Event) -> None:
        """Keep an event that subscribers already saw before the chat had an id."""
        if self.chat_id:
            self.store.add_event(
                self.chat_id, None, event.type, event.model_copy(update={"chat_id": self.chat_id}).to_json()
            )
