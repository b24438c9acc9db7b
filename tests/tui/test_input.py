"""Input like every good client (issue 12, item 4): earlier messages on ↑/↓ (per chat, across
chats, kept in the store), a queue for messages sent while a turn runs, retry, edit last
message, $EDITOR, scrolling the log from the message box, Escape back to the box, a draft per
chat, an unused new chat reused, export that asks before it overwrites, the new-line key this
terminal surely sends shown first, and every bound key in the footer or the palette."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.streaming_server import serve
from tests.tui.conftest import make_app, opened, send, settled, until
from tui.app import COMMANDS, DeferchatApp
from tui.screens.dialogs import Confirm, TextPrompt
from tui.state import AssistantItem, NoteItem, UserItem
from tui.widgets import approval as approval_mod
from tui.widgets.composer import Composer, newline_hint, placeholder, shift_enter_works

CALL = "start a call to +1 555 0100 about the invoice"
ROSTER = {"agent": {"name": "typist", "version": "1", "deferred": []}, "configured": [], "servers": []}


@pytest.fixture
def roster(tmp_path: Path) -> str:
    path = tmp_path / "roster.json"
    path.write_text(json.dumps(ROSTER))
    return str(path)


@pytest.fixture
def armed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Approval bars answer at once (the grace period has its own tests)."""
    monkeypatch.setattr(approval_mod.ApprovalBar, "GRACE", 0.0)


def users(app: DeferchatApp) -> list[str]:
    return [i.text for i in app.log_view.items if isinstance(i, UserItem)]


def answers(app: DeferchatApp) -> list[str]:
    return [i.text for i in app.log_view.items if isinstance(i, AssistantItem)]


async def deny_the_approval(pilot: Any) -> None:
    app = pilot.app
    await until(pilot, lambda: app.approval_bar is not None)
    await pilot.press("tab")
    await until(pilot, lambda: app.approval_bar.has_focus)
    await pilot.press("n")


# -- ↑ / ↓ -------------------------------------------------------------------------------------------
async def test_up_and_down_recall_this_chats_messages_then_other_chats_and_survive_a_restart(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        first_chat = app.session.chat_id
        for text in ("hello there", "thanks a lot"):
            await send(pilot, text)
            await settled(pilot)
        await pilot.press("ctrl+n")
        await until(pilot, lambda: app.session is not None and app.session.chat_id != first_chat)
        await opened(pilot)
        await send(pilot, "good morning")
        await settled(pilot)
        box = app.composer
        box.focus()
        await pilot.press(*"half typed")
        await pilot.press("up")
        assert box.text == "good morning"  # this chat's own first
        await pilot.press("up")
        assert box.text == "thanks a lot"  # then the other chats', newest first
        await pilot.press("up", "up")
        assert box.text == "hello there"
        await pilot.press("up")  # the oldest: it stays
        assert box.text == "hello there"
        await pilot.press("down", "down")
        assert box.text == "good morning"
        await pilot.press("down")
        assert box.text == "half typed"  # back to what was being typed, nothing lost
        assert engine.store.input_history(first_chat)[:2] == ["thanks a lot", "hello there"]

    app = make_app(engine, open_chat=first_chat)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        app.composer.focus()
        await pilot.press("up")
        assert app.composer.text == "thanks a lot"


async def test_up_inside_a_long_message_moves_the_cursor(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        await send(pilot, "hello there")
        await settled(pilot)
        app.composer.focus()
        await pilot.press(*"line one", "ctrl+j", *"line two")
        await pilot.press("up")
        assert app.composer.text == "line one\nline two" and app.composer.cursor_location[0] == 0
        await pilot.press("up")  # on the first line now: recall
        assert app.composer.text == "hello there"


# -- the queue -------------------------------------------------------------------------------------
async def test_a_message_sent_while_a_turn_runs_is_queued_and_sent_when_it_ends(engine, armed) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 34)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await until(pilot, lambda: app.approval_bar is not None)
        assert app.turn_running
        app.composer.focus()
        await pilot.press(*"and then tell me a joke", "enter")
        assert app.drafts.queued == ["and then tell me a joke"] and app.composer.text == ""
        assert app.queued_note.display and "queued" in str(app.queued_note.render())
        assert "and then tell me a joke" in str(app.queued_note.render())
        assert users(app) == [CALL]  # not sent yet
        await deny_the_approval(pilot)
        await until(pilot, lambda: users(app) == [CALL, "and then tell me a joke"])
        await settled(pilot)
        assert not app.drafts.queued and not app.queued_note.display
        stored = [m.blocks[0].get("text") for m in engine.store.messages(app.session.chat_id) if m.role == "user"]
        assert "and then tell me a joke" in stored


async def test_a_queued_message_can_be_taken_back(engine, armed) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 34)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await until(pilot, lambda: app.approval_bar is not None)
        app.composer.focus()
        await pilot.press(*"never mind", "enter")
        assert app.drafts.queued == ["never mind"]
        await pilot.press("up")  # in the empty box: the queued message comes back
        assert app.drafts.queued == [] and app.composer.text == "never mind"
        assert not app.queued_note.display
        app.composer.put("")
        await deny_the_approval(pilot)
        await settled(pilot)
        assert users(app) == [CALL]


