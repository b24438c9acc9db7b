"""Against real MCP servers nobody here wrote: mcp-server-time and mcp-server-git (PyPI),
server-filesystem, server-memory and server-everything (npm), plus servers that fail.

One manager for the module: the servers start once, in parallel."""

from __future__ import annotations

import os
import sys
import time

import pytest
import pytest_asyncio

from core.mcp.client import McpManager
from core.mcp.config import config_from_dict
from core.tools import Origin, SideEffect, Trust
from tests.mcp.conftest import REPO, Events, npm_server

pytestmark = pytest.mark.asyncio(loop_scope="module")

SILENT_TIMEOUT = 2.0


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def session(tmp_path_factory):
    work = tmp_path_factory.mktemp("fs")
    (work / "notes.txt").write_text("hello from the filesystem server\n")
    environ = {
        **os.environ,
        "ANTHROPIC_API_KEY": "sk-ant-must-not-leak",
        "OPENAI_API_KEY": "sk-must-not-leak",
        "GIVEN_TOKEN": "given-to-everything",
    }
    config = config_from_dict(
        {
            "mcpServers": {
                "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
                "git": {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(REPO)]},
                "filesystem": {"command": "node", "args": [npm_server("filesystem"), str(work)]},
                "memory": {
                    "command": "node",
                    "args": [npm_server("memory")],
                    "env": {"MEMORY_FILE_PATH": str(work / "memory.jsonl")},
                },
                "everything": {
                    "command": "node",
                    "args": [npm_server("everything")],
                    "env": {"MY_TOKEN": "${GIVEN_TOKEN}"},
                },
                # Servers that do not work; the others must not wait for them or fail with them.
                "missing": {"command": "deferchat-no-such-command"},
                "exits": {
                    "command": sys.executable,
                    "args": ["-c", "import sys; print('cannot open the database', file=sys.stderr); sys.exit(3)"],
                },
                "silent": {
                    "command": sys.executable,
                    "args": ["-c", "import time; time.sleep(60)"],
                    "timeout": SILENT_TIMEOUT,
                },
                "needs_key": {
                    "command": "node",
                    "args": [npm_server("memory")],
                    "env": {"KEY": "${DEFERCHAT_UNSET_KEY}"},
                },
            }
        },
        source="test.json",
        environ=environ,
    )
    events = Events()
    manager = McpManager(config, on_event=events)
    began = time.monotonic()
    await manager.start()
    elapsed = time.monotonic() - began
    yield manager, events, elapsed, work
    await manager.close()


def by_name(manager):
    return {r.name: r for r in manager.servers()}


async def test_good_servers_ready_bad_ones_failed_in_parallel(session):
    manager, events, elapsed, _ = session
    reports = by_name(manager)
    for name in ("time", "git", "filesystem", "memory", "everything"):
        assert reports[name].status == "ready", reports[name]
        assert reports[name].tools > 0
        assert [e.status for e in events.of(name)][:2] == ["starting", "ready"]
    assert reports["missing"].status == "failed"
    assert "command not found: deferchat-no-such-command" in reports["missing"].message
    assert reports["exits"].status == "failed"
    assert "exited before finishing the MCP handshake" in reports["exits"].message
    assert "cannot open the database" in reports["exits"].message  # its stderr is quoted
    assert reports["silent"].status == "failed"
    assert f"did not start within {SILENT_TIMEOUT:g}s" in reports["silent"].message
    assert reports["needs_key"].status == "failed" and "DEFERCHAT_UNSET_KEY" in reports["needs_key"].message
    for name in ("missing", "exits", "silent", "needs_key"):
        assert events.of(name)[-1].status == "failed" and events.of(name)[-1].message
    # In parallel: the whole start took about the slowest server's timeout, not the sum.
    assert elapsed < SILENT_TIMEOUT + 8


