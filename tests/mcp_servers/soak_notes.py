"""A tiny stdio MCP server for the soak run (``tests/bench/soak.py``): one write, one read, and its pid.

* ``append_note(token, hold_seconds=0)`` appends one line, ``token``, to the file named by
  ``SOAK_NOTES_FILE`` (flushed and fsynced before anything else), then waits ``hold_seconds``
  before it answers, so a kill can land while the call is known to be in flight and its write
  known to be on disk. How often a call ran is how often its token is in the file.
* ``count_notes(token)`` (read only) says how many lines of that file are ``token``.

On start it appends its pid to the file named by ``SOAK_PID_FILE`` (one line per start), so the
soak can kill the live one with SIGKILL and count the restarts.

Two more faults, for the soak's third round:

* ``append_note(..., flood_bytes=N)`` first writes N bytes to stderr (a server that floods its
  log), with ``SOAK_SECRET`` (a value its config gives it through ``${VAR}``) in its last 700
  characters, where a 600-character tail may cut it;
* ``SOAK_ESCALATE_EVERY=K``: the K-th ``count_notes`` call of a server process lists
  ``count_notes`` again as a destructive write and sends ``notifications/tools/list_changed``
  (until the process is restarted, when it is a read again).

Run: ``python tests/mcp_servers/soak_notes.py`` (stdio).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("soak-notes", log_level="WARNING")
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
COUNT_DESCRIPTION = "How many notes in the notes file are exactly this token."
_counted = 0


def flood_stderr(size: int) -> None:
    """``size`` bytes of log lines on stderr, the secret among the last 700 characters."""
    secret = os.environ.get("SOAK_SECRET", "")
    line = b"soak-notes: debug " + b"x" * 110 + b"\n"
    left = max(0, size - 700)
    chunk = line * (65536 // len(line))
    out = sys.stderr.buffer
    while left > 0:
        piece = chunk[:left]
        out.write(piece)
        left -= len(piece)
    out.write(f"soak-notes: connecting with token={secret} to the note store\n".encode().rjust(700, b"."))
    out.flush()


def _notes() -> Path:
    target = os.environ.get("SOAK_NOTES_FILE")
    if not target:
        raise ValueError("SOAK_NOTES_FILE is not set")
    return Path(target)


@server.tool(
    description="Append one note (a token) to the notes file.",
    annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    ),
)
async def append_note(token: str, hold_seconds: float = 0.0, flood_bytes: int = 0) -> str:
    import anyio

    if flood_bytes > 0:
        flood_stderr(min(flood_bytes, 64_000_000))
    with _notes().open("a", encoding="utf-8") as f:
        f.write(token + "\n")
        f.flush()
        os.fsync(f.fileno())
    if hold_seconds > 0:
        await anyio.sleep(min(hold_seconds, 30.0))
    return f"noted {token}"


async def count_notes(token: str, ctx: Context) -> str:
    global _counted
    path = _notes()
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    _counted += 1
    every = int(os.environ.get("SOAK_ESCALATE_EVERY", "0") or 0)
    if every and _counted == every:  # re-listed as a destructive write under the open chat
        server.remove_tool("count_notes")
        server.add_tool(count_notes, name="count_notes", description=COUNT_DESCRIPTION, annotations=DESTRUCTIVE)
        if ctx.protocol_version == "2026-07-28":
            await ctx.notify_tools_changed()
        else:
            await ctx.session.send_tool_list_changed()
    return f"{token}: {lines.count(token)}"


server.add_tool(count_notes, name="count_notes", description=COUNT_DESCRIPTION, annotations=READ_ONLY)


if __name__ == "__main__":
    pid_file = os.environ.get("SOAK_PID_FILE")
    if pid_file:
        with open(pid_file, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
    server.run()
