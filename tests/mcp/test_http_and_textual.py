"""Streamable HTTP servers (server-everything, and ours with headers), and the manager inside Textual."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from core.mcp.client import McpManager
from core.mcp.config import config_from_dict
from tests.mcp.conftest import REPO, free_port, npm_server, own_server, wait_port


@pytest.fixture
def http_servers():
    everything_port, ours_port = free_port(), free_port()
    procs = [
        subprocess.Popen(
            ["node", npm_server("everything"), "streamableHttp"],
            env={"PATH": os.environ["PATH"], "PORT": str(everything_port)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
        subprocess.Popen(
            [sys.executable, "-m", "tests.mcp_servers.slow_write", "--http", str(ours_port)],
            cwd=REPO,
            env={"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
    ]
    yield everything_port, ours_port
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()


async def test_streamable_http(http_servers):
    everything_port, ours_port = http_servers
    await wait_port(everything_port)
    await wait_port(ours_port)
    config = config_from_dict(
        {
            "mcpServers": {
                "everything": {"type": "http", "url": f"http://127.0.0.1:{everything_port}/mcp"},
                "ours": {
                    "url": f"http://127.0.0.1:{ours_port}/mcp",
                    "headers": {"X-Api-Key": "${DEMO_API_KEY}", "X-Team": "${TEAM:-blue}"},
                },
            }
        },
        environ={"DEMO_API_KEY": "k-123", "ANTHROPIC_API_KEY": "sk-ant-never-sent"},
    )
    async with McpManager(config) as manager:
        reports = {r.name: r for r in manager.servers()}
        assert reports["everything"].status == "ready" and reports["everything"].transport == "http"
        assert reports["ours"].status == "ready"
        echo = await manager.call("mcp.everything.echo", {"message": "over http"})
        assert echo.text() == "Echo: over http"
        image = await manager.call("mcp.everything.get-tiny-image", {})
        assert any(b["type"] == "image" and b["bytes"] > 100 for b in image.content)
        headers = (await manager.call("mcp.ours.request_headers", {})).structured
        assert headers["x-api-key"] == "k-123" and headers["x-team"] == "blue"
        assert not any("sk-ant" in v for v in headers.values())


async def test_http_server_not_listening_fails_alone():
    config = config_from_dict(
        {
            "mcpServers": {
                "down": {"url": f"http://127.0.0.1:{free_port()}/mcp", "timeout": 5},
                "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
            }
        }
    )
    async with McpManager(config) as manager:
        reports = {r.name: r for r in manager.servers()}
        assert reports["down"].status == "failed"
        assert (
            reports["down"].message.startswith("cannot use http://127.0.0.1:")
            and "ConnectError" in reports["down"].message
        )
        assert reports["time"].status == "ready"


async def test_manager_inside_textual_loop():
    from textual.app import App

    config = config_from_dict(
        {
            "mcpServers": {
                "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
                "slow": own_server(env={"SLOW_WRITE_FILE": os.devnull}),
            }
        }
    )

    class Host(App[None]):
        def __init__(self) -> None:
            super().__init__()
            self.outcome: list[object] = []
            self.done = asyncio.Event()

        def on_mount(self) -> None:
            self.manager = McpManager(config, on_event=self.outcome.append)
            self.run_worker(self.use_servers(), exclusive=True)

        async def use_servers(self) -> None:
            await self.manager.start()
            self.outcome.append(await self.manager.call("mcp.time.get_current_time", {"timezone": "UTC"}))
            self.outcome.append(await self.manager.call("mcp.slow.register_tool", {"name": "in_textual"}))
            self.done.set()

        async def on_unmount(self) -> None:
            await self.manager.close()

    app = Host()
    async with app.run_test() as pilot:
        await asyncio.wait_for(app.done.wait(), 30)
        for _ in range(50):
            if any(getattr(e, "type", "") == "roster.changed" for e in app.outcome):
                break
            await pilot.pause(0.05)
    results = [o for o in app.outcome if hasattr(o, "is_error")]
    assert [r.is_error for r in results] == [False, False]
    types = [getattr(e, "type", "") for e in app.outcome]
    assert "roster.changed" in types
    assert [e.status for e in app.outcome if getattr(e, "type", "") == "server.status"].count("stopped") == 2
