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

from core.memo import shared_prefix
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


class _Ids:
    """The ids a stretch of filtered messages holds: ``calls`` a ``tool_result`` may answer,
    ``searches`` a ``tool_search_tool_result`` may answer, ``answered`` the searches answered."""

    __slots__ = ("answered", "calls", "searches")

    def __init__(self, messages: Sequence[dict[str, Any]] = ()):
        self.calls: set[str] = set()
        self.searches: set[str] = set()
        self.answered: set[str] = set()
        for m in messages:
            for b in m["content"]:
                kind = b.get("type")
                if kind == "tool_use":
                    self.calls.add(str(b.get("id") or ""))
                elif kind == "server_tool_use":
                    self.searches.add(str(b.get("id") or ""))
                elif kind == "tool_search_tool_result":
                    self.answered.add(str(b.get("tool_use_id") or ""))
                elif kind == "provider_item":
                    item = _item(b)
                    if item.get("type") == "tool_search_call" and item.get("execution") == "client":
                        self.calls.add(str(item.get("call_id") or item.get("id") or ""))

    def union(self, other: _Ids) -> _Ids:
        out = _Ids()
        out.calls = self.calls | other.calls
        out.searches = self.searches | other.searches
        out.answered = self.answered | other.answered
        return out


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


def _filtered(accept: _Target, messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"role": m["role"], "content": accept.message(blocks(m.get("content")))} for m in messages]


def _assemble(accept: _Target, filtered: list[dict[str, Any]], ids: _Ids, last_assistant: int) -> list[dict[str, Any]]:
    """The cross-message half of :func:`for_target` over ``filtered`` (each message's own blocks
    already chosen), with ``ids`` those of the whole request and ``last_assistant`` the index in
    ``filtered`` of the request's last assistant message (-1: it is not among them)."""
    out: list[dict[str, Any]] = []
    for at, m in enumerate(filtered):
        content = []
        for b in m["content"]:
            kind = b.get("type")
            if kind == "server_tool_use" and at != last_assistant and str(b.get("id") or "") not in ids.answered:
                continue  # its result was to open a response that another provider gave instead
            if kind == "tool_result":
                if str(b.get("tool_use_id") or "") not in ids.calls:
                    continue
                if accept.target == ANTHROPIC:
                    b = _references_as_text(b, accept.declared)
            elif kind == "tool_search_tool_result" and str(b.get("tool_use_id") or "") not in ids.searches:
                continue
            content.append(b)
        if not content:
            continue
        if out and out[-1]["role"] == m["role"]:
            out[-1] = {"role": m["role"], "content": out[-1]["content"] + content}
        else:
            out.append({"role": m["role"], "content": content})
    return out


def _last_assistant(messages: Sequence[dict[str, Any]]) -> int:
    return max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)


