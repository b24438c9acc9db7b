"""Approvals, asked inline: the queue of requests, the bar above the message box, the answers.

A live request comes from the open chat's :class:`~core.pipeline.approvals.QueueApprover` (one
per opened chat); an approval a reopened chat left pending is shown again as *parked*, and
answering it resumes the parked turn (:class:`ParkedAnswer`, run by the turns room). One bar at
a time, the others wait their turn. The bar never takes the focus: what the owner types keeps
going to the message box (Tab moves to the bar; :mod:`tui.widgets.approval`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from core.pipeline.approvals import ApprovalRequest, Decision, QueueApprover
from tui.controllers.host import Host
from tui.state import NoteItem
from tui.widgets.approval import ApprovalBar, ApprovalView

if TYPE_CHECKING:
    from textual.worker import Worker


UNFINISHED = (
    "This chat's last turn did not finish (deferchat was closed or stopped while it ran); what it "
    "stored is above. Send a message to go on (the unfinished turn is closed as stopped first), or "
    "press f5 to resume it."
)


class ParkedAnswer:
    """Answers one parked approval with the owner's decision, and hands any later request
    in the resumed turn to the live queue (a fixed answer must not approve what comes next)."""

    def __init__(self, approval_id: str, decision: Decision, then: QueueApprover) -> None:
        self.approval_id = approval_id
        self.decision = decision
        self.then = then
        self.used = False

    async def decide(self, request: ApprovalRequest) -> Decision:
        if request.approval_id == self.approval_id and not self.used:
            self.used = True
            return self.decision
        return await self.then.decide(request)


ResumeParked = Callable[[ParkedAnswer], None]
"""Resume a parked turn with the owner's answer (the turns room's)."""


class Approvals:
    def __init__(self, host: Host) -> None:
        self.host = host
        self.approver = QueueApprover()  # the open chat's: a new one for each chat opened
        self.queue: list[ApprovalView] = []  # waiting for the bar
        self._watcher: Worker[None] | None = None

    @property
    def bar(self) -> ApprovalBar | None:
        bars = self.host.bottom.query(ApprovalBar)
        return bars.first() if bars else None

    # -- the open chat's requests -------------------------------------------------------------------
    def new_approver(self) -> QueueApprover:
        """The approver for the chat about to open (the last one's requests die with it)."""
        self.approver = QueueApprover()
        return self.approver

    def watch(self, still_open: Callable[[], bool]) -> None:
        """Show the open chat's requests while ``still_open()`` (its worker is also cancelled
        when the chat closes; a request that comes between the two is dropped)."""
        approver = self.approver

        async def watch() -> None:
            while True:
                request = await approver.next_request()
                if not still_open():
                    return
                self.queue.append(
                    ApprovalView(
                        approval_id=request.approval_id,
                        tool=request.tool,
                        side_effect=request.side_effect,
                        arguments=request.arguments,
                        via=request.via,
                        reason=request.reason,
                        untrusted=request.untrusted,
                        display=self.host.router.displays.get(request.tool, ""),
                    )
                )
                await self.show_next()

        # a callable, not a coroutine: a worker cancelled before it starts leaves nothing unawaited
        self._watcher = self.host.run_worker(watch, group="approvals", exit_on_error=False)

    def stop_watching(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None

    async def offer_parked(self) -> None:
        """A reopened chat shows its parked approvals again (or offers to resume)."""
        host = self.host
        session = host.session
        if session is None or session.parked() is None:
            return
        busy = host.store.busy(session.chat_id)
        if busy is not None:  # its turn runs in another deferchat: resuming here would be refused
            await host.log_view.add(NoteItem(text=str(busy), level="warning"))
            return
        pending = session.pending_approvals()
        if not pending:
            await host.log_view.add(NoteItem(text=UNFINISHED, level="warning"))
            return
        row = pending[0]
        placement = session.plan.placement_of(row.tool) if session.plan else None
        self.queue.append(
            ApprovalView(
                approval_id=row.id,
                tool=row.tool,
                side_effect=row.side_effect or "",
                arguments=row.arguments,
                via=row.via,
                reason=row.reason or "",
                untrusted=bool(placement and placement.untrusted),
                display=host.router.displays.get(row.tool, ""),
                parked=True,
            )
        )
        await self.show_next()

    # -- the bar ------------------------------------------------------------------------------------
    async def show_next(self) -> None:
        """Show the next approval above the message box. It does not take the focus: what the
        owner is typing stays in the box (Tab moves to the bar; tui.widgets.approval)."""
        if self.bar is not None or not self.queue:
            self.signals()
            return
        view = self.queue.pop(0)
        await self.host.bottom.mount(ApprovalBar(view, id="approval"), before=self.host.slash_menu)
        self.signals()
        self.host.terminal.notify("deferchat: waiting for your approval", view.display or view.tool)

    def signals(self) -> None:
        """The status line and the terminal's title say whether an approval waits."""
        bar = self.bar
        host = self.host
        host.status_line.waiting_for((bar.view.display or bar.view.tool) if bar is not None else None)
        host.terminal.set_title("deferchat — waiting for your approval" if bar is not None else "deferchat")
        host.refresh_bindings()

    async def remove_bar(self) -> None:
        bar = self.bar
        if bar is not None:
            had_focus = bar.has_focus_within
            await bar.remove()
            if had_focus or self.host.focused is None:
                self.host.composer.focus()

    async def clear(self) -> None:
        """Every approval withdrawn (the turn stopped, or another chat opens)."""
        self.queue.clear()
        await self.remove_bar()
        self.signals()

    def go_to_bar(self) -> None:
        """Tab: to the bar, at once (a key typed right after Tab goes to the bar, never into the
        box), and the bar's guard starts again (that key answers nothing: Tab then y in one burst
        is not a decision)."""
        bar = self.bar
        if bar is not None:
            self.host.screen.set_focus(bar)
            bar.guard()

    async def decided(self, view: ApprovalView, decision: Decision, resume_parked: ResumeParked) -> None:
        """The owner answered ``view``: a live request gets its decision; a parked one resumes
        its turn with it (``resume_parked``, the turns room's)."""
        await self.remove_bar()
        if view.parked:
            resume_parked(ParkedAnswer(view.approval_id, decision, self.approver))
        elif not self.approver.answer(view.approval_id, decision):
            self.host.notify("That approval is no longer waiting.", severity="warning")
        await self.show_next()