async def test_a_stop_gives_the_queue_back_to_the_box(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 34)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await until(pilot, lambda: app.approval_bar is not None)
        app.composer.focus()
        await pilot.press(*"follow-up", "enter")
        assert app.drafts.queued == ["follow-up"]
        await pilot.press("escape")  # stops the turn
        await settled(pilot)
        assert app.drafts.queued == [] and app.composer.text == "follow-up"
        assert users(app) == [CALL]


# -- retry and edit ----------------------------------------------------------------------------------
async def test_retry_after_a_provider_error(engine, roster: str) -> None:
    script = [{"parts": [], "status": 400}, {"parts": [{"text": "Second time lucky."}]}]
    with serve(script) as server:
        app = make_app(engine, provider="anthropic", model="m", base_url=server.url_for("anthropic"), roster=roster)
        async with app.run_test(size=(110, 32)) as pilot:
            await opened(pilot)
            await send(pilot, "are you there?")
            await settled(pilot)
            assert any(isinstance(i, NoteItem) and i.level == "error" for i in app.log_view.items)
            await pilot.press("f5")
            await until(pilot, lambda: "Second time lucky." in answers(app))
            await settled(pilot)
            user_rows = [m for m in engine.store.messages(app.session.chat_id) if m.role == "user"]
            assert len(user_rows) == 1 and len(server.requests) == 2


async def test_retry_after_a_stop_runs_the_turn_again_in_its_place(engine, roster: str) -> None:
    script = [
        {"parts": [{"markdown": 2000, "seed": 2}], "chunk_delay": 0.01},
        {"parts": [{"text": "The short version."}]},
    ]
    with serve(script) as server:
        app = make_app(engine, provider="anthropic", model="m", base_url=server.url_for("anthropic"), roster=roster)
        async with app.run_test(size=(110, 32)) as pilot:
            await opened(pilot)
            await send(pilot, "tell me everything")
            await until(pilot, lambda: any(len(t) > 100 for t in answers(app)))
            await pilot.press("escape")
            await settled(pilot)
            assert answers(app)  # the partial answer is on screen
            await pilot.press("f5")
            await until(pilot, lambda: "The short version." in answers(app))
            await settled(pilot)
            assert users(app) == ["tell me everything"] and answers(app) == ["The short version."]
            assert [m.role for m in engine.store.messages(app.session.chat_id)] == ["user", "assistant"]
            assert "tell me everything" in json.dumps(server.requests[1]["body"])


