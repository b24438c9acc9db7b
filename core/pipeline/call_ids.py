"""Call ids: every tool use of one response gets an id of its own before anything stores it."""

from __future__ import annotations

import uuid
from collections import deque
from typing import Any


def new_call_id() -> str:
    """An id for a tool use that came without one (every wire accepts ``[A-Za-z0-9_-]``)."""
    return f"call_{uuid.uuid4().hex[:24]}"


class CallIds:
    """Gives every tool use of one response an id of its own, before anything stores it.

    A use with no id (or an empty one, or one another use of the same response already has)
    gets a generated id; :meth:`for_use` as each use streams (its event carries the id), then
    :meth:`content` for the response's blocks, so the stored history, the tool_result and the
    invocation row all carry the same id. An id reused from an *earlier* response is left as
    it is: the pipeline answers it (a replay, or ``tool.call_id_reused``).
    """

    def __init__(self) -> None:
        self._given: dict[str, deque[str]] = {}
        self._taken: set[str] = set()

    def _fresh(self, given: str) -> str:
        final = given if given and given not in self._taken else new_call_id()
        self._taken.add(final)
        return final

    def for_use(self, call_id: object) -> str:
        given = call_id if isinstance(call_id, str) else ""
        final = self._fresh(given)
        self._given.setdefault(given, deque()).append(final)
        return final

    def content(self, content: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The response's blocks, each tool use with the id :meth:`for_use` gave it (or a fresh one)."""
        out: list[dict[str, Any]] = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                stated = block.get("id")
                given = stated if isinstance(stated, str) else ""
                queue = self._given.get(given)
                final = queue.popleft() if queue else self._fresh(given)
                if final != given or "id" not in block:
                    block = {**block, "id": final}
            out.append(block)
        return out
