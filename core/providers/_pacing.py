"""Bounds on the bytes of a provider's answer: its first byte, and the silence between two pieces.

The SDKs bound each socket read (httpx's ``read`` timeout) but nothing in all: a server that sends
a byte every so often keeps a request alive for ever, and a read timeout long enough for a model
that thinks before it answers is as long between two pieces of the answer. Counting on the
events the SDK parses would not do either: the SDKs drop Anthropic's ``ping`` events and SSE
comments, the very signs of life a provider sends while it thinks.

So the bounds sit on the bytes: :func:`install` adds a response hook (httpx's own
``event_hooks``) to the HTTP client an SDK sends with, and the hook wraps each answer's body in
a :class:`PacedStream`, which gives the first body byte until ``started + first_byte`` and every
later piece ``idle`` seconds, then raises :class:`~core.providers._common.Stall`. Which bounds
apply comes from :data:`PACE`, a context variable the adapter sets while it sends (the hook runs
inside the SDK's ``send``, in the adapter's task), so a client shared by two adapters paces each
request by its own adapter's bounds and a request no adapter sent is left alone.

Imported when an adapter first builds its SDK client: it imports httpx2.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass

import httpx2

from core.providers._common import Stall
from core.providers.profiles import Waits

BACKSTOP = 5.0
"""How far past our own bounds the socket-level read timeout sits: it never decides a stall our
bounds see first, so each stall is reported by the bound it broke."""


@dataclass
class Pace:
    """The bounds for one request, and when it went out (``loop.time()``). ``deadline`` is the
    adapter's first-byte scope: the request hook moves it to the moment the request is sent, so
    the SDK's own preparation of a long history never counts as the server's silence."""

    waits: Waits
    started: float
    deadline: asyncio.Timeout | None = None

    def sent(self, now: float) -> None:
        self.started = now
        if self.deadline is not None and not self.deadline.expired():
            self.deadline.reschedule(now + self.waits.first_byte)


PACE: ContextVar[Pace | None] = ContextVar("deferchat_provider_pace", default=None)


def sdk_timeout(waits: Waits) -> httpx2.Timeout:
    """The ``timeout=`` an SDK client gets: the connect bound as httpx's own, and the socket-level
    read and write bounds as a backstop behind :class:`PacedStream` and the adapter's first-byte
    deadline (a trickle of bytes is what only those see)."""
    read = max(waits.first_byte, waits.idle) + BACKSTOP
    return httpx2.Timeout(connect=waits.connect, read=read, write=waits.first_byte + BACKSTOP, pool=waits.connect)


class PacedStream(httpx2.AsyncByteStream):
    """An answer's body whose first byte and every later gap are bounded (see the module). The
    first byte is due at a fixed time; each later wait starts when the reader asks for the next
    piece, so the reader's own work between pieces never counts as the server's silence. The
    bounds run on across readers: an SDK that reads the rest of a body after its end marker (to
    reuse the connection) reads on with the idle bound, not a first byte long past."""

    def __init__(self, inner: httpx2.AsyncByteStream, pace: Pace):
        self._inner = inner
        self._first_due: float | None = pace.started + pace.waits.first_byte
        self._first_byte = pace.waits.first_byte
        self._idle = pace.waits.idle

    async def __aiter__(self) -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        pieces = aiter(self._inner)
        while True:
            first = self._first_due is not None
            deadline = self._first_due if self._first_due is not None else loop.time() + self._idle
            scope = asyncio.timeout_at(deadline)
            try:
                async with scope:
                    piece = await anext(pieces)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if scope.expired():
                    raise (Stall("first_byte", self._first_byte) if first else Stall("idle", self._idle)) from None
                raise
            self._first_due = None
            yield piece  # outside the deadline: the reader's own awaits are not ours to time

    async def aclose(self) -> None:
        await self._inner.aclose()


async def mark_sent(request: httpx2.Request) -> None:
    """The request hook: the first byte is due ``first_byte`` after the request goes out."""
    pace = PACE.get()
    if pace is not None:
        pace.sent(asyncio.get_running_loop().time())


async def pace_response(response: httpx2.Response) -> None:
    """The response hook: pace the body of an answer an adapter asked for."""
    pace = PACE.get()
    body = response.stream
    if pace is not None and isinstance(body, httpx2.AsyncByteStream) and not isinstance(body, PacedStream):
        response.stream = PacedStream(body, pace)


def install(client: httpx2.AsyncClient) -> None:
    """Pace the answers ``client`` receives for an adapter (once, however often it is called)."""
    hooks = client.event_hooks
    if mark_sent not in hooks["request"]:
        hooks["request"].append(mark_sent)
    if pace_response not in hooks["response"]:
        hooks["response"].append(pace_response)