async def test_edit_last_message_replaces_that_turn(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        await send(pilot, "hello there")
        await settled(pilot)
        await send(pilot, "what is on my calender")
        await settled(pilot)
        chat_id = app.session.chat_id
        replaced = app.session.last_prompt().message_id
        app.composer.focus()
        await pilot.press(*"a draft")
        await pilot.press("f4")
        assert app.composer.text == "what is on my calender" and app.drafts.editing is not None
        assert "editing your last message" in str(app.queued_note.render())
        await pilot.press("f4")  # again: editing stops, the draft comes back
        assert app.composer.text == "a draft" and app.drafts.editing is None
        await pilot.press("f4")
        app.composer.put("what is on my calendar")
        await pilot.press("enter")
        await until(pilot, lambda: users(app) == ["hello there", "what is on my calendar"])
        await settled(pilot)
        branch = [m.blocks[0].get("text") for m in engine.store.messages(chat_id) if m.role == "user"]
        assert "what is on my calender" not in branch and "what is on my calendar" in branch
        assert engine.store.message(replaced) is not None  # the replaced message stays in the store


async def test_edit_and_retry_say_why_not_while_a_turn_runs(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 34)) as pilot:
        await opened(pilot)
        await pilot.press("f4")
        await until(pilot, lambda: any("no message to edit" in n.message for n in app._notifications))
        await send(pilot, CALL)
        await until(pilot, lambda: app.approval_bar is not None)
        await pilot.press("f5")
        await until(pilot, lambda: any("A turn is running" in n.message for n in app._notifications))
        assert app.drafts.editing is None


# -- $EDITOR ---------------------------------------------------------------------------------------
async def test_the_message_is_written_in_the_editor(engine, tmp_path: Path, monkeypatch) -> None:
    editor = tmp_path / "editor.py"
    seen = tmp_path / "seen.txt"
    editor.write_text(
        "import sys, pathlib\n"
        f"pathlib.Path({str(seen)!r}).write_text(pathlib.Path(sys.argv[1]).read_text())\n"
        "pathlib.Path(sys.argv[1]).write_text('A long message\\nwritten in my editor.\\n')\n"
    )
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    app = make_app(engine)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        app.composer.focus()
        await pilot.press(*"a start")
        await pilot.press("ctrl+l")
        await until(pilot, lambda: app.composer.text == "A long message\nwritten in my editor.")
        assert seen.read_text() == "a start"  # the editor got the box's text
        assert app.composer.has_focus


async def test_an_editor_that_fails_leaves_the_message_alone(engine, monkeypatch) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", "false")
    app = make_app(engine)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        app.composer.put("keep me")
        await pilot.press("ctrl+l")
        await until(pilot, lambda: any("exited with status 1" in n.message for n in app._notifications))
        assert app.composer.text == "keep me"


