"""Tool-search benchmark on the bundled BFCL development half and the everyday set. Prints one JSON object.

    python tests/bench/bench_search.py [--k 10] [--builds 3]

Figures: recall@1/5/10, MRR (whole-catalog ranking, as SOURCE.md defines them) and
``unranked``, the share of queries where no relevant tool is ranked at all, overall,
for the ``live_*`` queries and for the synthetic rest; ms per query (mean, p50, p95, max;
in-process, one index built once, ``search(query, k)``); index build time. For context it
also prints the same metrics with the re-rank switched off (FTS5 BM25 alone, same
tokenization) and the default method on two halves of the queries split by a hash of their
relevant tools, to show how much the figure moves between query sets. ``everyday``: the same
metrics for ``queries_everyday.jsonl`` (what people type to an assistant: "send email", "reply to
a mail", "list my files") over every tool of the production roster.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from core.deferral.search import DEFAULT_TUNING, ToolSearchIndex  # noqa: E402
from core.deferral.search_eval import evaluate, load_queries, load_tools, roster_tools  # noqa: E402

DATA = REPO / "tests" / "data" / "toolsearch"


def _fold(relevant: tuple[str, ...]) -> int:
    return hashlib.sha256("|".join(sorted(relevant)).encode()).digest()[0] % 2


def _short(figures: dict) -> dict:
    return {
        group: {key: figures[group][key] for key in ("recall@1", "recall@5", "recall@10", "mrr", "unranked")}
        for group in ("overall", "live", "synthetic")
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=10, help="k for the timed searches")
    parser.add_argument("--builds", type=int, default=3, help="index builds to time")
    args = parser.parse_args()

    tools = load_tools(DATA / "tools.jsonl")
    queries = load_queries(DATA / "queries_dev.jsonl")

    ToolSearchIndex([])  # pay the sqlite_utils import outside the timings
    build_ms = []
    for _ in range(max(1, args.builds)):
        start = time.perf_counter()
        index = ToolSearchIndex(tools)
        build_ms.append((time.perf_counter() - start) * 1000)

    index.search("warm up the connection", args.k)
    query_ms = []
    for q in queries:
        start = time.perf_counter()
        index.search(q.query, args.k)
        query_ms.append((time.perf_counter() - start) * 1000)
    query_ms.sort()

    figures = evaluate(index, queries, ks=(1, 5, 10))
    bm25_only = ToolSearchIndex(tools, replace(DEFAULT_TUNING, coverage_weight=0.0, name_weight=0.0))
    folds = {
        f"relevant_hash_fold_{f}": {
            "queries": len(subset),
            **{
                group: {"recall@5": r[group]["recall@5"], "mrr": r[group]["mrr"]}
                for group in ("overall", "live")
                for r in [evaluate(index, subset, ks=(5,))]
            },
        }
        for f in (0, 1)
        for subset in [[q for q in queries if _fold(q.relevant) == f]]
    }

    everyday_index = ToolSearchIndex(roster_tools("production"))
    everyday = evaluate(everyday_index, load_queries(DATA / "queries_everyday.jsonl"), ks=(1, 3, 5))["overall"]

    print(
        json.dumps(
            {
                "data": "tests/data/toolsearch (BFCL v4 development half)",
                "tools": len(index),
                "queries": figures["overall"]["queries"],
                "live_queries": figures["live"]["queries"],
                "synthetic_queries": figures["synthetic"]["queries"],
                **_short(figures),
                "query_ms": {
                    "k": args.k,
                    "mean": round(statistics.fmean(query_ms), 3),
                    "p50": round(query_ms[len(query_ms) // 2], 3),
                    "p95": round(query_ms[int(len(query_ms) * 0.95)], 3),
                    "max": round(query_ms[-1], 3),
                },
                "index_build_ms": {
                    "mean": round(statistics.fmean(build_ms), 1),
                    "min": round(min(build_ms), 1),
                    "builds": len(build_ms),
                },
                "tuning": DEFAULT_TUNING.__dict__,
                "bm25_only": _short(evaluate(bm25_only, queries, ks=(1, 5, 10))),
                "folds": folds,
                "everyday": {"tools": len(everyday_index), **everyday},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
