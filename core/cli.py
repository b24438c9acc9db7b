"""The ``deferchat`` command: the TUI by default, and headless subcommands.

Subcommands import only what they use; ``plan``, ``ask`` and ``search`` never import Textual.
Exit codes: 0 done, 1 failed, 2 usage, 3 parked on an approval.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PARKED = 0, 1, 2, 3


# --- plan -----------------------------------------------------------------------------------------


def _add_roster_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--roster", default=None, metavar="NAME|FILE",
                   help="a named roster (production) or a roster JSON file (default: production)")
    p.add_argument("--mcp-config", default=None, metavar="FILE",
                   help="an mcpServers JSON file; its servers are discovered live and merged")


def _add_plan_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", choices=["overflow", "threshold"], default=None,
                   help="which tools are deferred (default: overflow, ADR-0123)")
    p.add_argument("--per-server", type=int, default=None, metavar="N",
                   help="threshold policy: a server with more than N MCP tools defers them (default 10)")
    p.add_argument("--aggregate", type=int, default=None, metavar="N",
                   help="threshold policy: more than N MCP tools in all defers every one (default 30)")
    p.add_argument("--max-definitions", type=int, default=None, metavar="N", help="definition cap (default 30)")
    p.add_argument("--max-definition-tokens", type=int, default=None, metavar="N",
                   help="definition token cap (default 9000)")
    p.add_argument("--max-index-entries", type=int, default=None, metavar="N", help="index entry cap (default 40)")
    p.add_argument("--max-index-tokens", type=int, default=None, metavar="N", help="index token cap (default 2000)")


def _caps_from(args: argparse.Namespace) -> Any:
    from core.roster.models import Caps

    fields = {k: getattr(args, k) for k in ("max_definitions", "max_definition_tokens",
                                             "max_index_entries", "max_index_tokens")
              if getattr(args, k, None) is not None}
    return Caps(**fields)


def _policy_from(args: argparse.Namespace) -> Any:
    from core.roster.models import PolicyConfig

    fields: dict[str, Any] = {}
    if args.policy:
        fields["name"] = args.policy
    if args.per_server is not None:
        fields["per_server"] = args.per_server
    if args.aggregate is not None:
        fields["aggregate"] = args.aggregate
    return PolicyConfig(**fields)


def cmd_plan(args: argparse.Namespace) -> int:
    from core.roster.planner import plan_roster
    from core.session import build_plan_input, resolve_strategy_for, token_estimator

    strategy, reason = resolve_strategy_for(args.strategy or "wrapper", args.provider, args.model, args.base_url)
    inp = build_plan_input(roster=args.roster, mcp_config=args.mcp_config, caps=_caps_from(args),
                           policy=_policy_from(args), strategy=strategy, strategy_reason=reason,
                           on_event=_stderr_server_status)
    estimator = token_estimator()
    plan = plan_roster(inp, estimator)
    estimator.cache.flush()  # type: ignore[attr-defined]
    if args.json:
        sys.stdout.write(plan.to_json() + "\n")
    else:
        from core.roster.report import plan_table

        sys.stdout.write(plan_table(plan))
    return EXIT_OK


def _stderr_server_status(event: Any) -> None:
    if getattr(event, "type", "") == "server.status" and event.status == "failed":
        print(f"deferchat: MCP server {event.server} failed: {event.message}", file=sys.stderr)


# --- ask / resume ---------------------------------------------------------------------------------


class _TtyApprover:
    """Asks on the terminal when ``ask`` runs interactively without ``--approve``."""

    async def decide(self, request: Any) -> Any:
        import asyncio

        from core.pipeline.approvals import Decision

        args = json.dumps(request.arguments, ensure_ascii=False)
        prompt = (f"\nApprove {request.tool}" + (f" (via {request.via})" if request.via else "")
                  + f" [{request.side_effect}] {args[:300]}\n  [y] allow once  [a] allow for this chat  "
                  "[n] deny  [p] park: ")
        while True:
            answer = (await asyncio.to_thread(input, prompt)).strip().lower()
            choice = {"y": Decision.ALLOW_ONCE, "a": Decision.ALLOW_CHAT, "n": Decision.DENY,
                      "p": Decision.PARK}.get(answer[:1])
            if choice is not None:
                return choice


def _approver(value: str | None) -> Any:
    from core.pipeline.approvals import Decision, FixedApprover

    if value is None:
        return _TtyApprover() if sys.stdin.isatty() else FixedApprover(Decision.PARK)
    return FixedApprover({"yes": Decision.ALLOW_ONCE, "no": Decision.DENY, "park": Decision.PARK}[value])


class _Printer:
    """Prints events: one JSON line each (``--json``), or a readable transcript."""

    def __init__(self, as_json: bool):
        self.as_json = as_json
        self.in_text = False

    def __call__(self, event: Any) -> None:
        if self.as_json:
            sys.stdout.write(event.to_json() + "\n")
            sys.stdout.flush()
            return
        t = event.type
        if t == "model.text.delta":
            sys.stdout.write(event.text)
            sys.stdout.flush()
            self.in_text = True
            return
        if self.in_text and t != "model.text":
            sys.stdout.write("\n")
            self.in_text = False
        line = None
        if t == "plan":
            line = (f"[plan {'pinned' if event.pinned else 'new'}: {len(event.defined_tool_names)} defined, "
                    f"{len(event.deferred_tool_names)} deferred, {len(event.skipped_tool_names)} skipped; "
                    f"strategy {event.strategy}]")
        elif t == "tool.requested":
            line = f"[tool {event.name}" + (f" via {event.via}" if event.via else "") + "]"
        elif t == "tool.approval_required":
            line = f"[approval required: {event.name} ({event.side_effect})]"
        elif t == "tool.approved":
            line = f"[approved {event.name} ({event.scope})]"
        elif t in ("tool.denied", "tool.failed"):
            line = f"[{t.split('.')[1]} {event.name}: {event.code}: {event.message}]"
        elif t == "tool.completed":
            line = f"[done {event.name}" + (" (replayed)" if event.replayed else "") + "]"
        elif t == "model.tool_search" and event.references:
            line = f"[tool search {event.query!r}: {', '.join(event.references)}]"
        elif t == "tool.discovered":
            line = f"[loaded {', '.join(event.names)}]"
        elif t == "server.status" and event.status == "failed":
            line = f"[MCP server {event.server} failed: {event.message}]"
        elif t == "error":
            line = f"[error {event.code}: {event.message}]"
        elif t == "turn.completed" and event.status == "parked":
            line = f"[parked: run `deferchat resume {event.chat_id} --approve yes|no`]"
        if line:
            print(line, file=sys.stderr)


def _exit_for(status: str) -> int:
    return {"done": EXIT_OK, "parked": EXIT_PARKED}.get(status, EXIT_FAILED)


def cmd_ask(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(_ask(args))


async def _ask(args: argparse.Namespace) -> int:
    from core.engine import ChatOptions, Engine

    engine = Engine()
    printer = _Printer(args.json)
    opts = ChatOptions(roster=args.roster, mcp_config=args.mcp_config, provider=args.provider, model=args.model,
                       base_url=args.base_url, script=args.script, strategy=args.strategy,
                       policy=_policy_from(args), caps=_caps_from(args))
    session = await engine.open_chat(args.chat, opts, approver=_approver(args.approve), subscribers=[printer],
                                     record=args.record)
    try:
        if args.chat and session.parked() is not None:
            result = await session.resume()
            if result.status != "done":
                return _exit_for(result.status)
        result = await session.send(args.prompt)
        if not args.json:
            print(f"[chat {session.chat_id}]", file=sys.stderr)
        return _exit_for(result.status)
    finally:
        await session.close()


def cmd_resume(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(_resume(args))


async def _resume(args: argparse.Namespace) -> int:
    from core.engine import ChatOptions, Engine

    engine = Engine()
    session = await engine.open_chat(args.chat, ChatOptions(script=args.script), approver=_approver(args.approve),
                                     subscribers=[_Printer(args.json)], record=args.record)
    try:
        result = await session.resume()
        return _exit_for(result.status)
    finally:
        await session.close()


# --- chats ----------------------------------------------------------------------------------------


def cmd_chats(args: argparse.Namespace) -> int:
    from core.errors import UsageError
    from core.store import Store

    store = Store()
    action = args.action or "list"
    if action == "list":
        rows = store.chats()
        if args.json:
            keep = ("id", "title", "provider", "model", "strategy", "status", "created_at", "updated_at")
            for r in rows:
                print(json.dumps({k: r.get(k) for k in keep}))
            return EXIT_OK
        if not rows:
            print("no chats yet: run `deferchat` or `deferchat ask PROMPT`")
        for r in rows:
            print(f"{r['id']}  {r['status']:<7}  {r['provider']}/{r['model']}  {r['strategy']:<12}  {r['title']}")
        return EXIT_OK
    if not args.chat_id:
        raise UsageError(f"chats {action} needs a chat id")
    chat = store.find_chat(args.chat_id)
    if chat is None:
        raise UsageError(f"no chat {args.chat_id!r}")
    from core.export import chat_markdown

    if action in ("show", "export"):
        if action == "export" and not args.md:
            raise UsageError("chats export writes Markdown: pass --md")
        text = chat_markdown(store, chat["id"])
        if args.output:
            from pathlib import Path

            Path(args.output).write_text(text, encoding="utf-8")
            print(f"wrote {args.output}", file=sys.stderr)
        else:
            sys.stdout.write(text)
        return EXIT_OK
    if action == "rename":
        if not args.title:
            raise UsageError("chats rename needs --title")
        store.update_chat(chat["id"], title=args.title)
        return EXIT_OK
    if action == "delete":
        store.delete_chat(chat["id"])
        print(f"deleted {chat['id']}", file=sys.stderr)
        return EXIT_OK
    raise UsageError(f"unknown chats action {action!r}")


# --- search / servers -----------------------------------------------------------------------------


def cmd_search(args: argparse.Namespace) -> int:
    """Tool search as the model gets it: over the plan's deferred tools (what ``tool.search``
    reaches), or over every tool of a ``--tools`` catalog; batch form with ``--queries``."""
    from core.deferral.search import ToolSearchIndex, load_queries, load_tools
    from core.errors import UsageError

    if args.tools:
        try:
            docs: list[Any] = load_tools(args.tools)
        except (OSError, ValueError) as exc:
            raise UsageError(f"--tools {args.tools}: {exc}") from exc
        scope = f"{len(docs)} tools in {args.tools}"
    else:
        from core.roster.planner import plan_roster
        from core.session import build_plan_input, token_estimator

        inp = build_plan_input(roster=args.roster, mcp_config=args.mcp_config, strategy="active-tools",
                               on_event=_stderr_server_status)
        plan = plan_roster(inp, token_estimator())
        pool = plan.deferred_tool_names if not args.all else plan.pinned_names()
        docs = [plan.spec_of(n) for n in pool]
        scope = f"{len(docs)} {'pinned' if args.all else 'deferred'} tools of roster {args.roster or 'production'}"
    index = ToolSearchIndex(docs)
    k = max(1, args.k)
    if args.queries:
        try:
            queries = load_queries(args.queries)
        except (OSError, ValueError) as exc:
            raise UsageError(f"--queries {args.queries}: {exc}") from exc
        for q in queries:
            ranked = [h.name for h in index.search(q.query, k=k)]
            sys.stdout.write(json.dumps({"id": q.id, "ranked": ranked}) + "\n")
        return EXIT_OK
    if not args.query:
        raise UsageError("search needs a QUERY, or --queries FILE.jsonl")
    hits = index.search(args.query, k=k)
    if args.json:
        sys.stdout.write(json.dumps({"query": args.query, "scope": scope,
                                     "hits": [{"name": h.name, "score": round(h.score, 4)} for h in hits]}) + "\n")
        return EXIT_OK
    print(f"{len(hits)} of {scope} for {args.query!r}:")
    for i, h in enumerate(hits, 1):
        print(f"{i:>3}. {h.name}  ({h.score:.3f})")
    return EXIT_OK


def cmd_servers(args: argparse.Namespace) -> int:
    """Each MCP server's status, tool count and definition tokens (live discovery)."""
    from core.mcp.discovery import discover_servers
    from core.session import token_estimator

    if args.demo:
        from core.demo import demo_config

        source: Any = demo_config()
    else:
        source = args.mcp_config
    discovery = discover_servers(source)
    est = token_estimator()
    by_server: dict[str, list[Any]] = {}
    for t in discovery.tools:
        by_server.setdefault(t.server, []).append(t)
    rows = []
    for report in discovery.servers:
        tools = by_server.get(report.name, [])
        rows.append({"server": report.name, "status": report.status, "tools": len(tools),
                     "tokens": sum(est.definition(t) for t in tools),
                     "reads": sum(1 for t in tools if t.is_read), "message": report.message})
    est.cache.flush()  # type: ignore[attr-defined]
    if args.json:
        for r in rows:
            print(json.dumps(r))
    elif not rows:
        print("no MCP servers configured (see `deferchat servers --help`)")
    else:
        print(f"{'SERVER':<24} {'STATUS':<8} {'TOOLS':>5} {'READS':>5} {'TOKENS':>7}  MESSAGE")
        for r in rows:
            print(f"{r['server']:<24} {r['status']:<8} {r['tools']:>5} {r['reads']:>5} {r['tokens']:>7,}  "
                  f"{r['message']}")
    return EXIT_OK if all(r["status"] == "ready" for r in rows) else EXIT_FAILED


