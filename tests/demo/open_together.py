"""One process of :mod:`tests.demo.test_demo_db_concurrency`: at each of the given moments it
opens a fresh demo database in ``FOLDER`` (``round-N/demo.sqlite``) as a demo server process
does (:func:`core.demo.servers.build_server`: connect, WAL, schema and seed), or as the chat's
own process does (``dataset``: :func:`core.demo.dataset.open_demo_dataset`), and prints one
line per round: ``ok N`` or ``fail N: <error>``.

    python -m tests.demo.open_together FOLDER SERVER START STEP ROUNDS
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def main() -> None:
    folder, server, start, step, rounds = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:5]), int(sys.argv[5])
    import os

    from core.demo.dataset import open_demo_dataset
    from core.demo.servers import build_server

    def open_one(path: Path) -> None:
        if server == "dataset":
            open_demo_dataset(path).conn.close()
        else:
            build_server(server, path)

    open_one(Path(folder) / f"warm-{os.getpid()}" / "demo.sqlite")  # its imports done before the first round
    for n in range(rounds):
        path = Path(folder) / f"round-{n}" / "demo.sqlite"
        at = start + n * step
        time.sleep(max(0.0, at - time.time() - 0.01))
        while time.time() < at:  # every process opens the same new file at the same moment
            pass
        try:
            open_one(path)
            print(f"ok {n}", flush=True)
        except Exception as exc:
            print(f"fail {n}: {type(exc).__name__}: {exc}", flush=True)


if __name__ == "__main__":
    main()