# -- scrolling, Escape -----------------------------------------------------------------------------
async def test_page_keys_scroll_the_log_from_the_message_box(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        for i in range(60):
            await app.log_view.add(NoteItem(text=f"note {i}"))
        await pilot.pause(0.1)
        log = app.log_view
        app.composer.focus()
        bottom = log.scroll_y
        assert bottom > 0
        await pilot.press("pageup")
        await pilot.pause(0.05)
        assert log.scroll_y < bottom and app.composer.has_focus
        await pilot.press("pagedown", "pagedown")
        await pilot.pause(0.05)
        assert log.scroll_y == log.max_scroll_y
        await pilot.press("home")  # the box is empty: the oldest entries
        await pilot.pause(0.05)
        assert log.scroll_y == 0 and log.start == 0
        await pilot.press("end")
        await pilot.pause(0.05)
        assert log.scroll_y == log.max_scroll_y
        await pilot.press(*"typing")
        await pilot.press("home")  # with text: the cursor goes to the line's start, the log stays
        await pilot.pause(0.05)
        assert app.composer.cursor_location == (0, 0) and log.scroll_y == log.max_scroll_y
        await pilot.press("ctrl+home")
        await pilot.pause(0.05)
        assert log.scroll_y == 0 and app.composer.text == "typing"


async def test_escape_comes_back_to_the_message_box_from_the_roster_filter(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        await pilot.press("ctrl+f")
        assert app.roster.filter.has_focus
        await pilot.press(*"mail")
        await pilot.press("escape")
        assert app.composer.has_focus and app.roster.filter.value == ""
        app.roster.options.focus()
        await pilot.press("escape")
        assert app.composer.has_focus


# -- drafts and chats ------------------------------------------------------------------------------
async def test_each_chat_keeps_its_own_draft(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        await send(pilot, "hello there")
        await settled(pilot)
        first = app.session.chat_id
        app.composer.focus()
        await pilot.press(*"draft for the first")
        await pilot.press("left", "left")
        await pilot.press("ctrl+n")
        await until(pilot, lambda: app.session is not None and app.session.chat_id != first)
        await opened(pilot)
        second = app.session.chat_id
        assert app.composer.text == ""
        await pilot.press(*"second draft")
        app.open_session(first)
        await until(pilot, lambda: app.session is not None and app.session.chat_id == first)
        await opened(pilot)
        assert app.composer.text == "draft for the first"
        assert app.composer.cursor_location == (0, len("draft for the first") - 2)
        app.open_session(second)
        await until(pilot, lambda: app.session is not None and app.session.chat_id == second)
        await opened(pilot)
        assert app.composer.text == "second draft"


async def test_a_new_chat_that_was_never_used_is_reused_not_stored_again(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        unused = app.session.chat_id
        await pilot.press("ctrl+n")
        await until(pilot, lambda: any("still unused" in n.message for n in app._notifications))
        assert app.session.chat_id == unused and [c.id for c in engine.store.chats()] == [unused]
        await send(pilot, "hello there")
        await settled(pilot)
        await pilot.press("ctrl+n")  # used now: a new chat
        await until(pilot, lambda: app.session is not None and app.session.chat_id != unused)
        await opened(pilot)
        fresh = app.session.chat_id
        app.open_session(unused)  # leaving the fresh, unused chat: it is not kept
        await until(pilot, lambda: app.session is not None and app.session.chat_id == unused)
        await opened(pilot)
        assert [c.id for c in engine.store.chats()] == [unused] and engine.store.chat(fresh) is None


# -- export ------------------------------------------------------------------------------------------
async def test_export_asks_before_it_overwrites(engine, tmp_path: Path) -> None:
    app = make_app(engine, export_dir=tmp_path)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        await send(pilot, "hello there")
        await settled(pilot)
        target = tmp_path / "hello-there.md"
        target.write_text("mine, keep it")
        for answer, expected in (("enter", "mine, keep it"), ("y", None)):
            await pilot.press("ctrl+s")
            await until(pilot, lambda: isinstance(app.screen, TextPrompt))
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, Confirm))
            assert "exists" in app.screen.question
            await pilot.press(answer)  # Enter alone keeps the file
            await until(pilot, lambda: not isinstance(app.screen, Confirm))
            await pilot.pause(0.2)
            if expected is not None:
                assert target.read_text() == expected
        await until(pilot, lambda: target.read_text().startswith("# hello there"))


# -- keys --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("env", "works"),
    [
        ({"TERM": "xterm-256color"}, False),
        ({"TERM_PROGRAM": "tmux"}, False),
        ({"TERM": "xterm-kitty"}, True),
        ({"TERM_PROGRAM": "WezTerm"}, True),
    ],
)
def test_the_new_line_key_this_terminal_surely_sends_comes_first(env: dict[str, str], works: bool) -> None:
    assert shift_enter_works(env) is works
    hint = newline_hint(works)
    assert hint.startswith("shift+enter" if works else "ctrl+j")
    assert hint in placeholder(works)


async def test_the_placeholder_puts_shift_enter_first_once_the_terminal_sends_it(engine, monkeypatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    for name in ("TERM_PROGRAM", "KITTY_WINDOW_ID"):
        monkeypatch.delenv(name, raising=False)
    app = make_app(engine)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        assert str(app.composer.placeholder).index("ctrl+j") < str(app.composer.placeholder).index("shift+enter")
        app.composer.focus()
        await pilot.press("a", "shift+enter", "b")
        assert app.composer.text == "a\nb"
        assert str(app.composer.placeholder).index("shift+enter") < str(app.composer.placeholder).index("ctrl+j")


async def test_every_bound_key_is_in_the_footer_or_the_palette(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(110, 32)) as pilot:
        await opened(pilot)
        palette = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert "Keys" in palette  # Textual's panel of every key the focused widget has
        titles = {action: title for action, title, _ in COMMANDS}
        for binding in DeferchatApp.BINDINGS:
            if binding.system or binding.action in ("quit", "change_theme"):
                continue
            title = titles[binding.action]
            assert binding.show or binding.key.split(",")[0] in palette[title], binding
        for binding in Composer.BINDINGS:
            assert binding.description, f"{binding.key} would show blank in the Keys panel"
        # the retry, edit and editor keys are named in their palette entries
        assert "f5" in palette["Retry the last turn"] and "f4" in palette["Edit the last message"]
        assert "ctrl+l" in palette["Write the message in $EDITOR"]
