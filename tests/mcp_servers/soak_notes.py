"""A tiny stdio MCP server for the soak run (``tests/bench/soak.py``): one write, one read, and its pid.

* ``append_note(token, hold_seconds=0)`` appends one line, ``token``, to the file named by
  ``SOAK_NOTES_FILE`` (flushed and fsynced before anything else), then waits ``hold_seconds``
  before it answers, so a kill can land while the call is known to be in flight and its write
  known to be on disk. How often a call ran is how often its token is in the file.
* ``count_notes(token)`` (read only) says how many lines of that file are ``token``.

On start it appends its pid to the file named by ``SOAK_PID_FILE`` (one line per start), so the
soak can kill the live one with SIGKILL and count the restarts.

Run: ``python tests/mcp_servers/soak_notes.py`` (stdio).
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("soak-notes", log_level="WARNING")


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
async def append_note(token: str, hold_seconds: float = 0.0) -> str:
    import anyio

    with _notes().open("a", encoding="utf-8") as f:
        f.write(token + "\n")
        f.flush()
        os.fsync(f.fileno())
    if hold_seconds > 0:
        await anyio.sleep(min(hold_seconds, 30.0))
    return f"noted {token}"


@server.tool(
    description="How many notes in the notes file are exactly this token.",
    annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
)
def count_notes(token: str) -> str:
    path = _notes()
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return f"{token}: {lines.count(token)}"


if __name__ == "__main__":
    pid_file = os.environ.get("SOAK_PID_FILE")
    if pid_file:
        with open(pid_file, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
    server.run()
