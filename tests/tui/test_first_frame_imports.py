"""What the app's first frame costs in imports (issue 14: first paint under 0.5 s).

The real ``deferchat`` entry point in a subprocess of its own (a fresh interpreter, so nothing a
test imported before counts), under a pseudo-terminal-free headless driver: the preflight, then
the app up to its first frame, where the modules it loaded are read. Everything the first frame
does not show is imported after it: the database (SQLite and sqlite-utils), the engine and the
MCP SDK, the provider SDKs and the tokenizer, Textual's Markdown (the log is empty), the
project-config screen and the MCP config modules. A module added to the first frame's path by a
top-level import fails here, naming the module that imported it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import subprocess_env

AFTER_THE_FIRST_FRAME = (
    "sqlite3",
    "sqlite_utils",
    "core.store.store",
    "core.store.database",
    "core.engine",
    "core.chat.session",
    "core.providers.base",
    "core.roster.models",
    "core.mcp",
    "mcp",
    "anthropic",
    "openai",
    "httpx",
    "tiktoken",
    "markdown_it",
    "textual.widgets._markdown",
    "tui.widgets.answer",
    "tui.screens.project_config",
)

PROBE = r"""
import json, sys
from tui import main as entry

loaded = {}

def run_app(args):
    entry._preflight()
    from tui.app import DeferchatApp

    async def open_session(self, chat_id):  # called after the first frame
        loaded["modules"] = sorted(sys.modules)
        self.exit(0)

    DeferchatApp.open_session = open_session
    app = DeferchatApp()

    async def go():
        async with app.run_test(size=(120, 40)) as pilot:
            while "modules" not in loaded:
                await pilot.pause(0.05)

    import asyncio
    asyncio.run(go())
    return 0

entry._run_app = run_app
code = entry.main([])
print(json.dumps(loaded.get("modules", [])))
sys.exit(code)
"""


def first_frame_modules(home: Path) -> list[str]:
    r = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        env=subprocess_env(home),
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0, r.stderr
    modules = json.loads(r.stdout.strip().splitlines()[-1])
    assert "tui.app" in modules and "textual.app" in modules  # the probe reached the first frame
    return modules


def loaded_by(module: str) -> str:
    """Who imports ``module`` first, read from ``-X importtime`` of the same start."""
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "from tui import main; main._preflight(); import tui.app"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [line.split("|")[-1].rstrip() for line in r.stderr.splitlines() if line.startswith("import time:")]
    for i, line in enumerate(lines):
        if line.strip() == module:
            depth = len(line) - len(line.lstrip())
            chain = [module]
            for later in lines[i + 1 :]:
                d = len(later) - len(later.lstrip())
                if d < depth:
                    chain.append(later.strip())
                    depth = d
            return " <- ".join(chain)
    return f"{module} (not imported by the app's module imports: by the preflight or the first frame's code)"


def test_the_first_frame_imports_nothing_it_does_not_show(home: Path) -> None:
    modules = set(first_frame_modules(home))
    early = [m for m in AFTER_THE_FIRST_FRAME if m in modules or any(x.startswith(m + ".") for x in modules)]
    assert not early, "imported before the first frame:\n" + "\n".join(loaded_by(m) for m in early)
