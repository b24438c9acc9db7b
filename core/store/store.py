"""The store: typed access to the database. Every method is a small transaction of its own.

Read methods return the frozen rows of :mod:`core.store.rows`; ``events`` returns each stored
event's JSON, loaded. Each method is marked as reading or writing: a write first asks the file
whether it may (:meth:`~core.store.database.StoreFile.require_writable`: not read-only, not
from a newer version, not damaged), and an SQLite fault of the file met by either becomes its
one-line :class:`~core.store.errors.StoreError`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from sqlite_utils import Database

from core.store.database import StoreFile, immediate, open_file
from core.store.errors import ChatBusy
from core.store.ids import new_id, now
from core.store.rows import (
    ApprovalRow,
    ChatRow,
    GrantRow,
    InvocationRow,
    MessageRow,
    SummaryRow,
    TurnLeaseRow,
    TurnRow,
    _Row,
)
from core.store.token_cache import TokenCache

if TYPE_CHECKING:
    from core.store.lease import TurnLease

R = TypeVar("R", bound=_Row)
P = ParamSpec("P")
T = TypeVar("T")


def _reads(method: Callable[Concatenate[Store, P], T]) -> Callable[Concatenate[Store, P], T]:
    """A read: an SQLite fault of the file becomes its one-line error."""

    @functools.wraps(method)
    def read(self: Store, *args: P.args, **kwargs: P.kwargs) -> T:
        self.file.warn()
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            err = self.file.fault(exc)
            if err is exc:
                raise
            raise err from None

    return read


def _writes(method: Callable[Concatenate[Store, P], T]) -> Callable[Concatenate[Store, P], T]:
    """A write: refused on a file this process may not write, then as a read."""
    reading = _reads(method)

    @functools.wraps(method)
    def write(self: Store, *args: P.args, **kwargs: P.kwargs) -> T:
        self.file.require_writable()
        return reading(self, *args, **kwargs)

    return write


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _without_credentials(fields: dict[str, Any]) -> dict[str, Any]:
    """A chat's fields as they may be stored: a base URL never with its ``user:password@`` (the
    credential stays in memory, like a key: :func:`core.redaction.restore_url`)."""
    if isinstance(fields.get("base_url"), str):
        from core.redaction import without_userinfo

        return {**fields, "base_url": without_userinfo(fields["base_url"])}
    return fields


# Tables whose rows are read in their chat's order: each row's ``seq`` is its place in the chat
# (migration 0010_order_seq), never the wall clock, which can go back.
SEQUENCED = frozenset({"messages", "turns", "invocations", "approvals"})
_LEGACY_ORDER = {"messages": "created_at, rowid", "turns": "started_at, rowid"}


def _insert(db: Database, table: str, row: dict[str, Any], *, or_ignore: bool = False) -> None:
    """A plain INSERT (one statement, so one autocommit transaction): the per-call hot path
    skips sqlite-utils' table introspection. A row of a :data:`SEQUENCED` table takes the next
    ``seq`` of its chat in the same statement, so two writers can never take the same one."""
    cols = [f"[{k}]" for k in row]
    values = ["?" for _ in row]
    params = list(row.values())
    if table in SEQUENCED and "seq" not in row and _has_seq(db, table):
        cols.append("[seq]")
        values.append(f"(select coalesce(max(seq), 0) + 1 from [{table}] where chat_id = ?)")
        params.append(row["chat_id"])
    verb = "insert or ignore" if or_ignore else "insert"
    db.execute(f"{verb} into [{table}] ({', '.join(cols)}) values ({', '.join(values)})", params)


def _has_seq(db: Database, table: str) -> bool:
    """Whether ``table`` has its ``seq`` (a database this process only reads may predate it)."""
    return _has_column(db, table, "seq")


def _has_column(db: Database, table: str, column: str) -> bool:
    """Whether ``table`` has ``column`` (a database this process only reads may predate the
    migration that adds it); asked once per table and connection, once the store is open (it
    migrates first)."""
    known: dict[str, set[str]] | None = getattr(db, "_deferchat_columns", None)
    if known is None:
        known = {}
        db._deferchat_columns = known  # type: ignore[attr-defined]
    if table not in known:
        known[table] = {r[1] for r in db.execute(f"pragma table_info([{table}])").fetchall()}
    return column in known[table]


def _order(db: Database, table: str, descending: bool = False) -> str:
    """How ``table``'s rows of one chat are ordered: by ``seq``; by time and rowid in a database
    from before it (read only)."""
    if _has_seq(db, table):
        return "seq desc" if descending else "seq"
    legacy = _LEGACY_ORDER.get(table, "created_at, rowid")
    return ", ".join(f"{c} desc" for c in legacy.split(", ")) if descending else legacy


def _update(db: Database, table: str, pk: str, fields: dict[str, Any]) -> None:
    if fields:
        sets = ", ".join(f"[{k}] = ?" for k in fields)
        db.execute(f"update [{table}] set {sets} where id = ?", [*fields.values(), pk])


def _select(db: Database, row_type: type[R], sql: str, params: list[Any]) -> list[R]:
    cur = db.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [row_type.from_values(names, r) for r in cur.fetchall()]


def _first(rows: list[R]) -> R | None:
    return rows[0] if rows else None


def branch(rows: list[MessageRow]) -> list[MessageRow]:
    """A chat's current branch (``rows`` oldest first): every message but the replaced ones and
    what descends from them. A message sent in the place of another (edit, retry) names it in
    ``replaces`` and takes its parent; the replaced message and its descendants (their
    ``parent_id`` chain leads to it) leave the branch, not the store. A chat never replaced is
    every row, as stored."""
    replaced = {r.replaces for r in rows if r.replaces}
    if not replaced:
        return rows
    gone: set[str] = set()
    for r in rows:  # a parent is stored before its children
        if r.id in replaced or (r.parent_id is not None and r.parent_id in gone):
            gone.add(r.id)
    return [r for r in rows if r.id not in gone]


class Store:
    """Typed access to the database. Every method is a small transaction of its own."""

    def __init__(self, db: StoreFile | Database | str | Path | None = None):
        if isinstance(db, StoreFile):
            self.file = db
        elif isinstance(db, Database):
            self.file = StoreFile(db, _filename(db))
        else:
            self.file = open_file(db)
        self.db = self.file.db
        self.token_cache = TokenCache(self.db, self.file)
        self.messages_written = 0  # message writes through this store (see changes())

    @property
    def path(self) -> Path | None:
        return self.file.path

    @property
    def writable(self) -> bool:
        """Whether writes are allowed (not read-only, not from a newer version, not found damaged)."""
        return self.file.writable

    def require_writable(self) -> None:
        """Raise the one-line reason this process may not write the store, if there is one."""
        self.file.require_writable()

    # chats ---------------------------------------------------------------------------------
    @_writes
    def create_chat(self, **fields: Any) -> str:
        chat_id = fields.pop("id", None) or new_id("chat")
        t = now()
        row = {
            "id": chat_id,
            "title": fields.pop("title", "New chat"),
            "created_at": t,
            "updated_at": t,
            "status": "idle",
            "deleted": 0,
        }
        row.update(_without_credentials(fields))
        _insert(self.db, "chats", row)
        return chat_id

    @_reads
    def chat(self, chat_id: str) -> ChatRow | None:
        return _first(_select(self.db, ChatRow, "select * from chats where id = ? and deleted = 0", [chat_id]))

    @_reads
    def find_chat(self, prefix: str) -> ChatRow | None:
        """The chat with this id, or the only one whose id starts with ``prefix``."""
        exact = self.chat(prefix)
        if exact:
            return exact
        rows = _select(self.db, ChatRow, "select * from chats where id like ? and deleted = 0 limit 2", [prefix + "%"])
        return rows[0] if len(rows) == 1 else None

    @_reads
    def chats(self, limit: int = 200) -> list[ChatRow]:
        return _select(
            self.db, ChatRow, "select * from chats where deleted = 0 order by updated_at desc limit ?", [limit]
        )

    @_writes
    def update_chat(self, chat_id: str, **fields: Any) -> None:
        fields.setdefault("updated_at", now())
        _update(self.db, "chats", chat_id, _without_credentials(fields))

    @_writes
    def delete_chat(self, chat_id: str) -> None:
        """Deleting removes the chat's messages, events and calls for good; a chat whose turn runs
        (in any process) is refused (:class:`ChatBusy`)."""
        with immediate(self.db):
            busy = self.busy(chat_id)
            if busy is not None:
                raise busy
            self.db.execute("delete from turn_leases where chat_id = ?", [chat_id])
            tables = ("messages", "events", "approvals", "grants", "invocations", "turns", "input_history")
            for table in (*tables, "history_summaries"):
                self.db.execute(f"delete from [{table}] where chat_id = ?", [chat_id])
            self.db.execute("delete from chats where id = ?", [chat_id])
            self.messages_written += 1

    # plans ---------------------------------------------------------------------------------
    @_writes
    def save_plan(self, plan_json: str, builder: str) -> str:
        plan_id = "plan_" + hashlib.sha256(plan_json.encode()).hexdigest()[:24]
        _insert(
            self.db,
            "plans",
            {"id": plan_id, "builder": builder, "json": plan_json, "created_at": now()},
            or_ignore=True,
        )
        return plan_id

    @_reads
    def plan_json(self, plan_id: str) -> str | None:
        row = self.db.execute("select json from plans where id = ?", [plan_id]).fetchone()
        return row[0] if row else None

    # messages ------------------------------------------------------------------------------
    @_writes
    def add_message(
        self,
        chat_id: str,
        role: str,
        content: list[dict[str, Any]],
        *,
        turn_id: str | None,
        parent_id: str | None,
        replaces: str | None = None,
    ) -> str:
        """``replaces``: the earlier user message this one is sent in the place of (:func:`branch`)."""
        msg_id = new_id("msg")
        row = {
            "id": msg_id,
            "chat_id": chat_id,
            "parent_id": parent_id,
            "turn_id": turn_id,
            "role": role,
            "content": _dumps(content),
            "created_at": now(),
        }
        if replaces is not None:
            row["replaces"] = replaces
        _insert(self.db, "messages", row)
        self.messages_written += 1
        self.update_chat(chat_id)
        return msg_id

    @_writes
    def rewrite_message(self, msg_id: str, content: list[dict[str, Any]]) -> None:
        """A stored message's content replaced (a resume gives an old response's tool uses the
        ids they lacked: :meth:`core.chat.turn.TurnLoop._with_call_ids`)."""
        _update(self.db, "messages", msg_id, {"content": _dumps(content)})
        self.messages_written += 1

    @_reads
    def keep_token_counts(self, counts: Sequence[tuple[str, int, str]]) -> None:
        """Each ``(message id, tokens, key)``: the count the history's budget made of a message
        and the key it was made for (:func:`core.tokens.content_key`), kept beside the message so
        that a later process reads it instead of counting again (migration 0011). A cache, as
        :class:`TokenCache`: on a store this process may only read, or one from before the
        migration, nothing is written. It changes no message, so :meth:`changes` does not move
        for this process; another reads its branch again only if the newest message changed."""
        if not counts or not _has_column(self.db, "messages", "tokens_key") or not self.file.may_keep():
            return
        with immediate(self.db):
            self.db.conn.executemany(
                "update messages set tokens = ?, tokens_key = ? where id = ?", [(n, k, i) for i, n, k in counts]
            )

    @_writes
    def set_message_turn(self, msg_id: str, turn_id: str) -> None:
        """The turn a message opened (a user message is stored just before its turn starts)."""
        _update(self.db, "messages", msg_id, {"turn_id": turn_id})

    @_reads
    def messages(self, chat_id: str) -> list[MessageRow]:
        """The chat's current branch, oldest first: what the model is sent (:func:`branch`)."""
        return branch(
            _select(
                self.db,
                MessageRow,
                f"select * from messages where chat_id = ? order by {_order(self.db, 'messages')}",
                [chat_id],
            )
        )

    @_reads
    def messages_mark(self, chat_id: str) -> tuple[str | None, str | None]:
        """What tells, in one query on the chat's index, whether its messages changed since they
        were last read: the newest message's id and raw content (a new message, an edit's, or a
        rewrite of the newest, as a resume's call ids, changes it).
        :class:`core.chat.history.ChatHistory` reads the whole branch again only when it changed,
        and asks only when :meth:`changes` moved."""
        row = self.db.execute(
            "select id, content from messages where chat_id = ? order by created_at desc, rowid desc limit 1",
            [chat_id],
        ).fetchone()
        return (row[0], row[1]) if row else (None, None)

    def changes(self) -> tuple[int, int]:
        """Moves whenever any messages may have changed: SQLite's ``data_version`` (another
        connection, another process, committed a write) and this store's own count of message
        writes (another history in this process wrote)."""
        row = self.db.execute("pragma data_version").fetchone()
        return int(row[0]), self.messages_written

    @_reads
    def message(self, msg_id: str) -> MessageRow | None:
        return _first(_select(self.db, MessageRow, "select * from messages where id = ?", [msg_id]))

    @_reads
    def last_message_id(self, chat_id: str) -> str | None:
        row = self.db.execute(
            f"select id from messages where chat_id = ? order by {_order(self.db, 'messages', True)} limit 1", [chat_id]
        ).fetchone()
        return row[0] if row else None

    # history summaries (core.chat.compaction) ---------------------------------------------------
    @_writes
    def add_summary(self, chat_id: str, **fields: Any) -> str:
        """A summary of the chat's oldest turns (:class:`~core.store.rows.SummaryRow`'s fields)."""
        summary_id = new_id("sum")
        row = {"id": summary_id, "chat_id": chat_id, "created_at": now(), **fields}
        if not isinstance(row.get("tools"), str):
            row["tools"] = _dumps(list(row.get("tools") or []))
        _insert(self.db, "history_summaries", row)
        return summary_id

    @_reads
    def summaries(self, chat_id: str) -> list[SummaryRow]:
        """The chat's summaries, oldest first."""
        sql = "select * from history_summaries where chat_id = ? order by created_at, rowid"
        return _select(self.db, SummaryRow, sql, [chat_id])

    # turns ---------------------------------------------------------------------------------
    @_writes
    def start_turn(self, chat_id: str, user_message_id: str | None) -> str:
        turn_id = new_id("turn")
        _insert(
            self.db,
            "turns",
            {
                "id": turn_id,
                "chat_id": chat_id,
                "user_message_id": user_message_id,
                "status": "running",
                "steps": 0,
                "started_at": now(),
            },
        )
        self.update_chat(chat_id, status="running")
        return turn_id

    @_reads
    def turn(self, turn_id: str) -> TurnRow | None:
        return _first(_select(self.db, TurnRow, "select * from turns where id = ?", [turn_id]))

    @_writes
    def update_turn(self, turn_id: str, **fields: Any) -> None:
        _update(self.db, "turns", turn_id, fields)

    @_writes
    def end_turn(self, turn_id: str, chat_id: str, status: str, error: str | None = None) -> None:
        _update(self.db, "turns", turn_id, {"status": status, "ended_at": now(), "error": error})
        self.update_chat(chat_id, status="parked" if status == "parked" else "idle")

    @_reads
    def turns(self, chat_id: str) -> list[TurnRow]:
        """The chat's turns, oldest first."""
        return _select(
            self.db, TurnRow, f"select * from turns where chat_id = ? order by {_order(self.db, 'turns')}", [chat_id]
        )

    @_reads
    def open_turn(self, chat_id: str) -> TurnRow | None:
        """The chat's unfinished turn (parked or interrupted), if any."""
        return _first(
            _select(
                self.db,
                TurnRow,
                "select * from turns where chat_id = ? and status in "
                f"('running', 'parked') order by {_order(self.db, 'turns', True)} limit 1",
                [chat_id],
            )
        )

    # input history (what the owner typed, for the message box's ↑) ---------------------------
    @_writes
    def add_input(self, chat_id: str, text: str) -> None:
        _insert(self.db, "input_history", {"chat_id": chat_id, "text": text, "created_at": now()})

    @_reads
    def input_history(self, chat_id: str | None = None, limit: int = 500) -> list[str]:
        """What the owner typed, newest first: ``chat_id``'s own first, then the other chats'."""
        rows = self.db.execute(
            "select text from input_history order by (chat_id = ?) desc, id desc limit ?", [chat_id, limit]
        ).fetchall()
        return [r[0] for r in rows]

    # events --------------------------------------------------------------------------------
    @_writes
    def add_event(self, chat_id: str, turn_id: str | None, event_type: str, event_json: str) -> None:
        _insert(
            self.db,
            "events",
            {"chat_id": chat_id, "turn_id": turn_id, "type": event_type, "json": event_json, "created_at": now()},
        )

    def _event_rows(self, columns: str, chat_id: str, types: tuple[str, ...] | None) -> list[Any]:
        """``columns`` of the chat's stored events, in the order they were emitted: of ``types``
        only, unless ``types`` is None."""
        where, params = "chat_id = ?", [chat_id]
        if types is not None:
            where += f" and type in ({', '.join('?' for _ in types)})"
            params += list(types)
        return self.db.execute(f"select {columns} from events where {where} order by id", params).fetchall()

    @_reads
    def events(self, chat_id: str, types: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
        """The chat's stored events, each its JSON loaded, in the order they were emitted."""
        return [json.loads(r[0]) for r in self._event_rows("json", chat_id, types or None)]

    @_reads
    def turn_events(self, chat_id: str, types: tuple[str, ...]) -> list[tuple[str | None, dict[str, Any]]]:
        """The chat's stored events of ``types``, each with the turn it was emitted in, in order
        (the meter's per-request rows are read back so: :mod:`core.chat.meter`)."""
        return [(r[0], json.loads(r[1])) for r in self._event_rows("turn_id, json", chat_id, types)]

    @_reads
    def last_event(self, chat_id: str, event_type: str) -> dict[str, Any] | None:
        """The chat's last stored event of ``event_type``, its JSON loaded (None: there is none)."""
        row = self.db.execute(
            "select json from events where chat_id = ? and type = ? order by id desc limit 1", [chat_id, event_type]
        ).fetchone()
        return json.loads(row[0]) if row else None

    # invocations ---------------------------------------------------------------------------
    @_reads
    def invocation(self, chat_id: str, call_id: str) -> InvocationRow | None:
        return _first(
            _select(
                self.db,
                InvocationRow,
                "select * from invocations where chat_id = ? and call_id = ?",
                [chat_id, call_id],
            )
        )

    @_reads
    def invocation_by_id(self, invocation_id: str) -> InvocationRow | None:
        return _first(_select(self.db, InvocationRow, "select * from invocations where id = ?", [invocation_id]))

    @_writes
    def create_invocation(self, **fields: Any) -> str:
        inv_id = new_id("inv")
        row = {"id": inv_id, "created_at": now(), "status": "requested", "is_error": 0}
        row.update(fields)
        if "arguments" in row and not isinstance(row["arguments"], str):
            row["arguments"] = _dumps(row["arguments"])
        _insert(self.db, "invocations", row)
        return inv_id

    @_writes
    def update_invocation(self, inv_id: str, **fields: Any) -> None:
        if "result" in fields and fields["result"] is not None and not isinstance(fields["result"], str):
            fields["result"] = _dumps(fields["result"])
        _update(self.db, "invocations", inv_id, fields)

    @_reads
    def invocations(self, chat_id: str) -> list[InvocationRow]:
        return _select(
            self.db,
            InvocationRow,
            f"select * from invocations where chat_id = ? order by {_order(self.db, 'invocations')}",
            [chat_id],
        )

    # approvals & grants --------------------------------------------------------------------
    @_writes
    def create_approval(self, **fields: Any) -> str:
        appr_id = new_id("appr")
        row = {"id": appr_id, "status": "pending", "created_at": now()}
        row.update(fields)
        if not isinstance(row.get("arguments"), str):
            row["arguments"] = _dumps(row.get("arguments"))
        if row.get("preview") is not None and not isinstance(row["preview"], str):
            row["preview"] = _dumps(row["preview"])
        _insert(self.db, "approvals", row)
        return appr_id

    @_writes
    def decide_approval(self, appr_id: str, status: str, scope: str | None = None) -> None:
        _update(self.db, "approvals", appr_id, {"status": status, "scope": scope, "decided_at": now()})

    @_reads
    def approval_for_call(self, chat_id: str, call_id: str) -> ApprovalRow | None:
        return _first(
            _select(
                self.db,
                ApprovalRow,
                "select * from approvals where chat_id = ? and call_id = ? "
                f"order by {_order(self.db, 'approvals', True)} limit 1",
                [chat_id, call_id],
            )
        )

    @_reads
    def pending_approvals(self, chat_id: str) -> list[ApprovalRow]:
        return _select(
            self.db,
            ApprovalRow,
            f"select * from approvals where chat_id = ? and status = 'pending' order by {_order(self.db, 'approvals')}",
            [chat_id],
        )

    @_reads
    def approval(self, appr_id: str) -> ApprovalRow | None:
        return _first(_select(self.db, ApprovalRow, "select * from approvals where id = ?", [appr_id]))

    @_writes
    def grant(self, chat_id: str, tool: str, *, by: str | None = None, approval_id: str | None = None) -> None:
        """Allow ``tool`` for the rest of the chat; a revoked grant of it is made active again."""
        self.db.execute(
            "insert into grants (chat_id, tool, created_at, granted_by, approval_id) values (?, ?, ?, ?, ?) "
            "on conflict (chat_id, tool) do update set created_at = excluded.created_at, "
            "granted_by = excluded.granted_by, approval_id = excluded.approval_id, revoked_at = null, "
            "revoked_by = null where grants.revoked_at is not null",
            [chat_id, tool, now(), by, approval_id],
        )

    @_reads
    def granted(self, chat_id: str, tool: str) -> bool:
        row = self.db.execute(
            "select 1 from grants where chat_id = ? and tool = ? and revoked_at is null limit 1", [chat_id, tool]
        )
        return row.fetchone() is not None

    @_reads
    def grants(self, chat_id: str, *, revoked: bool = False) -> list[GrantRow]:
        """The chat's grants, oldest first: the active ones, and with ``revoked`` the revoked too."""
        where = "" if revoked else " and revoked_at is null"
        return _select(
            self.db, GrantRow, f"select * from grants where chat_id = ?{where} order by created_at, tool", [chat_id]
        )

    @_writes
    def revoke_grants(self, chat_id: str, tools: list[str] | None, *, by: str) -> list[GrantRow]:
        """Revoke the chat's active grants of ``tools`` (None: all of them), in one statement;
        the rows revoked, as they are now (a tool with no active grant is not among them)."""
        where, params = "chat_id = ? and revoked_at is null", [chat_id]
        if tools is not None:
            if not tools:
                return []
            where += f" and tool in ({', '.join('?' for _ in tools)})"
            params += tools
        return _select(
            self.db,
            GrantRow,
            f"update grants set revoked_at = ?, revoked_by = ? where {where} returning *",
            [now(), by, *params],
        )

    # turn leases (one turn per chat at a time, across processes: core.store.lease) ---------------
    def turn_lease(
        self, chat_id: str, *, wait: bool = False, on_wait: Callable[[ChatBusy], None] | None = None
    ) -> TurnLease:
        """The chat's turn lease, held while a turn runs: ``async with store.turn_lease(chat_id):``.
        Entering it raises :class:`ChatBusy` while another turn holds it, or waits with ``wait``
        (``on_wait`` hears the refusal once)."""
        from core.store.lease import TurnLease

        return TurnLease(self, chat_id, wait=wait, on_wait=on_wait)

    @_reads
    def lease_of(self, chat_id: str) -> TurnLeaseRow | None:
        return _first(_select(self.db, TurnLeaseRow, "select * from turn_leases where chat_id = ?", [chat_id]))

    def busy(self, chat_id: str) -> ChatBusy | None:
        """The refusal a new turn of this chat would meet now: a live lease (its holder runs)."""
        from core.store.lease import describe, holder_is_gone, remaining

        row = self.lease_of(chat_id)
        left = remaining(row) if row is not None else 0.0
        if row is None or left <= 0 or holder_is_gone(row.owner):
            return None
        return ChatBusy(chat_id, describe(row.owner), left)


def _filename(db: Database) -> Path | None:
    row = db.execute("PRAGMA database_list").fetchone()
    return Path(row[2]) if row and row[2] else None
