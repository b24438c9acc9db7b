"""While a provider's retry waits: "retrying in N s (attempt k): reason" on the turn's status line.

The adapter waits (a plain, cancellable ``asyncio.sleep``) before each retry of a request that
failed in a way worth another try, and the turn says so first with ``provider.retrying``
(:class:`core.events.ProviderRetrying`). :class:`RetryCountdown` puts that on the line that
says "Working…", counts it down each second, and gives the line back to what it said before
as soon as the model speaks (text, a tool use, a search, usage) or the turn ends or fails. The
stop key works throughout: stopping cancels the turn's task, and with it the wait.

It never fights for the line: when something else writes it meanwhile (the app's "Stopping…",
the end of the turn, a chat opening), the countdown stops and leaves that alone.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Protocol

from core.events import (
    ErrorEvent,
    Event,
    ModelText,
    ModelTextDelta,
    ModelToolSearch,
    ModelToolUse,
    ProviderRetrying,
    TurnCompleted,
    UsageEvent,
)

TICK = 0.2  # seconds between looks at the clock: the shown second changes on time


class Timer(Protocol):
    def stop(self) -> None: ...


class StatusHost(Protocol):
    """What the countdown needs of the app: its status line and a repeating timer."""

    @property
    def status_text(self) -> str: ...

    def set_status(self, text: str) -> None: ...

    def set_interval(self, interval: float, callback: Callable[[], None]) -> Timer: ...


def retry_text(seconds_left: float, attempt: int, reason: str) -> str:
    """The status line for a retry ``seconds_left`` from now (whole seconds, rounded up)."""
    left = math.ceil(seconds_left - 1e-9)
    when = f"retrying in {left} s" if left > 0 else "retrying now"
    return f"{when} (attempt {attempt}): {reason} \u2014 Esc stops"


class RetryCountdown:
    """Shows one retry's wait on ``host``'s status line, counting down. Feed it every event
    of the open chat (:meth:`see`); it acts on those that start or end a wait."""

    def __init__(self, host: StatusHost, clock: Callable[[], float] = time.monotonic) -> None:
        self.host = host
        self.clock = clock
        self.timer: Timer | None = None
        self.deadline = 0.0
        self.attempt = 0
        self.reason = ""
        self.shown = ""  # what the countdown last wrote on the line
        self.before = ""  # what the line said before the wait

    @property
    def active(self) -> bool:
        return self.timer is not None

    def see(self, event: Event) -> None:
        match event:
            case ProviderRetrying():
                self.start(event.seconds, event.attempt, event.reason)
            case (
                ModelTextDelta()
                | ModelText()
                | ModelToolUse()
                | ModelToolSearch()
                | UsageEvent()
                | ErrorEvent()
                | TurnCompleted()
            ):
                self.clear()
            case _:
                pass

    def start(self, seconds: float, attempt: int, reason: str) -> None:
        if not self.active:
            self.before = self.host.status_text
            self.timer = self.host.set_interval(TICK, self.tick)
        self.deadline = self.clock() + max(0.0, seconds)
        self.attempt, self.reason = attempt, reason
        self._write()

    def tick(self) -> None:
        if self.host.status_text != self.shown:  # the line was taken (stopping, the turn ended)
            self._stop_timer()
            return
        self._write()

    def clear(self) -> None:
        """The wait is over: the line says again what it said before, unless it was taken."""
        if not self.active:
            return
        self._stop_timer()
        if self.host.status_text == self.shown:
            self.host.set_status(self.before)

    def _write(self) -> None:
        text = retry_text(self.deadline - self.clock(), self.attempt, self.reason)
        if text != self.host.status_text:
            self.host.set_status(text)
        self.shown = text

    def _stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.stop()
            self.timer = None
