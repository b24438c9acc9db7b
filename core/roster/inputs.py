"""What a plan is built from, for ``deferchat plan``/``search`` and for opening a chat: the roster,
live MCP discovery merged over its static tools, the resolved strategy and the token estimator.
Everything here is cheap to import."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from core.deferral.names import AUTO, STRATEGY_NAMES, WRAPPER
from core.errors import UsageError
from core.roster.loader import Roster, load_roster
from core.roster.models import Caps, PlanInput, PolicyConfig, RejectedTool
from core.tokens import TokenEstimator
from core.tools import ToolSpec

if TYPE_CHECKING:
    from core.config import Settings

DEFAULT_ROSTER = "production"


def resolve_strategy_for(
    strategy: str, provider: str | None, model: str | None, base_url: str | None, settings: Settings
) -> tuple[str, str]:
    """The concrete strategy and a readable reason. ``auto`` dispatches on the genuine
    provider and model (seed 004's resolveDeferralStrategy), with the gateways, model-support
    rows and default provider of ``settings``: the ones the caller runs with, never reread."""
    if strategy in STRATEGY_NAMES:
        return strategy, f"{strategy} chosen explicitly"
    if strategy != AUTO:
        raise UsageError(f"unknown strategy {strategy!r}")
    from core.deferral.dispatch import resolve_strategy

    resolution = resolve_strategy(
        provider or settings.default_provider(),
        model or "",
        base_url,
        gateways=settings.anthropic_gateways,
        model_support=settings.model_support,
    )
    return resolution.strategy, resolution.reason


def token_estimator() -> TokenEstimator:
    """An estimator whose cache persists in the store, so re-planning tokenizes nothing seen."""
    from core.store import open_token_cache

    return TokenEstimator(open_token_cache())


def merge_discovered(static: Sequence[ToolSpec], live: Sequence[ToolSpec]) -> list[ToolSpec]:
    """A live server's tools replace the roster's static tools for a server of the same name;
    servers that did not answer keep their static tools."""
    live_servers = {t.server for t in live}
    return [t for t in static if t.server not in live_servers] + list(live)


def build_plan_input(
    *,
    roster: str | Roster | None,
    mcp_config: str | None,
    caps: Caps | None = None,
    policy: PolicyConfig | None = None,
    strategy: str = WRAPPER,
    strategy_reason: str = "",
    on_event: Callable[[Any], None] | None = None,
) -> PlanInput:
    """Roster (named or file) plus live discovery from ``mcp_config``, merged.

    A live server replaces the roster's static tools for a server of the same name. A server
    whose entry says ``"alwaysLoad": true`` has its tools pinned.
    """
    r = roster if isinstance(roster, Roster) else load_roster(roster or DEFAULT_ROSTER)
    discovered = list(r.discovered)
    rejected: tuple[RejectedTool, ...] = ()
    always_load: tuple[str, ...] = ()
    if mcp_config:
        from core.mcp.config import always_load_servers, load_mcp_config
        from core.mcp.discovery import discover_servers

        config = load_mcp_config([mcp_config])
        found = discover_servers(config, on_event=on_event)
        discovered = merge_discovered(discovered, found.tools)
        rejected = tuple(found.rejected)  # listed but unusable: skipped in the plan, with reasons
        always_load = always_load_servers(config)  # "alwaysLoad": true pins a server's tools
    return PlanInput(
        agent=r.agent,
        configured=r.configured,
        discovered=tuple(discovered),
        rejected=rejected,
        always_load_servers=always_load,
        caps=caps or Caps(),
        policy=policy or PolicyConfig(),
        strategy=strategy,
        strategy_reason=strategy_reason,
    )
