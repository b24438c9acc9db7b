"""The offline demo, in one place: the model, the MCP servers and the dataset.

- :mod:`core.demo.model`: the ``demo`` provider, an offline, deterministic model
  (:class:`~core.demo.model.DemoProvider`), with the everyday requests it knows in
  :mod:`core.demo.intents`, how it reads the owner's words in :mod:`core.demo.text` and how
  it sums up a result in :mod:`core.demo.answers`.
- :mod:`core.demo.servers` (with :mod:`~core.demo.gmail` and :mod:`~core.demo.bland`): the
  demo MCP servers that back the production roster, ``bland_read``, ``bland_call``,
  ``gmail_personal`` and ``gmail_work``.
- :mod:`core.demo.dataset`: the demo's data for the built-in tools (a "Team standup",
  contacts, calendar, tasks, notes, newsletters), and :func:`~core.demo.dataset.tool_database`,
  which gives a chat on the demo model that data and every other chat the user's own.
- :mod:`core.demo.db`: the one SQLite file all of it lives in, ``demo.sqlite`` in deferchat's
  data directory (:func:`demo_db_path`), seeded on first use. Deleting it removes every trace
  of the demo; the next use seeds it again. The user's real database never holds demo rows.

The servers are real MCP servers (the SDK's ``MCPServer``). A chat runs them in its own process
and speaks MCP to them over the SDK's in-memory transport (:func:`core.demo.servers.in_process`);
``python -m core.demo <server>`` runs one as a process on stdio, as :func:`demo_mcp_config`
starts them (``deferchat servers --demo``, ``DEFERCHAT_DEMO_SERVERS=process``). Their tool
names, descriptions, input schemas and annotations are read from the production roster
(``core/roster/rosters/production.json``, section ``servers``): that file is the one source of
truth, and the tests check that what the servers list over the wire is exactly what it says.
Their state is seeded with plausible mail and calls on first start, so a later read sees what
a write did. Nothing leaves the machine: ``start_call`` records a simulated call,
``send_message`` delivers to the simulated mailbox.

:func:`demo_mcp_config` is the ``mcpServers`` config of the demo servers (a chat with no API key
takes their names and timeouts from it). Importing this package is cheap (no MCP SDK, no
provider SDK).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

DEMO_SERVERS: tuple[str, ...] = ("bland_call", "bland_read", "gmail_personal", "gmail_work")
DB_ENV = "DEFERCHAT_DEMO_DB"
DEFAULT_CALL_SECONDS = 3.0  # wall-clock seconds a simulated call stays in progress


def demo_db_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$DEFERCHAT_DEMO_DB``, else ``demo.sqlite`` in deferchat's data directory."""
    env = os.environ if environ is None else environ
    if env.get(DB_ENV):
        return Path(env[DB_ENV]).expanduser()
    if env.get("DEFERCHAT_HOME"):
        return Path(env["DEFERCHAT_HOME"]).expanduser() / "demo.sqlite"
    from core.store import data_dir

    return data_dir() / "demo.sqlite"


def demo_mcp_config(
    db_path: str | Path | None = None,
    *,
    python: str | None = None,
    call_seconds: float | None = None,
) -> dict[str, Any]:
    """The ``mcpServers`` document that starts the four demo servers on one database."""
    db = Path(db_path) if db_path is not None else demo_db_path()
    root = str(Path(__file__).resolve().parents[2])  # the directory that holds the core package
    extra = ["--call-seconds", f"{call_seconds:g}"] if call_seconds is not None else []
    return {
        "mcpServers": {
            name: {
                "command": python or sys.executable,
                "args": ["-m", "core.demo", name, "--db", str(db), *extra],
                "env": {"PYTHONPATH": root},
                "timeout": 20,
            }
            for name in DEMO_SERVERS
        }
    }


def demo_config(db_path: str | Path | None = None, *, call_seconds: float | None = None) -> Any:
    """:func:`demo_mcp_config` parsed: a :class:`core.mcp.config.McpConfig` for ``McpManager``."""
    from core.mcp.config import config_from_dict

    return config_from_dict(demo_mcp_config(db_path, call_seconds=call_seconds), source="embedded demo")
