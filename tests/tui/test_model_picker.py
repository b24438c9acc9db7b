"""The model picker (tui/screens/model_picker.py) as a person uses it: it opens at once, shows
*listing…* while each server is asked in a thread, then the server's models with their windows;
a server that cannot be listed shows the profile's names, marked; typing filters; Enter on the
typed text takes provider:model or a bare name; F5 lists again. Against a real loopback server
through the real lister (core.providers.listing.list_now)."""

from __future__ import annotations

import threading

from textual.app import App
from textual.widgets import Input, OptionList

from core.config import Settings
from core.providers.listing import ListedModel, Listing, list_now
from tests.streaming_server import serve
from tests.tui.conftest import until
from tui.screens.model_picker import ModelPicker, parse_typed

TWO = [{"id": "loopback-small", "max_model_len": 8192}, {"id": "loopback-large", "context_length": 32768}]
DEMO = Listing(provider="demo", source="profile", models=(ListedModel("demo-1"),))


class Host(App[None]):
    """A bare app to push the picker on; ``result`` is what it dismissed with."""

    def __init__(self, picker: ModelPicker) -> None:
        super().__init__()
        self.picker = picker
        self.result: object = "open"

    def on_mount(self) -> None:
        def done(picked: object) -> None:
            self.result = picked

        self.push_screen(self.picker, done)


def lines(picker: ModelPicker) -> list[str]:
    options = picker.query_one("#model-list", OptionList)
    return [str(o.prompt) for o in options.options]


def test_typed_text():
    assert parse_typed("openai-chat:qwen3:8b") == ("openai-chat", "qwen3:8b")
    assert parse_typed("qwen3:8b") == ("", "qwen3:8b")  # no provider of that name: a bare model
    assert parse_typed("openai/gpt-4.1") == ("", "openai/gpt-4.1")  # a gateway's name, not a provider
    assert parse_typed("  claude-opus-4-6 ") == ("", "claude-opus-4-6")
    assert parse_typed("   ") is None


async def test_it_opens_at_once_lists_in_a_worker_and_shows_the_servers_models(home):
    release = threading.Event()
    with serve({"responses": [], "models": TWO}) as server:
        url = server.url_for("openai-chat")
        settings = Settings(provider="openai-chat", base_url=url, model="loopback-small")

        def lister(provider: str, refresh: bool) -> Listing:
            release.wait(10)  # a slow server: the picker must be usable meanwhile
            return list_now(settings, provider, refresh=refresh)

        picker = ModelPicker(("demo", "demo-1"), ["demo", "openai-chat"], {"demo": DEMO}, lister)
        app = Host(picker)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: picker.is_mounted and lines(picker))
            assert lines(picker) == [
                "demo \u00b7 its own models",
                "  demo/demo-1  (current)",
                "openai-chat \u00b7 listing\u2026",
            ]
            await pilot.press("l", "o")  # typing works while the server is asked
            assert picker.query_one(Input).value == "lo"
            release.set()
            await until(pilot, lambda: len(lines(picker)) > 3)
            assert lines(picker) == [
                "demo \u00b7 its own models",
                f"openai-chat \u00b7 {url} \u00b7 listed by the server",
                "  openai-chat/loopback-large  32,768 tokens",
                "  openai-chat/loopback-small  8,192 tokens",
            ]  # "lo" filters out demo-1
            await pilot.press("c", "a", "l")
            assert lines(picker)[1:] == [f"openai-chat \u00b7 {url} \u00b7 listed by the server"]
            await pilot.press(*["backspace"] * 5, *"small", "down", "enter")
            await until(pilot, lambda: app.result != "open")
        assert app.result == ("openai-chat", "loopback-small")
        assert [r["path"] for r in server.requests] == ["/v1/models"]


async def test_a_model_from_the_list_is_picked_and_a_typed_name_taken_as_it_is(home):
    with serve({"responses": [], "models": TWO}) as server:
        settings = Settings(provider="openai-chat", base_url=server.url_for("openai-chat"), model="m")
        picker = ModelPicker(
            ("demo", "demo-1"), ["demo", "openai-chat"], {"demo": DEMO}, lambda p, r: list_now(settings, p)
        )
        app = Host(picker)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: picker.is_mounted and any("loopback-small" in line for line in lines(picker)))
            await pilot.press(*"small")
            await pilot.press("down", "enter")
            await until(pilot, lambda: app.result != "open")
        assert app.result == ("openai-chat", "loopback-small")

        picker = ModelPicker(("demo", "demo-1"), ["demo"], {"demo": DEMO}, None)
        app = Host(picker)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: picker.is_mounted)
            await pilot.press(*"anthropic:claude-opus-4-6", "enter")
            await until(pilot, lambda: app.result != "open")
        assert app.result == ("anthropic", "claude-opus-4-6")  # any provider:model can be typed


