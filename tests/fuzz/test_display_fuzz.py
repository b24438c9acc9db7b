"""Display safety (core/display.py), fuzzed: whatever escapes, bidi controls and control
characters are injected into a string, the sanitised text holds none of them (so no terminal
can obey it), shows each one, keeps everything else, can be encoded for the terminal, and
sanitising it again changes nothing. The discovery rule for tool names agrees."""

from __future__ import annotations

import unicodedata

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.display import BIDI_CONTROLS, escape_char, is_control, safe
from core.mcp.convert import listed_tool_problem

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SEQUENCES = [
    "\x1b[2K",
    "\x1b[1G",
    "\x1b[31;1m",
    "\x1b[8m",
    "\x1b[?1049h",
    "\x1b[6n",
    "\x1b]0;title\x07",
    "\x1b]52;c;aGk=\x1b\\",
    "\x1b]8;;https://x.example\x1b\\link\x1b]8;;\x1b\\",
    "\x1bP+q544e\x1b\\",
    "\x1b_apc\x1b\\",
    "\x1bc",
    "\x1b7",
    "\x1b(0",
    "\x9b2J",
    "\x9d0;t\x9c",
    "\x90q\x9c",
    "\r",
    "\b",
    "\x00",
    "\x7f",
    "\x85",
    "\u2028",
    "\u2029",
    "\ufeff",
    "\u200b",
    "\U000e0041\U000e007f",
    "\ud83d",
]
CONTROLS = st.one_of(
    st.sampled_from(SEQUENCES),
    st.sampled_from(sorted(BIDI_CONTROLS)),
    st.characters(codec=None, categories=["Cc", "Cf", "Cs", "Zl", "Zp", "Co", "Cn"]),
)
# Ordinary text: nothing the sanitiser escapes (the invisible characters have their own
# property tests, tests/unit/test_invisible.py, against Unicode's own lists).
TEXT = st.text(st.characters(codec=None).filter(lambda ch: not is_control(ch)), max_size=20)


@st.composite
def hostile(draw: st.DrawFn) -> str:
    """Ordinary text with escapes, bidi controls and control characters put anywhere."""
    parts = draw(st.lists(st.one_of(TEXT, CONTROLS, st.sampled_from(["\n", "\t", "\r\n", " "])), max_size=12))
    return "".join(parts)


@FUZZ
@given(hostile(), st.booleans())
def test_nothing_a_terminal_obeys_survives_and_a_second_pass_changes_nothing(text: str, multiline: bool) -> None:
    shown = safe(text, multiline=multiline)
    allowed = "\n\t" if multiline else ""
    assert not any(is_control(ch) and ch not in allowed for ch in shown), repr(shown)
    assert "\x1b" not in shown and "\x9b" not in shown and "\r" not in shown
    assert not (set(shown) & BIDI_CONTROLS)
    shown.encode("utf-8")  # no lone surrogate: the terminal can be written to
    assert safe(shown, multiline=multiline) == shown


@FUZZ
@given(hostile(), st.booleans())
def test_each_removed_character_is_shown_and_the_rest_is_kept(text: str, multiline: bool) -> None:
    """Reading the output left to right recovers the input: every character is itself or its
    visible escape (nothing is dropped silently)."""
    shown = safe(text, multiline=multiline)
    source = text.replace("\r\n", "\n") if multiline else text
    rebuilt = "".join(ch if (not is_control(ch) or (multiline and ch in "\n\t")) else escape_char(ch) for ch in source)
    assert shown == rebuilt


@FUZZ
@given(TEXT)
def test_text_without_controls_is_shown_as_it_is(text: str) -> None:
    assert safe(text) == text
    assert safe(text, multiline=True) == text


@FUZZ
@given(hostile(), st.integers(min_value=1, max_value=40))
def test_a_clipped_text_is_at_most_max_len_and_stays_clean(text: str, most: int) -> None:
    shown = safe(text, max_len=most)
    assert len(shown) <= most
    assert safe(shown) == shown
    assert safe(shown, max_len=most) == shown


NAME_CHARS = st.sampled_from(
    [
        *"abcXYZ019._-",
        "\x1b",
        "\x07",
        "\x9b",
        "\u202e",
        "\u2066",
        "\u200e",
        "\u200b",
        "\ufeff",
        "\u2028",
        "\U000e0041",
        "\x00",
        "\x7f",
    ]
)


@FUZZ
@given(st.text(NAME_CHARS, min_size=1, max_size=30))
def test_discovery_refuses_exactly_the_names_the_sanitiser_would_change(name: str) -> None:
    problem = listed_tool_problem({"name": name, "inputSchema": {"type": "object"}})
    if safe(name) != name:
        assert problem is not None and "control characters" in problem
    else:
        assert problem is None or "control characters" not in problem
        assert not any(unicodedata.category(ch) in ("Cc", "Cf") for ch in name)