async def test_discovered_tools_named_and_classified_from_real_annotations(session):
    manager, *_ = session
    tools = {t.name: t for t in manager.tools()}
    assert [t.name for t in manager.tools()] == sorted(tools)
    assert {"mcp.time.get_current_time", "mcp.time.convert_time"} <= set(tools)
    assert {"mcp.git.git_status", "mcp.git.git_commit", "mcp.git.git_reset"} <= set(tools)
    assert {"mcp.filesystem.read_text_file", "mcp.filesystem.write_file", "mcp.filesystem.move_file"} <= set(tools)
    assert {"mcp.memory.read_graph", "mcp.memory.create_entities", "mcp.memory.delete_entities"} <= set(tools)
    assert {"mcp.everything.echo", "mcp.everything.get-tiny-image", "mcp.everything.gzip-file-as-resource"} <= set(
        tools
    )
    assert not any(t.server in ("missing", "exits", "silent", "needs_key") for t in tools.values())

    for spec in tools.values():
        assert spec.origin is Origin.DISCOVERED and spec.trust is Trust.EXTERNAL_UNTRUSTED
        assert spec.name == f"mcp.{spec.server}.{spec.remote_name}"

    def cls(name):
        return tools[name].side_effect, tools[name].hints

    # readOnlyHint + openWorldHint false: a workspace read.
    assert cls("mcp.time.get_current_time") == (
        SideEffect.WORKSPACE_READ,
        {"read_only": True, "open_world": False, "destructive": False, "idempotent": True},
    )
    assert cls("mcp.filesystem.read_text_file")[0] is SideEffect.WORKSPACE_READ
    assert cls("mcp.memory.search_nodes")[0] is SideEffect.WORKSPACE_READ
    # Writes, with destructive and idempotent recorded.
    assert cls("mcp.git.git_reset") == (
        SideEffect.WORKSPACE_WRITE,
        {"read_only": False, "open_world": False, "destructive": True, "idempotent": True},
    )
    assert cls("mcp.filesystem.write_file") == (
        SideEffect.WORKSPACE_WRITE,
        {"read_only": False, "open_world": False, "destructive": True, "idempotent": True},
    )
    assert cls("mcp.memory.create_entities") == (
        SideEffect.WORKSPACE_WRITE,
        {"read_only": False, "open_world": False, "destructive": False, "idempotent": False},
    )
    # openWorldHint true on a write: it changes a remote system.
    assert cls("mcp.everything.gzip-file-as-resource")[0] is SideEffect.NETWORK_WRITE


async def test_descriptions_and_schemas_kept_verbatim(session):
    manager, *_ = session
    for server in ("time", "git", "filesystem", "memory", "everything"):
        listing = {t["name"]: t for t in manager.listing(server)}
        assert listing
        for spec in (t for t in manager.tools() if t.server == server):
            wire = listing[spec.remote_name]
            assert spec.description == wire.get("description", "")
            assert spec.input_schema == wire["inputSchema"]


async def test_call_text_and_structured(session):
    manager, *_ = session
    result = await manager.call("mcp.time.get_current_time", {"timezone": "UTC"})
    assert not result.is_error
    assert result.structured["timezone"] == "UTC" and "datetime" in result.structured
    echo = await manager.call(manager.tool("mcp.everything.echo"), {"message": "hi there"})
    assert echo.content == [{"type": "text", "text": "Echo: hi there"}]
    weather = await manager.call("mcp.everything.get-structured-content", {"location": "Chicago"})
    assert set(weather.structured) == {"temperature", "conditions", "humidity"}
    git = await manager.call("mcp.git.git_log", {"repo_path": str(REPO), "max_count": 1})
    assert not git.is_error and "Commit" in git.text()
    fs = await manager.call("mcp.filesystem.list_allowed_directories", {})
    assert not fs.is_error


