"""One open chat, put together from its rooms: the opened plan (:mod:`core.chat.opening`), its
MCP servers (:mod:`core.chat.servers`), the strategy, the control tools and the tool router
(:mod:`core.chat.routing`), the turn loop (:mod:`core.chat.turn`) and the event log
(:mod:`core.chat.eventlog`). It decides nothing itself."""

from __future__ import annotations

from typing import Any

from core import events as ev
from core.chat.eventlog import EventLog, Subscriber
from core.chat.opening import OpenedChat
from core.chat.options import TurnResult
from core.chat.retry import Prompt, RetryPlan, last_prompt, retry_plan
from core.chat.routing import ToolRouter
from core.chat.servers import ChatServers
from core.chat.turn import TurnLoop
from core.config import Settings
from core.context.prompt import assemble_system
from core.controls import ControlContext
from core.controls.search import DeferredSearch
from core.deferral.strategies import BaseStrategy, make_strategy
from core.pipeline.approvals import Approver
from core.pipeline.policy import Policy
from core.providers.base import Provider
from core.roster.models import RosterPlan
from core.store import ApprovalRow, ChatRow, Store, TurnRow
from core.tokens import TokenEstimator
from core.tools import ToolSpec

LOADED_EVENT_TYPES = ("tool.discovered", "model.tool_search")


class ChatSession:
    """One open chat: its pinned plan, strategy, provider, MCP servers and event subscribers."""

    def __init__(
        self,
        *,
        store: Store,
        events: EventLog,
        servers: ChatServers,
        opened: OpenedChat,
        settings: Settings,
        policy: Policy,
        approver: Approver,
        estimator: TokenEstimator,
        record: str | None = None,
    ):
        self.store = store
        self.events = events
        self.servers = servers
        self.chat_id = opened.chat_id
        self.plan: RosterPlan = opened.plan
        self.sources = opened.sources
        self.provider: Provider = opened.provider
        self.live: dict[str, ToolSpec] = opened.live
        self.specs: dict[str, ToolSpec] = {
            n: s for n in opened.plan.pinned_names() if (s := opened.plan.spec_of(n)) is not None
        }
        agent = opened.roster.agent

        def system(note: str) -> str:
            return assemble_system(
                instructions=agent.instructions,
                agent_name=agent.name,
                owner=settings.owner_name,
                timezone=settings.owner_timezone(),
                strategy_note=note,
                index_text="",
                est=estimator,
            )

        flavour = opened.tool_search
        self.strategy: BaseStrategy = make_strategy(
            opened.plan.strategy,
            opened.plan,
            system,
            self.specs,
            anthropic_search=flavour["anthropic"],
            openai_search=flavour["openai"],
            loaded=self._loaded_before(),
        )
        search = DeferredSearch(self.plan, self.specs, self.strategy, events.emit)
        controls = ControlContext(chat_id=self.chat_id, specs=self.specs, search=search, store=store, emit=events.emit)
        from core.demo.dataset import tool_database

        provider_name = opened.provider_name
        router = ToolRouter(
            chat_id=self.chat_id,
            specs=self.specs,
            live=self.live,
            controls=controls,
            servers=servers,
            builtin_db=lambda: tool_database(provider_name, store.db),
            workspace=settings.workspace_path(),
            timezone=settings.owner_timezone(),
            tool_settings=settings.tools.model_dump(),
        )
        self.turns = TurnLoop(
            chat_id=self.chat_id,
            store=store,
            events=events,
            plan=self.plan,
            specs=self.specs,
            strategy=self.strategy,
            provider=self.provider,
            search=search,
            tools=router,
            policy=policy,
            approver=approver,
            estimator=estimator,
            max_steps=settings.max_steps,
            record=record,
        )

    def _loaded_before(self) -> list[str]:
        """Tools loaded in earlier sessions of this chat stay marked for the UI."""
        names: list[str] = []
        for e in self.store.events(self.chat_id, LOADED_EVENT_TYPES):
            names.extend(e.get("names") or e.get("references") or [])
        return names

    # -- what presentations read -------------------------------------------------------------------
    @property
    def server_status(self) -> dict[str, ev.ServerStatus]:
        return self.servers.status

    @property
    def roster_changed(self) -> list[str]:
        return self.servers.changed

    @property
    def mcp(self) -> Any:
        return self.servers.manager

    @property
    def approver(self) -> Approver:
        return self.turns.approver

    def chat(self) -> ChatRow:
        row = self.store.chat(self.chat_id)
        assert row is not None
        return row

    def plan_event(self, pinned: bool) -> ev.PlanEvent:
        p = self.plan
        return ev.PlanEvent(
            builder=p.builder,
            policy=p.policy,
            strategy=p.strategy,
            strategy_reason=p.strategy_reason,
            pinned=pinned,
            agent=p.agent,
            defined_tool_names=p.defined_tool_names,
            deferred_tool_names=p.deferred_tool_names,
            skipped_tool_names=p.skipped_tool_names,
            definition_tokens=p.definition_tokens,
            index_tokens=p.index_tokens,
            caps=p.caps,
        )

    # -- events ------------------------------------------------------------------------------------
    def subscribe(self, fn: Subscriber) -> None:
        self.events.subscribe(fn)

    def emit(self, event: ev.Event) -> None:
        self.events.emit(event)

    # -- turns -------------------------------------------------------------------------------------
    def parked(self) -> TurnRow | None:
        """The chat's unfinished turn (parked on an approval, or interrupted), if any."""
        return self.turns.open_turn()

    def pending_approvals(self) -> list[ApprovalRow]:
        return self.store.pending_approvals(self.chat_id)

    async def send(self, text: str, *, replaces: str | None = None, wait: bool = False) -> TurnResult:
        """A new turn; ``replaces``: the earlier message of the owner's it takes the place of
        (edit last message; :mod:`core.chat.retry`). ``wait``: wait for a turn of this chat
        running in another process instead of being refused (``ChatBusy``)."""
        return await self.turns.send(text, replaces=replaces, wait=wait)

    def last_prompt(self) -> Prompt | None:
        """The owner's message that started the last turn (what *edit last message* edits)."""
        return last_prompt(self.store, self.chat_id)

    def retry_plan(self) -> RetryPlan:
        """How :meth:`retry` would run the last turn again; UsageError when it cannot."""
        return retry_plan(self.store, self.chat_id)

    async def retry(self) -> TurnResult:
        """Run the last turn again, after a provider error or a stop (:mod:`core.chat.retry`)."""
        plan = self.retry_plan()
        if plan.kind == "continue":
            return await self.turns.rerun(plan.prompt.turn_id)
        return await self.turns.send(plan.prompt.text, replaces=plan.message_id)

    async def resume(self, approver: Approver | None = None, *, wait: bool = False) -> TurnResult:
        return await self.turns.resume(approver, wait=wait)

    @property
    def turn_running(self) -> bool:
        return self.turns.running

    def stop(self) -> bool:
        """Stop the running turn at once (Esc, ctrl+c, SIGINT); False when none runs. The turn's
        ``send``/``resume`` then returns a ``stopped`` result; see :mod:`core.chat.stopping`."""
        return self.turns.stop()

    async def close(self) -> None:
        await self.servers.close()
