"""What the deferral strategies read in the history a request will carry: the deferred tools it
calls, and the ones a native search in it loaded. Shared by active-tools (which seeds its pool
with both) and the native strategies (which declare in full what a switched chat's history calls
but no search of theirs loaded)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def referenced_deferred_tool_names(messages: list[dict[str, Any]], deferred: set[str]) -> list[str]:
    """Deferred tools named by tool-call parts of ``messages`` (the ones actually sent, after
    compaction), in order of first appearance."""
    seen: dict[str, None] = {}
    for m in messages:
        if m.get("role") != "assistant" or not isinstance(m.get("content"), list):
            continue
        for block in m["content"]:
            if block.get("type") == "tool_use" and block.get("name") in deferred:
                seen.setdefault(block["name"], None)
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
