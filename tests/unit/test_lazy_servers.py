"""A chat reopened with its pinned plan starts its MCP servers when a turn needs them
(``ChatOptions.lazy_servers``, what ``deferchat ask --chat`` and ``resume`` use): a turn that calls
no server tool starts none and imports neither the MCP SDK nor the tokenizer; a call of a server's
tool starts that server first and waits for it; a server that cannot start is that call's clear
error; a parked call's pin check starts them all. A new chat still starts every server: its plan
needs their listings."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from core.engine import ChatOptions, Engine
from core.pipeline.approvals import Decision, FixedApprover
from core.store import Store
from tests.helpers import subprocess_env
from tests.streaming_server import StreamingServer

ROOT = Path(__file__).resolve().parents[2]
LIST_CALLS = {"type": "tool_use", "id": "call_list", "name": "mcp.bland_read.list_calls", "input": {}}


def script(tmp_path: Path, *turns: list[dict[str, Any]]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [list(t) for t in turns]}))
    return str(path)


def text(words: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": words}]


async def new_chat(home: Path, script_file: str) -> str:
    engine = Engine(store=Store(home / "deferchat.db"))
    session = await engine.open_chat(None, ChatOptions(script=script_file))
    try:
        assert {s.status for s in session.server_status.values()} == {"ready"}  # a new chat starts them all
        assert (await session.send("hello")).status == "done"
    finally:
        await session.close()
    return session.chat_id


async def test_a_turn_that_calls_no_server_tool_starts_no_server(home: Path, tmp_path: Path) -> None:
    chat_id = await new_chat(home, script(tmp_path, text("Hi."), text("Still here.")))
    engine = Engine(store=Store(home / "deferchat.db"))
    session = await engine.open_chat(chat_id, ChatOptions(lazy_servers=True))
    try:
        assert (await session.send("and now?")).status == "done"
        assert session.servers.manager is None and session.server_status == {}
    finally:
        await session.close()


async def test_a_call_starts_its_own_server_first_and_waits_for_it(home: Path, tmp_path: Path) -> None:
    chat_id = await new_chat(home, script(tmp_path, text("Hi."), [LIST_CALLS], text("Two calls today.")))
    engine = Engine(store=Store(home / "deferchat.db"))
    session = await engine.open_chat(
        chat_id, ChatOptions(lazy_servers=True), approver=FixedApprover(Decision.ALLOW_ONCE)
    )
    try:
        result = await session.send("any calls?")
        assert result.status == "done" and result.text == "Two calls today."
        status = {name: s.status for name, s in session.server_status.items()}
        assert status == {"bland_read": "ready"}  # that server, and only it
        [inv] = [i for i in engine.store.invocations(chat_id) if i.call_id == "call_list"]
        assert inv.status == "completed" and not inv.is_error
    finally:
        await session.close()


async def test_a_server_that_cannot_start_is_the_calls_clear_error(home: Path, tmp_path: Path) -> None:
    roster = tmp_path / "roster.json"
    roster.write_text(
        json.dumps(
            {
                "agent": {"name": "lazy", "version": "1", "deferred": []},
                "configured": [],
                "servers": [
                    {"name": "broken", "tools": [{"name": "ping", "description": "Ping.", "input_schema": {}}]}
                ],
            }
        )
    )
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"broken": {"command": str(tmp_path / "no-such-server")}}}))
    use = {"type": "tool_use", "id": "call_ping", "name": "mcp.broken.ping", "input": {}}
    turns = script(tmp_path, text("Hi."), [use], text("It failed."))
    engine = Engine(store=Store(home / "deferchat.db"))
    opts = ChatOptions(script=turns, roster=str(roster), mcp_config=str(config), start_demo_servers=False)
    session = await engine.open_chat(None, opts)
    await session.send("hello")
    await session.close()
    session = await engine.open_chat(
        session.chat_id, ChatOptions(lazy_servers=True), approver=FixedApprover(Decision.ALLOW_ONCE)
    )
    try:
        assert session.servers.manager is None  # nothing started at open
        assert (await session.send("ping it")).status == "done"
    finally:
        await session.close()
    [inv] = [i for i in engine.store.invocations(session.chat_id) if i.call_id == "call_ping"]
    said = inv.model_result or ""
    assert inv.is_error and inv.error_code == "mcp.server_unavailable" and "'broken' is not running" in said, said


async def test_a_parked_calls_pin_check_starts_the_servers(home: Path, tmp_path: Path) -> None:
    start_call = {
        "type": "tool_use",
        "id": "call_start",
        "name": "mcp.bland_call.start_call",
        "input": {"phone_number": "+14155550100", "task": "Book a table for two."},
    }
    chat_id = await new_chat(home, script(tmp_path, text("Hi."), [start_call], text("Calling now.")))
    engine = Engine(store=Store(home / "deferchat.db"))
    session = await engine.open_chat(chat_id, ChatOptions(lazy_servers=True))  # parks on the approval
    try:
        assert (await session.send("call the restaurant")).status == "parked"
    finally:
        await session.close()
    session = await engine.open_chat(chat_id, ChatOptions(lazy_servers=True))
    try:
        result = await session.resume(FixedApprover(Decision.ALLOW_ONCE))
        assert result.status == "done" and result.text == "Calling now."  # the pin matched: the call ran
        assert session.server_status["bland_call"].status == "ready"
    finally:
        await session.close()


ENTRY = "import sys; from tui.main import main; sys.argv[0] = 'deferchat'; sys.exit(main())"


def loaded_by_ask(env: dict[str, str], first: list[str]) -> str:
    """Make a chat with ``ask`` and ``first`` flags, then say which heavy modules a second
    ``ask --chat`` on it imported."""
    made = subprocess.run(
        [sys.executable, "-c", ENTRY, "ask", *first, "hello"], env=env, capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr
    chat_id = [line for line in made.stderr.splitlines() if line.startswith("[chat ")][-1][6:-1]
    probe = textwrap.dedent(
        f"""
        import sys
        from tui.main import main
        sys.argv = ["deferchat", "ask", "--chat", {chat_id!r}, "again"]
        code = main()
        loaded = sorted(m for m in ("mcp", "tiktoken", "openai", "anthropic", "textual") if m in sys.modules)
        print("LOADED", ",".join(loaded), file=sys.stderr)
        sys.exit(code)
        """
    )
    again = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, cwd=ROOT)
    assert again.returncode == 0, again.stderr
    [line] = [line for line in again.stderr.splitlines() if line.startswith("LOADED")]
    return line.removeprefix("LOADED ")


def test_ask_on_an_existing_chat_imports_neither_the_mcp_sdk_nor_the_tokenizer(home: Path, tmp_path: Path) -> None:
    turns = script(tmp_path, text("Hi."), text("Again."))
    # none of them: the script provider needs no SDK, no server was called, the sizes fit
    assert loaded_by_ask(subprocess_env(home), ["--script", turns]) == ""


def test_near_a_small_window_the_tokenizer_is_still_not_loaded_again(home: Path) -> None:
    # a compatible server's unknown model has a 32,768-token window, which the production roster's
    # tools fill past what their sizes alone can settle: the prefix is counted once, and the
    # next process reads that count from the store's token cache
    with StreamingServer({"responses": [{"parts": ["Fine."]}], "repeat": True}) as server:
        flags = ["--provider", "openai-chat", "--model", "local-model", "--base-url", server.url_for("openai-chat")]
        assert loaded_by_ask(subprocess_env(home), flags) == "openai"
