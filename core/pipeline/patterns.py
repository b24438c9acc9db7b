"""Regular expressions from a schema someone else wrote, run with a time bound.

A JSON Schema's ``pattern``, ``patternProperties`` (and the ``additionalProperties`` and
``unevaluatedProperties`` that read them) and ``propertyNames`` hold regular expressions that an
MCP server chose. jsonschema runs them with Python's ``re``, which cannot be interrupted and holds
the GIL while it backtracks: ``^(a+)+$`` against forty ``a`` and a ``!`` freezes the process,
event loop, provider stream and other servers included, for as long as it takes.

Here they run with the ``regex`` package instead, with a ``timeout`` (it stops a match that
runs past it) and ``concurrent=True`` (it lets go of the GIL while it matches), inside a
deadline for the whole validation (:func:`deadline`), and off the event loop (the pipeline
validates in a worker thread). A pattern that runs out of time raises :class:`PatternTimeout`,
which the validation reports as a problem of the call; the pattern is never run unbounded.

The patterns are read as JSON Schema says (ECMA-262): ``$`` is the end of the text, so
``^[a-z]+$`` does not accept ``"abc\\n"`` as Python's ``$`` would (:func:`ecma`).

jsonschema's keyword functions are used as they are, not copied: :func:`bounded_keywords` gives
each a namespace in which ``re`` is the bounded engine (:data:`BOUNDED_RE`), so every regular
expression a keyword runs goes through it.
"""

from __future__ import annotations

import contextlib
import re
import time
import types
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from functools import cache, lru_cache
from typing import Any

PATTERN_SECONDS = 0.5
"""The time one validation may spend in the schema's regular expressions, all of them together."""

_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("deferchat_pattern_deadline", default=None)
"""(when the budget ends on ``time.monotonic()``, how long it was)"""


class PatternTimeout(Exception):
    """A schema's regular expression ran past the validation's time bound."""

    def __init__(self, pattern: str, seconds: float):
        super().__init__(f"the pattern {pattern[:200]!r} took longer than {seconds:g} s to check (it backtracks)")
        self.pattern = pattern
        self.seconds = seconds


@contextlib.contextmanager
def deadline(seconds: float | None = None) -> Iterator[None]:
    """Every bounded match inside shares one budget of ``seconds`` (default
    :data:`PATTERN_SECONDS`)."""
    limit = PATTERN_SECONDS if seconds is None else seconds
    token = _DEADLINE.set((time.monotonic() + limit, limit))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def ecma(pattern: str) -> str:
    """``pattern`` with each ``$`` outside a character class and not escaped read as the end of
    the text (``\\Z``), as ECMA-262 reads it without the multiline flag."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "]":  # "[]...]": a leading ] is a member
                out.append("[]")
                i += 2
                continue
        elif ch == "$":
            ch = r"\Z"
        out.append(ch)
        i += 1
    return "".join(out)


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> Any:
    import regex  # type: ignore[import-untyped]

    return regex.compile(ecma(pattern))


def bounded_search(pattern: str, text: str, flags: int = 0) -> Any:
    """``re.search(pattern, text)`` as the bounded engine runs it (see the module)."""
    ends, total = _DEADLINE.get() or (time.monotonic() + PATTERN_SECONDS, PATTERN_SECONDS)
    seconds = ends - time.monotonic()
    if seconds <= 0:
        raise PatternTimeout(pattern, total)
    compiled = _compiled(pattern)
    try:
        return compiled.search(text, timeout=seconds, concurrent=True)
    except TimeoutError:
        raise PatternTimeout(pattern, total) from None


class _BoundedRe:
    """What a jsonschema keyword sees as ``re``: ``search`` bounded, everything else ``re``'s."""

    def search(self, pattern: str, string: str, flags: int = 0) -> Any:
        return bounded_search(pattern, string, flags)

    def __getattr__(self, name: str) -> Any:
        return getattr(re, name)


BOUNDED_RE = _BoundedRe()

# jsonschema's helpers that keywords call and that run patterns themselves.
_HELPERS = (
    "find_additional_properties",
    "find_evaluated_property_keys_by_schema",
    "find_evaluated_item_indexes_by_schema",
)


def _rebound(fn: Callable[..., Any], namespace: dict[str, Any]) -> Callable[..., Any]:
    copy = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__qualname__ = fn.__qualname__
    copy.__doc__ = fn.__doc__
    return copy


@cache
def _namespace(module_name: str) -> dict[str, Any]:
    """``module_name``'s globals with ``re`` bounded and its pattern-running helpers rebound
    to namespaces of the same kind (so a helper that calls itself stays bounded)."""
    import importlib

    module = importlib.import_module(module_name)
    namespace = dict(vars(module))
    namespace["re"] = BOUNDED_RE
    for name in _HELPERS:
        helper = namespace.get(name)
        if isinstance(helper, types.FunctionType):
            home = helper.__module__
            target = namespace if home == module_name else _namespace(home)
            namespace[name] = _rebound(helper, target) if target is namespace else target[name]
    return namespace


def bounded_keywords(validator_cls: Any) -> dict[str, Callable[..., Any]]:
    """The keyword functions of ``validator_cls`` that come from jsonschema, each running its
    regular expressions through the bounded engine."""
    out: dict[str, Callable[..., Any]] = {}
    for keyword, fn in validator_cls.VALIDATORS.items():
        module = getattr(fn, "__module__", "") or ""
        if isinstance(fn, types.FunctionType) and module.startswith("jsonschema."):
            out[keyword] = _rebound(fn, _namespace(module))
    return out
