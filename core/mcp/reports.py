"""What a server looks like from outside: its state, its report, and a one-shot discovery's findings."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from core.roster.models import RejectedTool
from core.tools import ToolSpec

State = Literal["idle", "starting", "ready", "failed", "stopped", "needs_approval", "needs_sign_in"]
AuthState = Literal["none", "signed_in", "needs_sign_in"]


class ServerReport(BaseModel):
    """One server as ``deferchat servers`` and the roster panel show it."""

    name: str
    transport: str
    target: str = Field(description="the command line or the URL")
    status: State
    message: str = ""
    tools: int = 0
    tool_names: list[str] = Field(default_factory=list)
    skipped: list[RejectedTool] = Field(default_factory=list, description="listed tools not offered, with reasons")
    needs_approval: str | None = Field(default=None, description="the unapproved file this server comes from")
    server_name: str | None = None
    server_version: str | None = None
    protocol_version: str | None = None
    source: str = ""
    start_ms: int | None = None
    restarts: int = 0
    list_changed: int = 0
    capabilities: list[str] = Field(default_factory=list, description="what the server declared: tools, resources, ...")
    auth: AuthState = Field("none", description="a remote server's OAuth sign-in: none needed, signed in, or needed")


class Discovery(BaseModel):
    """What a one-shot discovery found (``deferchat plan --mcp-config``, ``deferchat servers``)."""

    servers: list[ServerReport]
    tools: list[ToolSpec]
    rejected: list[RejectedTool] = Field(default_factory=list, description="listed tools not offered, with reasons")
