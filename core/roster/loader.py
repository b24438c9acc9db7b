"""Roster files (ARCHITECTURE.md) and the named rosters shipped as package data.

A roster file::

    {"agent": {"name", "version", "deferred": [names], "controls"?: [...], "can_defer"?: bool,
               "always_load"?: [names or "mcp.<server>.*"],
               "profile"?: {"kind": "website", "url": "https://..."}},
     "configured": [{"name", "description"?, "input_schema"?, "side_effect"?, "scopes"?,
                     "requires_approval"?}],
     "servers": [{"name", "tools": [{"name", "description", "input_schema" | "inputSchema",
                                     "annotations"?}]}],
     "devices"?: [{"name", "tools": [...]}]}

A configured tool that names a built-in (:mod:`core.builtins`) and gives no ``description`` or
no ``input_schema`` takes it from the built-in: its description, and the schema generated from
its argument model. What the entry gives wins. Any other configured tool without them has an
empty description and takes any object. The built-ins are imported only for a roster that
leaves something out.

Server tools become ``mcp.<server>.<tool>``, classified from their annotations.

``always_load`` pins tools (ranked first, never deferred): a tool's exact name, or a prefix
ending in ``.*`` (``mcp.gmail_work.*``: every tool of that server). A ``website`` profile binds
the agent's chats to one site (ADR-0130): the three browser built-ins (``browser.navigate``,
``browser.observe``, ``browser.act``) join the configured tools, if the roster does not list
them itself, and are pinned; ``browser.navigate``'s description names the site.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from core.errors import UsageError, first_validation_error
from core.roster.models import WEBSITE_PROFILE_TOOLS, AgentConfig, Profile
from core.tools import Origin, SideEffect, ToolSpec, classify_annotations, mcp_tool_name

_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # whole names only: fullmatch
_ALWAYS_LOAD = re.compile(r"[^*\s]+(\.\*)?")  # a name, or a prefix ending in .* (fullmatch)
# The side effects of the browser built-ins a website profile adds: reading a page, reading the
# page the chat holds, following a link or submitting a form (which may change the site).
_PROFILE_SIDE_EFFECTS = {
    "browser.navigate": SideEffect.NETWORK_READ,
    "browser.observe": SideEffect.WORKSPACE_READ,
    "browser.act": SideEffect.NETWORK_WRITE,
}


class RosterError(UsageError, ValueError):
    """A roster that cannot be read; the message says where and why."""


class _ConfiguredTool(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    description: str | None = None  # None: the built-in's, else ""
    input_schema: dict[str, Any] | None = None  # None: the built-in's, else any object
    side_effect: SideEffect = SideEffect.WORKSPACE_WRITE
    scopes: list[str] = Field(default_factory=list)
    requires_approval: bool | None = None


class _ServerTool(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    name: str
    description: str = ""
    input_schema: dict[str, Any] | None = None
    inputSchema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    title: Any = None  # only a string is used: a title of another type costs nothing else
    side_effect: SideEffect | None = None

    @model_validator(mode="after")
    def _one_schema(self) -> _ServerTool:
        if self.input_schema is None:
            self.input_schema = self.inputSchema or {"type": "object", "properties": {}}
        return self


class _Server(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    tools: list[_ServerTool] = Field(default_factory=list)

    @model_validator(mode="after")
    def _name_ok(self) -> _Server:
        if not _SERVER_NAME.fullmatch(self.name):
            raise ValueError(f"server name {self.name!r} must match {_SERVER_NAME.pattern}")
        return self


class _Agent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = "chat"
    version: str = "1"
    deferred: list[str] = Field(default_factory=list)
    controls: list[str] = Field(default_factory=list)
    can_defer: bool = True
    instructions: str = ""
    always_load: list[str] = Field(default_factory=list)
    profile: Profile | None = None

    @model_validator(mode="after")
    def _always_load_ok(self) -> _Agent:
        for entry in self.always_load:
            if not _ALWAYS_LOAD.fullmatch(entry):
                raise ValueError(
                    f"always_load entry {entry!r} must be a tool name or a prefix ending in .* (mcp.<server>.*)"
                )
        return self


class RosterFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: _Agent = Field(default_factory=_Agent)
    configured: list[_ConfiguredTool] = Field(default_factory=list)
    servers: list[_Server] = Field(default_factory=list)
    devices: list[_Server] = Field(default_factory=list)


class Roster(BaseModel):
    """A roster ready for the planner."""

    model_config = ConfigDict(frozen=True)

    name: str
    agent: AgentConfig
    configured: tuple[ToolSpec, ...]
    discovered: tuple[ToolSpec, ...]

    def servers(self) -> list[str]:
        return sorted({t.server for t in self.discovered if t.server and t.origin is Origin.DISCOVERED})


def server_tool_spec(server: str, tool: _ServerTool | dict[str, Any], origin: Origin = Origin.DISCOVERED) -> ToolSpec:
    t = tool if isinstance(tool, _ServerTool) else _ServerTool.model_validate(tool)
    side_effect, hints = classify_annotations(t.annotations)
    if t.side_effect is not None:
        side_effect = t.side_effect
    name = mcp_tool_name(server, t.name) if origin is Origin.DISCOVERED else f"device.{server}.{t.name}"
    return ToolSpec(
        name=name,
        description=t.description,
        input_schema=t.input_schema or {},
        origin=origin,
        server=server,
        side_effect=side_effect,
        hints=hints,
        remote_name=t.name,
        title=_title(t),
    )


def _title(t: _ServerTool) -> str | None:
    """The server's title for its tool: MCP's ``title``, else ``annotations.title``."""
    for value in (t.title, (t.annotations or {}).get("title")):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _configured_spec(tool: _ConfiguredTool) -> ToolSpec:
    """A configured tool as the planner sees it; what the entry leaves out comes from its built-in."""
    description, schema = tool.description, tool.input_schema
    if description is None or schema is None:
        from core.builtins.catalog import described

        found = described(tool.name)  # from the shipped catalog: the built-in is imported when called
        if found is not None:
            description = found[0] if description is None else description
            schema = found[1] if schema is None else schema
    return ToolSpec(
        name=tool.name,
        description=description or "",
        input_schema={"type": "object", "properties": {}} if schema is None else schema,
        origin=Origin.CONFIGURED,
        side_effect=tool.side_effect,
        scopes=tuple(tool.scopes),
        requires_approval=tool.requires_approval,
    )


def _profile_tools(profile: Profile | None, listed: list[_ConfiguredTool]) -> list[_ConfiguredTool]:
    """The browser built-ins a website profile adds, those the roster does not list itself."""
    if profile is None:
        return []
    have = {t.name for t in listed}
    return [
        _ConfiguredTool(name=n, side_effect=_PROFILE_SIDE_EFFECTS[n]) for n in WEBSITE_PROFILE_TOOLS if n not in have
    ]


def _bound_to(spec: ToolSpec, profile: Profile | None) -> ToolSpec:
    """``browser.navigate`` of a website profile says which site the chat is bound to."""
    if profile is None or spec.name != WEBSITE_PROFILE_TOOLS[0]:
        return spec
    site = f"This chat is bound to the website {profile.url}: start there."
    return spec.model_copy(update={"description": f"{spec.description} {site}".strip()})


def parse_roster(data: dict[str, Any], name: str = "roster") -> Roster:
    try:
        rf = RosterFile.model_validate(data)
        listed = rf.configured + _profile_tools(rf.agent.profile, rf.configured)
        configured = tuple(_bound_to(_configured_spec(t), rf.agent.profile) for t in listed)
        discovered = tuple(server_tool_spec(s.name, t) for s in rf.servers for t in s.tools)
        devices = tuple(server_tool_spec(d.name, t, Origin.DEVICE) for d in rf.devices for t in d.tools)
    except ValidationError as exc:
        raise RosterError(f"{name}: {first_validation_error(exc)}") from exc
    a = rf.agent
    agent = AgentConfig(
        name=a.name,
        version=a.version,
        deferred=tuple(a.deferred),
        controls=tuple(a.controls),
        can_defer=a.can_defer,
        instructions=a.instructions,
        always_load=tuple(a.always_load),
        profile=a.profile,
    )
    return Roster(name=name, agent=agent, configured=configured, discovered=discovered + devices)


def named_rosters() -> list[str]:
    folder = resources.files("core.roster") / "rosters"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


def load_roster(name_or_path: str) -> Roster:
    """A named roster (``production``) or a roster file path."""
    path = Path(name_or_path)
    if path.suffix == ".json" or path.exists():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RosterError(f"roster file {path} does not exist") from None
        except UnicodeDecodeError as exc:
            raise RosterError(f"roster file {path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
        except (OSError, json.JSONDecodeError) as exc:
            raise RosterError(f"roster file {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise RosterError(f"roster file {path}: expected a JSON object")
        return parse_roster(data, str(path))
    resource = resources.files("core.roster") / "rosters" / f"{name_or_path}.json"
    if not resource.is_file():
        raise RosterError(
            f"no roster named {name_or_path!r}; named rosters: {', '.join(named_rosters())}, "
            "or give a path to a roster file"
        )
    return parse_roster(json.loads(resource.read_text(encoding="utf-8")), name_or_path)
