"""The store's migrations: one module per migration, applied in the order of :data:`MODULES`.

Each module has a ``NAME`` (recorded in ``_sqlite_migrations`` under the set ``deferchat``)
and a ``migrate(db)``. sqlite-utils' :class:`~sqlite_utils.Migrations` applies the ones a
database has not recorded. Never edit or rename a migration that has shipped (databases in
the wild have recorded its name): add the next module, and append it to :data:`MODULES`.
"""

from __future__ import annotations

from types import ModuleType

from sqlite_utils import Migrations

from core.store.migrations import (
    m0001_initial,
    m0002_grants_token_cache_strategy_reason,
    m0003_chat_sources,
    m0004_branches_input_history,
    m0005_turn_leases,
    m0006_chat_system_prompt,
    m0007_approval_preview,
    m0008_grant_history,
    m0009_history_summaries,
    m0010_order_seq,
    m0011_message_tokens,
)

MODULES: tuple[ModuleType, ...] = (
    m0001_initial,
    m0002_grants_token_cache_strategy_reason,
    m0003_chat_sources,
    m0004_branches_input_history,
    m0005_turn_leases,
    m0006_chat_system_prompt,
    m0007_approval_preview,
    m0008_grant_history,
    m0009_history_summaries,
    m0010_order_seq,
    m0011_message_tokens,
)

SCHEMA = Migrations("deferchat")
for _module in MODULES:
    SCHEMA(name=_module.NAME)(_module.migrate)

SCHEMA_VERSION: str = MODULES[-1].NAME
"""The newest migration this version knows."""

RETIRED: dict[str, frozenset[str]] = {"deferchat-builtins": frozenset({"0002_demo_seed"})}
"""Migrations earlier versions applied that are no longer registered (see
:mod:`core.builtins.data`): recorded in old databases, known, never run again."""

OUR_SETS_PREFIX = "deferchat"
"""Every migration set deferchat records starts so; a recorded name in such a set that this
version does not know means a newer version has migrated the database."""


def migration_sets() -> tuple[Migrations, ...]:
    """The sets applied to the store's file, in order: the store's, then the built-in tools'."""
    from core.builtins.data import BUILTIN_SCHEMA

    return (SCHEMA, BUILTIN_SCHEMA)


def known_migrations() -> set[tuple[str, str]]:
    """``(set, name)`` of every migration this version registers or knows was retired."""
    known = {(s.name, m.name) for s in migration_sets() for m in s._migrations}
    known |= {(name, m) for name, retired in RETIRED.items() for m in retired}
    return known
