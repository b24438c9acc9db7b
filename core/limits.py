"""How deep untrusted JSON may nest, and reading it without recursion.

JSON from outside (an MCP server's message, a schema, a result, a model's tool arguments) can
nest as deep as its writer likes; Python's ``json`` gives up at about a thousand levels, the
SDK's pydantic parser at two hundred and pydantic's serialiser at about two hundred and fifty,
each with an exception that ends far more than the one value. Nothing legitimate nests deeper
than :data:`MAX_JSON_DEPTH` (a schema of sixty-four nested objects is already absurd), so:

* :func:`json_depth` measures a value without recursion (and stops counting past a limit);
* :func:`capped` replaces every part of a value deeper than a limit by :func:`too_deep_marker`;
* :func:`loads_capped` reads JSON text of any depth without recursion, the parts deeper than
  the limit skipped and marked, so the rest of the message (the other tools of a listing, the
  id of a response) is still read;
* :func:`is_too_deep` tells a value that holds a marker, or nests deeper than the limit.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_JSON_DEPTH = 64
"""How deep a schema, a result or a tool use's arguments may nest (objects and arrays)."""

MESSAGE_DEPTH = MAX_JSON_DEPTH + 16
"""How deep a whole JSON-RPC message may nest: a value at its limit, inside its envelope."""

TOO_DEEP = "deferchat.too_deep"


def too_deep_marker(limit: int = MAX_JSON_DEPTH) -> dict[str, str]:
    """What stands in for a part of a value that nested deeper than ``limit``."""
    return {TOO_DEEP: f"nested deeper than {limit} levels; not read"}


def json_depth(value: Any, limit: int | None = None) -> int:
    """How many objects and arrays deep ``value`` nests (a scalar is 0), counted without
    recursion; past ``limit`` it stops and returns ``limit + 1``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if limit is not None and deepest > limit:
                return limit + 1
        stack.extend((child, depth) for child in children if isinstance(child, dict | list | tuple))
    return deepest


def holds_marker(value: Any) -> bool:
    """Whether ``value`` holds a :func:`too_deep_marker` anywhere (checked without recursion)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if TOO_DEEP in item:
                return True
            stack.extend(v for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, dict | list))
    return False


