"""The rows the store hands back: one frozen dataclass per table that code reads fields of.

Each has every column of its table as the migrations in :mod:`core.store.migrations` made it.
A column the store writes on every row is typed as its value (``str``, ``float``); one it may
leave NULL is ``X | None``. A NULL where this version always writes a value (a database an
older version or another tool wrote) reads as the field's default (``""``, ``0.0``, ``"idle"``),
so no reader meets a None it was promised it never would. A column a newer version added is
ignored, so an old reader never trips over a new writer's row. JSON columns stay text except
``messages.content``, which every reader wants parsed (:attr:`MessageRow.blocks`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any, Self

_KNOWN: dict[type, frozenset[str]] = {}
_FILLED: dict[type, dict[str, Any]] = {}


class _Row:
    """What every row type shares: built from a cursor's column names and values."""

    __slots__ = ()

    @classmethod
    def known_columns(cls) -> frozenset[str]:
        known = _KNOWN.get(cls)
        if known is None:
            known = _KNOWN[cls] = frozenset(f.name for f in fields(cls))  # type: ignore[arg-type]
        return known

    @classmethod
    def filled(cls) -> dict[str, Any]:
        """The fields a NULL reads as: those with a default that is not None, and that default."""
        defaults = _FILLED.get(cls)
        if defaults is None:
            defaults = _FILLED[cls] = {
                f.name: f.default
                for f in fields(cls)  # type: ignore[arg-type]
                if f.default is not MISSING and f.default is not None
            }
        return defaults

    @classmethod
    def from_values(cls, names: Sequence[str], values: Sequence[Any]) -> Self:
        return cls.from_row(dict(zip(names, values, strict=True)))

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        """The row from its columns: a column this version does not know left out, a NULL in a
        column it always writes read as the field's default."""
        known, filled = cls.known_columns(), cls.filled()
        return cls(**{n: (filled[n] if v is None and n in filled else v) for n, v in row.items() if n in known})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]


@dataclass(frozen=True, slots=True)
class ChatRow(_Row):
    id: str
    title: str = ""
    created_at: float = 0.0
    updated_at: float = 0.0
    agent_name: str | None = None
    agent_version: str | None = None
    roster: str | None = None
    plan_id: str | None = None
    builder: str | None = None
    strategy: str = ""
    policy: str | None = None
    provider: str = ""
    model: str = ""
    base_url: str | None = None
    status: str = "idle"  # idle | running | parked
    strategy_reason: str | None = None
    deleted: int = 0
    sources: str | None = None  # JSON: where the chat's tools came from (roster, mcp_config, script, ...)
    system_prompt: str | None = None  # the chat's own system prompt; None: none (see core.chat.prompting)

    def sources_dict(self) -> dict[str, Any]:
        value = json.loads(self.sources or "{}")
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class TurnRow(_Row):
    id: str
    chat_id: str = ""
    user_message_id: str | None = None
    status: str = "running"  # running | parked | done | failed
    steps: int = 0
    started_at: float = 0.0
    ended_at: float | None = None
    error: str | None = None
    seq: int | None = None  # its place in the chat (migration 0010_order_seq): what reads order by


@dataclass(frozen=True, slots=True)
class MessageRow(_Row):
    id: str
    chat_id: str = ""
    parent_id: str | None = None
    turn_id: str | None = None
    role: str = "user"  # user | assistant
    content: list[dict[str, Any]] | None = None  # Anthropic-shaped blocks, parsed
    created_at: float = 0.0
    replaces: str | None = None  # the earlier user message this one was sent in the place of
    seq: int | None = None  # its place in the chat (migration 0010_order_seq): what reads order by
    # its token count as the history's budget counts it, and the key that count is for
    # (migration 0011_message_tokens; :meth:`core.store.Store.keep_token_counts`)
    tokens: int | None = None
    tokens_key: str | None = None

    @classmethod
    def from_values(cls, names: Sequence[str], values: Sequence[Any]) -> Self:
        row = dict(zip(names, values, strict=True))
        if isinstance(row.get("content"), str):
            row["content"] = json.loads(row["content"])
        return cls.from_row(row)

    @property
    def blocks(self) -> list[dict[str, Any]]:
        return self.content or []


@dataclass(frozen=True, slots=True)
class InvocationRow(_Row):
    id: str
    chat_id: str = ""
    turn_id: str | None = None
    call_id: str = ""
    name: str = ""  # the tool's own name (a deferred tool reached through tool.call included)
    via: str | None = None
    arguments: str | None = None  # JSON
    side_effect: str | None = None
    pin: str | None = None
    status: str = "requested"  # requested | awaiting_approval | running | completed | failed | denied | unknown
    result: str | None = None  # JSON of the whole ToolResult
    model_result: str | None = None  # what the model read
    is_error: int = 0
    error_code: str | None = None
    error_message: str | None = None
    created_at: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    seq: int | None = None  # its place in the chat (migration 0010_order_seq): what reads order by


@dataclass(frozen=True, slots=True)
class ApprovalRow(_Row):
    id: str
    chat_id: str = ""
    turn_id: str | None = None
    invocation_id: str | None = None
    call_id: str = ""
    tool: str = ""
    via: str | None = None
    side_effect: str | None = None
    arguments: str | None = None  # JSON
    reason: str | None = None
    preview: str | None = None  # JSON: the ActionPreview the person was shown (core.pipeline.preview)
    status: str = "pending"  # pending | allowed | denied
    scope: str | None = None  # once | chat
    created_at: float = 0.0
    decided_at: float | None = None
    seq: int | None = None  # its place in the chat (migration 0010_order_seq): what reads order by


@dataclass(frozen=True, slots=True)
class GrantRow(_Row):
    """An "Allow for this chat" grant: active until ``revoked_at`` is set (a revoked grant keeps
    its row, so the chat shows it as revoked after a restart)."""

    chat_id: str
    tool: str = ""
    created_at: float = 0.0  # when it was (last) granted
    granted_by: str | None = None  # who answered: "app", "terminal" (None: a grant from before 0008)
    approval_id: str | None = None  # the approval it answered
    revoked_at: float | None = None
    revoked_by: str | None = None  # "app", "cli"

    @property
    def active(self) -> bool:
        return self.revoked_at is None


@dataclass(frozen=True, slots=True)
class TurnLeaseRow(_Row):
    chat_id: str
    owner: str = ""  # host/pid-namespace/pid/random: see core.store.lease
    acquired_at: float = 0.0
    heartbeat_at: float = 0.0
    expires_at: float = 0.0
    boot_id: str | None = None  # the holder's boot of its machine: with it, expires_mono decides
    expires_mono: float | None = None  # the expiry on that boot's monotonic clock (wall-clock steps do not move it)


@dataclass(frozen=True, slots=True)
class SummaryRow(_Row):
    """A summary of a chat's oldest turns, which takes their place in requests (see
    :mod:`core.store.migrations.m0009_history_summaries`)."""

    id: str
    chat_id: str = ""
    created_at: float = 0.0
    through_id: str = ""  # the last message it covers; every message of the branch up to it
    text: str = ""
    tools: str | None = None  # JSON list of the deferred tools those turns used
    turns: int = 0
    messages: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    method: str = "model"  # model | extractive | dropped
    reason: str | None = None  # auto | owner
    provider: str | None = None
    model: str | None = None
    error: str | None = None  # why the model's summary could not be made, if it could not

    def tool_names(self) -> list[str]:
        try:
            value = json.loads(self.tools or "[]")
        except ValueError:
            return []
        return [n for n in value if isinstance(n, str)] if isinstance(value, list) else []
