"""The engine: one per process. It owns the store, the settings, the policy, the provider
factory and the token estimator, and opens chats.

Presentation layers (the TUI, the headless CLI) only subscribe to events and answer
approvals; everything that decides anything lives below. A chat is put together in
:mod:`core.chat`: opening it (plan once and pin, or reopen the pinned plan), its servers,
its turn loop, its tool routing and its events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING

from core.chat.eventlog import EventLog, Subscriber
from core.chat.opening import OpenedChat, open_new, reopen
from core.chat.options import ChatOptions, TurnResult
from core.chat.servers import ChatServers
from core.chat.session import ChatSession
from core.config import Settings, load_settings
from core.errors import UsageError
from core.pipeline.approvals import Approver, Decision, FixedApprover
from core.pipeline.policy import Policy, load_policy
from core.providers.factory import ProviderFactory, default_provider_factory
from core.roster.models import RosterPlan
from core.store import Store
from core.tokens import TokenEstimator

if TYPE_CHECKING:
    from core.mcp.elicitation import Elicitor

__all__ = ["ChatOptions", "ChatSession", "Engine", "ProviderFactory", "TurnResult"]


class Engine:
    """Opens chats. One engine per process; it owns the store."""

    def __init__(
        self,
        store: Store | None = None,
        settings: Settings | None = None,
        *,
        policy: Policy | None = None,
        provider_factory: ProviderFactory | None = None,
        estimator: TokenEstimator | None = None,
        demo_delay: float = 0.0,
    ):
        self.settings = settings or load_settings()
        self.store = store or Store()
        self.policy = policy or load_policy(self.settings.policy_file)
        self.provider_factory = provider_factory or default_provider_factory(self.settings)
        self.estimator = estimator or TokenEstimator(self.store.token_cache)
        self.demo_delay = demo_delay

    def resolve_provider(self, opts: ChatOptions) -> tuple[str, str, str | None]:
        """Where a new chat with ``opts`` runs: the one naming rule (:mod:`core.providers.naming`);
        UsageError when the names do not say it."""
        from core.providers.naming import resolve_new

        target = resolve_new(self.settings, opts.provider, opts.model, opts.base_url, script=bool(opts.script))
        return target.provider, target.model, target.base_url

    def preview_plan(self, opts: ChatOptions, estimator: TokenEstimator | None = None) -> RosterPlan:
        """The plan a new chat with ``opts`` would pin if its servers list what the roster
        recorded: the strategy resolved as :func:`core.chat.opening.open_new` resolves it, the
        same caps and policy, the roster's own server listings (no server started, no MCP SDK,
        nothing stored). What the TUI shows while a new chat's servers start."""
        from core.chat.opening import new_chat_choice
        from core.roster.inputs import build_plan_input
        from core.roster.planner import plan_roster

        chosen = new_chat_choice(self, opts)
        inp = build_plan_input(
            roster=opts.roster or self.settings.roster,
            mcp_config=None,
            caps=opts.caps,
            policy=opts.policy,
            strategy=chosen.strategy,
            strategy_reason=chosen.reason,
        )
        return plan_roster(inp, estimator or self.estimator)

    async def open_chat(
        self,
        chat_id: str | None = None,
        options: ChatOptions | None = None,
        *,
        approver: Approver | None = None,
        subscribers: Iterable[Subscriber] | None = None,
        record: str | None = None,
        elicitor: Elicitor | None = None,
    ) -> ChatSession:
        """A new chat (``chat_id`` None) planned now, or an existing one with its pinned plan.
        ``elicitor``: who answers an MCP server's request for input (None: nobody, and the chat's
        servers are not told deferchat can ask)."""
        opts = options or ChatOptions()
        events = EventLog(self.store, subscribers or ())
        servers = ChatServers(events.emit, elicitor=elicitor, tool_settings=self.settings.tools.model_dump())
        try:
            opened: OpenedChat
            if chat_id is None:
                opened = await open_new(self, opts, events, servers)
            else:
                row = self.store.find_chat(chat_id)
                if row is None:
                    raise UsageError(f"no chat {chat_id!r}; `deferchat chats list` shows them")
                opened = await reopen(self, row, opts, events, servers)
            session = ChatSession(
                store=self.store,
                events=events,
                servers=servers,
                opened=opened,
                settings=self.settings,
                policy=self.policy,
                approver=approver or FixedApprover(Decision.PARK),
                estimator=self.estimator,
                record=record,
            )
        except BaseException:
            # A failed or cancelled open (quitting while servers start) must not leave MCP
            # servers running: close what was started, even under cancellation.
            await asyncio.shield(servers.close())
            raise
        session.emit(session.plan_event(pinned=opened.pinned))
        return session
