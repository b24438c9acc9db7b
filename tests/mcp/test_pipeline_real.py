"""Real MCP servers through the whole engine: a deferred write reached with tool.call, asked
for approval, run on the real server; then the server killed mid-session."""

from __future__ import annotations

import json
import os
import signal

from core.engine import ChatOptions, Engine
from core.pipeline.approvals import Decision, FixedApprover
from core.roster.models import Caps
from core.store import Store
from tests.mcp.conftest import marker, npm_server, pids_with_marker


def turn(*blocks):
    return list(blocks)


def call(i: str, name: str, arguments: dict) -> dict:
    return {"type": "tool_use", "id": i, "name": "tool.call", "input": {"name": name, "arguments": arguments}}


async def test_a_deferred_write_on_a_real_server_with_approval_and_a_kill_mid_session(tmp_path, home):
    mark = marker()
    (tmp_path / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "memory": {
                        "command": "node",
                        "args": [npm_server("memory")],
                        "env": {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl"), "DEFERCHAT_TEST_MARKER": mark},
                    }
                }
            }
        )
    )
    (tmp_path / "roster.json").write_text(json.dumps({"agent": {"name": "mem", "version": "1"}}))
    entity = {"entities": [{"name": "Ada", "entityType": "person", "observations": ["writes programs"]}]}
    (tmp_path / "script.json").write_text(
        json.dumps(
            {
                "turns": [
                    turn(call("c1", "mcp.memory.create_entities", entity)),
                    turn(call("c2", "mcp.memory.read_graph", {})),
                    turn({"type": "text", "text": "Saved."}),
                    turn(call("c3", "mcp.memory.read_graph", {})),
                    turn({"type": "text", "text": "The server went away."}),
                    turn(call("c4", "mcp.memory.read_graph", {})),
                    turn({"type": "text", "text": "Back."}),
                ]
            }
        )
    )
    events: list = []
    approver = FixedApprover(Decision.ALLOW_ONCE)
    engine = Engine(Store(tmp_path / "db.sqlite"))
    s = await engine.open_chat(
        None,
        ChatOptions(
            roster=str(tmp_path / "roster.json"),
            mcp_config=str(tmp_path / "mcp.json"),
            script=str(tmp_path / "script.json"),
            caps=Caps(max_definitions=3),
            start_demo_servers=False,
        ),
        approver=approver,
        subscribers=[events.append],
    )
    try:
        # Classification came from the server's real annotations, and the write is deferred.
        assert s.plan.placement_of("mcp.memory.create_entities").side_effect == "WORKSPACE_WRITE"
        assert s.plan.placement_of("mcp.memory.read_graph").side_effect == "WORKSPACE_READ"
        assert "mcp.memory.create_entities" in s.plan.deferred_tool_names

        assert (await s.send("remember Ada")).status == "done"
        assert [r.tool for r in approver.asked] == ["mcp.memory.create_entities"]  # the write asked, the read did not
        done = {e.call_id: e for e in events if e.type == "tool.completed"}
        assert done["c1"].name == "mcp.memory.create_entities" and done["c1"].via == "tool.call"
        assert "Ada" in json.dumps(done["c2"].result)

        for pid in pids_with_marker(mark):
            os.kill(pid, signal.SIGKILL)
        events.clear()
        assert (await s.send("read it again")).status == "done"  # the turn carries on with a clear tool error
        failed = [e for e in events if e.type == "tool.failed"]
        assert failed and failed[0].call_id == "c3" and "crash" in (failed[0].code + failed[0].message).lower()

        events.clear()
        for _ in range(100):  # the crash triggered a restart for the next call
            if any(e.type == "server.status" and e.status == "restarted" for e in events):
                break
            import asyncio

            await asyncio.sleep(0.1)
        assert (await s.send("and now?")).status == "done"
        again = [e for e in events if e.type == "tool.completed" and e.call_id == "c4"]
        assert again and "Ada" in json.dumps(again[0].result)  # the server's file kept the entity
    finally:
        await s.close()
