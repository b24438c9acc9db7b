"""Characters that render as nothing are made visible (issue 23, item 3).

A variation selector in a recipient (``ceo\\ufe0f@company.example``) showed as
``ceo@company.example``, and ten such characters (variation selectors, the combining grapheme
joiner, Hangul fillers, the braille blank, ...) passed :func:`core.display.safe` unchanged. The
class is every character that draws nothing or a blank: here it is generated from Unicode's own
data (the categories in :mod:`unicodedata`, and the Default_Ignorable_Code_Point property as the
``regex`` module knows it), never from a hand list, and each member must come out of ``safe()``
as a visible escape. In a decisive value (``identifier=True``: an address, a path, a URL) every
character outside printable ASCII that is not a letter is shown too.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from core.display import BLANK_GLYPHS, PROSE_SPACES, escape_char, is_control, mixed_scripts, safe

PROPS = settings(max_examples=200, deadline=None)


@functools.cache
def by_category() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for code in range(sys.maxunicode + 1):
        out.setdefault(unicodedata.category(chr(code)), []).append(chr(code))
    return out


@functools.cache
def default_ignorable() -> list[str]:
    """Unicode's Default_Ignorable_Code_Point property (from the regex module's tables)."""
    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    return regex.findall(r"\p{Default_Ignorable_Code_Point}", every)


@functools.cache
def blank_classes() -> dict[str, list[str]]:
    """Every class of character that renders as nothing or as a blank, from Unicode's data."""
    cats = by_category()
    return {
        "Cf": cats["Cf"],
        "Co": cats["Co"],
        "Cn": cats["Cn"],
        "Zs": [ch for ch in cats["Zs"] if ch not in PROSE_SPACES],
        "Zl/Zp": cats["Zl"] + cats["Zp"],
        "Default_Ignorable": default_ignorable(),
        "Mn ignorable": [ch for ch in default_ignorable() if unicodedata.category(ch) == "Mn"],
        "blank glyph": sorted(BLANK_GLYPHS),
    }


def blank_chars() -> st.SearchStrategy[str]:
    return st.sampled_from(sorted(blank_classes())).flatmap(lambda name: st.sampled_from(blank_classes()[name]))


# Text around a hidden character: letters, digits, ASCII punctuation (never a backslash, so an
# escape in the output can only be one safe() wrote), never a symbol an emoji selector could join.
AROUND = st.text(st.sampled_from("abcXYZ019.@-_/ éüß日本"), max_size=12)

ESCAPE = re.compile(r"\\x[0-9a-f]{2}|\\u[0-9a-f]{4}|\\U[0-9a-f]{8}")


def unescape(shown: str) -> str:
    return ESCAPE.sub(lambda m: chr(int(m.group(0)[2:], 16)), shown)


# --- the report's examples ------------------------------------------------------------------------

REPORTED = [
    "\ufe0f",  # variation selector 16
    "\ufe00",  # variation selector 1
    "\U000e0100",  # variation selector 17 (the supplement)
    "\u180b",  # Mongolian free variation selector
    "\u034f",  # combining grapheme joiner
    "\u115f",  # Hangul choseong filler
    "\u1160",  # Hangul jungseong filler
    "\u3164",  # Hangul filler
    "\uffa0",  # halfwidth Hangul filler
    "\u2800",  # braille pattern blank
    "\u17b4",  # Khmer inherent vowel
    "\u2061",  # function application (invisible math operator)
    "\u2064",  # invisible plus
    "\u180e",  # Mongolian vowel separator
    "\u00ad",  # soft hyphen
    "\u2060",  # word joiner
    "\U000e0041",  # tag latin capital A
]


def test_a_variation_selector_in_a_recipient_is_shown() -> None:
    assert safe("ceo\ufe0f@company.example") == "ceo\\ufe0f@company.example"
    assert safe("ceo\ufe0f@company.example", identifier=True) == "ceo\\ufe0f@company.example"


def test_every_reported_invisible_character_is_shown_in_prose_and_in_identifiers() -> None:
    for ch in REPORTED:
        for identifier in (False, True):
            shown = safe(f"ceo{ch}@company.example", identifier=identifier)
            assert ch not in shown and escape_char(ch) in shown, (hex(ord(ch)), identifier, shown)


# --- the whole class, from Unicode's data ----------------------------------------------------------


