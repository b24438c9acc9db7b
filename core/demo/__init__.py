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
  data directory (:func:`demo_db_path`), seeded on first use, and seeded again when the file was
  made by an older version of the data (:data:`core.demo.db.DATASET_VERSION`). Deleting it
  removes the demo's data; the next use seeds it again. The user's real database never holds
  demo rows. Beside it, ``demo-workspace/``: the documents the demo model's workspace tools see
  (:func:`core.demo.dataset.tool_workspace`; the owner's own workspace never gets a demo file).
- :func:`demo_time`: the demo's clock (the real one, or ``$DEFERCHAT_DEMO_NOW`` pinned), which
  places the data, dates the mail and answers ``time.now`` in a demo chat.

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
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

DEMO_SERVERS: tuple[str, ...] = ("bland_call", "bland_read", "gmail_personal", "gmail_work")
DB_ENV = "DEFERCHAT_DEMO_DB"
NOW_ENV = "DEFERCHAT_DEMO_NOW"
DEFAULT_CALL_SECONDS = 3.0  # wall-clock seconds a simulated call stays in progress
_STARTED = time.monotonic()


def demo_time(environ: Mapping[str, str] | None = None) -> float:
    """The demo's clock, as epoch seconds: the real time, or, with ``$DEFERCHAT_DEMO_NOW`` set
    (an ISO 8601 moment, e.g. ``2026-12-02T09:30:00+00:00``), that moment plus the time this
    process has run. Tests and screenshots pin it, so the dataset (placed around the day it was
    seeded), ``time.now`` and the mail's dates agree on one day whatever the machine's clock
    says, and a simulated call still ends after its seconds."""
    env = os.environ if environ is None else environ
    pinned = env.get(NOW_ENV)
    if not pinned:
        return time.time()
    from datetime import UTC, datetime

    moment = datetime.fromisoformat(pinned.strip().replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp() + (time.monotonic() - _STARTED)


def demo_clock() -> Any:
    """:func:`demo_time` as an aware ``datetime`` (UTC): the ``now`` the built-in tools read."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(demo_time(), UTC)


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
