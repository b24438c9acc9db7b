"""The token-estimate cache, kept in the store: read whole at open, written back in one batch."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from pathlib import Path

from sqlite_utils import Database


class TokenCache(MutableMapping[str, int]):
    """The token-estimate cache, read whole at open and written back in one batch."""

    def __init__(self, db: Database):
        self.db = db
        self._mem: dict[str, int] = {r[0]: r[1] for r in db.execute("select key, tokens from token_cache")}
        self._pending: dict[str, int] = {}

    def __getitem__(self, key: str) -> int:
        return self._mem[key]

    def __setitem__(self, key: str, value: int) -> None:
        self._mem[key] = value
        self._pending[key] = value

    def __delitem__(self, key: str) -> None:
        del self._mem[key]
        self.db.table("token_cache").delete_where("key = ?", [key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._mem)

    def __len__(self) -> int:
        return len(self._mem)

    def flush(self) -> None:
        if self._pending:
            with self.db.atomic():
                self.db.table("token_cache").insert_all(
                    ({"key": k, "tokens": v} for k, v in self._pending.items()), replace=True, batch_size=1000)
            self._pending.clear()


def open_token_cache(path: str | Path | None = None) -> TokenCache:
    from core.store.database import open_db

    return TokenCache(open_db(path))
