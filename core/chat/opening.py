"""Opening a chat: plan once and pin it (ADR-0123 decisions 2 and 19), start its servers, or
reopen a pinned plan.

A new chat is planned from the roster and the live MCP listings, and the plan is stored with
the chat. Reopening never re-plans: the stored plan runs even when the servers now offer more
tools, and a plan built by an older builder is kept as pinned.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, get_args

from core import events as ev
from core.chat.eventlog import EventLog
from core.chat.options import ChatOptions
from core.chat.servers import ChatServers
from core.config import Settings
from core.deferral.strategies.native import AnthropicSearch, OpenAISearch
from core.errors import UserFacingError
from core.providers.base import Provider
from core.roster.loader import Roster, load_roster
from core.roster.models import AgentConfig, PlanInput, RosterPlan
from core.roster.planner import plan_is_current, plan_roster
from core.store import ChatRow, Store
from core.tokens import TokenEstimator
from core.tools import ToolSpec

# The native search flavour of chats opened before it was a setting (and pinned in ``sources``).
DEFAULT_TOOL_SEARCH = {"anthropic": "bm25", "openai": "hosted"}


class ProviderMaker(Protocol):
    def __call__(self, name: str, model: str, base_url: str | None, extra: dict[str, Any]) -> Provider: ...


class OpeningContext(Protocol):
    """What opening a chat needs from the process that opens it (the engine)."""

    settings: Settings
    store: Store
    estimator: TokenEstimator
    provider_factory: ProviderMaker
    demo_delay: float

    def resolve_provider(self, opts: ChatOptions) -> tuple[str, str, str | None]: ...


MakeProvider = Callable[[str, str, str | None], Provider]
"""``(name, model, base_url)`` -> a provider built the way the chat's own was (its script, the
demo's pace): what a switch builds the next provider with."""


@dataclass
class OpenedChat:
    """A chat ready to run: its pinned plan, where it came from, its provider and the strategy
    it runs with now (the plan's own, or the one resolved again at a switch of provider)."""

    chat_id: str
    plan: RosterPlan
    roster: Roster
    sources: dict[str, Any]
    provider_name: str
    provider: Provider
    live: dict[str, ToolSpec]  # the tools as they are now, for the pin check on resume
    pinned: bool  # reopened with its stored plan
    strategy: str
    strategy_reason: str
    make_provider: MakeProvider | None = None
    fallback: list[str] = field(default_factory=list)  # "provider:model", tried in order

    @property
    def tool_search(self) -> dict[str, str]:
        return {**DEFAULT_TOOL_SEARCH, **(self.sources.get("tool_search") or {})}

    @property
    def switched(self) -> bool:
        """The chat ran on another provider or model before (its history may hold their blocks)."""
        return bool(self.sources.get("switched"))


def search_note(strategy: str, tool_search: Mapping[str, str]) -> str:
    """What a reason adds about the native search flavour the chat runs with (none by default)."""
    if strategy == "openai" and tool_search.get("openai") == "client":
        return '; tool_search runs client-side (openai_tool_search = "client"): deferchat\'s own index answers it'
    if strategy == "anthropic" and tool_search.get("anthropic") == "regex":
        return '; the server tool search is the regex variant (anthropic_tool_search = "regex")'
    return ""


def provider_maker(env: OpeningContext, script: str | None, flag_base_url: str | None = None) -> MakeProvider:
    extra = {"script": script, "demo_delay": env.demo_delay, "flag_base_url": flag_base_url}
    return lambda name, model, base_url: env.provider_factory(name, model, base_url, extra)


def _roster_source(name: str) -> str:
    """A roster as the chat pins it: a file by its absolute path, a named roster by its name."""
    return str(Path(name).resolve()) if Path(name).exists() else name


def _resolved_path(value: str | None) -> str | None:
    return str(Path(value).resolve()) if value else None


@dataclass(frozen=True)
class NewChatChoice:
    """What a new chat with given options runs on: its provider and the strategy resolved for it."""

    provider: str
    model: str
    base_url: str | None
    choice: str  # the strategy asked for (``auto`` or a name), pinned so a switch resolves it again
    strategy: str
    reason: str
    tool_search: dict[str, str]


def new_chat_choice(env: OpeningContext, opts: ChatOptions) -> NewChatChoice:
    """The provider and strategy a new chat with ``opts`` opens on (:func:`open_new`, and the
    plan preview a presentation shows while the chat's servers start)."""
    from core.roster.inputs import resolve_strategy_for

    settings = env.settings
    provider, model, base_url = env.resolve_provider(opts)
    choice = opts.strategy or settings.strategy
    strategy, reason = resolve_strategy_for(choice, provider, model, base_url, settings=settings)
    tool_search: dict[str, str] = {"anthropic": settings.anthropic_tool_search, "openai": settings.openai_tool_search}
    return NewChatChoice(
        provider, model, base_url, choice, strategy, reason + search_note(strategy, tool_search), tool_search
    )


