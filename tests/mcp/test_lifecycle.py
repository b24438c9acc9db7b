"""A server killed mid-session, a call that times out, a tool list that changes, closing."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from core.mcp.client import McpManager
from core.mcp.config import config_from_dict
from tests.mcp.conftest import Events, marker, own_server, pids_with_marker


def _kill(mark: str) -> None:
    pids = pids_with_marker(mark)
    assert len(pids) == 1, pids
    os.kill(pids[0], signal.SIGKILL)


async def test_killed_server_clear_error_then_restarted_for_next_call():
    mark = marker()
    events = Events()
    config = config_from_dict(
        {
            "mcpServers": {
                "time": {
                    "command": sys.executable,
                    "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
                    "env": {"DEFERCHAT_TEST_MARKER": mark},
                },
                "other": own_server(),
            }
        }
    )
    async with McpManager(config, on_event=events) as manager:
        spec = manager.tool("mcp.time.get_current_time")
        assert not (await manager.call(spec, {"timezone": "UTC"})).is_error

        _kill(mark)
        failed = await events.wait(lambda e: e.type == "server.status" and e.server == "time" and e.status == "failed")
        assert "stopped unexpectedly" in failed.message and "restarted for the next call" in failed.message
        # The tools stay known (a call restarts the server); the other server is untouched.
        assert manager.tool("mcp.time.get_current_time") is not None
        assert {r.name: r.status for r in manager.servers()}["other"] == "ready"

        crashed = await manager.call(spec, {"timezone": "UTC"})
        assert crashed.is_error and crashed.error_code == "mcp.server_crashed"
        assert "'time'" in crashed.text() and "restarting" in crashed.text()

        restarted = await events.wait(
            lambda e: e.type == "server.status" and e.server == "time" and e.status == "restarted"
        )
        assert restarted.tools == 2
        again = await manager.call(spec, {"timezone": "UTC"})
        assert not again.is_error and again.structured["timezone"] == "UTC"
        report = {r.name: r for r in manager.servers()}["time"]
        assert report.status == "ready" and report.restarts == 1
        assert len(pids_with_marker(mark)) == 1  # the new process; the old one is gone
    assert pids_with_marker(mark) == []  # close() leaves no process behind


async def test_killed_during_a_call(tmp_path):
    mark = marker()
    target = tmp_path / "writes.txt"
    events = Events()
    config = config_from_dict(
        {
            "mcpServers": {
                "slow": own_server(
                    env={"DEFERCHAT_TEST_MARKER": mark, "SLOW_WRITE_FILE": str(target), "SLOW_WRITE_SECONDS": "30"}
                )
            }
        }
    )
    async with McpManager(config, on_event=events) as manager:
        call = asyncio.create_task(manager.call("mcp.slow.slow_write", {"line": "first"}))
        for _ in range(200):
            if target.exists() and target.read_text() == "first\n":
                break
            await asyncio.sleep(0.05)
        assert not call.done()
        _kill(mark)
        result = await asyncio.wait_for(call, 10)
        assert result.is_error and result.error_code == "mcp.server_crashed"
        assert "during mcp.slow.slow_write" in result.text() and "unknown" in result.text()
        await events.wait(lambda e: e.type == "server.status" and e.status == "restarted")
        assert target.read_text() == "first\n"


async def test_slow_write_releases_on_second_file(tmp_path):
    target, release = tmp_path / "w.txt", tmp_path / "go"
    config = config_from_dict(
        {
            "mcpServers": {
                "slow": own_server(
                    env={"SLOW_WRITE_FILE": str(target), "SLOW_WRITE_RELEASE": str(release), "SLOW_WRITE_SECONDS": "30"}
                )
            }
        }
    )
    async with McpManager(config) as manager:
        spec = manager.tool("mcp.slow.slow_write")
        assert spec.side_effect.value == "WORKSPACE_WRITE"
        call = asyncio.create_task(manager.call(spec, {"line": "x"}))
        await asyncio.sleep(0.5)
        assert target.read_text() == "x\n" and not call.done()
        release.touch()
        result = await asyncio.wait_for(call, 10)
        assert not result.is_error and "released" in result.text()


async def test_call_timeout_is_a_clear_error_and_server_stays_up(tmp_path):
    config = config_from_dict(
        {
            "mcpServers": {
                "slow": {
                    **own_server(env={"SLOW_WRITE_FILE": str(tmp_path / "w.txt"), "SLOW_WRITE_SECONDS": "5"}),
                    "call_timeout": 0.5,
                }
            }
        }
    )
    async with McpManager(config) as manager:
        result = await manager.call("mcp.slow.slow_write", {"line": "late"})
        assert result.is_error and result.error_code == "mcp.timeout"
        assert "within 0.5s" in result.text() and "unknown" in result.text()
        assert manager.servers()[0].status == "ready"
        ok = await manager.call("mcp.slow.request_headers", {}, timeout=5)
        assert not ok.is_error


async def test_list_changed_reported_but_pinned_specs_keep_working():
    events = Events()
    config = config_from_dict({"mcpServers": {"dyn": own_server()}})
    async with McpManager(config, on_event=events) as manager:
        pinned = manager.tools()  # what an open chat planned with
        assert "mcp.dyn.late_tool" not in {t.name for t in pinned}
        added = await manager.call("mcp.dyn.register_tool", {"name": "late_tool"})
        assert not added.is_error
        changed = await events.wait(lambda e: e.type == "roster.changed")
        assert changed.server == "dyn"
        assert "added: mcp.dyn.late_tool" in changed.message and "new chat" in changed.message
        # A new chat plans with the new list; the pinned list is the caller's and is untouched.
        assert "mcp.dyn.late_tool" in {t.name for t in manager.tools()}
        assert "mcp.dyn.late_tool" not in {t.name for t in pinned}
        result = await manager.call(manager.tool("mcp.dyn.late_tool"), {})
        assert result.text() == "late_tool was called"
        assert manager.servers()[0].list_changed >= 1


async def test_call_while_starting_waits_and_close_is_idempotent():
    config = config_from_dict(
        {
            "mcpServers": {
                "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
            }
        }
    )
    manager = McpManager(config)
    start = asyncio.create_task(manager.start())
    await asyncio.sleep(0)
    # The call waits for the server it needs, within that server's own start timeout.
    result = await manager.call("mcp.time.get_current_time", {"timezone": "UTC"})
    await start
    assert not result.is_error, result.text()
    await manager.close()
    await manager.close()
    after = await manager.call("mcp.time.get_current_time", {"timezone": "UTC"})
    assert after.is_error and after.error_code == "mcp.server_unavailable"
    assert [r.status for r in manager.servers()] == ["stopped"]


def test_plain_asyncio_run_and_discover_sync():
    from core.mcp.discovery import discover_servers

    found = discover_servers(
        config_from_dict(
            {
                "mcpServers": {
                    "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
                }
            }
        )
    )
    assert [(r.name, r.status, r.tools) for r in found.servers] == [("time", "ready", 2)]
    assert [t.name for t in found.tools] == ["mcp.time.convert_time", "mcp.time.get_current_time"]
