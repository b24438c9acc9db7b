"""``python -m core.demo SERVER [--db PATH] [--call-seconds N]``: run one demo MCP server on stdio."""

from __future__ import annotations

import argparse

from core.demo import DB_ENV, DEFAULT_CALL_SECONDS, DEMO_SERVERS, demo_db_path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m core.demo", description=__doc__)
    parser.add_argument("server", choices=DEMO_SERVERS)
    parser.add_argument("--db", help=f"SQLite file (default: ${DB_ENV}, else demo.sqlite in deferchat's data dir)")
    parser.add_argument(
        "--call-seconds",
        type=float,
        default=DEFAULT_CALL_SECONDS,
        help="wall-clock seconds a simulated call stays in progress",
    )
    args = parser.parse_args(argv)
    from core.demo.servers import build_server

    build_server(args.server, args.db or demo_db_path(), call_seconds=args.call_seconds).run()


if __name__ == "__main__":
    main()
