"""Call ids: every tool use of one response gets an id of its own before anything stores it, and
one invocation is one tool use, however often the wire repeats it."""

from __future__ import annotations

import uuid
from collections import deque
from typing import Any

from core.tools import canonical_json


def new_call_id() -> str:
    """An id for a tool use that came without one (every wire accepts ``[A-Za-z0-9_-]``)."""
    return f"call_{uuid.uuid4().hex[:24]}"


def _call_key(name: Any, tool_input: Any) -> tuple[str, str]:
    """What makes two uses one invocation (with their id): the tool and its arguments."""
    try:
        arguments = canonical_json(tool_input)
    except (TypeError, ValueError, RecursionError):
        arguments = repr(tool_input)
    return str(name or ""), arguments


class CallIds:
    """Gives every tool use of one response an id of its own, before anything stores it.

    A use with no id (or an empty one, or one another use of the same response already has for
    another tool or other arguments) gets a generated id; :meth:`for_use` as each use streams
    (its event carries the id), then :meth:`content` for the response's blocks, so the stored
    history, the tool_result and the invocation row all carry the same id. A use that repeats an
    earlier use of the same response -- the same id, the same tool, the same arguments -- is
    that invocation again, not another: :meth:`for_use` answers None for it and :meth:`content`
    drops it, so it has one row and runs once (some servers stream a call twice). An id reused
    from an *earlier* response is left as it is: the pipeline answers it (a replay, or
    ``tool.call_id_reused``).
    """

    def __init__(self) -> None:
        self._given: dict[str, deque[str]] = {}
        self._taken: set[str] = set()
        self._seen: set[tuple[str, tuple[str, str]]] = set()  # (stated id, call) of the uses so far

    def _fresh(self, given: str) -> str:
        final = given if given and given not in self._taken else new_call_id()
        self._taken.add(final)
        return final

    def for_use(self, call_id: object, name: Any = None, tool_input: Any = None) -> str | None:
        """The id of a use as it streams; None when it repeats an earlier use of the response."""
        given = call_id if isinstance(call_id, str) else ""
        if given and name is not None:
            seen = (given, _call_key(name, tool_input))
            if seen in self._seen:
                return None
            self._seen.add(seen)
        final = self._fresh(given)
        self._given.setdefault(given, deque()).append(final)
        return final

    def content(self, content: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The response's blocks, each tool use with the id :meth:`for_use` gave it (or a fresh
        one), without the uses that repeat an earlier one."""
        out: list[dict[str, Any]] = []
        kept: set[tuple[str, tuple[str, str]]] = set()
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                stated = block.get("id")
                given = stated if isinstance(stated, str) else ""
                seen = (given, _call_key(block.get("name"), block.get("input")))
                if given and seen in kept:
                    continue  # the same invocation again: one row, one run
                kept.add(seen)
                queue = self._given.get(given)
                final = queue.popleft() if queue else self._fresh(given)
                if final != given or "id" not in block:
                    block = {**block, "id": final}
            out.append(block)
        return out
