"""The token-estimate cache, kept in the store: read whole at open, written back in one batch."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING

from sqlite_utils import Database

if TYPE_CHECKING:
    from core.store.database import StoreFile


class TokenCache(MutableMapping[str, int]):
    """The token-estimate cache, read whole at open and written back in one batch.

    A cache: on a store this process may only read (read-only, from a newer version) the
    estimates stay in memory and :meth:`flush` writes nothing."""

    def __init__(self, db: Database, file: StoreFile | None = None):
        self.db = db
        self.file = file
        with self._faults():
            self._mem: dict[str, int] = dict(db.execute("select key, tokens from token_cache").fetchall())
        self._pending: dict[str, int] = {}

    @contextlib.contextmanager
    def _faults(self) -> Iterator[None]:
        """An SQLite fault of the file as its one-line error (see StoreFile.fault)."""
        try:
            yield
        except sqlite3.Error as exc:
            err = self.file.fault(exc) if self.file is not None else exc
            if err is exc:
                raise
            raise err from None

    def __getitem__(self, key: str) -> int:
        return self._mem[key]

    def __setitem__(self, key: str, value: int) -> None:
        self._mem[key] = value
        self._pending[key] = value

    def __delitem__(self, key: str) -> None:
        del self._mem[key]
        self._pending.pop(key, None)
        if self._may_write():
            with self._faults():
                self.db.execute("delete from token_cache where key = ?", [key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._mem)

    def __len__(self) -> int:
        return len(self._mem)

    def _may_write(self) -> bool:
        return self.file is None or self.file.may_keep()

    def flush(self) -> None:
        if not self._pending:
            return
        if self._may_write():
            from core.store.database import immediate

            with self._faults(), immediate(self.db):  # many processes flush at once on a fresh home
                self.db.conn.executemany(
                    "insert or replace into token_cache (key, tokens) values (?, ?)", list(self._pending.items())
                )
        self._pending.clear()


def open_token_cache(path: str | Path | None = None) -> TokenCache:
    from core.store.database import open_file

    file = open_file(path)
    return TokenCache(file.db, file)
