"""Turns: a message sent (or queued while a turn runs), a turn run as a worker, stopped,
retried, replaced by an edit of the last message, or a parked one resumed.

One turn at a time: what is sent meanwhile waits in the queue (:mod:`tui.controllers.drafts`)
and goes when the turn ends well; a turn that fails or is stopped gives the queue back to the
box. While a turn streams, Python's cyclic collector waits (:mod:`tui.collector`). The engine
decides what a retry or an edit runs again (:mod:`core.chat.retry`); the log is shown as the
model will see the chat.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from core.errors import UserFacingError
from core.events import Event, ToolApprovalRequired, ToolApproved, ToolDenied, TurnCompleted, TurnStarted
from tui.controllers.approvals import Approvals, ParkedAnswer
from tui.controllers.drafts import Drafts
from tui.controllers.host import Host, open_chat
from tui.state import NoteItem, items_from_history, stopped_turns

if TYPE_CHECKING:
    from textual.timer import Timer
    from textual.worker import Worker

    from core.chat.retry import RetryPlan
    from core.chat.session import ChatSession

log = logging.getLogger("deferchat.tui")

COLLECT_AFTER = 0.5  # seconds after a turn ends (or stops for an approval) before the collector runs again
STOP_WAIT = 5.0  # seconds a quit waits, at most, for the stopped turn to settle


class Turns:
    def __init__(
        self,
        host: Host,
        drafts: Drafts,
        approvals: Approvals,
        prepare: Callable[[str], Awaitable[list[Any]]] | None = None,
    ) -> None:
        self.host = host
        self.prepare = prepare  # the resources to go with a message sent (the mcp room's)
        self.drafts = drafts
        self.approvals = approvals
        self.running = False
        self.closing = False  # the app is quitting: a turn that ends starts no queued one
        self._worker: Worker[None] | None = None
        self._idle = asyncio.Event()  # set while no turn runs
        self._idle.set()
        self._collect_timer: Timer | None = None

    # -- a message sent -----------------------------------------------------------------------------
    def submit(self, text: str) -> None:
        """The owner sent ``text`` from the message box."""
        host, drafts = self.host, self.drafts
        session = host.session
        if session is None:
            if host.opening:  # queued, shown as queued, and sent once the chat is open (opened)
                drafts.queue(text)
                return
            host.notify("No chat is open: ctrl+n starts a new one, ctrl+o lists the chats.", severity="warning")
            host.composer.put(text)
            return
        drafts.remember(session.chat_id, text)
        editing = drafts.take_editing()
        if self.running or self.approvals.bar is not None:
            # queued, not refused: sent when the turn ends (a replacement waits its turn too)
            if editing is not None:
                host.notify("A turn is running: the edited message is queued as a new message.", severity="warning")
            drafts.queue(text)
            return
        why = self._why_not_now(session)
        if why is not None:
            host.notify(why, severity="warning")
            host.composer.put(text)
            return
        if editing is not None:
            self.run(partial(self._replace_turn, session, editing, text))
        else:
            self.run(partial(self._send, session, text))
        drafts.show_queue()

    def opened(self) -> None:
        """The chat is open: the first message sent while it opened goes now (the others when
        its turn ends, as any queue); one that cannot go comes back to the box, saying why."""
        session = self.host.session
        if session is None or not self.drafts.queued or self.running:
            return
        why = self._why_not_now(session)
        if why is not None:
            self.drafts.give_back_queue(why.rstrip("."))
            return
        text = self.drafts.next_queued()
        if text is not None:
            self.drafts.remember(session.chat_id, text)
            self.run(partial(session.send, text))

    def _why_not_now(self, session: ChatSession) -> str | None:
        """Why a new message cannot start a turn of ``session`` now (None: it can). An
        unfinished turn is no reason: the engine closes it as stopped before the message goes."""
        busy = self.host.store.busy(session.chat_id)
        return str(busy) if busy is not None else None  # a turn of this chat runs in another deferchat

    async def _send(self, session: ChatSession, text: str) -> Any:
        """Send ``text`` with what is to go with it (the resources attached to it)."""
        attachments = await self.prepare(text) if self.prepare is not None else []
        return await session.send(text, attachments=attachments)

    # -- running one --------------------------------------------------------------------------------
    def run(self, work: Callable[[], Awaitable[Any]]) -> None:
        self.running = True
        self._idle.clear()
        self.hold_collector()  # no collector pause while the answer streams (tui/collector.py)
        self.host.refresh_bindings()  # the footer shows Stop
        self.host.set_status("Working\u2026 (Esc stops)")
        self._worker = self.host.run_worker(partial(self._turn, work), group="turn", exit_on_error=False)

    async def _turn(self, work: Callable[[], Awaitable[Any]]) -> None:
        host = self.host
        status: str | None = None
        try:
            result = await work()
            status = getattr(result, "status", None)
        except UserFacingError as exc:
            host.notify(str(exc), severity="error")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("the turn failed")
            await host.log_view.add(NoteItem(text=f"the turn failed: {type(exc).__name__}: {exc}", level="error"))
        finally:
            self.running = False
            self._idle.set()
            host.refresh_bindings()
            host.set_status("")
            if status is None:  # no turn.completed is coming to resume the collector
                self.resume_collector()
            self._after(status)

    def _after(self, status: str | None) -> None:
        """The turn ended: a finished one sends the next queued message; a failed or stopped
        one gives the queue back to the box (the owner decides what still makes sense)."""
        session = self.host.session
        if not self.drafts.queued or session is None or self.closing:
            return
        if status == "done":
            text = self.drafts.next_queued()
            if text is not None:
                self.run(partial(self._send, session, text))
        elif status != "parked":
            self.drafts.give_back_queue("The turn " + ("was stopped" if status == "stopped" else "did not finish"))

    def cancel(self) -> None:
        """The chat closes: its turn's worker is cancelled (the turn stays open, resumable)."""
        if self._worker is not None:
            self._worker.cancel()
            self._worker = None
        self.running = False
        self._idle.set()

    def seen(self, event: Event) -> None:
        """An event of the open chat, after the log showed it."""
        if isinstance(event, (TurnCompleted, ToolApprovalRequired)):
            self.resume_collector()  # the turn is over, or waits for a person: nothing streams
        elif isinstance(event, (ToolApproved, ToolDenied)) and self.running:
            self.hold_collector()
        session = self.host.session
        if isinstance(event, (TurnStarted, TurnCompleted)) and session is not None:
            # the engine titles a chat from its first message (and the model may retitle it)
            self.host.header_bar.set_title(session.chat().title)

    # -- the collector ------------------------------------------------------------------------------
    def hold_collector(self) -> None:
        if self._collect_timer is not None:
            self._collect_timer.stop()
            self._collect_timer = None
        self.host.collector.hold()

    def resume_collector(self) -> None:
        """Let the collector run again once the answer's last frames are drawn: the turn's objects
        are walked then, in one pass (tui/collector.py), not in the middle of the last render."""
        if self._collect_timer is not None:
            self._collect_timer.stop()

        def resume() -> None:
            self._collect_timer = None
            if not self.running or self.approvals.bar is not None:
                self.host.collector.release()

        self._collect_timer = self.host.set_timer(COLLECT_AFTER, resume)

    # -- stopping -----------------------------------------------------------------------------------
    async def stop(self) -> None:
        """Stop the running turn at once. The engine closes the provider's stream, keeps the
        partial answer and settles a tool call in flight (core.chat.stopping); the turn's events
        say the rest."""
        session = self.host.session
        if session is None or not session.stop():
            return
        self.host.set_status("Stopping\u2026")
        await self.approvals.clear()  # the stopped turn's approval is withdrawn
        self.host.focus_input()

    async def stop_for_good(self, timeout: float = STOP_WAIT) -> None:
        """The app is quitting: stop the running turn as Esc does (its partial answer kept, the
        turn marked stopped; core.chat.stopping) and wait, ``timeout`` at most, for it to end,
        starting nothing queued after it. A turn that does not end in time is left to the
        chat's close, which leaves it open and resumable, as a killed process would."""
        self.closing = True
        await self.stop()
        if self.running:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), timeout)

    # -- resuming a parked turn ---------------------------------------------------------------------
    async def resume(self) -> None:
        host = self.host
        session = host.session
        if session is None or session.parked() is None:
            host.notify("Nothing to resume.")
            return
        if self.running:
            host.notify("A turn is running.", severity="warning")
            return
        if session.pending_approvals():
            if self.approvals.bar is None:
                await self.approvals.offer_parked()
            return
        self.run(partial(session.resume, self.approvals.approver))

    def resume_parked(self, answer: ParkedAnswer) -> None:
        """A parked approval answered: its turn resumes with that answer."""
        session = self.host.session
        if session is not None and not self.running:
            self.run(partial(session.resume, answer))

    # -- retry and edit: a turn run again, or replaced (core.chat.session; the store keeps both) -----
    def _can_rerun(self, what: str) -> ChatSession | None:
        host = self.host
        session = open_chat(host)
        if session is None:
            return None
        if self.running:
            host.notify(f"A turn is running: stop it (Esc) or let it end, then {what}.", severity="warning")
            return None
        return session

    def retry(self) -> None:
        """Run the last turn again: a failed request is asked again where it failed (nothing the
        turn already ran runs twice); otherwise the last message is sent again in its place. An
        unfinished turn (a reopened chat's) is resumed instead."""
        session = self._can_rerun("retry")
        if session is None:
            return
        if session.parked() is not None:  # an unfinished turn: f5 goes on with it
            self.host.run_worker(self.resume(), exit_on_error=False)
            return
        try:
            plan = session.retry_plan()
        except UserFacingError as exc:
            self.host.notify(str(exc), severity="warning")
            return
        self.drafts.editing = None
        self.drafts.show_queue()
        self.run(partial(self._retry_turn, session, plan))

    async def _retry_turn(self, session: ChatSession, plan: RetryPlan) -> Any:
        if plan.kind == "resend":
            await self._show_history_before(session, plan.message_id)
        return await session.retry()

    def commands(self) -> list[Any]:
        """This room's slash commands (the registry, :mod:`tui.slash`)."""
        from tui.slash import SlashCommand

        return [
            SlashCommand(
                "compact",
                "Summarise the chat's history: every turn but the latest, into one summary (the turns are kept)",
                action="compact",
            )
        ]

    def compact(self) -> None:
        """Summarise every turn but the latest now (the palette; ``/compact``): the engine's
        ``history.compacted`` puts the note in the log. Esc stops it."""
        session = self._can_rerun("summarise it")
        if session is None:
            return
        self.run(partial(self._compact, session))

    async def _compact(self, session: ChatSession) -> None:
        self.host.set_status("Summarising the chat\u2026 (Esc stops)")
        await session.compact()

    def edit_last(self) -> None:
        """Put the last message back in the box; sending it replaces that turn. Again: stop editing."""
        if self.drafts.editing is not None:
            self.drafts.stop_editing()
            return
        session = self._can_rerun("edit your message")
        if session is None:
            return
        prompt = session.last_prompt()
        if prompt is None:
            self.host.notify("There is no message to edit yet.")
            return
        self.drafts.start_editing(prompt.message_id, prompt.text)

    async def _replace_turn(self, session: ChatSession, message_id: str, text: str) -> Any:
        await self._show_history_before(session, message_id)
        return await session.send(text, replaces=message_id)

    async def _show_history_before(self, session: ChatSession, message_id: str) -> None:
        """The log as the model will now see the chat: what came before the replaced message
        (the replaced turn stays in the store, the audit and the invocation rows)."""
        store, router = self.host.store, self.host.router
        messages = store.messages(session.chat_id)
        ids = [m.id for m in messages]
        kept = messages[: ids.index(message_id)] if message_id in ids else messages
        stopped = stopped_turns(store.turns(session.chat_id))
        items = items_from_history(kept, store.invocations(session.chat_id), router.displays, stopped)
        router.reset()
        router.adopt(items)
        await self.host.log_view.load(items)
