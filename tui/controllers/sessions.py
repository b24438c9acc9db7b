"""Sessions: opening a chat (new or stored) in place of the open one, and closing it.

Switches run one after another, never cancelled halfway: a chat being opened may already have
started MCP servers, and only a finished open hands them back to close. Each open is a
*generation*: events and approval requests of a chat the app has since closed are dropped.

The order after the first frame: the engine in a thread, the roster preview (a new chat's plan
from the roster's recorded listings, or a reopened chat's pinned plan; waited for up to
:data:`PREVIEW_FIRST`), the project-config review, the chat's open (servers started, plan
pinned), then the chat presented: header, roster, its history, a parked approval offered.
"""

from __future__ import annotations

import asyncio
import logging
from collections import ChainMap
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.message import Message

from core.chat.options import ChatOptions
from core.errors import UserFacingError
from core.events import Event, ModelTextDelta, ModelThinkingDelta
from tui.controllers.approvals import Approvals
from tui.controllers.drafts import Drafts
from tui.controllers.host import Host
from tui.controllers.permissions import active_grants
from tui.controllers.turns import Turns
from tui.state import (
    MARK_EVENT_TYPES,
    NoteItem,
    items_from_history,
    marks_from_events,
    stopped_turns,
    tool_display,
)
from tui.welcome import welcome

if TYPE_CHECKING:
    from textual.worker import Worker

    from core.chat.session import ChatSession
    from core.engine import Engine
    from core.roster.models import RosterPlan
    from tui.controllers.mcp import Mcp
    from tui.screens.project_config import ProjectConfigs

log = logging.getLogger("deferchat.tui")

PREVIEW_FIRST = 0.3  # seconds a chat's open waits, at most, for its roster preview to be shown


class EngineEvent(Message):
    """An engine event on its way to the one handler. ``generation`` names the session that
    sent it; events from a session the app has since closed are dropped."""

    def __init__(self, event: Event, generation: int) -> None:
        super().__init__()
        self.event = event
        self.generation = generation
        self.handled = False

    def absorb(self, delta: ModelTextDelta | ModelThinkingDelta) -> bool:
        """Take in a delta (of the answer or of the thinking) that came before this one, of the
        same kind, was handled: a burst of tokens is one message and one write, however fast
        the model sends (the app handles each message in turn, and thousands of one-token
        messages would leave it behind)."""
        event = self.event
        if self.handled or type(event) is not type(delta) or event.chat_id != delta.chat_id:
            return False
        assert isinstance(event, ModelTextDelta | ModelThinkingDelta)
        self.event = event.model_copy(update={"text": event.text + delta.text})
        return True


