"""Display safety: the one sanitiser every untrusted string passes before a terminal shows it.

Tool and server names, descriptions, arguments, results and server messages come from MCP
servers, devices, web pages and the model; any of them can carry bytes a terminal obeys. An
MCP tool named ``"x\\x1b[2K\\rApprove mcp.weather.read_forecast [NONE] {}"`` would rewrite the
CLI's approval prompt so that a money transfer reads like a weather lookup. :func:`safe` makes
such a string inert and shows what it held:

* C0 and C1 control characters and DEL (category ``Cc``): ESC, BEL, backspace, carriage
  return, the 8-bit CSI ``\\x9b`` ... Every ANSI escape sequence (CSI, OSC, DCS, APC, PM, SOS,
  7-bit or 8-bit) starts with one, so none survives as a sequence: ``\\x1b[31m`` is shown as
  the text ``\\x1b[31m``.
* Format characters (``Cf``): the bidi embeddings, overrides and isolates U+202A-U+202E,
  U+2066-U+2069, the marks U+200E, U+200F, U+061C, zero-width characters, and the invisible tag
  characters U+E0000-U+E007F.
* Line and paragraph separators (``Zl``, ``Zp``) and lone surrogates (``Cs``, which cannot be
  encoded for the terminal at all).

Each one is replaced by a visible escape: ``\\xNN`` below U+0100, ``\\uNNNN``, else
``\\UNNNNNNNN`` (so ``U+202E`` shows as ``\\u202e``). Nothing is dropped silently. A caller that
shows several lines (a result, a description) passes ``multiline=True`` and keeps ``\\n`` and
``\\t`` (a ``\\r\\n`` line end becomes ``\\n``; a lone ``\\r`` is still shown as ``\\x0d``, since it
moves the cursor back over the line). :func:`safe` is idempotent: its output holds no character
it would change.

This is the same class of characters that discovery refuses in a tool name
(:func:`core.mcp.convert.listed_tool_problem` asks :func:`is_control`). Textual's ``Content``
and Rich's ``Text`` do not interpret ANSI in plain strings, but they pass bidi and control
characters through to the terminal, so the TUI sanitises at its presentation boundary too.
"""

from __future__ import annotations

import unicodedata

CONTROL_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})

# The bidi controls, named for tests and docs; all of them are format characters (Cf).
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")

ELLIPSIS = "\u2026"


def is_control(ch: str) -> bool:
    """A character a terminal may obey or that hides from the reader: controls (C0, C1, DEL),
    format characters (bidi, zero-width, tags), line and paragraph separators, lone surrogates."""
    return unicodedata.category(ch) in CONTROL_CATEGORIES


def escape_char(ch: str) -> str:
    """The visible form of one character: ``\\x1b``, ``\\u202e``, ``\\U000e0041``."""
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def safe(text: str, *, multiline: bool = False, max_len: int | None = None) -> str:
    """``text`` safe to show in a terminal, with every control, escape and bidi character visible.

    ``multiline``: keep newlines and tabs (``\\r\\n`` becomes ``\\n``). ``max_len``: at most that
    many characters, the last one an ellipsis when the text was clipped.
    """
    if multiline:
        text = text.replace("\r\n", "\n")
    out = []
    for ch in str(text):
        if multiline and ch in "\n\t":
            out.append(ch)
        elif is_control(ch):
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
