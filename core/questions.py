"""A question the core asks and a presentation answers later: the TUI's inline approval, a
server's form. :class:`AnswerQueue` hands each question to whoever awaits
:meth:`~AnswerQueue.next_request` and waits until :meth:`~AnswerQueue.answer` is called with its key."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

Q = TypeVar("Q")
A = TypeVar("A")


class AnswerQueue(Generic[Q, A]):
    """Questions in order, each answered by its key (``key(question)``)."""

    def __init__(self, key: Callable[[Q], str]):
        self._key = key
        self._requests: asyncio.Queue[Q] = asyncio.Queue()
        self._answers: dict[str, asyncio.Future[A]] = {}

    async def ask(self, request: Q) -> A:
        fut: asyncio.Future[A] = asyncio.get_running_loop().create_future()
        key = self._key(request)
        self._answers[key] = fut
        await self._requests.put(request)
        try:
            return await fut
        finally:
            self._answers.pop(key, None)

    async def next_request(self) -> Q:
        return await self._requests.get()

    def answer(self, key: str, answer: A) -> bool:
        fut = self._answers.get(key)
        if fut is None or fut.done():
            return False
        fut.set_result(answer)
        return True

    def pending(self) -> list[str]:
        return list(self._answers)
