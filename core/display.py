"""Display safety: the one sanitiser every untrusted string passes before a terminal shows it.

Tool and server names, descriptions, arguments, results and server messages come from MCP
servers, devices, web pages and the model; any of them can carry bytes a terminal obeys, or
characters that render as nothing. An MCP tool named
``"x\\x1b[2K\\rApprove mcp.weather.read_forecast [NONE] {}"`` would rewrite the CLI's approval
prompt so that a money transfer reads like a weather lookup; a recipient written
``ceo\\ufe0f@company.example`` (a variation selector after the ``o``) looks exactly like
``ceo@company.example`` and is another address. :func:`safe` makes such a string inert and
shows what it held. It shows as a visible escape:

* C0 and C1 control characters and DEL (category ``Cc``): ESC, BEL, backspace, carriage
  return, the 8-bit CSI ``\\x9b`` ... Every ANSI escape sequence (CSI, OSC, DCS, APC, PM, SOS,
  7-bit or 8-bit) starts with one, so none survives as a sequence: ``\\x1b[31m`` is shown as
  the text ``\\x1b[31m``.
* Format characters (``Cf``): the bidi embeddings, overrides and isolates U+202A-U+202E,
  U+2066-U+2069, the marks U+200E, U+200F, U+061C, zero-width space, joiners and the word
  joiner, the invisible math operators U+2061-U+2064, soft hyphen, the Mongolian vowel
  separator, the byte-order mark and the tag characters U+E0000-U+E007F.
* Every other *default-ignorable* code point (Unicode's list of characters a renderer draws as
  nothing): variation selectors (U+FE00-U+FE0F, the Mongolian ones, and the supplement
  U+E0100-U+E01EF), the combining grapheme joiner U+034F, the Hangul fillers U+115F, U+1160,
  U+3164 and U+FFA0, the Khmer inherent vowels U+17B4 and U+17B5, and the reserved ranges.
  A text-or-emoji selector (U+FE0E, U+FE0F) right after a symbol that takes one (``\\u26a0``
  plus U+FE0F is the warning emoji) selects how that symbol looks and is kept in prose.
* Characters that draw a blank though they are not spaces: the braille blank U+2800.
* Spaces other than the ordinary ones (:data:`PROSE_SPACES`: the space, the no-break space and
  the ideographic space): the en, em, thin, hair, figure, punctuation and narrow no-break
  spaces, the medium mathematical space, the Ogham space mark.
* Private-use (``Co``) and unassigned (``Cn``) code points, which a terminal draws as nothing,
  as a box, or as whatever its font puts there.
* Line and paragraph separators (``Zl``, ``Zp``) and lone surrogates (``Cs``, which cannot be
  encoded for the terminal at all).

``identifier=True`` is for the values that decide where an action goes (an email address, a
path, a URL, a phone number, an id; see :mod:`core.pipeline.preview`): there every character
outside printable ASCII is shown escaped unless it is a letter, so look-alike
punctuation (``\\u2215`` for ``/``, ``\\uff0e`` for ``.``), combining marks (``e\\u0301`` is not
``\\u00e9`` to a file system), every non-ASCII space and every selector are visible; a space
at either end is shown as ``\\x20``. :func:`mixed_scripts` names the scripts of a word that
mixes Latin with a look-alike script (``p\\u0430ypal``).

Each one is replaced by a visible escape: ``\\xNN`` below U+0100, ``\\uNNNN``, else
``\\UNNNNNNNN`` (so ``U+202E`` shows as ``\\u202e``). Nothing is dropped silently. A caller that
shows several lines (a result, a description) passes ``multiline=True`` and keeps ``\\n`` and
``\\t`` (a ``\\r\\n`` line end becomes ``\\n``; a lone ``\\r`` is still shown as ``\\x0d``, since it
moves the cursor back over the line). :func:`safe` is idempotent: its output holds no character
it would change.

Discovery refuses a tool name holding any character :func:`is_control` names
(:func:`core.mcp.convert.listed_tool_problem`). Textual's ``Content`` and Rich's ``Text`` do not
interpret ANSI in plain strings, but they pass bidi and control characters through to the
terminal, so the TUI sanitises at its presentation boundary too.
"""

from __future__ import annotations

import unicodedata

CONTROL_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Categories a terminal cannot be trusted to draw as anything: private use and unassigned.
UNDRAWN_CATEGORIES = frozenset({"Co", "Cn"})

# The bidi controls, named for tests and docs; all of them are format characters (Cf).
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")

# Default-ignorable code points that are not format characters (Unicode's
# Other_Default_Ignorable_Code_Point and Variation_Selector; every Cf is escaped anyway).
# tests/unit/test_invisible.py checks the whole Default_Ignorable_Code_Point property against it.
_IGNORABLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian free variation selectors (and the vowel separator, Cf)
    (0x2065, 0x2065),
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0FFF),  # tags, variation selectors supplement, reserved
)
BLANK_GLYPHS = frozenset("\u2800")  # braille pattern blank: not a space, draws as one
PROSE_SPACES = frozenset(" \u00a0\u3000")  # the spaces prose is written with
EMOJI_SELECTORS = frozenset("\ufe0e\ufe0f")  # text / emoji presentation

