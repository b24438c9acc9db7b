"""What the scripts that regenerate a shipped file share: write it, or (``--check``) say whether
the shipped one is stale, writing nothing."""

from __future__ import annotations

import sys
from pathlib import Path


def write_or_check(path: Path, text: str, *, check: bool, regenerate: str, repo: Path, summary: str) -> int:
    """``--check``: exit 1 with one line if ``path`` does not hold ``text``. Otherwise write it (only
    when it changed) and print ``summary``. Returns the exit code."""
    shown = path.relative_to(repo)
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    if check:
        if text != current:
            print(f"{shown} is stale; run `{regenerate}`", file=sys.stderr)
            return 1
        return 0
    if text != current:
        path.write_text(text, encoding="utf-8")
    print(f"{shown}: {summary}")
    return 0
