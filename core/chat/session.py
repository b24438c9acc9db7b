"""One open chat, put together from its rooms: the opened plan (:mod:`core.chat.opening`), its
MCP servers (:mod:`core.chat.servers`), the strategy, the control tools and the tool router
(:mod:`core.chat.routing`), the turn loop (:mod:`core.chat.turn`) and the event log
(:mod:`core.chat.eventlog`). It decides nothing itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from core import events as ev
from core.chat.eventlog import EventLog, Subscriber
from core.chat.meter import Meter
from core.chat.opening import OpenedChat
from core.chat.options import TurnResult
from core.chat.prompting import ChatPrompt
from core.chat.retry import Prompt, RetryPlan, last_prompt, retry_plan
from core.chat.routing import ToolRouter
from core.chat.servers import ChatServers
from core.chat.turn import TurnLoop
from core.config import Settings
from core.context.prompt import assemble_system
from core.controls import ControlContext
from core.controls.search import DeferredSearch
from core.deferral.strategies import BaseStrategy, make_strategy
from core.errors import UsageError
from core.pipeline.approvals import Approver
from core.pipeline.policy import Policy
from core.providers.base import Provider, ProviderError
from core.providers.window import ContextWindow
from core.roster.models import RosterPlan
from core.store import ApprovalRow, ChatRow, Store, TurnRow
from core.tokens import TokenEstimator
from core.tools import ToolSpec

if TYPE_CHECKING:
    from core.mcp.offers import Attachment

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
        self.settings = settings
        self.fallback: list[str] = list(opened.fallback)
        self.make_provider = opened.make_provider
        self.fallback_tried: tuple[str, set[tuple[str, str]]] = ("", set())
        self.live: dict[str, ToolSpec] = opened.live
        self.specs: dict[str, ToolSpec] = {
            n: s for n in opened.plan.pinned_names() if (s := opened.plan.spec_of(n)) is not None
        }
        agent = opened.roster.agent
        self.prompt = ChatPrompt(store, self.chat_id, events.emit, settings.system_prompt)  # the chat's own

        last: dict[tuple[str, str, str, str], str] = {}  # the last system text, by what it was built from

        def system(note: str) -> str:
            """Region A for a request, assembled again only when what it is built from changed
            since the last one: the chat prompt is read at each request (an edit, here or in
            another process, is in the next one)."""
            key = (note, self.prompt.text(), settings.owner_name, settings.owner_timezone())
            if key not in last:
                last.clear()
                last[key] = assemble_system(
                    instructions=agent.instructions,
                    chat_prompt=key[1],
                    agent_name=agent.name,
                    owner=key[2],
                    timezone=key[3],
                    strategy_note=note,
                    index_text="",
                    est=estimator,
                )
            return last[key]

        self._system = system
        self.tool_search = opened.tool_search
        self.strategy_reason = opened.strategy_reason
        self.strategy: BaseStrategy = self.build_strategy(
            opened.strategy, self._loaded_before(), foreign_history=opened.switched
        )
        search = DeferredSearch(self.plan, self.specs, self.strategy, events.emit)
        controls = ControlContext(chat_id=self.chat_id, specs=self.specs, search=search, store=store, emit=events.emit)
        from core.demo.dataset import tool_settings, tool_workspace

        provider_name = opened.provider_name  # the one it opened on: a switch keeps its tools' database

        def tool_database() -> Any:  # the built-ins' database, opened when a built-in first runs
            from core.demo.dataset import tool_database

            return tool_database(provider_name, store.db)

        router = ToolRouter(
            chat_id=self.chat_id,
            specs=self.specs,
            live=self.live,
            controls=controls,
            servers=servers,
            builtin_db=tool_database,
            workspace=tool_workspace(provider_name, settings.workspace_path()),
            timezone=settings.owner_timezone(),
            tool_settings=tool_settings(provider_name, settings.tools.model_dump()),
        )
        self.estimator = estimator
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
            fallback=self._fall_back,
            meter=Meter(store=store, chat_id=self.chat_id, emit=events.emit, prices=settings.prices),
            window=self.window_for(self.provider.name, self.provider.model, self.chat().base_url),
            auto_compact=settings.history.auto_compact,
        )
        self.search = search

    def window_for(self, provider: str, model: str, base_url: str | None) -> ContextWindow:
        """``model``'s context window on ``provider`` (:mod:`core.providers.window`: config.toml,
        the server's cached listing, the profile, or the default)."""
        from core.providers.window import context_window, default_listed

        return context_window(self.settings, provider, model, base_url, listed=default_listed())

    def build_strategy(self, name: str, loaded: list[str], *, foreign_history: bool) -> BaseStrategy:
        """The strategy ``name`` over the chat's pinned plan, with its pinned search flavour."""
        return make_strategy(
            name,
            self.plan,
            self._system,
            self.specs,
            anthropic_search=self.tool_search["anthropic"],
            openai_search=self.tool_search["openai"],
            loaded=loaded,
            foreign_history=foreign_history,
        )

    def _loaded_before(self) -> list[str]:
        """Tools loaded in earlier sessions of this chat stay marked for the UI."""
        names: list[str] = []
        for e in self.store.events(self.chat_id, LOADED_EVENT_TYPES):
            names.extend(e.get("names") or e.get("references") or [])
        return names

    # -- what presentations read -------------------------------------------------------------------
    @property
    def provider_name(self) -> str:
        """The provider the chat runs on now (a profile's name), after a switch too."""
        return self.provider.name

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
        return ev.PlanEvent(  # the pinned plan, with the strategy the chat runs it with now
            builder=p.builder,
            policy=p.policy,
            strategy=self.strategy.name,
            strategy_reason=self.strategy_reason,
            pinned=pinned,
            agent=p.agent,
            defined_tool_names=p.defined_tool_names,
            deferred_tool_names=p.deferred_tool_names,
            skipped_tool_names=p.skipped_tool_names,
            definition_tokens=p.definition_tokens,
            index_tokens=p.index_tokens,
            caps=p.caps,
            always_load_tool_names=p.always_load_tool_names,
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

    async def send(
        self,
        text: str,
        *,
        replaces: str | None = None,
        wait: bool = False,
        attachments: Sequence[Attachment] = (),
    ) -> TurnResult:
        """A new turn; ``replaces``: the earlier message of the owner's it takes the place of
        (edit last message; :mod:`core.chat.retry`). ``wait``: wait for a turn of this chat
        running in another process instead of being refused (``ChatBusy``). ``attachments``:
        resources read with :meth:`read_resource`, sent with the message inside each server's
        envelope (each announced as ``mcp.resource.attached``, its tokens counted)."""
        blocks: list[dict[str, Any]] = []
        if attachments:
            from core.mcp.offers import attachment_block

            blocks = [attachment_block(a) for a in attachments]
        for att, block in zip(attachments, blocks, strict=True):
            self.events.emit(
                ev.ResourceAttached(
                    server=att.server,
                    uri=att.uri,
                    name=att.name,
                    chars=att.chars,
                    tokens=self.estimator.count(block["text"]),
                    truncated=att.truncated,
                    binary=att.binary,
                )
            )
        return await self.turns.send(text, replaces=replaces, wait=wait, blocks=blocks)

    async def read_resource(self, server: str, uri: str) -> Attachment:
        """A resource of one of the chat's servers, read to go with the next message (cut as a tool
        result is cut). Raises UsageError with a line a person can act on."""
        from core.mcp.server import OfferError

        if self.servers.manager is None:
            raise UsageError("this chat runs no MCP servers")
        try:
            attachment: Attachment = await self.servers.manager.read_resource(server, uri)
        except OfferError as exc:
            raise UsageError(str(exc)) from None
        return attachment

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

    async def close_unfinished(self, *, wait: bool = False) -> bool:
        """Close the chat's unfinished turn as stopped, as a new message does before it is sent
        (its approval cancelled, its calls answered); False when none was open."""
        return await self.turns.close_open_turn(wait=wait)

    @property
    def turn_running(self) -> bool:
        return self.turns.running

    def stop(self) -> bool:
        """Stop the running turn at once (Esc, ctrl+c, SIGINT); False when none runs. The turn's
        ``send``/``resume`` then returns a ``stopped`` result; see :mod:`core.chat.stopping`."""
        return self.turns.stop()

    # -- switching provider or model (core.chat.switch) --------------------------------------------
    def switch(self, provider: str, model: str, base_url: str | None = None) -> ev.ProviderSwitched:
        """The owner's switch: continue this chat on ``provider``/``model``: the plan stays pinned,
        the strategy is resolved again, the change is recorded and announced. Refused while a turn
        runs or is parked (a fallback switches from inside its turn, between two requests, through
        :func:`core.chat.switch.fall_back`)."""
        from core.chat.switch import switch_session

        if self.turn_running:
            raise UsageError("a turn is running: stop it or let it finish before switching the model")
        if (turn := self.parked()) is not None:
            raise UsageError(
                f"chat {self.chat_id} has an unfinished turn ({turn.status}); answer or resume it before "
                "switching the model"
            )
        return switch_session(self, provider, model, base_url)

    def _fall_back(self, turn_id: str, exc: ProviderError) -> bool:
        """The turn's provider failed: switch to the next fallback (True), or let it fail (False)."""
        from core.chat.switch import fall_back

        return fall_back(self, turn_id, exc)

    async def compact(self) -> ev.HistoryCompacted:
        """The owner asked (``/compact``, the palette): summarise every turn but the latest into
        one summary that takes their place in requests (:mod:`core.chat.compaction`). Refused
        (``UsageError``) while a turn runs or is parked, and when there is nothing to summarise."""
        if self.turn_running:
            raise UsageError("a turn is running: stop it or let it finish before summarising the chat")
        if (turn := self.parked()) is not None:
            raise UsageError(
                f"chat {self.chat_id} has an unfinished turn ({turn.status}); answer or resume it before summarising"
            )
        return await self.turns.compact()

    async def close(self) -> None:
        await self.servers.close()