ELLIPSIS = "\u2026"


def is_ignorable(ch: str) -> bool:
    """A default-ignorable code point: one a renderer shows as nothing (Cf, selectors, fillers)."""
    code = ord(ch)
    return unicodedata.category(ch) == "Cf" or any(lo <= code <= hi for lo, hi in _IGNORABLE_RANGES)


def is_control(ch: str) -> bool:
    """A character a terminal may obey or that hides from the reader wherever it stands:
    controls (C0, C1, DEL), format characters (bidi, zero-width, tags), every other
    default-ignorable code point, blank glyphs, spaces other than :data:`PROSE_SPACES`,
    private-use and unassigned code points, line and paragraph separators, lone surrogates.
    (:func:`safe` keeps an emoji selector right after a symbol in prose; see there.)"""
    category = unicodedata.category(ch)
    return (
        category in CONTROL_CATEGORIES
        or category in UNDRAWN_CATEGORIES
        or (category == "Zs" and ch not in PROSE_SPACES)
        or ch in BLANK_GLYPHS
        or is_ignorable(ch)
    )


def _selects_emoji(text: str, i: int) -> bool:
    """Whether the selector at ``text[i]`` follows a symbol it can change (an emoji base)."""
    if text[i] not in EMOJI_SELECTORS or i == 0:
        return False
    base = text[i - 1]
    if base in "0123456789#*":  # a keycap: 1 U+FE0F U+20E3
        return text[i + 1 : i + 2] == "\u20e3"
    return not base.isascii() and unicodedata.category(base) in ("So", "Sm", "Po")


def _deceives_in_identifier(ch: str) -> bool:
    """Outside printable ASCII and not a letter or a digit: shown escaped in a decisive value."""
    if "\x20" <= ch <= "\x7e":
        return False
    return is_control(ch) or unicodedata.category(ch)[0] != "L"


def escape_char(ch: str) -> str:
    """The visible form of one character: ``\\x1b``, ``\\u202e``, ``\\U000e0041``."""
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def safe(text: str, *, multiline: bool = False, max_len: int | None = None, identifier: bool = False) -> str:
    """``text`` safe to show in a terminal, with every control, escape, bidi and invisible
    character visible.

    ``multiline``: keep newlines and tabs (``\\r\\n`` becomes ``\\n``). ``max_len``: at most that
    many characters, the last one an ellipsis when the text was clipped. ``identifier``: the
    text decides where an action goes (an address, a path, a URL, a phone number): every
    character outside printable ASCII but letters is escaped, and spaces at its ends.
    """
    text = str(text)
    if multiline:
        text = text.replace("\r\n", "\n")
    out = []
    last = len(text) - 1
    for i, ch in enumerate(text):
        if "\x21" <= ch <= "\x7e" or (multiline and ch in "\n\t"):  # printable ASCII: the common case
            out.append(ch)
        elif identifier:
            edge_space = ch == " " and (i == 0 or i == last)
            out.append(escape_char(ch) if edge_space or _deceives_in_identifier(ch) else ch)
        elif is_control(ch) and not _selects_emoji(text, i):
            out.append(escape_char(ch))
        else:
            out.append(ch)
    shown = "".join(out)
    if max_len is not None and len(shown) > max_len:
        shown = shown[: max(0, max_len - 1)] + ELLIPSIS if max_len > 0 else ""
    return shown


def is_safe(text: str, *, multiline: bool = False) -> bool:
    """True when :func:`safe` would leave ``text`` as it is (no length limit)."""
    return safe(text, multiline=multiline) == text


# Scripts whose letters pass for Latin ones (a Cyrillic "а" for an "a").
_LOOKALIKE_SCRIPTS = frozenset({"CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC", "FULLWIDTH", "MATHEMATICAL"})


def _script(ch: str) -> str:
    if ch.isascii():
        return "LATIN"
    try:
        return unicodedata.name(ch).split(" ")[0]
    except ValueError:
        return "UNKNOWN"


def mixed_scripts(text: str) -> list[str]:
    """The scripts of the first word in ``text`` that mixes Latin letters with letters of a
    look-alike script (``["Latin", "Cyrillic"]`` for ``p\\u0430ypal``); empty when none does."""
    word: list[str] = []
    for ch in [*text, " "]:
        if unicodedata.category(ch)[0] == "L":
            word.append(ch)
            continue
        scripts = sorted({_script(c) for c in word}, key=lambda s: (s != "LATIN", s))
        if "LATIN" in scripts and _LOOKALIKE_SCRIPTS & set(scripts):
            return [s.title() for s in scripts]
        word = []
    return []
