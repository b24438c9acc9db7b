"""The cost meter and the system prompt in the app: the header's totals after a turn (and for a
reopened chat), the usage view (f7 and the palette), and the system prompt editor (f6): saving
before the first message is free, after it the editor warns and the log notes the prefix break."""

from __future__ import annotations

from textual.widgets import DataTable, TextArea

from core import events as ev
from core.chat.meter import tokens_text
from tests.tui.conftest import make_app, opened, settled, until
from tests.tui.conftest import send as submit
from tests.tui.test_layout import shown
from tui.app import EngineEvent
from tui.screens.system_prompt import COSTLY, FREE, SystemPromptScreen
from tui.screens.usage import UsageScreen
from tui.state import NoteItem


def notes(app) -> list[str]:
    return [i.text for i in app.log_view.items if isinstance(i, NoteItem)]


async def send(pilot, text: str) -> None:
    await submit(pilot, text)
    await settled(pilot)


async def test_the_header_totals_and_the_usage_view(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(160, 40)) as pilot:
        await opened(pilot)
        assert str(app.header_bar.usage.render()) == ""  # nothing sent yet
        await send(pilot, "what's on my calendar today?")
        await until(pilot, lambda: app.header_bar.totals.requests > 0)
        totals = app.header_bar.totals
        shown = str(app.header_bar.usage.render())
        assert shown.startswith(f"\u2191{tokens_text(totals.input_tokens + totals.cache_read + totals.cache_write)} ")
        assert "cache hit 0%" in shown and "$" not in shown  # the demo model has no price: tokens only
        chat_id = app.session.chat_id
        await pilot.press("f7")
        await until(pilot, lambda: isinstance(app.screen, UsageScreen))
        table = app.screen.query_one("#usage-table", DataTable)
        assert table.row_count == totals.requests
        first = [str(c) for c in table.get_row_at(0)]
        assert first[:2] == ["1", "demo/demo-1"] and first[7] == "-"
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, UsageScreen))
    # reopened: the header has the chat's totals from its stored events before anything is sent
    again = make_app(engine, open_chat=chat_id)
    async with again.run_test(size=(160, 40)) as pilot:
        await opened(pilot)
        assert again.header_bar.totals.requests == totals.requests
        assert str(again.header_bar.usage.render()) == shown


async def test_the_usage_view_is_in_the_palette(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 32)) as pilot:
        await opened(pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"Usage and cost")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, UsageScreen))
        assert app.screen.query_one("#usage-empty")  # nothing sent yet: it says so


async def test_the_system_prompt_editor_before_and_after_the_first_message(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(140, 40)) as pilot:
        await opened(pilot)
        await pilot.press("f6")
        await until(pilot, lambda: isinstance(app.screen, SystemPromptScreen))
        assert str(app.screen.query_one("#system-prompt-note").render()) == FREE
        app.screen.query_one(TextArea).text = "Answer in French."
        await pilot.press("ctrl+s")
        await until(pilot, lambda: not isinstance(app.screen, SystemPromptScreen))
        chat_id = app.session.chat_id
        assert engine.store.chat(chat_id).system_prompt == "Answer in French."
        await until(pilot, lambda: "This chat's system prompt is set." in notes(app))
        await send(pilot, "hello")
        # after the first message: the editor says what saving costs, and the log shows it
        await pilot.press("f6")
        await until(pilot, lambda: isinstance(app.screen, SystemPromptScreen))
        assert str(app.screen.query_one("#system-prompt-note").render()) == COSTLY
        area = app.screen.query_one(TextArea)
        assert area.text == "Answer in French."
        area.text = "Answer in German."
        await pilot.press("ctrl+s")
        await until(pilot, lambda: any("system prompt was changed" in n for n in notes(app)))
        assert not any(n.startswith("cached prefix breaks (") for n in notes(app))  # not yet: the next request
        await send(pilot, "and now?")
        await until(pilot, lambda: any(n.startswith("cached prefix breaks (system)") for n in notes(app)))
        assert app.header_bar.totals.breaks["system"] == 1
        # Escape leaves it as it was
        await pilot.press("f6")
        await until(pilot, lambda: isinstance(app.screen, SystemPromptScreen))
        app.screen.query_one(TextArea).text = "discarded"
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, SystemPromptScreen))
        assert engine.store.chat(chat_id).system_prompt == "Answer in German."


