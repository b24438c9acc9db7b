"""MCP servers in this process, over the SDK's in-memory transport: the demo servers as a chat
runs them. They are spoken to over the protocol (handshake, ``tools/list`` read through the
listing sieve, ``tools/call``), start no process, leave this process's logging alone, fail and
restart like a server in a process, and share the demo database with the demo servers run as
processes (``python -m core.demo``), which ``DEFERCHAT_DEMO_SERVERS=process`` still starts."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest

from core.chat.servers import DEMO_SERVERS_ENV, ChatServers
from core.demo import DEMO_SERVERS, demo_config
from core.demo.servers import build_server, in_process, roster_servers
from core.mcp.client import McpManager
from core.roster.loader import load_roster
from tests.mcp.conftest import Events


def children() -> set[int]:
    """This process's child processes (Linux /proc)."""
    me = str(os.getpid())
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2 :].split()[1] == me:  # the field after the state is the ppid
            found.add(int(entry.name))
    return found


async def test_the_demo_servers_in_process_are_listed_exactly_over_the_protocol(tmp_path: Path) -> None:
    db = tmp_path / "demo.sqlite"
    handlers, level = list(logging.root.handlers), logging.root.level
    before = children()
    async with McpManager(demo_config(db), in_process=in_process(DEMO_SERVERS, db)) as manager:
        reports = {r.name: r for r in manager.servers()}
        assert {n: (r.status, r.transport, r.tools) for n, r in reports.items()} == {
            "bland_call": ("ready", "in-process", 1),
            "bland_read": ("ready", "in-process", 2),
            "gmail_personal": ("ready", "in-process", 8),
            "gmail_work": ("ready", "in-process", 8),
        }
        assert children() == before  # no process was started for them
        for name, report in reports.items():
            assert report.server_name == name and report.protocol_version  # the handshake ran
            assert manager.listing(name) == roster_servers()[name]  # the wire listing, as the sieve read it
        found = await manager.call("mcp.gmail_work.search_threads", {"query": "invoice"})
        assert not found.is_error and found.structured["total"] >= 1
        bad = await manager.call("mcp.gmail_work.get_thread", {})  # the SDK validates the arguments
        assert bad.is_error and "thread_id" in bad.text()
    # MCPServer would call logging.basicConfig, a handler on stderr in the app's own process
    assert (logging.root.handlers, logging.root.level) == (handlers, level)


async def test_a_server_that_cannot_be_built_fails_and_is_built_again_for_a_later_call(tmp_path: Path) -> None:
    db = tmp_path / "demo.sqlite"
    attempts: list[int] = []

    def flaky() -> Any:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("the demo database is not there yet")
        return build_server("bland_read", db)

    events = Events()
    only = [s for s in demo_config(db).servers if s.name == "bland_read"]
    async with McpManager(only, on_event=events, in_process={"bland_read": flaky}) as manager:
        (report,) = manager.servers()
        assert report.status == "failed" and "the demo database is not there yet" in report.message
        first = await manager.call("mcp.bland_read.list_calls", {})
        assert first.is_error and first.error_code == "mcp.server_unavailable"
        await events.wait(lambda e: e.type == "server.status" and e.status == "restarted")
        again = await manager.call("mcp.bland_read.list_calls", {})
        assert not again.is_error, again.text()
    assert len(attempts) == 2


async def test_a_chat_runs_the_demo_in_process_and_as_processes_on_request(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    roster = load_roster("production")
    shown: list[Any] = []
    servers = ChatServers(shown.append)
    await servers.start(roster, None, True)
    try:
        assert servers.manager is not None
        assert {r.name: r.transport for r in servers.manager.servers()} == dict.fromkeys(DEMO_SERVERS, "in-process")
        sent = await servers.call(
            servers.live_specs(roster)["mcp.gmail_personal.send_message"],
            {"to": ["alex.rivera@mail.example"], "subject": "Cake ordered", "body": "Chocolate."},
        )
        assert not sent.is_error, sent.text()
    finally:
        await servers.close()
    assert {e.server for e in shown if e.status == "ready"} == set(DEMO_SERVERS)

    monkeypatch.setenv(DEMO_SERVERS_ENV, "process")
    as_processes = ChatServers(lambda _: None)
    await as_processes.start(roster, None, True)
    try:
        assert as_processes.manager is not None
        reports = as_processes.manager.servers()
        assert {r.name: (r.status, r.transport) for r in reports} == dict.fromkeys(DEMO_SERVERS, ("ready", "stdio"))
        assert all(r.target.split()[1:3] == ["-m", "core.demo"] for r in reports)
        # the same database: a process sees what the in-process server wrote
        found = await as_processes.call(
            as_processes.live_specs(roster)["mcp.gmail_personal.search_threads"], {"query": 'subject:"cake ordered"'}
        )
        assert found.structured["total"] == 1
    finally:
        await as_processes.close()