async def test_call_image_is_a_placeholder(session):
    manager, *_ = session
    result = await manager.call("mcp.everything.get-tiny-image", {})
    images = [b for b in result.content if b["type"] == "image"]
    assert images == [{"type": "image", "mime_type": "image/png", "bytes": images[0]["bytes"]}]
    assert images[0]["bytes"] > 100
    assert "data" not in images[0]
    assert "[image image/png" in result.text()


async def test_call_resource_links_and_embedded_resource(session):
    manager, *_ = session
    links = await manager.call("mcp.everything.get-resource-links", {"count": 2})
    rl = [b for b in links.content if b["type"] == "resource_link"]
    assert len(rl) == 2 and all(b["uri"].startswith("demo://") and b["name"] for b in rl)
    ref = await manager.call("mcp.everything.get-resource-reference", {"resourceType": "Text", "resourceId": 1})
    res = [b for b in ref.content if b["type"] == "resource"]
    assert res and res[0]["uri"] and isinstance(res[0].get("text"), str)


async def test_tool_error_and_bad_arguments_are_tool_errors(session):
    manager, _, _, work = session
    outside = await manager.call("mcp.filesystem.read_text_file", {"path": "/etc/hostname"})
    assert outside.is_error and outside.error_code is None  # the server's own isError
    bad = await manager.call(
        "mcp.time.convert_time", {"source_timezone": "Nowhere/Atlantis", "time": "10:00", "target_timezone": "UTC"}
    )
    assert bad.is_error
    unknown = await manager.call("mcp.time.no_such_tool", {})
    assert unknown.is_error and unknown.error_code == "mcp.error"
    nobody = await manager.call("mcp.nobody.tool", {})
    assert nobody.error_code == "mcp.unknown_server"


async def test_writes_reach_the_real_servers(session):
    manager, _, _, work = session
    wrote = await manager.call("mcp.filesystem.write_file", {"path": str(work / "out.txt"), "content": "written"})
    assert not wrote.is_error
    assert (work / "out.txt").read_text() == "written"
    made = await manager.call(
        "mcp.memory.create_entities",
        {"entities": [{"name": "deferchat", "entityType": "project", "observations": ["defers tools"]}]},
    )
    assert not made.is_error
    found = await manager.call("mcp.memory.search_nodes", {"query": "deferchat"})
    assert "defers tools" in found.text()


async def test_a_server_gets_only_the_secrets_it_is_given(session):
    manager, *_ = session
    result = await manager.call("mcp.everything.get-env", {})
    env = result.structured if isinstance(result.structured, dict) else __import__("json").loads(result.text())
    assert env["MY_TOKEN"] == "given-to-everything"
    assert "ANTHROPIC_API_KEY" not in env and "OPENAI_API_KEY" not in env
    assert set(env) <= {
        "MY_TOKEN",
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "TERM",
        "LANG",
        "LANGUAGE",
        "LC_ALL",
        "LC_CTYPE",
        "LC_MESSAGES",
        "TZ",
        "TMPDIR",
    }


async def test_server_everything_list_changed_is_heard_and_relisted(session):
    # server-everything registers tools once the client is initialized and sends
    # notifications/tools/list_changed for them: a real server's real notification.
    manager, events, *_ = session
    report = by_name(manager)["everything"]
    assert report.list_changed >= 1
    # It arrived before the first listing finished, so re-listing finds nothing new:
    # no RosterChanged (a change that is not one would only confuse the user).
    assert events.of("everything", "roster.changed") == []
    assert "mcp.everything.simulate-research-query" in {t.name for t in manager.tools()}


async def test_failed_server_call_is_a_clear_error(session):
    manager, *_ = session
    result = await manager.call("mcp.needs_key.read_graph", {})
    assert result.is_error and result.error_code == "mcp.server_unavailable"
    assert "DEFERCHAT_UNSET_KEY" in result.text()
    missing = await manager.call("mcp.missing.anything", {})
    assert missing.is_error and missing.error_code == "mcp.server_unavailable"
    assert "missing" in missing.text()
