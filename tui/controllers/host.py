"""The app as its controllers see it: the one seam between :mod:`tui.app` and its rooms.

A controller never imports the app (that would be an import circle: the app imports every
controller). It is handed a :class:`Host`, which :class:`tui.app.DeferchatApp` is: the widgets
the rooms present on, the engine, the facts more than one room reads (the open chat, whether a
turn runs, the approval that waits: each kept by the room that owns it, read here), and the
few Textual services the rooms call. Anything else a room needs of another room it is given
at construction, so every dependency is written down once, in :meth:`DeferchatApp.__init__`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from textual.binding import Binding
    from textual.containers import Vertical
    from textual.geometry import Size
    from textual.notifications import SeverityLevel
    from textual.screen import Screen
    from textual.timer import Timer
    from textual.worker import Worker

    from core.chat.options import ChatOptions
    from core.chat.session import ChatSession
    from core.engine import Engine
    from core.store import Store
    from tui.collector import Collector
    from tui.router import EventRouter
    from tui.slash import SlashRegistry
    from tui.terminal import TerminalSignals
    from tui.widgets.approval import ApprovalBar
    from tui.widgets.chat_log import ChatLog
    from tui.widgets.composer import Composer, QueuedNote
    from tui.widgets.footer import AppFooter
    from tui.widgets.header import ChatHeader
    from tui.widgets.roster import RosterPanel
    from tui.widgets.slash_menu import SlashMenu
    from tui.widgets.status import StatusLine

ScreenResult = TypeVar("ScreenResult")


class Host(Protocol):
    """What a controller may reach of the app."""

    # -- the widgets, made once by the app --------------------------------------------------------
    header_bar: ChatHeader
    log_view: ChatLog
    status_line: StatusLine
    composer: Composer
    queued_note: QueuedNote
    slash_menu: SlashMenu  # the completion list of slash commands, right above the message box
    bottom: Vertical  # the status line, the queue, the approval bar (when one waits), the list, the box
    roster: RosterPanel
    footer: AppFooter
    router: EventRouter
    terminal: TerminalSignals
    collector: Collector

    slash_commands: SlashRegistry  # every room adds its slash commands here (tui/slash.py)

    # -- what the app was started with ------------------------------------------------------------
    options: ChatOptions
    export_dir: Path

    @property
    def engine(self) -> Engine: ...

    @property
    def store(self) -> Store: ...

    async def ready_engine(self) -> Engine:
        """The engine, built off the event loop the first time."""
        ...

    def end_with(self, exc: BaseException) -> None:
        """End the app on a failure it cannot work without."""
        ...

    # -- facts the rooms share (each is kept by one room) -----------------------------------------
    @property
    def session(self) -> ChatSession | None:
        """The open chat (:class:`tui.controllers.sessions.Sessions`)."""
        ...

    @property
    def opening(self) -> bool:
        """A chat is being opened (:class:`tui.controllers.sessions.Sessions`)."""
        ...

    @property
    def turn_running(self) -> bool:
        """A turn of the open chat runs (:class:`tui.controllers.turns.Turns`)."""
        ...

    @property
    def approval_bar(self) -> ApprovalBar | None:
        """The approval bar shown, if one waits (:class:`tui.controllers.approvals.Approvals`)."""
        ...

    def set_status(self, text: str) -> None:
        """What the turn is doing, on the status line (an approval that waits is said over it)."""
        ...

    def focus_input(self) -> None: ...

    def open_session(self, chat_id: str | None) -> None:
        """Open ``chat_id`` (None: a new chat) in place of the open one."""
        ...

    def keys_for(self, action: str) -> str:
        """The keys bound to an app action, as the keymap has them ("" when none)."""
        ...

    # -- the Textual services the rooms call ------------------------------------------------------
    @property
    def screen(self) -> Screen[object]: ...

    @property
    def screen_stack(self) -> list[Screen[Any]]: ...

    @property
    def size(self) -> Size: ...

    @property
    def focused(self) -> Any: ...

    @property
    def is_headless(self) -> bool: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...

    def run_worker(
        self,
        work: Callable[[], Awaitable[Any]] | Awaitable[Any],
        name: str | None = "",
        group: str = "default",
        description: str = "",
        exit_on_error: bool = True,
        start: bool = True,
        exclusive: bool = False,
        thread: bool = False,
    ) -> Worker[Any]: ...

    def push_screen(self, screen: Screen[Any], callback: Callable[[Any], Any] | None = None) -> Any: ...

    async def push_screen_wait(self, screen: Screen[ScreenResult]) -> ScreenResult: ...

    def set_timer(self, delay: float, callback: Callable[[], Any] | None = None) -> Timer: ...

    def refresh_bindings(self) -> None: ...

    def copy_to_clipboard(self, text: str) -> None: ...

    async def run_action(self, action: str) -> bool: ...

    def get_key_display(self, binding: Binding) -> str: ...