def test_the_classes_are_the_size_unicode_says() -> None:
    """The generated classes are Unicode's (a broken generator would make the properties vacuous)."""
    classes = blank_classes()
    assert len(classes["Default_Ignorable"]) > 4000  # Unicode 14+: 4,174 code points
    assert {"\u034f", "\u115f", "\u3164", "\ufe0f", "\U000e0100", "\u180b"} <= set(classes["Default_Ignorable"])
    assert "\u2003" in classes["Zs"] and " " not in classes["Zs"]
    assert len(classes["Co"]) > 130_000


def test_every_blank_character_is_escaped_wherever_it_stands() -> None:
    """Exhaustive over the classes that are small enough: every member, in both modes."""
    classes = blank_classes()
    for name in ("Cf", "Zs", "Zl/Zp", "Default_Ignorable", "blank glyph"):
        for ch in classes[name]:
            for identifier in (False, True):
                shown = safe(f"a{ch}b", identifier=identifier)
                assert shown == f"a{escape_char(ch)}b", (name, hex(ord(ch)), identifier)


@PROPS
@given(AROUND, blank_chars(), AROUND, st.booleans(), st.booleans())
def test_a_blank_character_never_disappears(
    before: str, ch: str, after: str, identifier: bool, multiline: bool
) -> None:
    text = before + ch + after
    shown = safe(text, identifier=identifier, multiline=multiline)
    assert ch not in shown
    assert escape_char(ch) in shown
    assert unescape(shown) == text  # nothing dropped: every character is itself or its escape
    assert safe(shown, identifier=identifier, multiline=multiline) == shown


@PROPS
@given(st.text(st.characters(codec=None, exclude_characters="\\"), max_size=30))
def test_an_identifier_shows_only_printable_ascii_and_letters(text: str) -> None:
    shown = safe(text, identifier=True)
    for ch in shown:
        assert "\x21" <= ch <= "\x7e" or ch == " " or (unicodedata.category(ch)[0] == "L" and not is_control(ch))
    assert not shown.startswith(" ") and not shown.endswith(" ")
    assert unescape(shown) == text
    assert safe(shown, identifier=True) == shown


@PROPS
@given(st.sampled_from(by_category()["Mn"] + by_category()["Me"] + by_category()["Mc"]), AROUND)
def test_a_combining_mark_is_shown_in_an_identifier(mark: str, rest: str) -> None:
    """``cafe\\u0301`` and ``caf\\u00e9`` are two files: in a decisive value the mark is visible."""
    shown = safe("cafe" + mark + rest, identifier=True)
    assert mark not in shown and escape_char(mark) in shown


def test_prose_keeps_ordinary_spaces_marks_and_emoji() -> None:
    """In prose an ordinary space is a space, an accent sits on its letter, and a warning sign
    keeps its emoji selector; the same selector after a letter is shown."""
    assert safe("caf\u00e9 \u00a0ok \u65e5\u672c\u3000x") == "caf\u00e9 \u00a0ok \u65e5\u672c\u3000x"
    assert safe("cafe\u0301 \u0928\u092e\u0938\u094d\u0924\u0947") == "cafe\u0301 \u0928\u092e\u0938\u094d\u0924\u0947"
    assert safe("\u26a0\ufe0f careful, 1\ufe0f\u20e3") == "\u26a0\ufe0f careful, 1\ufe0f\u20e3"
    assert safe("o\ufe0f 1\ufe0f") == "o\\ufe0f 1\\ufe0f"
    assert safe("a\u2003b\u202fc") == "a\\u2003b\\u202fc"  # an em space, a narrow no-break space


def test_identifier_mode_shows_look_alike_punctuation_and_edge_spaces() -> None:
    assert safe("private\u2215a.txt", identifier=True) == "private\\u2215a.txt"
    assert safe("evil\uff0eexample", identifier=True) == "evil\\uff0eexample"
    assert safe(" a b ", identifier=True) == "\\x20a b\\x20"
    assert safe("Notizen/\u00dcbersicht.md", identifier=True) == "Notizen/\u00dcbersicht.md"  # letters stay


def test_mixed_scripts_names_a_latin_word_with_look_alike_letters() -> None:
    assert mixed_scripts("p\u0430ypal.example") == ["Latin", "Cyrillic"]
    assert mixed_scripts("paypal.example") == []
    assert mixed_scripts("\u8cc7\u6599/\u30d5\u30a1\u30a4\u30eb.txt") == []  # Japanese words are not look-alikes
    assert mixed_scripts("\u043f\u0440\u0438\u0432\u0435\u0442 world") == []  # two words, each of one script
