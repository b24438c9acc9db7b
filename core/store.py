"""Persistence: one SQLite database (sqlite-utils, WAL) with versioned migrations.

It holds chats (with the pinned agent, plan, builder, strategy, provider and model),
messages (each with its parent), plans, invocations (one row per call), events, approvals,
per-chat grants and the token-estimate cache. Built-in tools keep their own tables in the
same file under their own migration set (:mod:`core.builtins.data`). The offline demo's data
is never written here: it lives in its own file, ``demo.sqlite`` (:mod:`core.demo.dataset`).

Location: ``$DEFERCHAT_HOME/deferchat.db`` if set, else ``$XDG_DATA_HOME/deferchat/`` (by
default ``~/.local/share/deferchat/``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import uuid
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

from sqlite_utils import Database, Migrations

SCHEMA = Migrations("deferchat")


def data_dir() -> Path:
    home = os.environ.get("DEFERCHAT_HOME")
    if home:
        return Path(home).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "deferchat"


def default_db_path() -> Path:
    return data_dir() / "deferchat.db"


def now() -> float:
    return round(time.time(), 6)


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


# --- migrations -----------------------------------------------------------------------------------


@SCHEMA(name="0001_initial")
def _m0001(db: Database) -> None:
    db["chats"].create({
        "id": str, "title": str, "created_at": float, "updated_at": float,
        "agent_name": str, "agent_version": str, "roster": str, "plan_id": str, "builder": str,
        "strategy": str, "policy": str, "provider": str, "model": str, "base_url": str,
        "status": str,
    }, pk="id", not_null={"id", "created_at"})
    db["plans"].create({"id": str, "builder": str, "json": str, "created_at": float}, pk="id")
    db["messages"].create({
        "id": str, "chat_id": str, "parent_id": str, "turn_id": str, "role": str,
        "content": str, "created_at": float,
    }, pk="id", foreign_keys=[("chat_id", "chats", "id")])
    db["messages"].create_index(["chat_id", "created_at"])
    db["turns"].create({
        "id": str, "chat_id": str, "user_message_id": str, "status": str, "steps": int,
        "started_at": float, "ended_at": float, "error": str,
    }, pk="id", foreign_keys=[("chat_id", "chats", "id")])
    db["turns"].create_index(["chat_id", "status"])
    db["invocations"].create({
        "id": str, "chat_id": str, "turn_id": str, "call_id": str, "name": str, "via": str,
        "arguments": str, "side_effect": str, "pin": str, "status": str, "result": str,
        "model_result": str, "is_error": int, "error_code": str, "error_message": str,
        "created_at": float, "started_at": float, "finished_at": float,
    }, pk="id", foreign_keys=[("chat_id", "chats", "id")])
    db["invocations"].create_index(["chat_id", "call_id"], unique=True)
    db["events"].create({
        "id": int, "chat_id": str, "turn_id": str, "type": str, "json": str, "created_at": float,
    }, pk="id", foreign_keys=[("chat_id", "chats", "id")])
    db["events"].create_index(["chat_id", "id"])
    db["approvals"].create({
        "id": str, "chat_id": str, "turn_id": str, "invocation_id": str, "call_id": str, "tool": str,
        "via": str, "side_effect": str, "arguments": str, "reason": str, "status": str, "scope": str,
        "created_at": float, "decided_at": float,
    }, pk="id", foreign_keys=[("chat_id", "chats", "id")])
    db["approvals"].create_index(["chat_id", "status"])


@SCHEMA(name="0002_grants_token_cache_strategy_reason")
def _m0002(db: Database) -> None:
    # "Allow for this chat" grants, the persistent token-estimate cache, and the reason a
    # strategy was chosen (shown with the pinned plan).
    db["grants"].create({"chat_id": str, "tool": str, "created_at": float}, pk=("chat_id", "tool"),
                        foreign_keys=[("chat_id", "chats", "id")])
    db["token_cache"].create({"key": str, "tokens": int}, pk="key")
    db["chats"].add_column("strategy_reason", str)
    db["chats"].add_column("deleted", int, not_null_default=0)


@SCHEMA(name="0003_chat_sources")
def _m0003(db: Database) -> None:
    # Where a chat's tools came from (roster file or name, --mcp-config path, script), so a
    # reopened chat starts the same servers and a resume can check its pins against them.
    db["chats"].add_column("sources", str)


SCHEMA_VERSION = "0003_chat_sources"


def open_db(path: str | Path | None = None) -> Database:
    """Open (creating if needed) and migrate the database at ``path``."""
    if path == ":memory:":
        db = Database(memory=True)
    else:
        p = Path(path) if path else default_db_path()
        p.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(p), timeout=30, isolation_level=None, check_same_thread=False)
        db = Database(conn)
        db.enable_wal()
        # WAL + NORMAL: a commit survives a killed process (kill -9); only an OS crash or power
        # loss can drop the last commits, never corrupt the file. FULL would fsync every
        # invocation-row update, which costs milliseconds per tool call.
        db.execute("PRAGMA synchronous = NORMAL")
    db.execute("PRAGMA foreign_keys = ON")
    db.execute("PRAGMA busy_timeout = 30000")
    SCHEMA.apply(db)
    from core.builtins.data import BUILTIN_SCHEMA

    BUILTIN_SCHEMA.apply(db)
    return db


# --- token cache ----------------------------------------------------------------------------------


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
        self.db["token_cache"].delete_where("key = ?", [key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._mem)

    def __len__(self) -> int:
        return len(self._mem)

    def flush(self) -> None:
        if self._pending:
            with self.db.atomic():
                self.db["token_cache"].insert_all(
                    ({"key": k, "tokens": v} for k, v in self._pending.items()), replace=True, batch_size=1000)
            self._pending.clear()


def open_token_cache(path: str | Path | None = None) -> TokenCache:
    return TokenCache(open_db(path))


# --- the store --------------------------------------------------------------------------------------


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _insert(db: Database, table: str, row: dict[str, Any]) -> None:
    """A plain INSERT: the per-call hot path skips sqlite-utils' table introspection."""
    cols = ", ".join(f"[{k}]" for k in row)
    db.execute(f"insert into [{table}] ({cols}) values ({', '.join('?' for _ in row)})", list(row.values()))


