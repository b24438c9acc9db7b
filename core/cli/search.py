"""``deferchat search [QUERY]``: tool search as the model gets it.

Over the plan's deferred tools (what ``tool.search`` reaches), or over every tool of a
``--tools`` catalog; batch form with ``--queries`` (one ``{id, ranked}`` line per query).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from core.cli import output
from core.cli.exits import EXIT_OK
from core.cli.printer import server_failures_to_stderr
from core.deferral.names import ACTIVE_TOOLS
from core.display import safe

if TYPE_CHECKING:
    from core.deferral.search import SearchDoc
    from core.tools import ToolSpec


def run(args: argparse.Namespace) -> int:
    from core.deferral.search import ToolSearchIndex
    from core.deferral.search_eval import load_queries
    from core.errors import UsageError

    docs, scope = _docs_and_scope(args)
    index = ToolSearchIndex(docs)
    k = max(1, args.k)
    if args.queries:
        try:
            queries = load_queries(args.queries)
        except (OSError, ValueError) as exc:
            raise UsageError(f"--queries {args.queries}: {exc}") from exc
        for q in queries:
            ranked = [h.name for h in index.search(q.query, k=k)]
            output.data(json.dumps({"id": q.id, "ranked": ranked}))
        return EXIT_OK
    if not args.query:
        raise UsageError("search needs a QUERY, or --queries FILE.jsonl")
    hits = index.search(args.query, k=k)
    if args.json:
        output.data(
            json.dumps(
                {
                    "query": args.query,
                    "scope": scope,
                    "hits": [{"name": h.name, "score": round(h.score, 4)} for h in hits],
                }
            )
        )
        return EXIT_OK
    output.out(safe(f"{len(hits)} of {scope} for {args.query!r}:"))
    for i, h in enumerate(hits, 1):
        output.out(f"{i:>3}. {safe(h.name)}  ({h.score:.3f})")
    return EXIT_OK


def _docs_and_scope(args: argparse.Namespace) -> tuple[list[SearchDoc | ToolSpec], str]:
    """The tools searched, and the words that say which they are."""
    from core.errors import UsageError

    if args.tools:
        from core.deferral.search_eval import load_tools

        try:
            docs: list[SearchDoc | ToolSpec] = list(load_tools(args.tools))
        except (OSError, ValueError) as exc:
            raise UsageError(f"--tools {args.tools}: {exc}") from exc
        return docs, f"{len(docs)} tools in {args.tools}"
    from core.roster.inputs import build_plan_input, token_estimator
    from core.roster.planner import plan_roster

    inp = build_plan_input(
        roster=args.roster, mcp_config=args.mcp_config, strategy=ACTIVE_TOOLS, on_event=server_failures_to_stderr
    )
    estimator = token_estimator()
    plan = plan_roster(inp, estimator)
    estimator.flush()  # the counts are kept: the next search loads no tokenizer
    pool = plan.deferred_tool_names if not args.all else plan.pinned_names()
    docs = [spec for n in pool if (spec := plan.spec_of(n)) is not None]  # every pooled name has one
    return docs, f"{len(docs)} {'pinned' if args.all else 'deferred'} tools of roster {args.roster or 'production'}"
