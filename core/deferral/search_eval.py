"""Evaluating tool search: the JSON-lines data sets (tools, queries) and recall@k, MRR and the
unranked share, as ``tests/data/toolsearch/SOURCE.md`` defines them; and ``deferchat search
--queries`` lines."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from core.deferral.search import SearchDoc, SearchQuery, ToolSearchIndex

__all__ = ["evaluate", "load_queries", "load_tools", "roster_tools", "search_batch"]


# -- files ---------------------------------------------------------------------------------


@cache
def _adapter(record_type: type) -> Any:
    from pydantic import TypeAdapter  # the file boundary; not paid by a plain import

    return TypeAdapter(record_type)


def _read_jsonl(path: str | Path, record_type: type) -> list[Any]:
    adapter = _adapter(record_type)
    out = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                out.append(adapter.validate_python(json.loads(line)))
            except ValueError as exc:  # json.JSONDecodeError and pydantic.ValidationError
                what = record_type.__name__
                raise ValueError(f"{path}:{lineno}: not a valid {what}: {exc}") from exc
    return out


def load_tools(path: str | Path) -> list[SearchDoc]:
    """``tools.jsonl``: one ``{"name", "description", "input_schema", ...}`` a line."""
    return _read_jsonl(path, SearchDoc)


def load_queries(path: str | Path) -> list[SearchQuery]:
    """``queries.jsonl``: one ``{"id", "query", "relevant": [names], "category", ...}`` a line."""
    return _read_jsonl(path, SearchQuery)


def roster_tools(name: str = "production") -> list[Any]:
    """Every tool a roster offers (its configured tools and its servers' static lists), as
    ``ToolSpec``: the catalog ``queries_everyday.jsonl`` is labelled against."""
    from core.roster.loader import load_roster  # the roster models: not paid by a plain import

    roster = load_roster(name)
    return [*roster.configured, *roster.discovered]


# -- evaluation ----------------------------------------------------------------------------


def _summary(rows: list[tuple[dict[int, float], float]], ks: Sequence[int]) -> dict[str, Any]:
    n = len(rows)
    out: dict[str, Any] = {"queries": n}
    for k in ks:
        out[f"recall@{k}"] = round(sum(r[k] for r, _ in rows) / n, 4) if n else None
    out["mrr"] = round(sum(rr for _, rr in rows) / n, 4) if n else None
    out["unranked"] = round(sum(1 for _, rr in rows if rr == 0.0) / n, 4) if n else None
    return out


def evaluate(
    index: ToolSearchIndex,
    queries: Iterable[SearchQuery],
    ks: Sequence[int] = (1, 5, 10),
    depth: int | None = None,
) -> dict[str, Any]:
    """recall@k and MRR, as the toolsearch SOURCE.md defines them, and the unranked share.

    recall@k is the mean over queries of |relevant ∩ top k| / |relevant|; MRR the mean
    reciprocal rank of the first relevant tool (0 when none is ranked); ``unranked`` the
    share of queries where no relevant tool is ranked at all (within ``depth``). Reported
    ``overall``, for ``live`` (categories ``live_*``: real user queries) and ``synthetic``
    (the rest). ``depth`` is how far each query is ranked: by default the whole catalog, as
    SOURCE.md asks; a smaller depth (at least ``max(ks)``) is faster and only lowers MRR
    for first hits beyond it. Queries without relevant tools are skipped and counted.
    """
    depth = max(len(index), 1) if depth is None else max(depth, *ks)
    groups: dict[str, list[tuple[dict[int, float], float]]] = {
        "overall": [],
        "live": [],
        "synthetic": [],
    }
    skipped = 0
    for q in queries:
        relevant = set(q.relevant)
        if not relevant:
            skipped += 1
            continue
        ranked = [h.name for h in index.search(q.query, k=depth)]
        recall = {k: len(relevant.intersection(ranked[:k])) / len(relevant) for k in ks}
        rr = next((1.0 / (i + 1) for i, name in enumerate(ranked) if name in relevant), 0.0)
        groups["overall"].append((recall, rr))
        groups["live" if q.category.startswith("live_") else "synthetic"].append((recall, rr))
    result: dict[str, Any] = {name: _summary(rows, ks) for name, rows in groups.items()}
    result["skipped"] = skipped
    result["depth"] = depth
    return result


def search_batch(index: ToolSearchIndex, queries: Iterable[SearchQuery], k: int = 10) -> list[dict[str, Any]]:
    """The ``deferchat search --queries`` lines: ``{"id", "ranked": [names]}``, one a query."""
    return [{"id": q.id, "ranked": [h.name for h in index.search(q.query, k)]} for q in queries]
