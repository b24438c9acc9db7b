"""Persistence: one SQLite database (sqlite-utils, WAL) with versioned migrations.

It holds chats (with the pinned agent, plan, builder, strategy, provider and model),
messages (each with its parent), plans, invocations (one row per call), events, approvals,
per-chat grants and the token-estimate cache. Built-in tools keep their own tables in the
same file under their own migration set (:mod:`core.builtins.data`). The offline demo's data
is never written here: it lives in its own file, ``demo.sqlite`` (:mod:`core.demo.dataset`).

Location: ``$DEFERCHAT_HOME/deferchat.db`` if set, else ``$XDG_DATA_HOME/deferchat/`` (by
default ``~/.local/share/deferchat/``).

The rooms:

- :mod:`core.store.paths` -- where the file lives (cheap: no SQLite);
- :mod:`core.store.migrations` -- one module per migration, in order;
- :mod:`core.store.database` -- opening the file and migrating it;
- :mod:`core.store.rows` -- the typed rows the read methods return;
- :mod:`core.store.store` -- :class:`Store`, the reads and writes;
- :mod:`core.store.token_cache` -- the persistent token-estimate cache.

Importing this package loads none of them: each name below is imported on first use, so
``from core.store import data_dir`` costs no SQLite library.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.store.database import open_db
    from core.store.ids import new_id, now
    from core.store.migrations import SCHEMA, SCHEMA_VERSION
    from core.store.paths import data_dir, default_db_path
    from core.store.rows import ApprovalRow, ChatRow, GrantRow, InvocationRow, MessageRow, SummaryRow, TurnRow
    from core.store.store import Store
    from core.store.token_cache import TokenCache, open_token_cache

_WHERE = {
    "open_db": "core.store.database",
    "new_id": "core.store.ids",
    "now": "core.store.ids",
    "SCHEMA": "core.store.migrations",
    "SCHEMA_VERSION": "core.store.migrations",
    "data_dir": "core.store.paths",
    "default_db_path": "core.store.paths",
    "ApprovalRow": "core.store.rows",
    "ChatRow": "core.store.rows",
    "GrantRow": "core.store.rows",
    "InvocationRow": "core.store.rows",
    "MessageRow": "core.store.rows",
    "SummaryRow": "core.store.rows",
    "TurnRow": "core.store.rows",
    "Store": "core.store.store",
    "TokenCache": "core.store.token_cache",
    "open_token_cache": "core.store.token_cache",
}

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "ApprovalRow",
    "ChatRow",
    "GrantRow",
    "InvocationRow",
    "MessageRow",
    "Store",
    "SummaryRow",
    "TokenCache",
    "TurnRow",
    "data_dir",
    "default_db_path",
    "new_id",
    "now",
    "open_db",
    "open_token_cache",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'core.store' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
