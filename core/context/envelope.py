"""Trust envelopes: untrusted text (MCP descriptions, schemas, results, web pages) is fenced as data.

An envelope looks like::

    <<<EXTERNAL_UNTRUSTED source="mcp.gmail_work" id="408113570926">>>
    ...text from the server...
    <<<END_EXTERNAL_UNTRUSTED id="408113570926">>>

Text inside can never close it, for two independent reasons:

1. every run of three or more angle brackets in the text (fullwidth, small-form and other
   look-alikes included) is replaced by single-angle quotation marks, so no marker of
   either kind can appear inside;
2. the closing marker carries an id derived from the escaped content, which the content
   would have to contain in order to forge, and cannot (it is a hash of itself).

Wrapping is deterministic: the same text and source always give the same bytes.

The rule (docs/ARCHITECTURE.md, "Trust: untrusted text and envelopes"): untrusted text reaches
a prompt only through :func:`fence`. Nothing else in ``core/`` builds a marker (a test reads
every module with ``ast``); :func:`markers` gives the planner a sample pair to measure, and
:func:`escape` cleans untrusted text that sits outside any envelope (a defined tool's
description in the tools array, :func:`escape_schema_text`), so it cannot pose as a marker.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Any

OPEN_TAG = "EXTERNAL_UNTRUSTED"
CLOSE_TAG = "END_EXTERNAL_UNTRUSTED"

# '<' and '>' and the characters that fold to them (NFKC) or look like them. A run of three
# or more becomes single-angle quotation marks (U+2039/U+203A), which are not in these sets,
# so escaping is idempotent.
_LT = "<\uff1c\ufe64\u27e8\u3008\u2329\u276e"
_GT = ">\uff1e\ufe65\u27e9\u3009\u232a\u276f"
# Invisible characters (zero-width, bidi controls, variation selectors) do not break a run: a
# reader, human or model, sees ``<\u200b<\u200b<`` as ``<<<``.
_INVISIBLE = "\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufe00-\ufe0f\ufeff"
_ANGLE_RUN = re.compile(f"[{_LT}](?:[{_INVISIBLE}]*[{_LT}]){{2,}}|[{_GT}](?:[{_INVISIBLE}]*[{_GT}]){{2,}}")
_QUOTES = str.maketrans({**dict.fromkeys(_LT, "\u2039"), **dict.fromkeys(_GT, "\u203a")})
_SOURCE_SAFE = re.compile(r"[^A-Za-z0-9_.:/-]")


def _replace_run(match: re.Match[str]) -> str:
    return match.group(0).translate(_QUOTES)  # each angle a quotation mark; what sat between them stays


def escape(text: str) -> str:
    """Make ``text`` safe to place inside an envelope (no marker can appear in it)."""
    # Strip NULs and other C0 controls except tab/newline: they only ever hide things.
    cleaned = "".join(ch for ch in text if ch in "\t\n" or unicodedata.category(ch) != "Cc")
    return _ANGLE_RUN.sub(_replace_run, cleaned)


def envelope_id(escaped: str, source: str) -> str:
    """Twelve decimal digits derived from the content. Digits tokenize in fixed groups of
    three, so a marker costs the same number of tokens whatever its id: the planner can
    budget an envelope before knowing what ends up inside it."""
    digest = int.from_bytes(hashlib.sha256(f"{source}\0{escaped}".encode()).digest()[:8], "big")
    return f"{digest % 10**12:012d}"


def safe_source(source: str) -> str:
    return _SOURCE_SAFE.sub("_", source)[:80] or "unknown"


def open_marker(source: str, eid: str) -> str:
    return f'<<<{OPEN_TAG} source="{safe_source(source)}" id="{eid}">>>'


def close_marker(eid: str) -> str:
    return f'<<<{CLOSE_TAG} id="{eid}">>>'


def wrap(text: str, source: str) -> str:
    """Fence ``text`` (from ``source``) as untrusted data."""
    body = escape(text)
    eid = envelope_id(body, safe_source(source))
    return f"{open_marker(source, eid)}\n{body}\n{close_marker(eid)}"


def fence(text: str, source: str | None) -> str:
    """``text`` as a prompt may carry it: inside an envelope when it has an untrusted
    ``source`` (see :attr:`core.tools.ToolSpec.envelope_source`), as it is when trusted."""
    return text if source is None else wrap(text, source)


def markers(source: str) -> tuple[str, str]:
    """The open and close markers of an envelope from ``source``, with a sample id: what an
    envelope costs beyond its body (every id has twelve digits, so every id costs the same)."""
    sample = "0" * 12
    return open_marker(source, sample), close_marker(sample)


SCHEMA_TEXT_KEYS = frozenset({"description", "title"})
SCHEMA_VALUE_KEYS = frozenset({"enum", "const", "default", "examples"})  # data a call must match, kept exact


def escape_schema_text(value: Any) -> Any:
    """A JSON Schema with the prose in it (``description`` and ``title`` strings, at any depth)
    passed through :func:`escape`. Values a call must match (``enum``, ``const``, ``default``,
    property names) are left exactly as they are."""
    if isinstance(value, dict):
        return {
            k: v
            if k in SCHEMA_VALUE_KEYS
            else escape(v)
            if k in SCHEMA_TEXT_KEYS and isinstance(v, str)
            else escape_schema_text(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [escape_schema_text(v) for v in value]
    return value


_ENVELOPE = re.compile(
    r'<<<EXTERNAL_UNTRUSTED source="(?P<source>[^"]*)" id="(?P<id>[0-9]{12})">>>\n'
    r"(?P<body>.*?)\n<<<END_EXTERNAL_UNTRUSTED id=\"(?P=id)\">>>",
    re.S,
)


def find_envelopes(text: str) -> list[tuple[str, str]]:
    """(source, body) of every well-formed envelope in ``text``, for tests and tooling."""
    return [(m.group("source"), m.group("body")) for m in _ENVELOPE.finditer(text)]
