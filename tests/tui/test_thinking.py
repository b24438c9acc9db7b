"""The model's thinking in the TUI: a block folded to its title that streams while the model
thinks, finished from model.thinking after the response, and the toggle_thinking key (ctrl+b,
in the palette too) that shows or folds every block. Against the loopback streaming server on
the Chat Completions wire in DeepSeek's thinking mode, with its rule on."""

from __future__ import annotations

from typing import Any

from tests.streaming_server import serve
from tests.tui.conftest import make_app, opened, send, settled, until
from tui.app import COMMANDS, DeferchatApp
from tui.widgets.thinking import ThinkingItem, ThinkingView

THOUGHT = "The owner asks for a haiku about rain. Five, seven, five syllables; keep it gentle. " * 12
SCRIPT = {
    "rules": ["deepseek_reasoning_content"],
    "responses": [
        {
            "parts": [{"thinking": THOUGHT, "chunk_chars": 6}, {"text": "Soft rain on the roof."}],
            "chunk_delay": 0.02,
        },
        {"parts": [{"text": "Again: soft rain."}]},
    ],
}


def blocks(app: DeferchatApp) -> list[ThinkingItem]:
    return [i for i in app.log_view.items if isinstance(i, ThinkingItem)]


def view(item: ThinkingItem) -> ThinkingView:
    assert isinstance(item.widget, ThinkingView)
    return item.widget


async def test_thinking_streams_into_a_folded_block_that_a_key_shows_and_hides(engine: Any) -> None:
    with serve(SCRIPT) as server:
        app = make_app(
            engine, provider="openai-chat", model="deepseek-reasoner", base_url=server.url_for("openai-chat")
        )
        async with app.run_test(size=(120, 40)) as pilot:
            await opened(pilot)
            await send(pilot, "a haiku about rain")
            # while the server still sends the reasoning, the block is there and growing
            await until(pilot, lambda: blocks(app) and blocks(app)[0].words > 5, timeout=20)
            [item] = blocks(app)
            assert item.streaming and "outcome" not in server.requests[0]
            await until(pilot, lambda: str(view(item).title).startswith("Thinking\u2026"), timeout=5)
            assert view(item).collapsed
            await until(pilot, lambda: not app.turn_running, timeout=30)
            await settled(pilot)
            # whole after the response, the answer after it, still folded
            assert not item.streaming and item.text == THOUGHT
            assert str(view(item).title) == f"Thought for {len(THOUGHT.split()):,} words"
            assert view(item).collapsed
            log = app.log_view.items
            assert log.index(item) < next(
                i for i, x in enumerate(log) if getattr(x, "text", "") == "Soft rain on the roof."
            )

            app.log_view.focus()
            await pilot.press("ctrl+b")
            await pilot.pause(0.05)
            assert not view(item).collapsed and item.expanded
            # a block of a later response opens as thinking is shown now
            await send(pilot, "again")
            await settled(pilot)
            app.log_view.focus()
            await pilot.press("ctrl+b")
            await pilot.pause(0.05)
            assert view(item).collapsed and not item.expanded
        # the next request sent nothing the rule refuses (this answer had no tool calls)
        assert [r["outcome"] for r in server.requests] == ["completed", "completed"]


async def test_the_palette_lists_the_thinking_toggle_with_its_key(engine: Any) -> None:
    assert ("toggle_thinking", "Show or hide the thinking") in [(a, t) for a, t, _ in COMMANDS]
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert "ctrl+b" in commands["Show or hide the thinking"]


def test_a_burst_of_thinking_deltas_is_one_message_like_a_burst_of_text() -> None:
    """Deltas that come before the last one was handled join it, one message a burst, for the
    thinking as for the answer; a delta of the other kind, or another chat's, starts a new one."""
    from core import events as ev
    from tui.app import EngineEvent

    first = EngineEvent(ev.ModelThinkingDelta(chat_id="c", text="Five, "), 1)
    assert first.absorb(ev.ModelThinkingDelta(chat_id="c", text="seven, "))
    assert first.absorb(ev.ModelThinkingDelta(chat_id="c", text="five."))
    assert isinstance(first.event, ev.ModelThinkingDelta) and first.event.text == "Five, seven, five."
    assert not first.absorb(ev.ModelTextDelta(chat_id="c", text="Soft rain"))  # the answer: its own message
    assert not first.absorb(ev.ModelThinkingDelta(chat_id="other", text="x"))
    text = EngineEvent(ev.ModelTextDelta(chat_id="c", text="Soft "), 1)
    assert not text.absorb(ev.ModelThinkingDelta(chat_id="c", text="hmm"))
    assert text.absorb(ev.ModelTextDelta(chat_id="c", text="rain."))
    assert isinstance(text.event, ev.ModelTextDelta) and text.event.text == "Soft rain."
    text.handled = True
    assert not text.absorb(ev.ModelTextDelta(chat_id="c", text=" More."))


async def test_a_block_opened_by_hand_shows_its_text_and_stays_open() -> None:
    """A folded block draws only its title while it streams; opened by hand (a click, Enter),
    it draws its text and its record says so, so it is open again when it is mounted again."""
    from textual.app import App, ComposeResult

    item = ThinkingItem(text="Five, seven, five syllables; keep it gentle.", streaming=True)

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield ThinkingView(item)

    app = Host()
    async with app.run_test() as pilot:
        block = app.query_one(ThinkingView)
        item.text += " More rain."
        block.streamed()
        await pilot.pause(0.3)
        assert "Thinking" in str(block.title) and str(block._body.render()) == ""  # folded: the title only
        block.collapsed = False
        await pilot.pause(0.05)
        assert item.expanded
        assert "More rain." in str(block._body.render())
        block.collapsed = True
        await pilot.pause(0.05)
        assert not item.expanded
