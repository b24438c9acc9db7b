"""The app's MCP room against real SDK servers: a server's request for input answered in its
form (the server named, its text inert), a resource attached to a message, a server's prompt put
in the message box, and signing in to a loopback OAuth server from the servers screen while the
chat stays usable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button, Input

from core.engine import Engine
from tests.mcp.oauth_helpers import Browser, oauth_server
from tests.mcp_servers.desk import entry
from tests.tui.conftest import make_app, opened, until
from tui.screens.elicitation import FormScreen
from tui.screens.prompts import PromptPicker
from tui.screens.resources import ResourcePicker
from tui.screens.servers import ServersScreen

ROSTER = {"agent": {"name": "desk-agent", "version": "1", "deferred": []}, "configured": []}


def files(tmp_path: Path, servers: dict[str, Any], turns: list[Any]) -> dict[str, str]:
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    (tmp_path / "roster.json").write_text(json.dumps(ROSTER))
    (tmp_path / "script.json").write_text(json.dumps({"turns": turns}))
    return {
        "mcp_config": str(tmp_path / "mcp.json"),
        "roster": str(tmp_path / "roster.json"),
        "script": str(tmp_path / "script.json"),
    }


def log_text(app: Any) -> str:
    return "\n".join(str(w.render()) for w in app.log_view.query("*") if hasattr(w, "render"))


async def test_a_servers_request_is_answered_in_its_form(engine: Engine, tmp_path: Path) -> None:
    turns = [
        [{"type": "tool_use", "id": "c1", "name": "mcp.desk.book_table", "input": {}}],
        [{"type": "text", "text": "Booked."}],
    ]
    app = make_app(engine, **files(tmp_path, {"desk": entry()}, turns))
    async with app.run_test(size=(100, 40)) as pilot:
        await opened(pilot)
        app.composer.put("book a table")
        await pilot.press("enter")
        await until(pilot, lambda: bool(app.approvals.approver.pending()), timeout=30)
        from core.pipeline.approvals import Decision

        app.approvals.approver.answer(app.approvals.approver.pending()[0], Decision.ALLOW_ONCE)
        await until(pilot, lambda: isinstance(app.screen, FormScreen), timeout=30)
        form = app.screen
        assert isinstance(form, FormScreen)
        title = str(form.query(".dialog-title").first().render())
        assert "MCP server desk asks you" in title and "not deferchat's" in title
        await until(pilot, lambda: isinstance(app.focused, Input))
        await pilot.press(*"2026-12-24", "tab", *"3")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not isinstance(app.screen, FormScreen), timeout=10)
        await until(pilot, lambda: not app.turn_running, timeout=30)
    [done] = engine.store.events(_chat(engine), ("tool.completed",))
    assert '"guests": 3' in json.dumps(done["result"]).replace('\\"', '"')


def _chat(engine: Engine) -> str:
    [row] = engine.store.chats()
    return row.id


async def test_escape_cancels_and_a_hostile_text_is_inert(engine: Engine, tmp_path: Path) -> None:
    from core.mcp.elicitation import ElicitationRequest, parse_form
    from tests.mcp_servers.desk import ESC

    app = make_app(engine, **files(tmp_path, {"desk": entry()}, []))
    async with app.run_test(size=(80, 24)) as pilot:
        await opened(pilot)
        assert app.mcp.elicitor is not None
        request = ElicitationRequest(
            id="x",
            server=f"desk{ESC}",
            message=f"PIN{ESC}",
            fields=parse_form({"type": "object", "properties": {"pin": {"type": "string", "title": f"PIN{ESC}"}}}),
        )
        import asyncio

        answer = asyncio.ensure_future(app.mcp.elicitor.elicit(request))
        await until(pilot, lambda: isinstance(app.screen, FormScreen))
        await pilot.pause(0.1)
        shown = "\n".join(str(w.render()) for w in app.screen.query(".dialog-title, .form-message, .form-label"))
        assert "\x1b" not in shown and "\u202e" not in shown and "desk\\x1b" in shown and "PIN\\x1b" in shown
        await pilot.press("escape")
        await until(pilot, answer.done)
        assert answer.result().action == "cancel"


async def test_a_resource_is_attached_and_a_prompt_fills_the_box(engine: Engine, tmp_path: Path) -> None:
    turns = [[{"type": "text", "text": "Read."}]]
    app = make_app(engine, **files(tmp_path, {"desk": entry()}, turns))
    async with app.run_test(size=(100, 40)) as pilot:
        await opened(pilot)
        app.action_attach_resource()
        await until(pilot, lambda: isinstance(app.screen, ResourcePicker), timeout=20)
        await pilot.press(*"welcome", "enter")
        await until(pilot, lambda: len(app.mcp.attachments) == 1, timeout=20)
        app.action_use_prompt()
        await until(pilot, lambda: isinstance(app.screen, PromptPicker), timeout=20)
        picker = app.screen
        assert isinstance(picker, PromptPicker)
        summarize = next(i for i, p in enumerate(picker.prompts) if p.name == "summarize")
        picker.dismiss(picker.prompts[summarize])
        await until(pilot, lambda: isinstance(app.screen, FormScreen) and bool(app.screen.query(Input)), timeout=20)
        app.screen.query(Input).first().value = "tides"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.composer.text.startswith("Summarise tides"), timeout=20)
        assert len(app.mcp.attachments) == 2  # the prompt's embedded resource too
        await pilot.press("enter")
        await until(pilot, lambda: not app.turn_running and not app.mcp.attachments, timeout=30)
        await until(pilot, lambda: "notes://welcome from desk" in log_text(app), timeout=10)
    [message] = [m for m in engine.store.messages(_chat(engine)) if m.role == "user"]
    texts = [b["text"] for b in message.content]
    assert texts[0].startswith("Summarise tides in a plain style.")
    assert texts[1].startswith("Attached resource notes://welcome from MCP server desk:")


@pytest.mark.slow
async def test_signing_in_from_the_servers_screen(engine: Engine, tmp_path: Path, monkeypatch: Any) -> None:
    browser = Browser()
    opened_urls: list[str] = []

    def fake_browser(url: str) -> bool:  # what webbrowser.open does with a BROWSER that follows the page
        import asyncio

        opened_urls.append(url)
        asyncio.run(browser._open(url))
        return True

    monkeypatch.setattr("tui.controllers.mcp.open_browser", fake_browser)
    with oauth_server() as server:
        app = make_app(engine, **files(tmp_path, {"remote": {"url": server.url, "timeout": 20}}, []))
        async with app.run_test(size=(100, 40)) as pilot:
            await opened(pilot)
            await until(pilot, lambda: app.roster.servers.get("remote", ("",))[0] == "needs_sign_in", timeout=20)
            assert "needs sign-in" in str(app.roster.servers_line.render())
            app.action_mcp_servers()
            await until(pilot, lambda: isinstance(app.screen, ServersScreen))
            await pilot.pause(0.1)
            assert "needs sign-in" in "\n".join(str(w.render()) for w in app.screen.query(".server-head"))
            assert app.screen.query_one("#sign-in-0", Button)
            await pilot.click("#sign-in-0")
            app.composer.put("still typing while the browser is away")  # the chat is not blocked
            await until(pilot, lambda: app.roster.servers.get("remote", ("",))[0] == "ready", timeout=30)
            assert opened_urls and opened_urls[0].startswith(f"{server.origin}/authorize?")

            def planned() -> bool:  # the unused new chat opened again, planned with the server's tools
                return app.session is not None and "mcp.remote.whoami" in app.session.plan.defined_tool_names

            await until(pilot, planned, timeout=30)
            await until(pilot, lambda: app.composer.text == "still typing while the browser is away", timeout=10)
        assert server.state()["authorizations"] == 1


async def test_slash_commands_run_prompts_attach_and_mentions_attach(engine: Engine, tmp_path: Path) -> None:
    turns = [[{"type": "text", "text": "Read."}]]
    app = make_app(engine, **files(tmp_path, {"desk": entry()}, turns))
    async with app.run_test(size=(100, 40)) as pilot:
        await opened(pilot)
        await until(pilot, lambda: bool(app.mcp.prompt_cache) and bool(app.mcp.resource_cache), timeout=20)
        names = {c.name for c in app.slash_commands.commands()}
        assert {"mcp", "mcp login", "mcp logout", "attach", "desk:summarize", "desk:greet"} <= names
        app.composer.put("/desk:summarize topic=tides style=haiku")
        await pilot.press("enter")
        await until(pilot, lambda: app.composer.text.startswith("Summarise tides in a haiku style."), timeout=20)
        app.mcp.attachments.clear()  # the prompt's embedded resource: not what this test sends
        app.composer.put("/attach desk:notes://big")
        await pilot.press("enter")
        await until(pilot, lambda: len(app.mcp.attachments) == 1, timeout=20)
        assert app.mcp.attachments[0].truncated
        app.composer.put("compare @desk:notes://welcome with the big one")
        await pilot.press("enter")
        await until(pilot, lambda: not app.turn_running and not app.mcp.attachments, timeout=30)
        await until(pilot, lambda: "notes://welcome from desk" in log_text(app), timeout=10)
        app.composer.put("/mcp login nowhere")
        await pilot.press("enter")
        await until(pilot, lambda: any("no MCP server 'nowhere'" in str(n.message) for n in app._notifications))
    [message] = [m for m in engine.store.messages(_chat(engine)) if m.role == "user"]
    texts = [b["text"] for b in message.content]
    assert texts[0] == "compare @desk:notes://welcome with the big one"
    assert [t.split(":\n", 1)[0] for t in texts[1:]] == [
        "Attached resource notes://big from MCP server desk (cut: 5,242,880 characters in all)",
        "Attached resource notes://welcome from MCP server desk",
    ]
