"""Names in a search query: the forms a model writes a tool's name in, and where a query names one
(the whole query, a ``select:`` list, a quoted string, an identifier-shaped mention in running
text); plus the near-spelling test of the fallback tier. :class:`core.deferral.search.ToolSearchIndex`
puts the tools a query names first."""

from __future__ import annotations

import re
from collections.abc import Callable

WORD = re.compile(r"[^\W_]+")
"""A run of word characters (letters and digits; ``_`` separates)."""

# -- -----------------------------------------------------------------------------

SELECT = re.compile(r"\s*select\s*:\s*(.*)", re.IGNORECASE | re.DOTALL)
# A quoted name: "..." or `...` anywhere, '...' only where the quotes are not apostrophes.
_QUOTED = re.compile(r'"([^"\n]{1,200})"|`([^`\n]{1,200})`|(?<!\w)\'([^\'\n]{1,200})\'(?!\w)')
# A word shaped like an identifier: ``_``, ``.``, ``/`` or ``:`` between word characters, or a
# camelCase hump. A hyphen alone is not enough (``to-do``, ``car-rental`` are English); it joins
# a run that holds a shaped word (``gmail-work send_message``).
_IDENT_SHAPE = re.compile(r"[^\W_][._/:]+[^\W_]|[^\W_]_+[^\W_]|[a-z][A-Z]")
EDGE = "\"'`.,;:!?()[]{}<>"
_MAX_NAME_CHARS = 300  # a longer query or quote is not a name
_WINDOW = 3  # an identifier-shaped mention spans at most three words ("gmail-work send_message")


def name_key(text: str) -> str:
    """A name with case and separators taken out: ``Gmail-Work/sendMessage`` -> ``gmailworksendmessage``.

    Two spellings of one name (dotted, wire ``__``, ``/``, ``:``, ``-``, spaces, camelCase,
    any case) have the same key.
    """
    return "".join(WORD.findall(text)).casefold()


def name_forms(name: str) -> list[tuple[int, str]]:
    """The ways a model writes a tool's name, each with its tier (0 is the most complete).

    ``mcp.gmail_work.send_message`` -> the name and its wire name
    (:func:`core.providers.wirenames.encode`: ``mcp__gmail_work__send_message``, or a hashed
    form for a long or odd name) at tier 0; ``gmail_work.send_message`` (server plus tool,
    any shorter dotted tail with two parts or more) at 1; ``send_message`` (the bare tool
    name, the last dotted part) at 2. Every provider adapter uses the same wire encoding.
    """
    from core.providers.wirenames import encode  # deferred: importing core.providers loads profiles

    forms = [(0, name), (0, encode(name))]
    parts = name.split(".")
    forms.extend((1 if i < len(parts) - 1 else 2, ".".join(parts[i:])) for i in range(1, len(parts)))
    return forms


def name_phrases(query: str) -> list[str]:
    """The spans of a query that may be a tool name as a whole, most deliberate first.

    A ``select:a,b`` list (only its items); else the whole query, then its quoted strings that
    are shaped like identifiers (a quoted plain word, ``'temperature'``, is an argument value
    far more often than a tool name; the whole query can still be one).
    """
    selected = SELECT.match(query)
    if selected:
        return [item.strip().strip(EDGE) for item in selected.group(1).split(",")]
    phrases = [query] if len(query) <= _MAX_NAME_CHARS else []
    quoted = (next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(query))
    phrases += [q for q in quoted if _IDENT_SHAPE.search(q)]
    return phrases


def spelling_rank(phrase: str, form: str) -> int:
    """0 when ``phrase`` is ``form`` as written, 1 when it is but for case, 2 otherwise."""
    if phrase == form:
        return 0
    return 1 if phrase.casefold() == form.casefold() else 2


def mentions(query: str, known: Callable[[str], bool]) -> list[str]:
    """Names mentioned inside running text: runs of up to three words, one of them shaped like
    an identifier (``send_message``, ``gmail-work``, ``sendMessage``), that ``known`` accepts;
    left to right, the longest run at each place, a matched run not looked inside again."""
    tokens = [t.strip(EDGE) for t in query.split()]
    shaped = [bool(_IDENT_SHAPE.search(t)) for t in tokens]
    found, i = [], 0
    while i < len(tokens):
        for size in range(min(_WINDOW, len(tokens) - i), 0, -1):
            phrase = " ".join(tokens[i : i + size])
            if any(shaped[i : i + size]) and known(name_key(phrase)):
                found.append(phrase)
                i += size
                break
        else:
            i += 1
    return found


def within(a: str, b: str, budget: int) -> bool:
    """Whether the optimal-string-alignment distance of ``a`` and ``b`` is at most ``budget``."""
    if a == b:
        return True
    if abs(len(a) - len(b)) > budget:
        return False
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > budget:
            return False
        prev2, prev = prev, cur
    return prev[-1] <= budget