def _update(db: Database, table: str, pk: str, fields: dict[str, Any]) -> None:
    if fields:
        sets = ", ".join(f"[{k}] = ?" for k in fields)
        db.execute(f"update [{table}] set {sets} where id = ?", [*fields.values(), pk])


def _rows(db: Database, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    cur = db.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


class Store:
    """Typed access to the database. Every method is a small transaction of its own."""

    def __init__(self, db: Database | str | Path | None = None):
        self.db = db if isinstance(db, Database) else open_db(db)
        self.token_cache = TokenCache(self.db)

    # chats ---------------------------------------------------------------------------------
    def create_chat(self, **fields: Any) -> str:
        chat_id = fields.pop("id", None) or new_id("chat")
        t = now()
        row = {"id": chat_id, "title": fields.pop("title", "New chat"), "created_at": t, "updated_at": t,
               "status": "idle", "deleted": 0}
        row.update(fields)
        self.db["chats"].insert(row)
        return chat_id

    def chat(self, chat_id: str) -> dict[str, Any] | None:
        rows = list(self.db["chats"].rows_where("id = ? and deleted = 0", [chat_id]))
        return rows[0] if rows else None

    def find_chat(self, prefix: str) -> dict[str, Any] | None:
        exact = self.chat(prefix)
        if exact:
            return exact
        rows = list(self.db["chats"].rows_where("id like ? and deleted = 0", [prefix + "%"], limit=2))
        return rows[0] if len(rows) == 1 else None

    def chats(self, limit: int = 200) -> list[dict[str, Any]]:
        return list(self.db["chats"].rows_where("deleted = 0", order_by="updated_at desc", limit=limit))

    def update_chat(self, chat_id: str, **fields: Any) -> None:
        fields.setdefault("updated_at", now())
        self.db["chats"].update(chat_id, fields)

    def delete_chat(self, chat_id: str) -> None:
        """Deleting removes the chat's messages, events and calls for good."""
        with self.db.atomic():
            for table in ("messages", "events", "approvals", "grants", "invocations", "turns"):
                self.db[table].delete_where("chat_id = ?", [chat_id])
            self.db["chats"].delete_where("id = ?", [chat_id])

    # plans ---------------------------------------------------------------------------------
    def save_plan(self, plan_json: str, builder: str) -> str:
        plan_id = "plan_" + hashlib.sha256(plan_json.encode()).hexdigest()[:24]
        self.db["plans"].insert({"id": plan_id, "builder": builder, "json": plan_json, "created_at": now()},
                                ignore=True)
        return plan_id

    def plan_json(self, plan_id: str) -> str | None:
        rows = list(self.db["plans"].rows_where("id = ?", [plan_id]))
        return rows[0]["json"] if rows else None

    # messages ------------------------------------------------------------------------------
    def add_message(self, chat_id: str, role: str, content: list[dict[str, Any]], *, turn_id: str | None,
                    parent_id: str | None) -> str:
        msg_id = new_id("msg")
        self.db["messages"].insert({"id": msg_id, "chat_id": chat_id, "parent_id": parent_id, "turn_id": turn_id,
                                    "role": role, "content": _dumps(content), "created_at": now()})
        self.update_chat(chat_id)
        return msg_id

    def messages(self, chat_id: str) -> list[dict[str, Any]]:
        rows = self.db["messages"].rows_where("chat_id = ?", [chat_id], order_by="created_at, rowid")
        return [dict(r, content=json.loads(r["content"])) for r in rows]

    def last_message_id(self, chat_id: str) -> str | None:
        rows = list(self.db["messages"].rows_where("chat_id = ?", [chat_id], order_by="created_at desc, rowid desc",
                                                   limit=1))
        return rows[0]["id"] if rows else None

    # turns ---------------------------------------------------------------------------------
    def start_turn(self, chat_id: str, user_message_id: str | None) -> str:
        turn_id = new_id("turn")
        self.db["turns"].insert({"id": turn_id, "chat_id": chat_id, "user_message_id": user_message_id,
                                 "status": "running", "steps": 0, "started_at": now()})
        self.update_chat(chat_id, status="running")
        return turn_id

    def update_turn(self, turn_id: str, **fields: Any) -> None:
        self.db["turns"].update(turn_id, fields)

    def end_turn(self, turn_id: str, chat_id: str, status: str, error: str | None = None) -> None:
        self.db["turns"].update(turn_id, {"status": status, "ended_at": now(), "error": error})
        self.update_chat(chat_id, status="parked" if status == "parked" else "idle")

    def open_turn(self, chat_id: str) -> dict[str, Any] | None:
        """The chat's unfinished turn (parked or interrupted), if any."""
        rows = list(self.db["turns"].rows_where("chat_id = ? and status in ('running', 'parked')", [chat_id],
                                                order_by="started_at desc", limit=1))
        return rows[0] if rows else None

    # events --------------------------------------------------------------------------------
    def add_event(self, chat_id: str, turn_id: str | None, event_type: str, event_json: str) -> None:
        _insert(self.db, "events", {"chat_id": chat_id, "turn_id": turn_id, "type": event_type, "json": event_json,
                                    "created_at": now()})

    def events(self, chat_id: str, types: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
        where, params = "chat_id = ?", [chat_id]
        if types:
            where += f" and type in ({', '.join('?' for _ in types)})"
            params += list(types)
        return [json.loads(r["json"]) for r in self.db["events"].rows_where(where, params, order_by="id")]

    # invocations ---------------------------------------------------------------------------
    def invocation(self, chat_id: str, call_id: str) -> dict[str, Any] | None:
        rows = _rows(self.db, "select * from invocations where chat_id = ? and call_id = ?", [chat_id, call_id])
        return rows[0] if rows else None

    def invocation_by_id(self, invocation_id: str) -> dict[str, Any] | None:
        rows = list(self.db["invocations"].rows_where("id = ?", [invocation_id]))
        return rows[0] if rows else None

    def create_invocation(self, **fields: Any) -> str:
        inv_id = new_id("inv")
        row = {"id": inv_id, "created_at": now(), "status": "requested", "is_error": 0}
        row.update(fields)
        if "arguments" in row and not isinstance(row["arguments"], str):
            row["arguments"] = _dumps(row["arguments"])
        _insert(self.db, "invocations", row)
        return inv_id

    def update_invocation(self, inv_id: str, **fields: Any) -> None:
        if "result" in fields and fields["result"] is not None and not isinstance(fields["result"], str):
            fields["result"] = _dumps(fields["result"])
        _update(self.db, "invocations", inv_id, fields)

    def invocations(self, chat_id: str) -> list[dict[str, Any]]:
        return list(self.db["invocations"].rows_where("chat_id = ?", [chat_id], order_by="created_at, rowid"))

    # approvals & grants --------------------------------------------------------------------
    def create_approval(self, **fields: Any) -> str:
        appr_id = new_id("appr")
        row = {"id": appr_id, "status": "pending", "created_at": now()}
        row.update(fields)
        if not isinstance(row.get("arguments"), str):
            row["arguments"] = _dumps(row.get("arguments"))
        _insert(self.db, "approvals", row)
        return appr_id

    def decide_approval(self, appr_id: str, status: str, scope: str | None = None) -> None:
        _update(self.db, "approvals", appr_id, {"status": status, "scope": scope, "decided_at": now()})

    def approval_for_call(self, chat_id: str, call_id: str) -> dict[str, Any] | None:
        rows = _rows(self.db, "select * from approvals where chat_id = ? and call_id = ? order by created_at desc "
                              "limit 1", [chat_id, call_id])
        return rows[0] if rows else None

    def pending_approvals(self, chat_id: str) -> list[dict[str, Any]]:
        return list(self.db["approvals"].rows_where("chat_id = ? and status = 'pending'", [chat_id],
                                                    order_by="created_at"))

    def approval(self, appr_id: str) -> dict[str, Any] | None:
        rows = list(self.db["approvals"].rows_where("id = ?", [appr_id]))
        return rows[0] if rows else None

    def grant(self, chat_id: str, tool: str) -> None:
        self.db["grants"].insert({"chat_id": chat_id, "tool": tool, "created_at": now()}, ignore=True)

    def granted(self, chat_id: str, tool: str) -> bool:
        return bool(_rows(self.db, "select 1 from grants where chat_id = ? and tool = ? limit 1", [chat_id, tool]))