async def test_the_header_shows_dollars_only_when_known(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(160, 32)) as pilot:
        await opened(pilot)
        header = app.header_bar

        def usage(cost: float | None) -> None:
            event = ev.UsageEvent(input_tokens=100, output_tokens=20, cache_read_input_tokens=300, cost_usd=cost)
            app.post_message(EngineEvent(event, app.generation))

        usage(None)
        await until(pilot, lambda: header.totals.requests == 1)
        assert str(header.usage.render()) == "\u2191400 \u219320 cache hit 75%"  # no price: tokens only
        usage(0.0125)
        await until(pilot, lambda: header.totals.requests == 2)
        assert str(header.usage.render()) == "\u2191800 \u219340 cache hit 75% $0.0125+?"  # one request unpriced
        assert "some requests have no price" in str(header.usage.tooltip)


async def test_at_80_columns_the_header_keeps_the_dollars_and_the_title_gives_way(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(80, 24)) as pilot:
        await opened(pilot)
        header = app.header_bar
        header.set_title("start a call to +1 555 0100 about the invoice, then move my standup")
        app.post_message(
            EngineEvent(ev.UsageEvent(input_tokens=4468, output_tokens=80, cost_usd=0.0123), app.generation)
        )
        await until(pilot, lambda: header.totals.requests == 1)
        await pilot.pause(0.05)
        usage = str(header.usage.render())
        assert usage == "\u21914,468 \u219380 cache hit 0% $0.0123"
        row = shown(app, header.region)
        assert row.endswith(usage)  # whole, at the right edge
        assert header.usage.region.right <= 80 and header.usage.region.width >= len(usage)
        assert "start a call" in row and "\u2026" in row  # the title is cut, not the dollars
        assert "demo/demo-1" in row  # the model's name stays while the title can give way
        # narrower still: the strategy's badge goes before the model's name is cut
        await pilot.resize_terminal(60, 24)
        await pilot.pause(0.1)
        row = shown(app, header.region)
        assert row.endswith(usage) and "demo/demo-1" in row and not header.badge.display


async def test_estimated_requests_are_marked_in_the_header_and_the_usage_view(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 32)) as pilot:
        await opened(pilot)
        header = app.header_bar
        post = app.session.emit  # stored (the usage view reads the store) and shown
        post(ev.UsageEvent(input_tokens=1000, output_tokens=50, cost_usd=0.01, provider="demo", model="demo-1"))
        await until(pilot, lambda: header.totals.requests == 1)
        assert "~" not in str(header.usage.render()) and "estimated" not in str(header.usage.tooltip)
        post(
            ev.UsageEvent(
                input_tokens=900,
                output_tokens=12,
                cost_usd=0.002,
                status="stopped",
                estimated=True,
                provider="demo",
                model="demo-1",
            )
        )
        await until(pilot, lambda: header.totals.requests == 2)
        assert str(header.usage.render()) == "\u2191~1,900 \u2193~62 cache hit 0% ~$0.0120"
        assert "1 of them estimated: stopped or failed before the provider counted them" in str(header.usage.tooltip)
        await pilot.press("f7")
        await until(pilot, lambda: isinstance(app.screen, UsageScreen) and app.screen.query("#usage-table"))
        table = app.screen.query_one("#usage-table", DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert rows[0][:4] == ["1", "demo/demo-1", "1,000", "50"] and rows[0][7] == "$0.0100"
        assert rows[1][:4] == ["2 stopped", "demo/demo-1", "~900", "~12"] and rows[1][7] == "~$0.0020"
        title = str(app.screen.query_one(".panel-title").render())
        assert "2 requests" in title and "cost ~$0.0120" in title and "1 estimated" in title
        assert "~ : an estimate" in str(app.screen.query_one("#usage-estimated").render())
