"""Helpers for tests that start real MCP servers as subprocesses."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
NPM = REPO / "tests" / "npm" / "node_modules" / "@modelcontextprotocol"


def npm_server(name: str) -> str:
    """The entry script of an npm MCP server installed by ``npm ci --prefix tests/npm``."""
    script = NPM / f"server-{name}" / "dist" / "index.js"
    if not script.is_file():
        pytest.fail(f"{script} is missing: run `npm ci --prefix tests/npm` first (the .ci/run script does)")
    return str(script)


def own_server(module: str = "tests.mcp_servers.slow_write", *args: str, env: dict[str, str] | None = None) -> dict:
    """A config entry for one of our test servers, run with this interpreter from the repo."""
    return {
        "command": sys.executable,
        "args": ["-m", module, *args],
        "cwd": str(REPO),
        "env": {"PYTHONPATH": str(REPO), **(env or {})},
    }


def marker() -> str:
    return uuid.uuid4().hex


def pids_with_marker(mark: str) -> list[int]:
    """Processes whose environment carries ``DEFERCHAT_TEST_MARKER=<mark>`` (Linux /proc)."""
    needle = f"DEFERCHAT_TEST_MARKER={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def wait_port(port: int, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            if loop.time() > deadline:
                raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")
            await asyncio.sleep(0.1)


class Events:
    """Collects the manager's events; ``wait`` until one matches."""

    def __init__(self) -> None:
        self.seen: list[Any] = []
        self._changed = asyncio.Event()

    def __call__(self, event: Any) -> None:
        self.seen.append(event)
        self._changed.set()

    def of(self, server: str, type_: str = "server.status") -> list[Any]:
        return [e for e in self.seen if e.type == type_ and e.server == server]

    async def wait(self, predicate: Callable[[Any], bool], timeout: float = 20.0) -> Any:
        async def loop() -> Any:
            while True:
                for e in self.seen:
                    if predicate(e):
                        return e
                self._changed.clear()
                await self._changed.wait()

        return await asyncio.wait_for(loop(), timeout)
