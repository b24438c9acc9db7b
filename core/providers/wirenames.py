"""Internal dotted tool names <-> provider-legal wire names.

Providers accept tool names matching ``^[a-zA-Z0-9_-]{1,64}$``. Internal names are dotted
(``tool.call``, ``mcp.gmail_work.send_message``) or whatever a user or an MCP server chose.

The mapping has two tiers:

* **Readable.** ``.`` becomes ``__`` (``mcp.gmail_work.send_message`` ->
  ``mcp__gmail_work__send_message``). A name takes this form when the result is legal and
  decodes back to the same name (``__`` -> ``.``); on that set the encoding is injective.
* **Hashed.** Every other name (illegal characters, a native ``__``, too long) becomes a
  legal, readable-ish stem plus ``_`` and ten hex digits of the SHA-256 of the name.

Each name's wire form depends only on the name, so it is stable across requests and turns
(the tools array stays byte-identical). :class:`WireNames` is built from the set of names a
request mentions; it checks the set is collision-free and, in the astronomically rare (or
adversarial) case that two names meet, re-hashes the later one with a salt. Its reverse map
is exact.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from typing import Any

MAX_WIRE_LEN = 64
HASH_LEN = 10
WIRE_NAME_RE = re.compile(r"[a-zA-Z0-9_-]{1,64}")  # whole names only: fullmatch
_ILLEGAL = re.compile(r"[^a-zA-Z0-9_-]")
_STEM_HEAD = 20  # a hashed stem keeps the start and the end (the tool's own name) of a long name


def readable(name: str) -> str:
    """The readable encoding: dots become double underscores."""
    return name.replace(".", "__")


def decode_wire(wire: str) -> str:
    """Best-effort inverse of :func:`readable`, for wire names no table knows (invented ones)."""
    return wire.replace("__", ".")


def is_legal(wire: str) -> bool:
    return bool(WIRE_NAME_RE.fullmatch(wire))


def _hashed(name: str, salt: int = 0) -> str:
    payload = name if salt == 0 else f"{salt}\x00{name}"
    digest = hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_LEN]
    stem = _ILLEGAL.sub("_", readable(name))
    room = MAX_WIRE_LEN - 1 - HASH_LEN
    if len(stem) > room:
        stem = stem[:_STEM_HEAD] + stem[-(room - _STEM_HEAD) :]
    return f"{stem}_{digest}"


def encode(name: str) -> str:
    """The wire form of one name, ignoring any set (what :class:`WireNames` uses unless two collide)."""
    if not name:
        raise ValueError("a tool name cannot be empty")
    wire = readable(name)
    if is_legal(wire) and decode_wire(wire) == name:
        return wire
    return _hashed(name)


class WireNames:
    """A collision-free, exactly reversible name table for one request's set of names."""

    def __init__(self, names: Iterable[str]):
        unique = sorted(set(names))
        self._to_wire: dict[str, str] = {}
        self._to_internal: dict[str, str] = {}
        # True when two names met and one was re-hashed: only then does a name's wire form depend
        # on the other names of the request (what a history's kept wire form relies on)
        self.salted = False
        # Readable names first: they never collide with each other, so they keep their form.
        ordered = sorted(unique, key=lambda n: (encode(n) != readable(n), n))
        for name in ordered:
            wire, salt = encode(name), 0
            while wire in self._to_internal:
                salt += 1
                wire = _hashed(name, salt)
                self.salted = True
            self._to_wire[name] = wire
            self._to_internal[wire] = name

    @classmethod
    def for_request(cls, tools: list[dict[str, Any]], messages: list[dict[str, Any]]) -> WireNames:
        """Every name a request mentions: its function tools and the tool names in its history."""
        return cls([*function_tool_names(tools), *history_tool_names(messages)])

    def __contains__(self, name: object) -> bool:
        return name in self._to_wire

    def __len__(self) -> int:
        return len(self._to_wire)

    def items(self) -> Iterator[tuple[str, str]]:
        return iter(self._to_wire.items())

    def wire(self, name: str) -> str:
        """The wire name of an internal name (names outside the set get their standalone form)."""
        found = self._to_wire.get(name)
        return found if found is not None else encode(name)

    def internal(self, wire: str) -> str | None:
        """The internal name of a wire name, or None when no name in the set has that form."""
        return self._to_internal.get(wire)

    def resolve(self, wire: str) -> tuple[str, str | None]:
        """``(internal name, raw wire name if unknown)`` for a name the model wrote."""
        name = self._to_internal.get(wire)
        if name is not None:
            return name, None
        return decode_wire(wire), wire


FUNCTION_KINDS = (None, "custom", "function")  # a tool dict with no type (or these) is a client function tool


def function_tools(tools: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Function tools (internal form), including those grouped inside an OpenAI-style namespace."""
    for tool in tools:
        kind = tool.get("type")
        if kind == "namespace":
            yield from function_tools(tool.get("tools") or [])
        elif kind in FUNCTION_KINDS:
            yield tool


def function_tool_names(tools: list[dict[str, Any]]) -> Iterator[str]:
    return (t["name"] for t in function_tools(tools) if isinstance(t.get("name"), str))


def blocks(content: Any) -> list[dict[str, Any]]:
    """A message's content as a list of blocks (a bare string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [b for b in (content or []) if isinstance(b, dict)]


def history_tool_names(messages: list[dict[str, Any]]) -> Iterator[str]:
    """Internal tool names that history mentions: tool_use blocks and tool_reference blocks."""
    for message in messages:
        for block in blocks(message.get("content")):
            kind = block.get("type")
            if kind == "tool_use" and isinstance(block.get("name"), str):
                yield block["name"]
            elif kind in ("tool_result", "tool_search_tool_result"):
                yield from tool_references(block)


class RequestNames:
    """:meth:`WireNames.for_request`, request after request of one chat: the names its history
    mentions are gathered once per message (:class:`core.memo.PrefixMemo`), and the table is
    built again only when the set of names changed."""

    def __init__(self) -> None:
        from core.memo import PrefixMemo

        def step(seen: frozenset[str], message: dict[str, Any]) -> tuple[frozenset[str], None]:
            new = set(history_tool_names([message])) - seen
            return (seen | new if new else seen), None

        self._memo: PrefixMemo[dict[str, Any], None, frozenset[str]] = PrefixMemo(step, frozenset())
        self._last: tuple[frozenset[str], WireNames] | None = None

    def table(self, tools: list[dict[str, Any]], messages: list[dict[str, Any]]) -> WireNames:
        _, seen = self._memo.run(messages)
        names = seen | set(function_tool_names(tools))
        if self._last is None or self._last[0] != names:
            self._last = (names, WireNames(names))
        return self._last[1]


def tool_references(block: dict[str, Any]) -> list[str]:
    """Tool names referenced by a ``tool_result`` or ``tool_search_tool_result`` block."""
    content = block.get("content")
    if isinstance(content, dict):  # tool_search_tool_result: {"type": ..., "tool_references": [...]}
        refs = content.get("tool_references") or []
    elif isinstance(content, list):  # tool_result: [{"type": "tool_reference", "tool_name"}, ...]
        refs = content
    else:
        return []
    return [
        r["tool_name"]
        for r in refs
        if isinstance(r, dict) and r.get("type") == "tool_reference" and isinstance(r.get("tool_name"), str)
    ]
