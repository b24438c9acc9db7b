"""Approval of MCP config files the user did not write: a project's ``.mcp.json``.

A project file names commands that would run as the user, and ``${VAR}`` references that
would read the user's environment (``${ANTHROPIC_API_KEY}``). So, as Claude Code does for
project servers, its servers start only once the user has approved that file, and the
approval is for its exact content: a later edit asks again.

* :func:`describe_config` says what a file would do (commands, URLs, the names of the
  environment variables it sets and reads) before the user decides. It is pure: it reads
  the file and changes nothing. Every string in the summary is display-safe (control
  characters and bidi overrides shown as escapes), so a hostile file cannot dress up what
  the approval shows.
* :func:`approve_config` records the approval of the content that was described (pass the
  summary's ``sha256``, and a file that changed in between is refused).
* :func:`is_approved` is what :func:`core.mcp.config.load_mcp_config` asks.

Approvals live in the user's config dir (beside ``mcp.json``), in
``approved-mcp-configs.json``: ``{"version": 1, "approved": {"<absolute path>":
{"<sha256>": "<when>"}}}``. An unreadable or corrupt approvals file counts as no approval
(the servers ask again); it never lets a server start.

The TUI's dialog uses the same three functions; the CLI's is
``deferchat servers --approve-project FILE``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from core.mcp.config import VAR_RE, McpConfigError, parse_config_document, read_config_bytes, user_config_path
from core.mcp.convert import visible

APPROVALS_FILE = "approved-mcp-configs.json"
APPROVE_COMMAND = "deferchat servers --approve-project"


def approve_command(path: str | Path) -> str:
    """The command line that reviews and approves ``path``."""
    return f"{APPROVE_COMMAND} {shlex.quote(str(path))}"


class ServerSummary(BaseModel):
    """One server of a file, as written (nothing expanded)."""

    name: str
    transport: str
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    cwd: str | None = None
    url: str | None = None
    env_names: list[str] = Field(default_factory=list, description="variables it sets for the server")
    header_names: list[str] = Field(default_factory=list)
    reads: list[str] = Field(default_factory=list, description="variables of your environment it reads (${VAR})")
    disabled: bool = False


class ConfigSummary(BaseModel):
    """What a config file would run, for the user to decide on."""

    path: str = Field(description="absolute path")
    sha256: str = Field(description="of the exact bytes described; an approval is for these")
    servers: list[ServerSummary]
    reads: list[str] = Field(default_factory=list, description="every variable of your environment the file reads")
    approved: bool = False

    def lines(self) -> list[str]:
        """The summary for people, one line each (no control characters)."""
        n = len(self.servers)
        out = [f"{self.path} (sha256 {self.sha256[:16]}) defines {n} MCP server{'' if n == 1 else 's'}:"]
        for s in self.servers:
            head = f"  {s.name}" + (" (disabled)" if s.disabled else "")
            if s.transport == "stdio":
                out.append(
                    f"{head}: runs {shlex.join([s.command or '', *s.args])}" + (f"  (in {s.cwd})" if s.cwd else "")
                )
            else:
                out.append(f"{head}: connects to {s.url} ({s.transport})")
            if s.env_names:
                out.append(f"      sets environment variables: {', '.join(s.env_names)}")
            if s.header_names:
                out.append(f"      sends headers: {', '.join(s.header_names)}")
            if s.reads:
                out.append(f"      reads from your environment: {', '.join(s.reads)}")
        if self.reads:
            out.append(f"  In all it would read these variables of your environment: {', '.join(self.reads)}")
        else:
            out.append("  It reads no variables of your environment.")
        out.append(
            "  approved: yes, this exact content"
            if self.approved
            else f"  approved: no; to approve this exact content run: {approve_command(self.path)}"
        )
        return out


def digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def approvals_path(environ: Mapping[str, str] | None = None) -> Path:
    """``approved-mcp-configs.json`` in the user's config dir (beside ``mcp.json``)."""
    return user_config_path(environ).parent / APPROVALS_FILE


def _vars_in(*texts: str | None) -> list[str]:
    found: list[str] = []
    for text in texts:
        for m in VAR_RE.finditer(text or ""):
            if m.group(1) not in found:
                found.append(m.group(1))
    return found


def describe_document(data: Any, raw: bytes, path: str | Path, *, approved: bool = False) -> ConfigSummary:
    """:func:`describe_config` of a file already read (its JSON and its exact bytes)."""
    source = str(path)
    parsed = parse_config_document(data, source=source)
    servers: list[ServerSummary] = []
    reads: list[str] = []
    for name, e in sorted(parsed.entries().items()):
        used = _vars_in(
            e.command,
            *e.args,
            *e.env.values(),
            e.cwd,
            e.url,
            *e.headers.values(),
            e.oauth.client_secret if e.oauth else None,
        )
        reads += [v for v in used if v not in reads]
        servers.append(
            ServerSummary(
                name=visible(name),
                transport=e.transport,
                command=visible(e.command) if e.command else None,
                args=[visible(a) for a in e.args],
                cwd=visible(e.cwd) if e.cwd else None,
                url=visible(e.url) if e.url else None,
                env_names=[visible(k) for k in e.env],
                header_names=[visible(k) for k in e.headers],
                reads=used,
                disabled=e.disabled,
            )
        )
    return ConfigSummary(
        path=visible(source), sha256=digest(raw), servers=servers, reads=sorted(reads), approved=approved
    )


def describe_config(path: str | Path, *, environ: Mapping[str, str] | None = None) -> ConfigSummary:
    """What the file at ``path`` would run, as written, and whether that content is approved.

    Reads the file once and changes nothing. Raises :class:`McpConfigError` for a file that
    cannot be read or is not an ``mcpServers`` document.
    """
    p, raw, data = read_config_bytes(path)
    resolved = p.resolve()
    return describe_document(data, raw, resolved, approved=is_approved(resolved, digest(raw), environ=environ))


def _load(environ: Mapping[str, str] | None) -> dict[str, dict[str, str]]:
    try:
        data = json.loads(approvals_path(environ).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    approved = data.get("approved") if isinstance(data, dict) else None
    if not isinstance(approved, dict):
        return {}
    return {k: dict(v) for k, v in approved.items() if isinstance(k, str) and isinstance(v, dict)}


def is_approved(path: str | Path, sha256: str, *, environ: Mapping[str, str] | None = None) -> bool:
    """Has the user approved the file at ``path`` (absolute) with exactly this content?"""
    return sha256 in _load(environ).get(str(Path(path).resolve()), {})


def approve_config(
    path: str | Path, *, sha256: str | None = None, environ: Mapping[str, str] | None = None
) -> ConfigSummary:
    """Approve the file's current content; return what was approved.

    ``sha256``: the content the user was shown (``describe_config(...).sha256``). If the file
    no longer has it, nothing is approved and :class:`McpConfigError` says so.
    """
    p, raw, data = read_config_bytes(path)
    resolved = p.resolve()
    summary = describe_document(data, raw, resolved)
    if sha256 is not None and sha256 != summary.sha256:
        raise McpConfigError(
            f"{resolved}: changed since it was shown (sha256 {summary.sha256[:16]}, "
            f"not {sha256[:16]}); review it again before approving"
        )
    approvals = _load(environ)
    approvals.setdefault(str(resolved), {})[summary.sha256] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    target = approvals_path(environ)
    tmp: str | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".approved-", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"version": 1, "approved": approvals}, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, target)  # all or nothing: a reader never sees half a file
    except OSError as e:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise McpConfigError(f"{target}: cannot record the approval: {e.strerror or e}") from None
    return summary.model_copy(update={"approved": True})
