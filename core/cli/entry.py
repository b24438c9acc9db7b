"""Parse ``argv`` and run one headless command.

The ``deferchat`` script is :func:`tui.main.main`: it owns the full-screen app's flags, starts
the app when no subcommand is given, and hands a subcommand to :func:`run`. This module never
starts the app; it runs the headless commands alone as well (``python -m core.cli``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from core.cli.exits import EXIT_USAGE, guarded
from core.cli.parser import build_parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one headless command; the exit code of :mod:`core.cli.exits`."""
    args = parse(build_parser(), argv)
    return args if isinstance(args, int) else run(args)


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace | int:
    """The parsed arguments, or the exit code argparse chose (2 on a usage error, 0 for ``--help``)."""
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def run(args: argparse.Namespace) -> int:
    """Run the parsed subcommand under :func:`~core.cli.exits.guarded`."""
    if args.command is None:
        print(
            "deferchat: give a command (plan, ask, search, chats, resume, servers, models, doctor); the full-screen "
            "app starts from the deferchat script",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return guarded(lambda: int(args.func(args)))
