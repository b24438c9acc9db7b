"""The ``deferchat`` script: the full-screen app with no subcommand, a headless command otherwise.

This entry point decides. Its parser is the headless commands' tree (:mod:`core.cli.parser`)
plus the app's own top-level flags, so ``deferchat --help`` lists both. A subcommand goes to
:func:`core.cli.entry.run`; no subcommand starts the app. Textual is imported only then, so
``deferchat plan|ask|search`` never load it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from core.imports import bulk_import

with bulk_import():  # the headless commands' tree: what it imports lives as long as the process
    from core.cli.entry import parse, run
    from core.cli.exits import guarded
    from core.cli.parser import build_parser as build_cli_parser
    from core.deferral.names import STRATEGY_CHOICES

if TYPE_CHECKING:
    from core.config import Settings
    from core.pipeline.policy import Policy

DESCRIPTION = (
    "A terminal chat client for agents with more tools than a prompt can carry. "
    "With no subcommand it opens the full-screen chat."
)


def add_app_options(parser: argparse.ArgumentParser) -> None:
    """The full-screen app's flags, given before any subcommand (``tui_*`` keeps them apart from
    the subcommands' flags of the same name; :func:`tui.app.run_app` reads them). Each has a
    metavar and a help line: ``deferchat --help`` is where a person meets them first."""
    app = parser.add_argument_group(
        "the full-screen app (no COMMAND)", "Flags for the chat the app opens; a COMMAND takes its own (COMMAND -h)."
    )
    app.add_argument(
        "--chat",
        dest="open_chat",
        default=None,
        metavar="ID",
        help="open this chat (its pinned plan is shown as pinned); ctrl+o in the app lists the ids",
    )
    app.add_argument(
        "--roster",
        dest="tui_roster",
        default=None,
        metavar="NAME|FILE",
        help="roster for new chats (default: production)",
    )
    app.add_argument(
        "--mcp-config",
        dest="tui_mcp_config",
        default=None,
        metavar="FILE",
        help="an mcpServers file to add to yours and the project's, for new chats",
    )
    app.add_argument(
        "--provider",
        dest="tui_provider",
        default=None,
        metavar="NAME",
        help="provider for new chats: demo, anthropic, openai or openai-chat (default: config.toml's, "
        "else the first whose API key is set, else the offline demo)",
    )
    app.add_argument(
        "--model",
        dest="tui_model",
        default=None,
        metavar="MODEL",
        help="model for new chats (default: the provider's default model)",
    )
    app.add_argument(
        "--base-url",
        dest="tui_base_url",
        default=None,
        metavar="URL",
        help="the provider's endpoint, e.g. an OpenAI-compatible server (default: the provider's own)",
    )
    app.add_argument(
        "--strategy",
        dest="tui_strategy",
        default=None,
        choices=list(STRATEGY_CHOICES),
        metavar="STRATEGY",
        help="how deferred tools reach the model: " + ", ".join(STRATEGY_CHOICES) + " (default: auto)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The whole ``deferchat`` parser: the app's flags and every headless subcommand."""
    parser = build_cli_parser(DESCRIPTION)
    add_app_options(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    if args.command is not None:
        return run(args)
    return guarded(lambda: _run_app(args))


def _run_app(args: argparse.Namespace) -> int:
    settings, policy = _preflight(args)
    with bulk_import():
        from tui.app import run_app  # deferred: this is the only path that imports Textual

    return run_app(args, settings=settings, policy=policy)


def _preflight(args: argparse.Namespace | None = None) -> tuple[Settings, Policy]:
    """Read what the app would otherwise fail on after it took the screen (the settings, the
    policy file, where a new chat runs: ``--provider``/``--model``/``--base-url`` and config.toml
    under the one naming rule, whether the database's folder and file can be used), so that a
    broken one is one line on a normal terminal (through :func:`~core.cli.exits.guarded`), never a traceback
    behind the app. The database itself is opened after the first frame (SQLite and its library
    cost ~50 ms): a file that SQLite then refuses ends the app with the same one line
    (:attr:`tui.app.DeferchatApp.fatal`). Returns the settings and the policy read, for the app."""
    from core.config import load_settings
    from core.pipeline.policy import load_policy
    from core.store.paths import check_path, default_db_path

    settings = load_settings()
    policy = load_policy(settings.policy_file)
    if args is not None and not getattr(args, "open_chat", None):
        from core.providers.factory import require_buildable
        from core.providers.naming import resolve_new

        target = resolve_new(settings, args.tui_provider, args.tui_model, args.tui_base_url)  # UsageError: exit 2
        require_buildable(settings, target.provider, target.base_url)
    check_path(default_db_path())
    return settings, policy


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
