"""The shipped built-in catalog (core/builtins/catalog.json): every built-in's description and
input schema, so that a roster lists them without importing the built-ins (:mod:`core.builtins.catalog`).

    python scripts/builtin_catalog.py            # write the catalog
    python scripts/builtin_catalog.py --check    # exit 1 if the shipped catalog is stale

Run it after changing anything in core/builtins/ (or pydantic's version): the catalog's key is a
hash of that package's sources, and tests/unit/test_builtin_catalog.py fails until it is
regenerated. A stale catalog is never read (the built-ins are imported instead).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from core.builtins.catalog import CATALOG, REGENERATE, generated, rendered  # noqa: E402
from scripts.shipped_file import write_or_check  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="exit 1 if the shipped catalog is stale; write nothing")
    args = p.parse_args()
    catalog = generated()
    summary = f"{len(catalog['tools'])} built-ins"
    return write_or_check(
        CATALOG, rendered(catalog), check=args.check, regenerate=REGENERATE, repo=REPO, summary=summary
    )


if __name__ == "__main__":
    sys.exit(main())
