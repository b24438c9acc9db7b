"""The chat log: streamed Markdown with one final update, code blocks, copying, and the
window of mounted entries for long chats."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Markdown, Static

from tests.tui.conftest import SCRIPTS, make_app, opened, send, settled, until
from tui.state import AssistantItem, UserItem
from tui.widgets.chat_log import AssistantMessage, ChatLog, UserMessage


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


def blocks_of(widget: Markdown) -> list[tuple[str, list[str]]]:
    """A rendered document's shape: each top-level block's class and the text of everything in
    it (Textual's incremental table update builds its cells as plain Statics, so nested
    widgets are compared by what they show, not by class)."""

    def shown(w: Any) -> str:
        content = getattr(w, "_content", None)
        if getattr(w, "code", None):
            return str(w.code)
        if content is not None and hasattr(content, "plain"):
            return str(content.plain)
        return str(w.render()) if isinstance(w, Static) else ""

    return [(type(b).__name__, [t for w in [b, *b.walk_children()] if (t := shown(w))]) for b in widget.children]


async def test_a_streamed_answer_ends_as_the_whole_text_renders() -> None:
    """Token by token through the stream, then finished: the same blocks as one update of the
    whole text (headings, lists, tables, code), each paragraph apart from the next."""
    from textual.app import App, ComposeResult

    from tests.streaming_server import markdown_answer, tokens

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield ChatLog()

    text = markdown_answer(900, seed=2)
    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        log = app.query_one(ChatLog)
        streamed = AssistantItem(streaming=True)
        await log.add(streamed)
        for i, piece in enumerate(tokens(text)):
            await log.stream(streamed, piece)
            if i % 50 == 0:
                await pilot.pause()
        await log.finish(streamed)
        whole = AssistantItem(text=text)
        await log.add(whole)
        await pilot.pause()
        assert isinstance(streamed.widget, AssistantMessage) and isinstance(whole.widget, AssistantMessage)
        assert streamed.widget.source == whole.widget.source == text
        assert blocks_of(streamed.widget) == blocks_of(whole.widget)
        kinds = {kind for kind, _ in blocks_of(whole.widget)}
        assert {"MarkdownH1", "MarkdownH2", "MarkdownBulletList", "MarkdownTable", "MarkdownFence"} <= kinds
        for widget in (streamed.widget, whole.widget):
            margins = [b.styles.margin.bottom for b in widget.children]
            assert margins[:-1] == [1] * (len(margins) - 1) and margins[-1] == 0


async def test_streamed_text_shows_while_the_model_writes() -> None:
    from textual.app import App, ComposeResult

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield ChatLog()

    app = Host()
    async with app.run_test(size=(100, 30)) as pilot:
        log = app.query_one(ChatLog)
        item = AssistantItem(streaming=True)
        await log.add(item)
        widget = item.widget
        assert isinstance(widget, AssistantMessage)
        await log.stream(item, "Hello ")
        await log.stream(item, "**world**")
        # shown before the message ends, through the stream (not only by the final update)
        await until(pilot, lambda: widget.source == "Hello **world**")
        await log.finish(item)
        assert widget.source == "Hello **world**"


async def test_an_empty_chat_shows_a_hint_until_the_first_message(engine) -> None:
    app = make_app(engine, script=str(SCRIPTS / "code_answer.json"))
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        hint = app.log_view.query_one("#empty-hint")
        assert hint.display and "start a call to +1 555 0100" in str(hint.render())
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
