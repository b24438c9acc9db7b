"""One chat's history carried to another provider's API: a pure conversion, applied each time a
request is built (:func:`for_target`). The stored history is never rewritten, so a chat that
switches back to its first provider sends that provider's own blocks again, exactly.

The engine's history holds every provider's blocks (see :mod:`core.providers.base`). Each
target keeps what its API reads and drops what it would reject:

================================  ==================  ==================  ==================
block                             anthropic           openai (Responses)  openai-chat
================================  ==================  ==================  ==================
text, tool_use, tool_result       kept                kept                kept
thinking, redacted_thinking       kept                dropped             dropped
server_tool_use +                 kept when the tools dropped             dropped
tool_search_tool_result           array has that
                                  search tool, else
                                  dropped
provider_item (openai):           dropped             kept when the tools dropped
tool_search_call / _output                            array has
                                                      ``tool_search``
provider_item (openai): reasoning dropped             kept, unless the    dropped
and other items                                       item it preceded
                                                      was dropped (or
                                                      is none, or is
                                                      reasoning)
reasoning_content                 dropped             dropped             kept
anything else                     dropped             dropped             dropped
================================  ==================  ==================  ==================

Then, for every target: a server search whose result never came (it was to open the next
response, and a fallback answered that one) is dropped unless it is the last response's; a
``tool_result`` whose call was dropped (the answer to an OpenAI
client search, on another provider) is dropped with it, a search result whose search was
dropped likewise, so every tool use still has its result and no result is orphaned;
``tool_reference`` blocks naming a tool the request does not declare become text; messages
left empty are dropped and neighbours of the same role merged. Wire names are the adapters'
business (:mod:`core.providers.wirenames` maps them afresh for every request).

The offline providers (demo, script) read text, tool uses and results only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.providers.wirenames import blocks, function_tool_names

ANTHROPIC = "anthropic"
OPENAI = "openai"
OPENAI_CHAT = "openai-chat"

PORTABLE = frozenset({"text", "tool_use", "tool_result"})
"""What every API reads: the blocks no conversion drops."""

_OWN: dict[str, frozenset[str]] = {
    ANTHROPIC: PORTABLE | {"thinking", "redacted_thinking", "server_tool_use", "tool_search_tool_result"},
    OPENAI: PORTABLE | {"provider_item"},
    OPENAI_CHAT: PORTABLE | {"reasoning_content"},
}
_OPENAI_SEARCH_ITEMS = ("tool_search_call", "tool_search_output")


def kept_kinds(target: str) -> frozenset[str]:
    """The block types a request to ``target`` may carry."""
    return _OWN.get(target, PORTABLE)


def _anthropic_search_names(tools: Sequence[dict[str, Any]]) -> set[str]:
    return {
        str(t.get("name")) for t in tools if str(t.get("type") or "").startswith("tool_search_tool_") and t.get("name")
    }


def _has_openai_search(tools: Sequence[dict[str, Any]]) -> bool:
    return any(t.get("type") == "tool_search" for t in tools)


def _item(block: dict[str, Any]) -> dict[str, Any]:
    item = block.get("item")
    return item if isinstance(item, dict) else {}


def _is_reasoning(block: dict[str, Any]) -> bool:
    return block.get("type") == "provider_item" and _item(block).get("type") == "reasoning"


class _Target:
    """What one request to one provider accepts."""

    def __init__(self, target: str, tools: Sequence[dict[str, Any]]):
        self.target = target
        self.kinds = kept_kinds(target)
        self.anthropic_search = _anthropic_search_names(tools) if target == ANTHROPIC else set()
        self.openai_search = target == OPENAI and _has_openai_search(tools)
        self.declared = set(function_tool_names(list(tools)))

    def accepts(self, block: dict[str, Any]) -> bool:
        kind = block.get("type")
        if kind not in self.kinds:
            return False
        if kind == "server_tool_use":
            return block.get("name") in self.anthropic_search
        if kind == "provider_item":
            if block.get("provider") != OPENAI:
                return False
            return _item(block).get("type") not in _OPENAI_SEARCH_ITEMS or self.openai_search
        if kind == "text":
            return bool(block.get("text"))
        return True

    def message(self, content: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The blocks of one message this target accepts (reasoning items go with the item they preceded)."""
        keep = [self.accepts(b) for b in content]
        # a reasoning item goes only with the kept item it preceded: the API refuses one that ends
        # a response (stopped mid-thought, cut short by max_output_tokens) or whose own follower
        # is gone (an empty message the adapter did not keep), leaving it before another reasoning
        for i, block in enumerate(content):
            if keep[i] and _is_reasoning(block):
                keep[i] = i + 1 < len(content) and keep[i + 1] and not _is_reasoning(content[i + 1])
        return [b for b, k in zip(content, keep, strict=True) if k]