class Sessions:
    def __init__(
        self,
        host: Host,
        drafts: Drafts,
        approvals: Approvals,
        turns: Turns,
        post: Callable[[Message], object],
        mcp: Mcp | None = None,
    ) -> None:
        self.host = host
        self.mcp = mcp  # a server's requests for input go to its form (tui.controllers.mcp)
        self.drafts = drafts
        self.approvals = approvals
        self.turns = turns
        self.post = post  # the app's message queue: the session's events go through it
        self.session: ChatSession | None = None
        self.generation = 0
        self.pinned = False  # the open chat was stored before (its plan is shown as pinned)
        self.fresh_chat = False  # the open chat was made new by this app
        self._switching = asyncio.Lock()
        self._workers: list[Worker[None]] = []
        self._first = True  # the app's first chat is still to be asked for (it opens after the first frame)
        self._project_configs: ProjectConfigs | None = None

    @property
    def opening(self) -> bool:
        """A chat is being opened (or waits for the one before to finish opening, or is the
        app's first, asked for once the first frame is drawn)."""
        self._workers = [w for w in self._workers if not w.is_finished]
        return bool(self._workers) or self._first

    @property
    def project_configs(self) -> ProjectConfigs:
        """A project's ``.mcp.json`` asks before a chat starts it (made at the first chat's open:
        its screen and the MCP config modules are not needed for the first frame)."""
        if self._project_configs is None:
            from tui.screens.project_config import ProjectConfigs

            self._project_configs = ProjectConfigs(self.host)
        return self._project_configs

    # -- opening ------------------------------------------------------------------------------------
    def open(self, chat_id: str | None) -> None:
        """Close the open chat (if any) and open ``chat_id``, or a new chat when None. A new
        chat asked for while the open one is new and unused is that one (not a second)."""
        self._first = False
        if chat_id is None and self.unused_new_chat() and not self._switching.locked():
            self.host.notify("This chat is new and still unused: type your message here.", timeout=3)
            self.host.focus_input()
            return
        self._workers.append(self.host.run_worker(self.switch(chat_id), group="session", exit_on_error=False))

    def subscriber(self, generation: int) -> Callable[[Event], None]:
        last: EngineEvent | None = None

        def deliver(event: Event) -> None:
            nonlocal last
            if isinstance(event, ModelTextDelta | ModelThinkingDelta) and last is not None and last.absorb(event):
                return
            last = EngineEvent(event, generation)
            self.post(last)

        return deliver

    async def switch(self, chat_id: str | None) -> None:
        async with self._switching:
            await self._switch_now(chat_id)

    async def _switch_now(self, chat_id: str | None) -> None:
        host = self.host
        self.drafts.stash(self.session.chat_id if self.session is not None else None)
        await self.close()
        self.generation += 1
        generation = self.generation
        approver = self.approvals.new_approver()
        elicitor = self.mcp.new_elicitor() if self.mcp is not None else None
        await self._reset_view()
        host.set_status("Opening the chat: planning the roster and starting its MCP servers\u2026")
        host.header_bar.set_opening()
        preview: asyncio.Task[RosterPlan | None] | None = None
        try:
            engine = await host.ready_engine()
        except Exception as exc:  # the store cannot be opened: nothing in the app works without it
            host.end_with(exc)
            return
        try:
            # The roster first: the preview is short, and what it imports (the roster, the
            # builtins, the planner) the open needs too; run beside the open it would wait for
            # the open's own work. Never long, though: a preview that must load the tokenizer
            # goes on beside the open, whose servers then start without waiting for it.
            preview = asyncio.create_task(self._early_plan(engine, chat_id, generation))
            await asyncio.wait({preview}, timeout=PREVIEW_FIRST)
            # before the chat starts its servers: a running chat never starts one held for approval
            await self.project_configs.review(host.options.mcp_config if chat_id is None else None)
            session = await engine.open_chat(
                chat_id,
                host.options if chat_id is None else ChatOptions(),
                approver=approver,
                subscribers=[self.subscriber(generation)],
                elicitor=elicitor,
            )
        except UserFacingError as exc:
            host.set_status("")
            await host.log_view.add(NoteItem(text=str(exc), level="error"))
            host.header_bar.set_failed(str(exc))
            self.drafts.give_back_queue(f"The chat did not open ({exc})")
            return
        except Exception as exc:  # keep the app usable: the chats list still works
            log.exception("opening a chat failed")
            host.set_status("")
            await host.log_view.add(
                NoteItem(text=f"could not open the chat: {type(exc).__name__}: {exc}", level="error")
            )
            host.header_bar.set_failed(f"{type(exc).__name__}: {exc}")
            self.drafts.give_back_queue(f"The chat did not open ({type(exc).__name__}: {exc})")
            return
        finally:
            shown = self._settle_preview(preview)
        if generation != self.generation:
            await session.close()
            return
        self.session = session
        self.pinned = chat_id is not None
        self.fresh_chat = chat_id is None
        self.drafts.load_history(session.chat_id)
        self.drafts.restore(session.chat_id)
        await self._present(session)
        if shown is not None and session.plan is not None and shown.to_json() != session.plan.to_json():
            await host.log_view.add(
                NoteItem(
                    text="The roster preview changed: the servers listed other tools than the roster "
                    "recorded (or one did not start); the roster shows the plan this chat pinned.",
                    level="warning",
                )
            )
        host.set_status("")
        host.collector.settle()  # what startup built is frozen for the collector (once)
        self.approvals.watch(lambda: generation == self.generation)
        if self.mcp is not None:
            self.mcp.watch(lambda: generation == self.generation)
        if not self._another_waits():  # else the next open keeps it as this chat's draft
            self.turns.opened()  # a message sent while it opened goes now

    def _another_waits(self) -> bool:
        """Another open was asked for while this one ran (it waits for the lock)."""
        return sum(not w.is_finished for w in self._workers) > 1

    async def _early_plan(self, engine: Engine, chat_id: str | None, generation: int) -> RosterPlan | None:
        """The roster before the chat is open: a new chat's plan preview (planned from the
        roster's recorded listings, in a thread, while the servers start), or a reopened chat's
        stored pinned plan. Nothing is sent or pinned from it; the open chat's plan replaces it.
        Returns the preview shown (None: none, or the stored plan)."""
        roster = self.host.roster
        if chat_id is not None:
            plan = stored_plan(engine, chat_id)  # one row and one plan: cheap, and the store is this loop's
            if plan is not None and generation == self.generation and self.session is None:
                roster.set_plan(plan, pinned=True)
                self._servers_starting(plan)
            return None
        counts: ChainMap[str, int] = ChainMap({}, engine.estimator.cache)  # counts made here stay here
        from core.tokens import TokenEstimator

        try:
            plan = await asyncio.to_thread(engine.preview_plan, self.host.options, TokenEstimator(counts))
        except Exception:  # the chat's own open says what is wrong
            log.debug("no roster preview", exc_info=True)
            return None
        engine.estimator.cache.update(counts.maps[0])  # the open plans from them too (on this loop)
        if generation != self.generation or self.session is not None:
            return None
        roster.set_plan(plan, pinned=False, preview=True)
        self._servers_starting(plan)
        return plan

    def _servers_starting(self, plan: RosterPlan) -> None:
        roster = self.host.roster
        new = {t.server for t in plan.tools if t.server} - set(roster.servers)
        if new:
            roster.set_servers({**roster.servers, **{s: ("starting", 0, "") for s in new}})

    @staticmethod
    def _settle_preview(preview: asyncio.Task[RosterPlan | None] | None) -> RosterPlan | None:
        """The preview shown before the chat opened, if any; one still being planned is dropped."""
        if preview is None:
            return None
        if not preview.done():
            preview.cancel()
            return None
        if preview.cancelled() or preview.exception() is not None:
            return None
        return preview.result()

    async def _reset_view(self) -> None:
        await self.approvals.clear()
        self.host.router.reset()
        self.host.roster.reset()
        await self.host.log_view.clear()

    async def _present(self, session: ChatSession) -> None:
        host = self.host
        store, router, roster = host.store, host.router, host.roster
        assert session.plan is not None
        plan = session.plan
        row = session.chat()
        host.header_bar.set_chat(
            title=row.title,
            provider=row.provider,
            model=row.model,
            strategy=session.strategy.name,  # the chat's strategy now (a switch resolved it again)
            reason=session.strategy_reason,
            pinned=self.pinned,
        )
        from core.chat.meter import chat_usage

        host.header_bar.show_totals(chat_usage(store, session.chat_id).totals)  # a reopened chat's so far
        displays = {t.name: tool_display(t.name, t.remote_name, t.server) for t in plan.tools}
        router.reset(displays)
        marks = marks_from_events(store.events(session.chat_id, MARK_EVENT_TYPES))
        roster.set_grants(active_grants(store, session.chat_id))  # its rows say "allowed"
        roster.set_plan(plan, pinned=self.pinned, marks=marks)
        host.log_view.set_welcome(welcome(host.keys_for, provider=row.provider, model=row.model))
        roster.set_strategy(session.strategy.name, session.strategy_reason)  # after a switch
        roster.set_servers({s.server: (s.status, s.tools, s.message) for s in session.server_status.values()})
        for server in session.roster_changed:
            roster.roster_changed(server)
        if self.pinned:
            items = items_from_history(
                store.messages(session.chat_id),
                store.invocations(session.chat_id),
                displays,
                stopped_turns(store.turns(session.chat_id)),  # "Stopped by you" as the log said it then
            )
            router.adopt(items)
            await host.log_view.load(items)
            await self.approvals.offer_parked()
        host.focus_input()

    # -- the open chat ------------------------------------------------------------------------------
    def unused_new_chat(self) -> bool:
        """The open chat was made new here, and nothing was sent, renamed or run in it."""
        session = self.session
        if session is None or not self.fresh_chat or self.turns.running:
            return False
        store = self.host.store
        row = store.chat(session.chat_id)
        return row is not None and row.title in ("", "New chat") and not store.messages(session.chat_id)

    async def close(self) -> None:
        """Stop the open chat's workers and close it (its MCP servers stop). A new chat that
        was never used (no draft left in it either, to come back to) is not kept: the next new
        chat replaces it."""
        unused = self.session.chat_id if self.unused_new_chat() and self.session is not None else None
        if unused is not None and self.drafts.has_draft(unused):
            unused = None
        self.turns.cancel()
        self.approvals.stop_watching()
        if self.mcp is not None:
            self.mcp.stop_watching()
        self.fresh_chat = False
        session, self.session = self.session, None
        if session is not None:
            try:
                await session.close()
            except Exception:  # closing must not stop the app from quitting
                log.exception("closing the session failed")
        if unused is not None:
            try:
                self.host.store.delete_chat(unused)
            except Exception:
                log.exception("could not drop the unused chat")

    async def review_project_config(self) -> None:
        """The palette's review of the project's MCP config. The open chat keeps the servers it
        started with: an approval opens a new chat in the place of an unused one, and says how
        otherwise."""
        if not await self.project_configs.review_again(self.host.options.mcp_config) or self.session is None:
            return
        if self.unused_new_chat():
            await self.switch(None)
        else:
            self.host.notify(
                "This chat keeps the servers it opened with: a new chat (ctrl+n) starts the approved ones.", timeout=6
            )


def stored_plan(engine: Engine, chat_id: str) -> RosterPlan | None:
    """A chat's pinned plan as the store keeps it (None: no such chat, or not readable here)."""
    from core.roster.models import RosterPlan

    row = engine.store.find_chat(chat_id)
    text = engine.store.plan_json(row.plan_id) if row is not None and row.plan_id else None
    try:
        return RosterPlan.model_validate_json(text) if text else None
    except ValueError:
        return None