async def test_a_server_that_is_down_shows_the_profiles_names_marked(home):
    settings = Settings(provider="openai-chat", base_url="http://127.0.0.1:9/v1", model="m")
    picker = ModelPicker(("demo", "demo-1"), ["openai-chat"], {}, lambda p, r: list_now(settings, p, refresh=r))
    app = Host(picker)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: picker.is_mounted and "listing" not in " ".join(lines(picker)), timeout=8)
        shown = lines(picker)
        assert shown[0].startswith("openai-chat \u00b7 http://127.0.0.1:9/v1 \u00b7 not listed, the profile's names:")
        assert "connection refused" in shown[0]
        assert shown[1] == "  openai-chat/gpt-5.4  (profile)"
        await pilot.press("escape")
        await until(pilot, lambda: app.result != "open")
    assert app.result is None


async def test_f5_lists_again(home):
    calls: list[tuple[str, bool]] = []

    def lister(provider: str, refresh: bool) -> Listing:
        calls.append((provider, refresh))
        return Listing(provider=provider, source="server", models=(ListedModel(f"m{len(calls)}", 4096),))

    picker = ModelPicker(("demo", "demo-1"), ["demo", "openai-chat"], {"demo": DEMO}, lister)
    app = Host(picker)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: picker.is_mounted and any("m1" in line for line in lines(picker)))
        await pilot.press("f5")
        await until(pilot, lambda: any("m3" in line for line in lines(picker)))
    assert calls[0] == ("openai-chat", False) and set(calls[1:]) == {("demo", True), ("openai-chat", True)}


async def test_server_text_is_shown_safely(home):
    hostile = Listing(
        provider="openai-chat",
        source="profile",
        models=(ListedModel("fine"),),
        base_url="http://127.0.0.1:9/v1",
        problem="refused [bold]\x1b[31m red",
    )
    picker = ModelPicker(("demo", "demo-1"), ["openai-chat"], {"openai-chat": hostile}, None)
    app = Host(picker)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: picker.is_mounted and lines(picker))
        assert "\x1b" not in lines(picker)[0] and "\\x1b" in lines(picker)[0] and "[bold]" in lines(picker)[0]


async def test_f10_in_the_app_lists_each_usable_servers_models_and_the_palette_lists_again(home, monkeypatch):
    """The real app: F10 opens the picker at once; the OpenAI-compatible server that
    OPENAI_BASE_URL names is listed in a worker; the palette's *List the provider's models*
    asks it again; picking a listed model switches the chat."""
    from core.engine import Engine
    from core.store import Store
    from tests.tui.conftest import make_app, opened

    with serve({"responses": [{"parts": [{"text": "hi"}]}], "models": TWO}) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url_for("openai-chat"))
        engine = Engine(store=Store(home / "deferchat.db"), settings=Settings(), demo_delay=0)
        app = make_app(engine)
        async with app.run_test(size=(120, 40)) as pilot:
            await opened(pilot)
            await pilot.press("f10")
            await until(pilot, lambda: isinstance(app.screen, ModelPicker))
            picker = app.screen
            assert isinstance(picker, ModelPicker)
            await until(pilot, lambda: sum("loopback-small" in line for line in lines(picker)) == 2)
            assert [line for line in lines(picker) if "\u00b7" in line] == [
                "demo \u00b7 its own models",
                f"openai \u00b7 {server.url_for('openai')} \u00b7 listed by the server",
                f"openai-chat \u00b7 {server.url_for('openai-chat')} \u00b7 listed by the server",
            ]
            listed = len([r for r in server.requests if r["wire"] == "models"])
            await pilot.press("escape")
            await until(pilot, lambda: not isinstance(app.screen, ModelPicker))
            app.action_list_models()  # the palette's "List the provider's models"
            await until(pilot, lambda: isinstance(app.screen, ModelPicker))
            await until(pilot, lambda: len([r for r in server.requests if r["wire"] == "models"]) >= listed + 2)
            picker = app.screen
            await until(pilot, lambda: any("openai-chat/loopback-large" in line for line in lines(picker)))
            await pilot.press(*"openai-chat/loopback-large", "down", "enter")
            await until(pilot, lambda: app.session is not None and app.session.provider_name == "openai-chat")
            assert app.session.provider.model == "loopback-large"


def test_the_picker_at_80x24(snap_compare, engine, home, monkeypatch):
    """The picker in the app as a person sees it on a small terminal: the server's models with
    their windows (from a fresh listing: no request is made), the demo's own model."""
    import json
    import time

    from core.providers.listing import cache_path
    from tests.tui.conftest import make_app, opened

    url = "http://localhost:8000/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    models = [{"id": "loopback-large", "context_window": 32768}, {"id": "loopback-small", "context_window": 8192}]
    cache_path().write_text(
        json.dumps({"version": 1, "listings": {f"openai {url}": {"listed_at": time.time(), "models": models}}})
    )

    async def picker_open(pilot) -> None:
        await opened(pilot)
        await pilot.press("f10")
        await until(pilot, lambda: isinstance(pilot.app.screen, ModelPicker))
        for widget in pilot.app.screen.query("Input"):
            widget.cursor_blink = False
        await pilot.pause(0.05)

    assert snap_compare(make_app(engine), terminal_size=(80, 24), run_before=picker_open)