def _call_ids(messages: list[dict[str, Any]]) -> tuple[set[str], set[str]]:
    """(ids a tool_result may answer, ids a tool_search_tool_result may answer) in ``messages``."""
    calls: set[str] = set()
    searches: set[str] = set()
    for m in messages:
        for b in m["content"]:
            kind = b.get("type")
            if kind == "tool_use":
                calls.add(str(b.get("id") or ""))
            elif kind == "server_tool_use":
                searches.add(str(b.get("id") or ""))
            elif kind == "provider_item":
                item = _item(b)
                if item.get("type") == "tool_search_call" and item.get("execution") == "client":
                    calls.add(str(item.get("call_id") or item.get("id") or ""))
    return calls, searches


def _references_as_text(block: dict[str, Any], declared: set[str]) -> dict[str, Any]:
    """A tool_result whose tool_reference blocks name undeclared tools, with those as text."""
    content = block.get("content")
    if not isinstance(content, list):
        return block
    changed = False
    out: list[Any] = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "tool_reference" and part.get("tool_name") not in declared:
            out.append({"type": "text", "text": f"tool {part.get('tool_name')} (loaded)"})
            changed = True
        else:
            out.append(part)
    return {**block, "content": out} if changed else block


def for_target(
    messages: list[dict[str, Any]], target: str, tools: Sequence[dict[str, Any]] = ()
) -> list[dict[str, Any]]:
    """``messages`` (engine shape, internal names) as a request to provider ``target`` may carry
    them, given the request's ``tools``. Pure: the input is not changed; unchanged blocks are
    shared, not copied."""
    accept = _Target(target, tools)
    filtered = [{"role": m["role"], "content": accept.message(blocks(m.get("content")))} for m in messages]
    calls, searches = _call_ids(filtered)
    answered = {
        str(b.get("tool_use_id") or "")
        for m in filtered
        for b in m["content"]
        if b.get("type") == "tool_search_tool_result"
    }
    last_assistant = max((i for i, m in enumerate(filtered) if m["role"] == "assistant"), default=-1)
    out: list[dict[str, Any]] = []
    for at, m in enumerate(filtered):
        content = []
        for b in m["content"]:
            kind = b.get("type")
            if kind == "server_tool_use" and at != last_assistant and str(b.get("id") or "") not in answered:
                continue  # its result was to open a response that another provider gave instead
            if kind == "tool_result":
                if str(b.get("tool_use_id") or "") not in calls:
                    continue
                if target == ANTHROPIC:
                    b = _references_as_text(b, accept.declared)
            elif kind == "tool_search_tool_result" and str(b.get("tool_use_id") or "") not in searches:
                continue
            content.append(b)
        if not content:
            continue
        if out and out[-1]["role"] == m["role"]:
            out[-1] = {"role": m["role"], "content": out[-1]["content"] + content}
        else:
            out.append({"role": m["role"], "content": content})
    return out


def loaded_by_search(messages: list[dict[str, Any]], wire_to_internal: dict[str, str]) -> list[str]:
    """Tools that a search in ``messages`` loaded, any provider's, in order: Anthropic's
    ``tool_search_tool_result`` references, ``tool_reference`` blocks in tool results (a client
    search's answer), and the tools of OpenAI ``tool_search_output`` items (wire names there, read
    back through ``wire_to_internal``)."""
    from core.providers.wirenames import tool_references

    seen: dict[str, None] = {}
    for m in messages:
        for b in blocks(m.get("content")):
            kind = b.get("type")
            if kind in ("tool_search_tool_result", "tool_result"):
                for ref in tool_references(b):
                    seen.setdefault(ref, None)
            elif kind == "provider_item" and _item(b).get("type") == "tool_search_output":
                for wire in function_tool_names(_item(b).get("tools") or []):
                    if (found := wire_to_internal.get(wire)) is not None:
                        seen.setdefault(found, None)
    return list(seen)


__all__ = ["PORTABLE", "for_target", "kept_kinds", "loaded_by_search"]
