"""Small builders shared by the tests."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from core.roster.models import AgentConfig, Caps, PlanInput, PolicyConfig
from core.roster.planner import plan_roster
from core.tokens import TokenEstimator
from core.tools import Origin, SideEffect, ToolSpec

_EST = TokenEstimator()  # shared in-memory cache keeps the suite fast

ROOT = Path(__file__).resolve().parents[1]

DEVELOPER_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "DEFERCHAT_DEMO_DB",
)
"""What a developer's environment may carry that would reach past a test's own home: the keys
and endpoints the provider SDKs read, and the demo database's path. The ``home`` fixture and
:func:`subprocess_env` drop them all, so a real key never reaches a test."""


def subprocess_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment for ``deferchat`` run in a subprocess from this checkout: ours without
    :data:`DEVELOPER_ENV`, with ``DEFERCHAT_HOME=home``, ``TZ=UTC``, ``PYTHONPATH`` the repository,
    then ``extra`` (e.g. a test's own ``ANTHROPIC_API_KEY``)."""
    env = {k: v for k, v in os.environ.items() if k not in DEVELOPER_ENV}
    env.update(DEFERCHAT_HOME=str(home), TZ="UTC", PYTHONPATH=str(ROOT), **extra)
    return env


DEFERCHAT = [sys.executable, "-c", "import sys; from tui.main import main; sys.exit(main())"]
"""The ``deferchat`` entry point of this checkout, as a command line (with :func:`subprocess_env`)."""


def deferchat(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``deferchat ARGS`` as a real process on ``home``; its output captured as text."""
    return subprocess.run(
        [*DEFERCHAT, *args], capture_output=True, text=True, env=subprocess_env(home), timeout=timeout
    )


def configured(
    name: str,
    side_effect: SideEffect = SideEffect.WORKSPACE_WRITE,
    description: str = "",
    params: dict | None = None,
    required: tuple[str, ...] = (),
) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=description or f"Do {name}.",
        origin=Origin.CONFIGURED,
        side_effect=side_effect,
        input_schema={"type": "object", "properties": params or {}, "required": list(required)},
    )


def discovered(
    server: str,
    tool: str,
    side_effect: SideEffect = SideEffect.NETWORK_WRITE,
    description: str = "",
    params: dict | None = None,
) -> ToolSpec:
    return ToolSpec(
        name=f"mcp.{server}.{tool}",
        description=description or f"{tool} on {server}.",
        origin=Origin.DISCOVERED,
        server=server,
        side_effect=side_effect,
        remote_name=tool,
        input_schema={"type": "object", "properties": params or {}},
    )


def plan(
    configured_tools=(),
    discovered_tools=(),
    *,
    deferred=(),
    caps: Caps | None = None,
    policy: PolicyConfig | None = None,
    strategy: str = "wrapper",
    can_defer: bool = True,
    controls=(),
    estimator: TokenEstimator | None = None,
):
    inp = PlanInput(
        agent=AgentConfig(
            name="t", version="1", deferred=tuple(deferred), can_defer=can_defer, controls=tuple(controls)
        ),
        configured=tuple(configured_tools),
        discovered=tuple(discovered_tools),
        caps=caps or Caps(),
        policy=policy or PolicyConfig(),
        strategy=strategy,
    )
    return plan_roster(inp, estimator or _EST)


def production_plan(**kw):
    from core.roster.loader import load_roster

    r = load_roster("production")
    inp = PlanInput(agent=r.agent, configured=r.configured, discovered=r.discovered, **kw)
    return plan_roster(inp, _EST)


def slow_write_chat(folder: Path, *, agent: str, answer: str) -> tuple[Path, Path]:
    """Files for a chat whose one tool call is a slow MCP write (``tests/mcp_servers/slow_write.py``):
    ``mcp.json``, ``roster.json`` and a ``script.json`` that calls ``mcp.slow.slow_write`` once and
    then says ``answer``. Returns (the file the write appends to, the file that releases it)."""
    written, release = folder / "written.txt", folder / "release"
    server = {
        "command": sys.executable,
        "args": ["-m", "tests.mcp_servers.slow_write"],
        "env": {
            "PYTHONPATH": str(ROOT),
            "SLOW_WRITE_FILE": str(written),
            "SLOW_WRITE_RELEASE": str(release),
            "SLOW_WRITE_SECONDS": "60",
        },
    }
    (folder / "mcp.json").write_text(json.dumps({"mcpServers": {"slow": server}}))
    (folder / "roster.json").write_text(json.dumps({"agent": {"name": agent, "version": "1"}}))
    call = {"type": "tool_use", "id": "toolu_w1", "name": "mcp.slow.slow_write", "input": {"line": "once"}}
    (folder / "script.json").write_text(json.dumps({"turns": [[call], [{"type": "text", "text": answer}]]}))
    return written, release


class LoopTicks:
    """Counts how often the event loop got to run a 20 ms heartbeat while the block ran: a loop
    held by a blocking call (a regular expression that holds the GIL) counts none."""

    EVERY = 0.02

    def __init__(self) -> None:
        self.ticks = 0
        self.elapsed = 0.0

    async def __aenter__(self) -> LoopTicks:
        import asyncio
        import time

        async def beat() -> None:
            while True:
                await asyncio.sleep(self.EVERY)
                self.ticks += 1

        self._task = asyncio.create_task(beat())
        self._began = time.monotonic()
        return self

    async def __aexit__(self, *exc: object) -> None:
        import time

        self.elapsed = time.monotonic() - self._began
        self._task.cancel()

    @property
    def kept_running(self) -> bool:
        """At least 40 % of the heartbeats the time would allow came (a busy machine loses some)."""
        return self.ticks >= self.elapsed / self.EVERY * 0.4


def script_module(name: str) -> ModuleType:
    """``scripts/<name>.py`` of this checkout, loaded as a module (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(f"{name}_script", ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
