"""The first screen's words (issue 19, item 6): what deferchat is, that this is the offline demo
(only when it is) and the one step to a real model, naming the README section that exists; no
place on the screen (the roster is on the right at 120 columns, a line above the log at 80),
keys as the keymap has them; the whole text on screen at 80x24 and 120x40."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.config import Settings
from core.engine import Engine
from core.store import Store
from tests.tui.conftest import make_app, opened, until
from tests.tui.test_layout import rows_in, squash
from core.providers.profiles import KEY_VARIABLES as KEYS
from tui.welcome import OWN_MODEL, welcome

README = Path(__file__).resolve().parents[2] / "README.md"
PLACES = re.compile(r"\b(right|left|above|below|beside|top|bottom)\b", re.I)


def keys(mapping: dict[str, str]):
    return lambda action: mapping.get(action, "")


def test_the_demo_says_so_and_the_step_to_a_real_model() -> None:
    text = welcome(keys({}), provider="demo", model="demo-1").plain
    assert "This is the offline demo" in text and "nothing leaves it" in text
    assert f"set {KEYS} and restart" in text and f"({OWN_MODEL})" in text
    section = OWN_MODEL.split(": ", 1)[1]
    assert f"\n## {section}\n" in README.read_text(encoding="utf-8"), "the README section the welcome names"
    assert "start a call to +1 555 0100 about the invoice" in text  # an example the demo answers
    assert not PLACES.search(text), "the welcome names a place on the screen"


def test_a_real_provider_gets_no_demo_words_and_an_opening_chat_only_the_general_ones() -> None:
    real = welcome(keys({}), provider="anthropic", model="claude-sonnet-4-6").plain
    assert "offline demo" not in real and KEYS not in real
    assert "You are chatting with anthropic/claude-sonnet-4-6" in real
    opening = welcome(keys({}), provider=None).plain
    assert "offline demo" not in opening and "chatting with" not in opening
    assert "The roster lists the tools" in opening and "deferchat" in opening
    assert not PLACES.search(real) and not PLACES.search(opening)


def test_keys_are_named_as_the_keymap_has_them() -> None:
    text = welcome(keys({"toggle_roster": "f11", "answer_approval": "tab"}), provider="demo").plain
    assert "F11 shows or hides the roster" in text and "(Tab answers)" in text
    assert "ctrl+r" not in text


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_welcome_is_on_screen_whole(engine: Engine, size: tuple[int, int]) -> None:
    app = make_app(engine)
    async with app.run_test(size=size) as pilot:
        await opened(pilot)
        hint = app.log_view.query_one("#empty-hint")
        await until(pilot, lambda: "offline demo" in hint.render().plain)
        await pilot.pause(0.1)
        region = app.log_view.region
        assert region.contains_region(hint.region), "the welcome is cut off"
        words = squash(hint.render().plain)
        assert words in squash(" ".join(rows_in(app, hint.region)))
        assert app.roster.display == (size[0] >= 100)  # the place the text does not name


async def test_a_rebound_toggle_is_the_key_the_welcome_names(home: Path) -> None:
    settings = Settings(keymap={"toggle_roster": "f11"})
    app = make_app(Engine(store=Store(home / "deferchat.db"), settings=settings, demo_delay=0))
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        hint = app.log_view.query_one("#empty-hint")
        await until(pilot, lambda: "F11 shows or hides the roster" in hint.render().plain)
