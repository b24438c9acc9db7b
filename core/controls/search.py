"""Searching the deferred tools: ``tool.search`` (active-tools) and the native searches the
client must run itself (OpenAI's client-executed ``tool_search``).

One :class:`DeferredSearch` per chat holds the FTS5 index over its pinned deferred tools (built
on first use), hands every hit to the strategy (active-tools loads it into the array) and reports
the search. It also remembers each search's query for the whole turn, so a result that arrives
later is shown with the query that asked for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from core import events as ev
from core.context import envelope
from core.deferral.strategies import Strategy
from core.events import EventSink
from core.roster.models import RosterPlan
from core.tools import ToolResult, ToolSpec

if TYPE_CHECKING:
    from core.controls.context import ControlContext
    from core.deferral.search import ToolSearchIndex

CLIENT_SEARCH_LIMIT = 5  # tools one client-executed native search loads (all its queries together)
TOOL_SEARCH_MAX = 10


def search_queries(tool_input: Any) -> list[str]:
    """The queries of a native search call, whatever shape its arguments take: ``queries`` or
    ``paths`` (lists), ``query`` (text), else every text value (``{"goal": ...}``, ``{"pattern": ...}``)."""
    if isinstance(tool_input, str):
        return [tool_input] if tool_input.strip() else []
    if not isinstance(tool_input, dict):
        return []
    for key in ("queries", "paths"):
        values = tool_input.get(key)
        if isinstance(values, list) and (found := [v for v in values if isinstance(v, str) and v.strip()]):
            return found
    query = tool_input.get("query")
    if isinstance(query, str) and query.strip():
        return [query]
    return [v for v in tool_input.values() if isinstance(v, str) and v.strip()]


def search_label(tool_input: Any) -> str:
    """A search call's query as one line for events and the UI."""
    queries = search_queries(tool_input)
    if queries:
        return " | ".join(queries)
    return "" if tool_input in (None, {}) else json.dumps(tool_input, ensure_ascii=False, sort_keys=True)


class DeferredSearch:
    """Search, load and report over one chat's pinned deferred tools."""

    def __init__(self, plan: RosterPlan, specs: Mapping[str, ToolSpec], strategy: Strategy, emit: EventSink):
        self.plan = plan
        self.specs = specs
        self.strategy = strategy
        self._emit = emit
        self._index: ToolSearchIndex | None = None
        self._queries: dict[str, str] = {}  # search id -> query, for the whole turn

    def begin_turn(self) -> None:
        self._queries = {}

    # -- queries of native searches -----------------------------------------------------------------
    def asked(self, search_id: str, tool_input: Any) -> str:
        """A native search was called: remember its query for this turn; returns it as one line."""
        query = search_label(tool_input)
        self._queries[search_id] = query
        return query

    def query_of(self, search_id: str, messages: list[dict[str, Any]]) -> str:
        """The query of a search whose result arrived: asked earlier in this turn, or (a turn
        resumed in a new process) found in the history that was sent."""
        if search_id in self._queries:
            return self._queries[search_id]
        for m in messages:
            for b in m["content"] if isinstance(m.get("content"), list) else []:
                if b.get("type") == "server_tool_use" and b.get("id") == search_id:
                    return search_label(b.get("input"))
        return ""

    # -- searching ------------------------------------------------------------------------------------
    def rank(self, queries: list[str], limit: int) -> list[str]:
        """The deferred tools best matching ``queries``: each query's best first, then each one's
        second best, and so on, without repeats, at most ``limit``."""
        if self._index is None:
            from core.deferral.search import ToolSearchIndex

            self._index = ToolSearchIndex([self.specs[n] for n in self.plan.deferred_tool_names if n in self.specs])
        ranked = [[h.name for h in self._index.search(q, k=limit)] for q in queries]
        hits: list[str] = []
        for place in range(limit):
            for names in ranked:
                if place < len(names) and names[place] not in hits:
                    hits.append(names[place])
        return hits[:limit]

    def search_and_load(self, queries: list[str], limit: int, label: str, search_id: str = "") -> list[str]:
        """Search, hand the hits to the strategy and report both; the hits, best first."""
        hits = self.rank(queries, limit)
        added = self.strategy.discover(hits)
        if added:
            self._emit(ev.ToolDiscovered(names=added, source="search"))
        self._emit(ev.ModelToolSearch(id=search_id, query=label, references=hits, executor="client"))
        return hits

    def answer_client_search(self, search_id: str, tool_input: Any) -> dict[str, Any]:
        """Run a native search the client must execute; the answer is a tool_result of
        ``tool_reference`` blocks (the adapter expands them into definitions)."""
        query = self._queries.setdefault(search_id, search_label(tool_input))
        hits = self.search_and_load(search_queries(tool_input), CLIENT_SEARCH_LIMIT, query, search_id)
        return {
            "type": "tool_result",
            "tool_use_id": search_id,
            "content": [{"type": "tool_reference", "tool_name": n} for n in hits],
        }


def run_tool_search(arguments: dict[str, Any], ctx: ControlContext) -> ToolResult:
    """``tool.search {query, limit?}``: find deferred tools and load them for the next step."""
    from core.roster.index import entry_text

    query = str(arguments.get("query", ""))
    limit = max(1, min(int(arguments.get("limit") or 5), TOOL_SEARCH_MAX))
    hits = ctx.search.search_and_load([query], limit, query)
    if not hits:
        return ToolResult.of_text(
            f"No tool matches {query!r}. No such tool exists here; do not search again for the same thing."
        )
    lines = [f"Loaded {len(hits)} tool(s); call them directly from your next step:"]
    for n in hits:
        spec = ctx.specs[n]
        lines.append(envelope.fence(entry_text(spec), spec.envelope_source))
    return ToolResult(content=[{"type": "text", "text": "\n".join(lines)}], structured={"loaded": hits})
