"""Work done once per message of a long chat, not once per request.

A chat's history reaches every request as a list of message dicts that mostly only grows at its
end: the turn loop keeps the same dict for a stored message across steps and turns
(:mod:`core.chat.history`), and each room that reads the history (the conversion for a target
API, a strategy's readers, an adapter's wire form) keeps what it made of the last request's list.
:func:`shared_prefix` finds how much of a new list is the very same objects as the last one, at C
speed; :class:`PrefixMemo` runs a per-message step only past that point.

Identity is what makes this cheap: the same object is the same item at once (a list comparison
tries identity before equality), and one that is the same object cannot have changed, as the
history never mutates a message it has handed out. An item that is a new object is compared by
value: a rewritten message that holds other blocks is read again, one equal to the last reads the
same, which is all a step that depends only on its item (and the state before it) needs.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

I = TypeVar("I")  # noqa: E741 - an item of the list
O = TypeVar("O")  # noqa: E741 - what the step makes of it
S = TypeVar("S")  # the state threaded through the items


def shared_prefix(old: list[Any], new: list[Any]) -> int:
    """How many leading items of ``new`` are those of ``old``: the same objects, or equal ones
    (list comparison tries identity first, so a long run of the same objects compares at memory
    speed; an equal message reads the same as the one it equals). The usual difference is at the
    end, so it is looked for there first."""
    n = min(len(old), len(new))
    if old[:n] == new[:n]:
        return n
    k = n
    while k and not (old[k - 1] is new[k - 1] or old[k - 1] == new[k - 1]):
        k -= 1
    if old[:k] == new[:k]:
        return k
    same = list(map(operator.eq, old, new))  # a difference further back: find the first
    return same.index(False)


class PrefixMemo(Generic[I, O, S]):
    """A left fold over a list, remembered between calls: ``step(state, item) -> (state, output)``.

    :meth:`run` returns every item's output and the state after the last one, running ``step``
    only on the items past the part of the list it saw last time (by identity). States are kept
    for the last ``horizon`` places, so a list whose last few items changed (a message rewritten,
    the tail of a conversion rebuilt) resumes from there; anything earlier starts over. ``step``
    must not mutate a state it was given: it returns a new one when something changed (most
    items change nothing, and then it returns the state it got). ``key`` names whatever else the
    outputs depend on: a new key starts over.
    """

    def __init__(self, step: Callable[[S, I], tuple[S, O]], start: S, *, horizon: int = 16):
        self._step = step
        self._start = start
        self._horizon = horizon
        self._key: Hashable = None
        self._items: list[I] = []
        self._outputs: list[O] = []
        self._states: list[S] = []  # the state after each of the last ``len(_states)`` items
        self.stepped = 0  # items stepped in all (what a test reads to see the work saved)
        self.kept = 0  # how many leading outputs the last run kept from the run before

    def run(self, items: Sequence[I], key: Hashable = None) -> tuple[list[O], S]:
        items = list(items)
        old = len(self._items)
        keep = shared_prefix(self._items, items) if key == self._key else 0
        kept_states = len(self._states)
        if keep and keep < old - kept_states + 1:
            keep = 0  # past the states kept: start over
        if keep:
            state = self._states[keep - (old - kept_states) - 1]
            outputs = self._outputs[:keep]
            states = self._states[: keep - (old - kept_states)]
        else:
            state, outputs, states = self._start, [], []
        step = self._step
        for item in items[keep:]:
            state, out = step(state, item)
            outputs.append(out)
            states.append(state)
        self.stepped += len(items) - keep
        self.kept = keep
        self._key = key
        self._items = items
        self._outputs = outputs
        self._states = states[-self._horizon :]
        return outputs, state
