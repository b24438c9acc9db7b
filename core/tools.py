"""The shared vocabulary: what a tool is, where it came from, what it does to the world.

Every other module speaks in these terms. A :class:`ToolSpec` is immutable and
hashable by content, so plans built from the same specs are byte-identical.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from enum import Enum
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class Origin(str, Enum):
    """Where a tool comes from (ADR-0123 decision 5 turns on this)."""

    CONTROL = "control"  # closed set, built into deferchat (tool.call, tool.search, ...)
    CONFIGURED = "configured"  # named by the agent's configuration; built-in implementations
    DISCOVERED = "discovered"  # listed by an MCP server at session open
    DEVICE = "device"  # offered by a paired device


class SideEffect(str, Enum):
    """Side-effect class. The first three are reads; the rest change the world."""

    NONE = "NONE"  # pure: computes, changes and reveals nothing outside the chat
    WORKSPACE_READ = "WORKSPACE_READ"  # reads the owner's local data
    NETWORK_READ = "NETWORK_READ"  # reads the open world (web, a remote API)
    WORKSPACE_WRITE = "WORKSPACE_WRITE"  # changes the owner's local data
    NETWORK_WRITE = "NETWORK_WRITE"  # changes state in a remote system
    COMMUNICATION = "COMMUNICATION"  # reaches a person: sends mail, places a call, notifies

    @property
    def is_read(self) -> bool:
        return self in READ_CLASSES


READ_CLASSES = frozenset({SideEffect.NONE, SideEffect.WORKSPACE_READ, SideEffect.NETWORK_READ})

EFFECT_WORDS: dict[str, str] = {
    SideEffect.NONE: "changes nothing",
    SideEffect.WORKSPACE_READ: "reads your data",
    SideEffect.NETWORK_READ: "reads the internet",
    SideEffect.WORKSPACE_WRITE: "changes your data",
    SideEffect.NETWORK_WRITE: "sends to the internet",
    SideEffect.COMMUNICATION: "contacts people",
}
"""What a tool of each class does, in a person's words, short (a roster row, an approval's title);
the class's code is for the detail views. Keyed by the enum, a str enum: a plain string looks up
the same entry."""

EFFECT_MEANING: dict[str, str] = {
    SideEffect.NONE: "computes only",
    SideEffect.WORKSPACE_READ: "reads your local data",
    SideEffect.NETWORK_READ: "reads the open web or a remote API",
    SideEffect.WORKSPACE_WRITE: "changes your local data",
    SideEffect.NETWORK_WRITE: "changes state in a remote system",
    SideEffect.COMMUNICATION: "reaches a person (mail, call, notification)",
}
"""The same, said whole (an approval's facts, why the policy asks)."""


class Trust(str, Enum):
    """How text from a tool's spec and results is rendered to the model."""

    TRUSTED_CONFIG = "trusted_configuration"
    EXTERNAL_UNTRUSTED = "EXTERNAL_UNTRUSTED"


def default_trust(origin: Origin) -> Trust:
    """Decision 5: configured and control text is ours; server and device text is not."""
    if origin in (Origin.DISCOVERED, Origin.DEVICE):
        return Trust.EXTERNAL_UNTRUSTED
    return Trust.TRUSTED_CONFIG


def canonical_json(value: Any) -> str:
    """One byte-stable JSON form, used for hashing, token estimates and plans."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
_CACHED_VIEWS = ("definition_json", "_content_hash")  # ToolSpec's cached_property names


class ToolSpec(BaseModel):
    """One tool as the roster planner, the pipeline and the providers see it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="internal dotted name, e.g. mcp.gmail_work.send_message")
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: dict(EMPTY_SCHEMA))
    origin: Origin
    server: str | None = Field(default=None, description="MCP server or device that offers it")
    side_effect: SideEffect = SideEffect.WORKSPACE_WRITE
    scopes: tuple[str, ...] = ()
    requires_approval: bool | None = Field(
        default=None, description="None: the policy decides; True/False: the spec insists"
    )
    trust: Trust | None = None
    # MCP annotations that do not decide the class but are worth keeping (destructive, idempotent).
    hints: dict[str, bool] = Field(default_factory=dict)
    # The name the server knows the tool by (MCP tools are renamed mcp.<server>.<tool>).
    remote_name: str | None = None
    # The server's own title for the tool (MCP ``title``, else ``annotations.title``): shown to the
    # person as the server's claim, never sent to the model, not part of the pin.
    title: str | None = None

    @field_validator("name")
    @classmethod
    def _name_ok(cls, v: str) -> str:
        if not v or len(v) > 200 or any(c.isspace() for c in v):
            raise ValueError(f"invalid tool name {v!r}: non-empty, no whitespace, at most 200 chars")
        return v

    @field_validator("input_schema")
    @classmethod
    def _schema_is_object(cls, v: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise ValueError("input_schema must be a JSON object")
        return v

    @model_validator(mode="after")
    def _fill_trust(self) -> ToolSpec:
        if self.trust is None:
            object.__setattr__(self, "trust", default_trust(self.origin))
        return self

    # -- derived views -------------------------------------------------------------------------

    @property
    def untrusted(self) -> bool:
        return self.trust is Trust.EXTERNAL_UNTRUSTED

    @property
    def is_read(self) -> bool:
        return self.side_effect.is_read

    @property
    def is_mcp(self) -> bool:
        return self.origin is Origin.DISCOVERED

    @property
    def envelope_source(self) -> str | None:
        """The envelope this tool's text travels in (``mcp.<server>``, ``device.<server>``), or
        None for trusted configuration. The one place this is derived."""
        if not self.untrusted:
            return None
        return f"{'mcp' if self.is_mcp else 'device'}.{self.server or 'unknown'}"

    def definition(self) -> dict[str, Any]:
        """The tool definition a provider receives (internal name; providers map it to wire form).

        An untrusted tool's definition sits in the tools array, outside any envelope: its
        description and the prose of its schema are escaped (:func:`core.context.envelope.escape`),
        so nothing in them can pose as an envelope's marker. Trusted definitions are sent as written."""
        if not self.untrusted:
            return {"name": self.name, "description": self.description, "input_schema": self.input_schema}
        from core.context.envelope import escape, escape_schema_text

        return {
            "name": self.name,
            "description": escape(self.description),
            "input_schema": escape_schema_text(self.input_schema),
        }

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> ToolSpec:
        copy = super().model_copy(update=update, deep=deep)
        for key in _CACHED_VIEWS:  # cached views describe the original, not the copy
            copy.__dict__.pop(key, None)
        return copy

    @cached_property
    def definition_json(self) -> str:
        """Canonical JSON of :meth:`definition` (computed once; the spec is immutable)."""
        return canonical_json(self.definition())

    def content_hash(self) -> str:
        """Hash of everything that reaches the model or decides policy: the pin of this tool."""
        return self._content_hash

    @cached_property
    def _content_hash(self) -> str:
        payload = {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
            "origin": self.origin.value,
            "server": self.server,
            "side_effect": self.side_effect.value,
            "scopes": list(self.scopes),
            "requires_approval": self.requires_approval,
        }
        return hashlib.sha256(canonical_json(payload).encode()).hexdigest()

    def parameters(self) -> list[tuple[str, bool]]:
        """Parameter names in schema order, each with whether it is required."""
        props = self.input_schema.get("properties") or {}
        required = set(self.input_schema.get("required") or [])
        if not isinstance(props, dict):
            return []
        return [(str(k), k in required) for k in props]


def mcp_tool_name(server: str, tool: str) -> str:
    """Discovered tools are named mcp.<server>.<tool>."""
    return f"mcp.{server}.{tool}"


class ToolResult(BaseModel):
    """What a tool gives back, whoever ran it (a built-in or an MCP server).

    ``content`` holds blocks: ``{"type": "text", "text"}``, ``{"type": "image", "mime_type",
    "bytes": n}`` (a placeholder; image data is not kept), ``{"type": "resource_link", "uri",
    "name"?, "mime_type"?}`` or ``{"type": "resource", "uri", "text"?}``.
    """

    model_config = ConfigDict(extra="forbid")

    content: list[dict[str, Any]] = Field(default_factory=list)
    structured: Any = None
    is_error: bool = False
    # Set when the failure is deferchat's, not the tool's: the call never got an answer
    # (e.g. "mcp.server_crashed", "mcp.timeout", "mcp.server_unavailable"). None otherwise.
    error_code: str | None = None
    # Set by a trusted tool whose text is not (web.fetch: the page's ``web.<host>``): the model
    # reads the text inside that envelope. See :func:`result_envelope_source`.
    envelope_source: str | None = None

    @classmethod
    def of_text(cls, text: str, *, is_error: bool = False) -> ToolResult:
        return cls(content=[{"type": "text", "text": text}], is_error=is_error)

    @classmethod
    def failure(cls, code: str, message: str) -> ToolResult:
        """A failure on deferchat's side (no implementation, a server down, a crash): ``code`` says which."""
        return cls(content=[{"type": "text", "text": message}], is_error=True, error_code=code)

    @classmethod
    def of_json(cls, value: Any) -> ToolResult:
        return cls(
            content=[{"type": "text", "text": json.dumps(value, ensure_ascii=False, indent=1)}], structured=value
        )

    def text(self) -> str:
        """A plain-text rendering of every block, for the model and for people."""
        parts: list[str] = []
        for block in self.content:
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text", "")))
            elif kind == "image":
                parts.append(f"[image {block.get('mime_type', '?')}, {block.get('bytes', '?')} bytes]")
            elif kind == "resource_link":
                label = block.get("name") or block.get("uri")
                parts.append(f"[resource link {label}: {block.get('uri')}]")
            elif kind == "resource":
                parts.append(str(block.get("text") or f"[resource {block.get('uri')}]"))
            else:
                parts.append(f"[{kind}]")
        if not parts and self.structured is not None:
            parts.append(canonical_json(self.structured))
        return "\n".join(parts)


def result_envelope_source(spec: ToolSpec | None, result: ToolResult) -> str | None:
    """The envelope a result's text reaches the model in: the one the result names (a trusted
    tool that read untrusted text), else its tool's (``mcp.<server>``, ``device.<server>``),
    else none (trusted). Used for the result and for every ``tool.result`` page of it."""
    return result.envelope_source or (spec.envelope_source if spec is not None else None)


def classify_annotations(annotations: dict[str, Any] | None) -> tuple[SideEffect, dict[str, bool]]:
    """Side-effect class from MCP tool annotations (camelCase or snake_case keys).

    * ``readOnlyHint`` true is a read; ``openWorldHint`` (MCP default: true) makes it a
      ``NETWORK_READ``, false a ``WORKSPACE_READ``.
    * Anything else changes the world: ``NETWORK_WRITE`` in an open world, else
      ``WORKSPACE_WRITE``. A tool with no annotations changes the world (the MCP defaults).
    * ``destructiveHint`` and ``idempotentHint`` are recorded as hints, not classes.
    """
    ann = annotations or {}

    def get(camel: str, snake: str) -> Any:
        value = ann.get(camel)
        return ann.get(snake) if value is None else value

    read_only = get("readOnlyHint", "read_only_hint")
    open_world = get("openWorldHint", "open_world_hint")
    destructive = get("destructiveHint", "destructive_hint")
    idempotent = get("idempotentHint", "idempotent_hint")
    open_world = True if open_world is None else bool(open_world)
    if read_only is True:
        side_effect = SideEffect.NETWORK_READ if open_world else SideEffect.WORKSPACE_READ
    else:
        side_effect = SideEffect.NETWORK_WRITE if open_world else SideEffect.WORKSPACE_WRITE
    hints: dict[str, bool] = {}
    for key, value in (
        ("read_only", read_only),
        ("open_world", get("openWorldHint", "open_world_hint")),
        ("destructive", destructive),
        ("idempotent", idempotent),
    ):
        if value is not None:
            hints[key] = bool(value)
    return side_effect, hints
