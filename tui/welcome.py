"""The first screen's words: what deferchat is, whether this is the offline demo and the one step
to a real model, what to try, and what the roster is.

The text names no place on the screen ("on the right"): below 100 columns the roster is a line
above the log, and the person can hide it at any width. It names keys as the keymap has them.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.content import Content

from core.display import safe
from core.providers.profiles import KEY_VARIABLES
from tui.state import first_key

OWN_MODEL = "README: Use your own model"  # the README's section on connecting a provider

Keys = Callable[[str], str]
"""An action's key as the keymap has it ("" when none): the app's ``keys_for``."""


def _key(keys: Keys, action: str, default: str) -> str:
    return first_key(keys, action, default)


def welcome(keys: Keys, *, provider: str | None = None, model: str = "") -> Content:
    """The empty chat's text, short enough for 80x24. ``provider``: the open chat's (None while
    it opens: only what is true of every chat is said)."""
    lines: list[tuple[str, str] | str] = [
        ("deferchat", "bold"),
        ": a chat whose model can use more tools than one prompt carries; the ones that do not fit "
        "are deferred, still in its reach.",
    ]
    if provider == "demo":
        lines += [
            "\n\n",
            ("This is the offline demo:", "bold"),
            " a demo model and demo tools, on this machine; nothing leaves it. For a real model, set "
            f"{KEY_VARIABLES} and restart ({OWN_MODEL}).",
            "\n\n",
            "Try \u201cstart a call to +1 555 0100 about the invoice\u201d or \u201cmove my 9am standup "
            "to 10am\u201d. A tool that changes something asks you first "
            f"({_key(keys, 'answer_approval', 'tab')} answers).",
        ]
    elif provider:
        lines += ["\n\n", safe(f"You are chatting with {provider}/{model}. Ask for something its tools can do.")]
    lines += [
        "\n\n",
        "The roster lists the tools: Defined ones are sent in full, Indexed (deferred) ones by name. "
        f"Click one for its detail; {_key(keys, 'toggle_roster', 'ctrl+r')} shows or hides the roster, "
        "/ or ctrl+p lists every command.",
    ]
    return Content.assemble(*lines)