# --- parser ---------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deferchat",
        description="A terminal chat client for agents with more tools than a prompt can carry. "
                    "With no subcommand it opens the full-screen chat.",
    )
    parser.add_argument("--chat", dest="open_chat", default=None, metavar="ID",
                        help="open this chat in the full-screen app (its pinned plan is shown as pinned)")
    parser.add_argument("--roster", dest="tui_roster", default=None, metavar="NAME|FILE",
                        help="roster for new chats in the full-screen app (default: production)")
    parser.add_argument("--mcp-config", dest="tui_mcp_config", default=None, metavar="FILE")
    parser.add_argument("--provider", dest="tui_provider", default=None)
    parser.add_argument("--model", dest="tui_model", default=None)
    parser.add_argument("--base-url", dest="tui_base_url", default=None)
    parser.add_argument("--strategy", dest="tui_strategy", default=None,
                        choices=["wrapper", "anthropic", "openai", "active-tools", "auto"])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("plan", help="print the roster plan: defined, indexed (deferred) and skipped tools")
    _add_roster_options(p)
    _add_plan_options(p)
    p.add_argument("--strategy", choices=["wrapper", "anthropic", "openai", "active-tools", "auto"], default=None,
                   help="how deferred tools surface (default: wrapper, ADR-0123; auto resolves from --provider)")
    p.add_argument("--provider", default=None, help="with --strategy auto: the provider to resolve for")
    p.add_argument("--model", default=None, help="with --strategy auto: the model to resolve for")
    p.add_argument("--base-url", default=None, help="with --strategy auto: the endpoint to resolve for")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=cmd_plan)
    p = sub.add_parser("ask", help="one headless turn (exit 0 done, 1 failed, 2 usage, 3 parked)")
    p.add_argument("prompt")
    _add_roster_options(p)
    _add_plan_options(p)
    p.add_argument("--provider", default=None, help="demo | script | anthropic | openai | openai-chat")
    p.add_argument("--model", default=None)
    p.add_argument("--base-url", default=None)
    p.add_argument("--script", default=None, metavar="FILE", help="replay model turns from FILE (provider script)")
    p.add_argument("--record", default=None, metavar="FILE", help="append each model request to FILE (JSON lines)")
    p.add_argument("--strategy", choices=["wrapper", "anthropic", "openai", "active-tools", "auto"], default=None)
    p.add_argument("--chat", default=None, metavar="ID", help="continue this chat (its pinned plan is reused)")
    p.add_argument("--approve", choices=["yes", "no", "park"], default=None,
                   help="answer approvals: yes (allow once), no (deny), park (stop, exit 3); default: ask on a "
                        "terminal, park otherwise")
    p.add_argument("--json", action="store_true", help="print every event as one JSON line")
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("resume", help="continue a chat's parked or interrupted turn")
    p.add_argument("chat")
    p.add_argument("--approve", choices=["yes", "no", "park"], default=None)
    p.add_argument("--script", default=None, metavar="FILE", help="the script file, if it moved")
    p.add_argument("--record", default=None, metavar="FILE")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_resume)

    p = sub.add_parser("chats", help="list, show, export, rename or delete chats")
    p.add_argument("action", nargs="?", choices=["list", "show", "export", "rename", "delete"])
    p.add_argument("chat_id", nargs="?")
    p.add_argument("--md", action="store_true", help="export: Markdown, with the tool calls")
    p.add_argument("--output", "-o", default=None, metavar="FILE")
    p.add_argument("--title", default=None)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_chats)
    p = sub.add_parser("search", help="tool search as the model gets it (BM25 over SQLite FTS5)")
    p.add_argument("query", nargs="?")
    _add_roster_options(p)
    p.add_argument("--tools", default=None, metavar="FILE.jsonl", help="search this catalog instead of a roster")
    p.add_argument("--queries", default=None, metavar="FILE.jsonl", help="batch: one {id, ranked} line per query")
    p.add_argument("--all", action="store_true", help="search every pinned tool, not only the deferred ones")
    p.add_argument("-k", type=int, default=5, help="how many results (default 5)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("servers", help="MCP servers: status, tool count and definition tokens")
    p.add_argument("--mcp-config", default=None, metavar="FILE", help="add this mcpServers file to the user's")
    p.add_argument("--demo", action="store_true", help="the embedded demo servers")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_servers)
    return parser


def main(argv: Sequence[str] | None = None, *, tui: Any = None) -> int:
    """Run one command. ``tui`` runs the full-screen app when no subcommand is given; the
    ``deferchat`` script (``tui.main``) passes it, so core never imports the presentation."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors and 0 on --help
        return int(exc.code or 0)
    try:
        if args.command is None:
            if tui is None:
                print("deferchat: give a command (plan, ask, search, chats, resume, servers); the full-screen "
                      "app starts from the deferchat script", file=sys.stderr)
                return EXIT_USAGE
            return int(tui(args))
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `deferchat ... | head`: the reader left; leave quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:  # a clear message, not a traceback, for expected failures
        from core.errors import UserFacingError

        if isinstance(exc, UserFacingError):
            print(f"deferchat: {exc}", file=sys.stderr)
            return EXIT_USAGE if exc.usage else EXIT_FAILED
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
