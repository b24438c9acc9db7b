"""The chat log: streamed Markdown with one final update, code blocks, copying, and the
window of mounted entries for long chats (how a streamed answer renders:
test_streaming_render.py)."""

from __future__ import annotations

import pytest
from textual.widgets import Markdown

from tests.tui.conftest import SCRIPTS, make_app, opened, send, settled, until
from tui.state import AssistantItem, UserItem
from tui.widgets.answer import AssistantMessage
from tui.widgets.chat_log import ChatLog, UserMessage


@pytest.fixture
def markdown_updates(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Markdown, str]]:
    """Every whole-document render (Markdown.update), with its text."""
    calls: list[tuple[Markdown, str]] = []
    update = Markdown.update

    def spy_update(self: Markdown, markdown: str):  # type: ignore[no-untyped-def]
        calls.append((self, markdown))
        return update(self, markdown)

    monkeypatch.setattr(Markdown, "update", spy_update)
    return calls


async def test_streamed_through_markdown_stream_and_never_rendered_whole_again(engine, markdown_updates) -> None:
    engine.demo_delay = 0.002
    app = make_app(engine)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await send(pilot, "move my 9am standup to 10am")
        await until(pilot, lambda: app.approval_bar is not None)
        answers = [i for i in app.log_view.items if isinstance(i, AssistantItem)]
        assert answers and not answers[0].streaming
        widget = answers[0].widget
        assert isinstance(widget, AssistantMessage)
        assert widget.markdown.source == answers[0].text
        # Markdown's own mount sets the (empty) initial document; the stream did the rest
        assert [text for md, text in markdown_updates if md is widget.markdown and text] == []


async def test_an_empty_chat_shows_a_hint_until_the_first_message(engine) -> None:
    app = make_app(engine, script=str(SCRIPTS / "code_answer.json"))
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        hint = app.log_view.query_one("#empty-hint")
        # the welcome (tests/tui/test_welcome.py): on the script provider, no demo words
        assert hint.display and "You are chatting with script/" in str(hint.render())
        assert "The roster lists the tools" in str(hint.render())
        await send(pilot, "show me")
        await settled(pilot)
        assert not hint.display


async def test_code_blocks_render(engine) -> None:
    app = make_app(engine, script=str(SCRIPTS / "code_answer.json"))
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await send(pilot, "show me")
        await settled(pilot)
        widget = next(i for i in app.log_view.items if isinstance(i, AssistantItem)).widget
        fences = list(widget.query("MarkdownFence"))
        assert len(fences) == 1
        assert "def plan(tools):" in fences[0].code and fences[0].lexer == "python"


async def test_copy_a_message_and_the_last_answer(engine) -> None:
    app = make_app(engine, script=str(SCRIPTS / "code_answer.json"))
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await send(pilot, "show me")
        await settled(pilot)
        user = next(i for i in app.log_view.items if isinstance(i, UserItem)).widget
        assert isinstance(user, UserMessage)
        await pilot.click(user)
        assert user.has_focus
        await pilot.press("c")
        assert app.clipboard == "show me"
        await pilot.press("f3")
        assert app.clipboard.startswith("Here is the **plan** as code:") and "```python" in app.clipboard


async def test_enter_sends_and_shift_enter_or_ctrl_j_break_the_line(engine) -> None:
    app = make_app(engine, script=str(SCRIPTS / "code_answer.json"))
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        app.composer.focus()
        await pilot.press("a", "shift+enter", "b", "ctrl+j", "c")
        assert app.composer.text == "a\nb\nc"
        await pilot.press("enter")
        await settled(pilot)
        assert app.composer.text == ""
        assert [i.text for i in app.log_view.items if isinstance(i, UserItem)] == ["a\nb\nc"]


async def stored_chat(engine, count: int) -> str:
    session = await engine.open_chat(None, make_app(engine).options)
    await session.close()
    store = engine.store
    with store.db.atomic():
        for n in range(count):
            role = "user" if n % 2 == 0 else "assistant"
            text = f"question {n}" if role == "user" else f"answer {n} with **bold** and `code`"
            store.add_message(session.chat_id, role, [{"type": "text", "text": text}], turn_id=None, parent_id=None)
    return session.chat_id


async def window_settled(pilot, log: ChatLog) -> None:
    await until(pilot, lambda: not log._lock.locked())
    await pilot.pause(0.1)
    await until(pilot, lambda: not log._lock.locked())


async def test_a_long_chat_mounts_a_window_and_loads_older_entries_on_scroll(engine) -> None:
    chat_id = await stored_chat(engine, 400)
    app = make_app(engine, open_chat=chat_id)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        log: ChatLog = app.log_view
        await until(pilot, lambda: len(log.items) == 400)
        await window_settled(pilot, log)
        assert (log.start, log.end) == (400 - ChatLog.WINDOW, 400)
        assert len(log.query(".entry")) == ChatLog.WINDOW
        assert log.query_one("#earlier").display and not log.query_one("#later").display
        assert log.items[-1].text == "answer 399 with **bold** and `code`"
        first_shown = log.items[log.start].widget
        log.scroll_home(animate=False, immediate=True)
        await until(pilot, lambda: log.start == 400 - ChatLog.WINDOW - ChatLog.PAGE)
        await window_settled(pilot, log)
        # the entry that was at the top is still where the reader left it, below the new page
        assert first_shown.is_mounted and log.scroll_y > 0
        assert abs(first_shown.virtual_region.y - log.scroll_y) <= 2
        while log.start > 400 - ChatLog.WINDOW - 4 * ChatLog.PAGE:
            before = log.start
            log.scroll_home(animate=False, immediate=True)
            await until(pilot, lambda b=before: log.start < b)
            await window_settled(pilot, log)
        assert log.mounted == ChatLog.MAX_MOUNTED == len(log.query(".entry"))
        assert not log.shows_tail and log.query_one("#later").display
        # back down: later entries come back, earlier ones go
        while not log.shows_tail:
            before = log.end
            log.scroll_end(animate=False, immediate=True)
            await until(pilot, lambda b=before: log.end > b)
            await window_settled(pilot, log)
        assert log.mounted <= ChatLog.MAX_MOUNTED
        assert list(log.query(".entry")) == [i.widget for i in log.items[log.start : log.end]]
        assert all(i.widget is None for i in log.items[: log.start])


async def test_a_new_turn_jumps_back_to_the_end(engine) -> None:
    chat_id = await stored_chat(engine, 240)
    app = make_app(engine, open_chat=chat_id)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        log = app.log_view
        await pilot.press("escape")
        log.focus()
        await pilot.press("home")
        await until(pilot, lambda: log.start == 0)
        assert not log.shows_tail
        app.composer.focus()
        app.composer.text = "and now?"
        await pilot.press("enter")
        await settled(pilot)
        asked = [i for i in log.items if isinstance(i, UserItem) and i.text == "and now?"]
        assert len(asked) == 1 and log.shows_tail
        assert asked[0].widget is not None and asked[0].widget.is_mounted
