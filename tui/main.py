"""The ``deferchat`` script: the full-screen app with no subcommand, the headless CLI otherwise.

Textual is imported only when the app starts, so ``deferchat plan|ask|search`` stay fast.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any


def _run_app(args: Any) -> int:
    from tui.app import run_app  # deferred: this is the only path that imports Textual

    return run_app(args)


def main(argv: Sequence[str] | None = None) -> int:
    from core.cli import main as cli_main

    return cli_main(argv, tui=_run_app)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