def is_too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value`` nests deeper than ``limit`` or lost a part that did (a marker)."""
    return json_depth(value, limit) > limit or holds_marker(value)


def bounded_arguments(value: Any, limit: int = MAX_JSON_DEPTH) -> Any:
    """A tool use's arguments as deferchat keeps them: as they came, or, nested deeper than
    ``limit``, a marker in their place (whole: a call is never run on arguments cut short). The
    pipeline refuses a call whose arguments are a marker (``tool.arguments_invalid``)."""
    return too_deep_marker(limit) if json_depth(value, limit) > limit else value


def capped(value: Any, limit: int) -> Any:
    """``value`` with every object or array deeper than ``limit`` replaced by a marker; the
    value itself when it is within the limit. Without recursion."""
    if json_depth(value, limit) <= limit:
        return value

    def shallow(item: Any) -> Any:
        return dict(item) if isinstance(item, dict) else list(item)

    root = shallow(value)
    stack: list[tuple[Any, int]] = [(root, 1)]
    while stack:
        container, depth = stack.pop()
        keys = list(container) if isinstance(container, dict) else range(len(container))
        for key in keys:
            child = container[key]
            if not isinstance(child, dict | list | tuple):
                continue
            if depth + 1 > limit:
                container[key] = too_deep_marker(limit)
            else:
                container[key] = copy = shallow(child)
                stack.append((copy, depth + 1))
    return root


# --- reading JSON text of any depth ---------------------------------------------------------------

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_SKIP = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)
_LITERALS = {"true": True, "false": False, "null": None, "NaN": float("nan"), "Infinity": float("inf")}


def _skip_value(text: str, pos: int) -> int:
    """The end of the object or array that opens at ``pos`` (its strings skipped whole)."""
    depth = 0
    for m in _SKIP.finditer(text, pos):
        token = m.group(0)
        if token in "[{":
            depth += 1
        elif token in "]}":
            depth -= 1
            if depth == 0:
                return m.end()
    raise json.JSONDecodeError("an object or array that never closes", text, pos)


def _scalar(text: str, pos: int) -> tuple[Any, int]:
    from json.decoder import scanstring  # type: ignore[attr-defined]

    ch = text[pos : pos + 1]
    if ch == '"':
        return scanstring(text, pos + 1)
    for word, value in _LITERALS.items():
        if text.startswith(word, pos):
            return value, pos + len(word)
    if text.startswith("-Infinity", pos):
        return float("-inf"), pos + 9
    m = _NUMBER.match(text, pos)
    if m is None or m.end() == pos:
        raise json.JSONDecodeError("expected a value", text, pos)
    integer, frac, exp = m.groups()
    return (float(integer + (frac or "") + (exp or "")) if frac or exp else int(integer)), m.end()


def loads_capped(text: str, limit: int) -> Any:
    """``json.loads(text)`` for text of any depth, without recursion: objects and arrays deeper
    than ``limit`` are skipped and stand as :func:`too_deep_marker`. Raises ``JSONDecodeError``."""
    stack: list[Any] = []  # open containers, innermost last
    keys: list[str | None] = []  # the key each open object is waiting to fill
    root: Any = None
    have_root = False
    pos = _WS.match(text, 0).end()  # type: ignore[union-attr]
    n = len(text)

    def add(value: Any) -> None:
        nonlocal root, have_root
        if not stack:
            root, have_root = value, True
        elif isinstance(stack[-1], list):
            stack[-1].append(value)
        else:
            stack[-1][keys[-1]] = value

    expect_value = True
    while True:
        if expect_value:
            if pos >= n:
                raise json.JSONDecodeError("unexpected end of the text", text, pos)
            ch = text[pos]
            if ch in "{[":
                if len(stack) >= limit:
                    pos = _skip_value(text, pos)
                    add(too_deep_marker(limit))
                    expect_value = False
                else:
                    container: Any = {} if ch == "{" else []
                    add(container)
                    stack.append(container)
                    keys.append(None)
                    pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
                    closer = "}" if ch == "{" else "]"
                    if text[pos : pos + 1] == closer:
                        stack.pop()
                        keys.pop()
                        pos += 1
                        expect_value = False
                    elif ch == "{":
                        pos = _key(text, pos, keys)
                    continue
            else:
                value, pos = _scalar(text, pos)
                add(value)
                expect_value = False
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if not stack:
            if not have_root:
                raise json.JSONDecodeError("expected a value", text, pos)
            if pos != n:
                raise json.JSONDecodeError("extra data", text, pos)
            return root
        ch = text[pos : pos + 1]
        top = stack[-1]
        if ch == ",":
            pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
            if isinstance(top, dict):
                pos = _key(text, pos, keys)
            expect_value = True
        elif ch == ("}" if isinstance(top, dict) else "]"):
            stack.pop()
            keys.pop()
            pos += 1
        else:
            raise json.JSONDecodeError("expected ',' or the end of an object or array", text, pos)


def _key(text: str, pos: int, keys: list[str | None]) -> int:
    from json.decoder import scanstring  # type: ignore[attr-defined]

    if text[pos : pos + 1] != '"':
        raise json.JSONDecodeError("expected a property name in double quotes", text, pos)
    key, pos = scanstring(text, pos + 1)
    pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
    if text[pos : pos + 1] != ":":
        raise json.JSONDecodeError("expected ':'", text, pos)
    keys[-1] = key
    return _WS.match(text, pos + 1).end()  # type: ignore[union-attr]


def loads_bounded(text: str | bytes, limit: int = MESSAGE_DEPTH) -> Any:
    """JSON text as a value nesting at most ``limit`` levels: ``json.loads`` when it can (the
    common case, at C speed), :func:`loads_capped` when the text nests too deep for it; parts
    deeper than ``limit`` stand as markers. Raises ``ValueError`` for text that is not JSON."""
    try:
        value = json.loads(text)
    except RecursionError:
        return loads_capped(text.decode("utf-8") if isinstance(text, bytes) else text, limit)
    return capped(value, limit)
