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
)

MODULES: tuple[ModuleType, ...] = (
    m0001_initial,
    m0002_grants_token_cache_strategy_reason,
    m0003_chat_sources,
)

SCHEMA = Migrations("deferchat")
for _module in MODULES:
    SCHEMA(name=_module.NAME)(_module.migrate)

SCHEMA_VERSION: str = MODULES[-1].NAME
"""The newest migration this version knows."""