def _join(head: list[dict[str, Any]], tail: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Two assembled stretches as one: neighbours of the same role at the seam merged."""
    if head and tail and head[-1]["role"] == tail[0]["role"]:
        seam = {"role": tail[0]["role"], "content": head[-1]["content"] + tail[0]["content"]}
        return [*head[:-1], seam, *tail[1:]]
    return head + tail


def for_target(
    messages: list[dict[str, Any]], target: str, tools: Sequence[dict[str, Any]] = ()
) -> list[dict[str, Any]]:
    """``messages`` (engine shape, internal names) as a request to provider ``target`` may carry
    them, given the request's ``tools``. Pure: the input is not changed; unchanged blocks are
    shared, not copied."""
    accept = _Target(target, tools)
    filtered = _filtered(accept, messages)
    return _assemble(accept, filtered, _Ids(filtered), _last_assistant(filtered))


class PortableHistory:
    """:func:`for_target` for one target, request after request of one chat, at the cost of what
    is new: the same result, proven equal by ``tests/unit/test_portable_incremental.py``.

    The messages up to the last assistant message of a request are *frozen* (up to the one before
    it, when that one holds an Anthropic server search whose result may open the next response):
    their converted form is kept (its dicts stay the same objects, which the adapters recognise),
    with the ids they hold and the ids they still wait for (a result whose call is not among them,
    a server search whose result is not). The next request's list must start with the very same
    frozen messages; only the rest is converted, with the ids of the whole list. When that rest
    answers something the frozen part waited for, when the tools change what the conversion keeps,
    or when the list no longer starts with the frozen messages (a compaction, a reload),
    everything is converted again, once."""

    def __init__(self, target: str):
        self.target = target
        self.reconverted = 0  # times what was frozen was thrown away and converted again
        self.converted = 0  # messages converted in all (a chat that only grows: about one each)
        self._reset()

    def _reset(self) -> None:
        self._inputs: list[dict[str, Any]] = []  # the frozen messages, as given
        self._out: list[dict[str, Any]] = []  # their conversion, assembled
        self._ids = _Ids()
        self._waiting = _Ids()  # results without their call, searches without their result
        self._open_last = False  # the frozen part's last assistant has a server search without its result
        self._key: tuple[Any, ...] | None = None
        self._refs = False  # the frozen part holds tool_reference blocks in results (Anthropic reads `declared`)
        self._declared: set[str] = set()

    def convert(self, messages: list[dict[str, Any]], tools: Sequence[dict[str, Any]] = ()) -> list[dict[str, Any]]:
        accept = _Target(self.target, tools)
        key = (frozenset(accept.anthropic_search), accept.openai_search)
        frozen = len(self._inputs)
        if (
            key != self._key
            or (self._refs and accept.declared != self._declared)
            or frozen > len(messages)
            or shared_prefix(self._inputs, messages) < frozen
        ):
            self.reconverted += frozen > 0
            self._reset()
            frozen = 0
        tail = _filtered(accept, messages[frozen:])
        tail_ids = _Ids(tail)
        last = _last_assistant(tail)
        waiting = self._waiting
        if frozen and (
            tail_ids.calls & waiting.calls
            or tail_ids.searches & waiting.searches
            or tail_ids.answered & waiting.answered
            or (last < 0 and self._open_last)
        ):
            self.reconverted += 1
            self._reset()
            return self.convert(messages, tools)
        self.converted += len(tail)
        self._key = key
        glob = self._ids.union(tail_ids)
        end = last  # freeze what comes before the last assistant message, and before an
        prev = _last_assistant(tail[:last]) if last > 0 else -1  # Anthropic search whose result
        if prev >= 0 and _open_searches(tail[prev], self._ids.union(_Ids(tail[:last]))):  # may open the next
            end = prev
        if end > 0:
            ext_ids = self._ids.union(_Ids(tail[:end]))
            ext_waiting = _waiting(tail[:end], ext_ids)
            rest_ids = _Ids(tail[end:])
            if not (
                rest_ids.calls & ext_waiting.calls
                or rest_ids.searches & ext_waiting.searches
                or rest_ids.answered & ext_waiting.answered
            ):  # what is frozen now reads the same with the rest's ids: its dicts go out as they are
                self._freeze(accept, messages[frozen : frozen + end], tail[:end], ext_ids, ext_waiting)
                return _join(self._out, _assemble(accept, tail[end:], glob, last - end))
        return _join(self._out, _assemble(accept, tail, glob, last))

    def _freeze(
        self,
        accept: _Target,
        inputs: list[dict[str, Any]],
        filtered: list[dict[str, Any]],
        ids: _Ids,
        waiting: _Ids,
    ) -> None:
        self._out = _join(self._out, _assemble(accept, filtered, ids, -1))
        self._inputs = self._inputs + inputs
        self._ids = ids
        self._waiting = self._waiting.union(waiting)
        if accept.target == ANTHROPIC and any(
            b.get("type") == "tool_result" and _has_references(b) for m in filtered for b in m["content"]
        ):
            self._refs = True
        at = _last_assistant(filtered)
        if at >= 0:
            self._open_last = _open_searches(filtered[at], ids)
        self._declared = accept.declared


def _waiting(filtered: list[dict[str, Any]], ids: _Ids) -> _Ids:
    """What ``filtered`` still waits for, given the ``ids`` of everything up to its end: results
    whose call is not among them, search results whose search is not, searches not answered."""
    waiting = _Ids()
    for m in filtered:
        for b in m["content"]:
            kind = b.get("type")
            if kind == "tool_result" and (i := str(b.get("tool_use_id") or "")) not in ids.calls:
                waiting.calls.add(i)
            elif kind == "tool_search_tool_result" and (i := str(b.get("tool_use_id") or "")) not in ids.searches:
                waiting.searches.add(i)
            elif kind == "server_tool_use" and (i := str(b.get("id") or "")) not in ids.answered:
                waiting.answered.add(i)
    return waiting


def _open_searches(message: dict[str, Any], ids: _Ids) -> bool:
    """Whether ``message`` holds a server search that ``ids`` has no result for."""
    return any(
        b.get("type") == "server_tool_use" and str(b.get("id") or "") not in ids.answered for b in message["content"]
    )


def _has_references(block: dict[str, Any]) -> bool:
    content = block.get("content")
    return isinstance(content, list) and any(
        isinstance(part, dict) and part.get("type") == "tool_reference" for part in content
    )


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


__all__ = ["PORTABLE", "PortableHistory", "for_target", "kept_kinds", "loaded_by_search"]