async def open_new(env: OpeningContext, opts: ChatOptions, events: EventLog, servers: ChatServers) -> OpenedChat:
    """Plan a new chat now and pin it."""
    settings = env.settings
    chosen = new_chat_choice(env, opts)
    provider, model, base_url = chosen.provider, chosen.model, chosen.base_url
    choice, strategy, reason, tool_search = chosen.choice, chosen.strategy, chosen.reason, chosen.tool_search
    roster_name = opts.roster or settings.roster
    roster = load_roster(roster_name)
    script = _resolved_path(opts.script)
    make = provider_maker(env, script, opts.base_url)
    made = make(provider, model, base_url)
    await servers.start(roster, opts.mcp_config, opts.start_demo_servers)
    live = servers.live
    inp = PlanInput(
        agent=roster.agent,
        configured=roster.configured,
        discovered=servers.discovered(roster),
        rejected=servers.rejected(),
        always_load_servers=servers.always_load,
        caps=opts.caps,
        policy=opts.policy,
        strategy=strategy,
        strategy_reason=reason,
    )
    plan = plan_roster(inp, env.estimator)
    env.store.token_cache.flush()
    plan_id = env.store.save_plan(plan.to_json(), plan.builder)
    sources: dict[str, Any] = {
        "roster": _roster_source(roster_name),
        "mcp_config": _resolved_path(opts.mcp_config),
        "script": script,
        "start_demo_servers": opts.start_demo_servers,
        # pinned: a later change of settings must not change this chat's tools array
        "tool_search": tool_search,
        # what the owner asked for (a concrete strategy or auto): a switch resolves it again
        "strategy_choice": choice,
    }
    if opts.fallback is not None:
        sources["fallback"] = list(opts.fallback)
    chat_id = env.store.create_chat(
        title=opts.title or "New chat",
        agent_name=roster.agent.name,
        agent_version=roster.agent.version,
        roster=sources["roster"],
        plan_id=plan_id,
        builder=plan.builder,
        strategy=strategy,
        strategy_reason=reason,
        policy=opts.policy.name,
        provider=provider,
        model=model,
        base_url=base_url,
        sources=json.dumps(sources),
    )
    events.chat_id = chat_id
    for status in servers.status.values():  # subscribers saw them before the chat had an id
        events.store_only(status)
    return OpenedChat(
        chat_id=chat_id,
        plan=plan,
        roster=roster,
        sources=sources,
        provider_name=provider,
        provider=made,
        live=live,
        pinned=False,
        strategy=strategy,
        strategy_reason=reason,
        make_provider=make,
        fallback=fallback_list(sources, settings),
    )


def _stored_sources(row: ChatRow) -> dict[str, Any]:
    """The chat's stored sources, each of the type it was written with; anything unreadable is
    left out (the pinned plan still runs without it)."""
    try:
        stored = row.sources_dict()
    except ValueError:
        return {}
    kept: dict[str, Any] = {
        k: v for k in ("roster", "mcp_config", "script", "strategy_choice") if isinstance(v := stored.get(k), str)
    }
    for flag in ("start_demo_servers", "switched"):
        if isinstance(stored.get(flag), bool):
            kept[flag] = stored[flag]
    fallback = stored.get("fallback")
    if isinstance(fallback, list) and all(isinstance(f, str) for f in fallback):
        kept["fallback"] = list(fallback)
    search = stored.get("tool_search")
    if isinstance(search, dict):
        known = {"anthropic": get_args(AnthropicSearch), "openai": get_args(OpenAISearch)}
        kept["tool_search"] = {k: v for k, v in search.items() if v in known.get(k, ())}
    return kept


async def reopen(
    env: OpeningContext, row: ChatRow, opts: ChatOptions, events: EventLog, servers: ChatServers
) -> OpenedChat:
    """An existing chat with its stored plan; never re-planned."""
    events.chat_id = row.id
    plan_json = env.store.plan_json(row.plan_id) if row.plan_id else None
    if plan_json is None:
        raise UserFacingError(f"chat {row.id} has lost its plan; it cannot be reopened")
    try:
        plan = RosterPlan.model_validate_json(plan_json)
    except ValueError as exc:  # pydantic's ValidationError: a stored plan this version cannot read
        raise UserFacingError(
            f"chat {row.id}: its stored plan cannot be read ({type(exc).__name__}); it cannot be reopened"
        ) from None
    sources = _stored_sources(row)
    try:
        roster = load_roster(sources.get("roster") or row.roster or env.settings.roster)
    except UserFacingError as exc:
        # The roster is gone: the pinned plan still runs; nothing counts as live for resumes.
        events.emit(ev.ErrorEvent(code="roster.missing", message=str(exc)))
        roster = Roster(
            name="(missing)",
            agent=AgentConfig(name=plan.agent.get("name", "chat"), version=plan.agent.get("version", "?")),
            configured=(),
            discovered=(),
        )
    make = provider_maker(env, opts.script or sources.get("script"), opts.base_url)
    made = make(row.provider, row.model, row.base_url)
    await servers.start(
        roster, sources.get("mcp_config"), bool(sources.get("start_demo_servers", True)), lazy=opts.lazy_servers
    )
    opened = OpenedChat(
        chat_id=row.id,
        plan=plan,
        roster=roster,
        sources=sources,
        provider_name=row.provider,
        provider=made,
        live=servers.live,  # kept up to date as lazily started servers come up
        pinned=True,
        # the chat's strategy now: a switch of provider resolved it again (the plan keeps its own)
        strategy=row.strategy or plan.strategy,
        strategy_reason=row.strategy_reason or plan.strategy_reason,
        make_provider=make,
        fallback=fallback_list(sources, env.settings),
    )
    if not plan_is_current(plan):
        events.emit(
            ev.ErrorEvent(
                code="plan.not_current",
                message=f"this chat's plan was built by {plan.builder}, which this version "
                "cannot render byte for byte; it is kept as pinned (never re-planned)",
            )
        )
    return opened


def fallback_list(sources: dict[str, Any], settings: Settings) -> list[str]:
    """The chat's fallback models (``provider:model``), its own over ``fallback`` in config.toml."""
    own = sources.get("fallback")
    return list(own) if isinstance(own, list) else list(settings.fallback)
