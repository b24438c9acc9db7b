"""What the deferral strategies read in the history a request will carry: the deferred tools it
calls, and the ones a native search in it loaded. Shared by active-tools (which seeds its pool
with both) and the native strategies (which declare in full what a switched chat's history calls
but no search of theirs loaded)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def referenced_deferred_tool_names(messages: list[dict[str, Any]], deferred: set[str]) -> list[str]:
    """Deferred tools named by tool-call parts of ``messages`` (the ones actually sent, after
    compaction), and by a summary of earlier turns among them (its text block's ``summary``
    names the deferred tools the turns it replaces called: :mod:`core.chat.compaction`), in
    order of first appearance."""
    seen: dict[str, None] = {}
    for m in messages:
        if not isinstance(m.get("content"), list):
            continue
        assistant = m.get("role") == "assistant"
        for block in m["content"]:
            kind = block.get("type")
            if assistant and kind == "tool_use" and block.get("name") in deferred:
                seen.setdefault(block["name"], None)
            elif kind == "text" and isinstance(summary := block.get("summary"), dict):
                for name in summary.get("tools") or ():
                    if name in deferred:
                        seen.setdefault(name, None)
    return list(seen)


def by_wire_name(deferred: Iterable[str]) -> dict[str, str]:
    """Each deferred tool's name under its wire form (what an OpenAI ``tool_search_output`` names
    it): a strategy builds it once, its deferred tools are the chat's constant."""
    from core.providers.wirenames import encode

    return {encode(n): n for n in deferred}


def natively_loaded_tool_names(
    messages: list[dict[str, Any]], deferred: set[str], wire_to_internal: dict[str, str]
) -> list[str]:
    """Deferred tools that a native search in ``messages`` loaded (Anthropic's
    ``tool_search_tool_result``, OpenAI's ``tool_search_output``, a client search's
    ``tool_reference`` answer): in a chat that switched from a native strategy, what the old
    provider's search had loaded stays reachable. ``tool.search`` answers in text, so a chat that
    always ran active-tools has none. ``wire_to_internal`` is :func:`by_wire_name` of ``deferred``."""
    from core.providers.portable import loaded_by_search

    found = loaded_by_search(messages, wire_to_internal)
    return [n for n in found if n in deferred]


class HistoryReader:
    """:func:`referenced_deferred_tool_names` and :func:`natively_loaded_tool_names` of the history a
    request sends, step after step, reading each message once (:class:`core.memo.PrefixMemo`):
    the history only grows between two requests, and a message already read is the same dict."""

    def __init__(self, deferred: set[str], wire_to_internal: dict[str, str]):
        from core.memo import PrefixMemo

        self.deferred = deferred
        self.wire_to_internal = wire_to_internal
        start: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
        self._memo: PrefixMemo[dict[str, Any], None, tuple[tuple[str, ...], tuple[str, ...]]] = PrefixMemo(
            self._step, start
        )

    def _step(
        self, state: tuple[tuple[str, ...], tuple[str, ...]], message: dict[str, Any]
    ) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], None]:
        referenced, loaded = state
        new_refs = [n for n in referenced_deferred_tool_names([message], self.deferred) if n not in referenced]
        new_loaded = [
            n for n in natively_loaded_tool_names([message], self.deferred, self.wire_to_internal) if n not in loaded
        ]
        if new_refs or new_loaded:
            state = (referenced + tuple(new_refs), loaded + tuple(new_loaded))
        return state, None

    def read(self, messages: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
        """(the deferred tools ``messages`` call, those a native search in them loaded), each in
        order of first appearance."""
        _, (referenced, loaded) = self._memo.run(messages)
        return list(referenced), list(loaded)
