"""Flags that several commands share (roster, plan policy and caps), and what they build."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from core.roster.models import Caps, PolicyConfig

T = TypeVar("T")

_CAP_FLAGS = ("max_definitions", "max_definition_tokens", "max_index_entries", "max_index_tokens")


def add_roster_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--roster",
        default=None,
        metavar="NAME|FILE",
        help="a named roster (production) or a roster JSON file (default: production)",
    )
    p.add_argument(
        "--mcp-config",
        default=None,
        metavar="FILE",
        help="an mcpServers JSON file; its servers are discovered live and merged",
    )


def add_plan_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--policy",
        choices=["overflow", "threshold"],
        default=None,
        help="which tools are deferred (default: overflow, ADR-0123)",
    )
    p.add_argument(
        "--per-server",
        type=int,
        default=None,
        metavar="N",
        help="threshold policy: a server with more than N MCP tools defers them (default 10)",
    )
    p.add_argument(
        "--aggregate",
        type=int,
        default=None,
        metavar="N",
        help="threshold policy: more than N MCP tools in all defers every one (default 30)",
    )
    p.add_argument("--max-definitions", type=int, default=None, metavar="N", help="definition cap (default 30)")
    p.add_argument(
        "--max-definition-tokens", type=int, default=None, metavar="N", help="definition token cap (default 9000)"
    )
    p.add_argument("--max-index-entries", type=int, default=None, metavar="N", help="index entry cap (default 40)")
    p.add_argument("--max-index-tokens", type=int, default=None, metavar="N", help="index token cap (default 2000)")


def caps_from(args: argparse.Namespace) -> Caps:
    """The caps the flags set; the rest keep their defaults."""
    from core.roster.models import Caps

    fields = {k: getattr(args, k) for k in _CAP_FLAGS if getattr(args, k, None) is not None}
    return _from_flags(Caps, fields)


def policy_from(args: argparse.Namespace) -> PolicyConfig:
    """The deferral policy the flags set; the rest keep their defaults."""
    from core.roster.models import PolicyConfig

    fields: dict[str, Any] = {}
    if args.policy:
        fields["name"] = args.policy
    if args.per_server is not None:
        fields["per_server"] = args.per_server
    if args.aggregate is not None:
        fields["aggregate"] = args.aggregate
    return _from_flags(PolicyConfig, fields)


def _from_flags(model: type[T], fields: dict[str, Any]) -> T:
    """``model`` built from flag values; a value it refuses is a usage error naming its flag."""
    from pydantic import ValidationError

    from core.errors import UsageError

    try:
        return model(**fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = err.get("loc") or ()
        where = f"--{str(loc[0]).replace('_', '-')}: " if loc else ""
        raise UsageError(f"{where}{err.get('msg')}") from None


def record_file(path: str | None) -> str | None:
    """``--record FILE``, checked before a turn starts: a file that cannot be appended to is a
    usage error now, not a failure in the middle of the turn."""
    if path is None:
        return None
    from core.errors import UsageError

    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise UsageError(f"--record {path}: {exc.strerror or exc}") from None
    return path
