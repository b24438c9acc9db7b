"""Always-load pins (issue 14; ADR-0130 amends ADR-0123): a tool or a whole server pinned by the
agent's ``always_load``, by a server's ``"alwaysLoad": true``, or by a website profile, is ranked
first and never deferred, under both policies and every strategy; pins past the caps say so; the
builder moved to @13 and older plans still reopen as current."""

from __future__ import annotations

import contextlib
import io
import json
from importlib import resources

import pytest

from core.cli import main
from core.deferral.names import ACTIVE_TOOLS, STRATEGY_NAMES, WRAPPER
from core.deferral.strategies import make_strategy
from core.mcp.config import always_load_servers, config_from_dict
from core.roster.loader import RosterError, parse_roster
from core.roster.models import (
    BUILDER,
    WEBSITE_PROFILE_TOOLS,
    AgentConfig,
    Caps,
    Placement,
    PlanInput,
    PolicyConfig,
    Profile,
    RosterPlan,
)
from core.roster.planner import plan_is_current, plan_roster, render_sha256
from core.roster.report import PIN_MARK
from core.roster.whatif import what_if
from core.tokens import TokenEstimator
from core.tools import Origin, SideEffect
from tests.helpers import configured, discovered

EST = TokenEstimator()
POLICIES = ("overflow", "threshold")

# Three built-ins, a big server (12 tools: over threshold's per-server limit of 10) and a small one.
CONFIGURED = tuple(configured(f"local.t{i}", SideEffect.WORKSPACE_READ) for i in range(3))
BIG = tuple(
    discovered("big", f"t{i:02d}", SideEffect.NETWORK_READ if i < 6 else SideEffect.NETWORK_WRITE) for i in range(12)
)
SMALL = tuple(discovered("small", name) for name in ("send", "wipe"))
CAPS = Caps(max_definitions=6)  # tight: without pins the writes and the small server would not be defined

# (how it is pinned, what PlanInput gets, the names it pins in rank order)
PINNINGS = [
    ("a tool by name", {"always_load": ("mcp.big.t11",)}, {}, ["mcp.big.t11"]),
    ("a server by mcp.<server>.*", {"always_load": ("mcp.small.*",)}, {}, ["mcp.small.send", "mcp.small.wipe"]),
    ("a server by alwaysLoad", {}, {"always_load_servers": ("small",)}, ["mcp.small.send", "mcp.small.wipe"]),
]


def pinned_plan(policy: str, strategy: str, agent: dict, extra: dict, caps: Caps = CAPS) -> RosterPlan:
    inp = PlanInput(
        agent=AgentConfig(name="pins", **agent),
        configured=CONFIGURED,
        discovered=BIG + SMALL,
        caps=caps,
        policy=PolicyConfig(name=policy),
        strategy=strategy,
        **extra,
    )
    return plan_roster(inp, EST)


def tools_first(plan: RosterPlan) -> list[str]:
    """The defined tools after the control tools, in the order the request carries them."""
    return [n for n in plan.defined_tool_names if n not in plan.control_tool_names]


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(("how", "agent", "extra", "pins"), PINNINGS, ids=[p[0] for p in PINNINGS])
def test_pinned_tools_are_defined_first_and_never_deferred(policy, strategy, how, agent, extra, pins):
    unpinned = pinned_plan(policy, strategy, {}, {})
    # the pins matter here: unpinned, they are not all defined, or not first
    assert not set(pins) <= set(unpinned.defined_tool_names) or tools_first(unpinned)[: len(pins)] != pins
    p = pinned_plan(policy, strategy, agent, extra)
    assert p.always_load_tool_names == pins
    assert tools_first(p)[: len(pins)] == pins  # defined, and first after the control tools
    assert not set(pins) & set(p.deferred_tool_names) and not set(pins) & set(p.skipped_tool_names)
    ranks = {t.name: t.rank for t in p.tools}
    others = [t.rank for t in p.tools if t.origin != Origin.CONTROL.value and t.name not in pins]
    assert max(ranks[n] for n in pins) < min(others)
    for name in pins:
        row = p.placement_of(name)
        assert row is not None and row.placement is Placement.DEFINED and row.always_load
        assert "pinned" in row.reason and "never deferred" in row.reason
    # nothing leaves the roster: every candidate is placed, and the caps hold
    assert len(p.tools) == len(CONFIGURED) + len(BIG) + len(SMALL) + len(p.control_tool_names)
    assert len(p.defined_tool_names) <= CAPS.max_definitions
    # the strategy surfaces every pin as a definition, on every turn
    specs = {n: s for n in p.pinned_names() if (s := p.spec_of(n)) is not None}
    surface_strategy = make_strategy(strategy, p, "system", specs)
    for _ in range(3):
        surface_strategy.begin_turn()
        tools = surface_strategy.surface([]).tools
        names = [t.get("name") for t in tools]
        offset = len(p.control_tool_names)
        assert names[offset : offset + len(pins)] == pins
        for t in tools:
            if t.get("name") in pins:
                assert "defer_loading" not in t
    if strategy == ACTIVE_TOOLS:
        assert not set(pins) & surface_strategy.pool.deferred  # search can never hide them


@pytest.mark.parametrize("policy", POLICIES)
def test_a_configured_deferral_or_a_threshold_never_defers_a_pin(policy):
    p = pinned_plan(policy, WRAPPER, {"always_load": ("mcp.big.t03",), "deferred": ("mcp.big.t03", "local.t1")}, {})
    assert "mcp.big.t03" in p.defined_tool_names
    if policy == "overflow":
        assert any("defers mcp.big.t03, which is pinned" in w and "the pin wins" in w for w in p.warnings)
        assert "local.t1" in p.deferred_tool_names
    else:  # big's other tools are over the per-server threshold; its pin is not
        assert {f"mcp.big.t{i:02d}" for i in range(12)} - {"mcp.big.t03"} <= set(p.deferred_tool_names)


def test_pins_that_name_nothing_are_warnings():
    p = pinned_plan(
        "overflow", WRAPPER, {"always_load": ("mcp.nowhere.*", "no.such")}, {"always_load_servers": ("gone",)}
    )
    assert p.always_load_tool_names == []
    assert sum("names no candidate" in w for w in p.warnings) == 2
    assert any("server gone is alwaysLoad" in w for w in p.warnings)


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
def test_pins_over_the_caps_are_deferred_with_a_reason_and_a_warning(strategy):
    p = pinned_plan("overflow", strategy, {"always_load": ("mcp.big.*",)}, {})
    pins = [f"mcp.big.t{i:02d}" for i in range(12)]
    assert p.always_load_tool_names == pins
    room = CAPS.max_definitions - len(p.control_tool_names)
    assert tools_first(p) == pins[:room]  # the pins fill every slot the control tool leaves
    over = pins[room:]
    assert p.deferred_tool_names[: len(over)] == over  # and take the index's room first
    for name in over:
        row = p.placement_of(name)
        assert row is not None and row.placement is Placement.DEFERRED
        assert "pinned, over the cap" in row.reason
    (warning,) = [w for w in p.warnings if "pinned tools exceed the definition caps" in w]
    assert f"{len(pins)} pinned tools" in warning and f"{len(over)} are pinned, over the cap" in warning
    assert set(over) <= set(warning.replace(",", " ").replace(")", " ").split())


def test_pins_over_the_token_cap_and_an_agent_that_cannot_defer_skip_with_the_reason():
    tight = Caps(max_definitions=30, max_definition_tokens=40)  # room for one small tool
    p = pinned_plan("overflow", WRAPPER, {"always_load": ("mcp.small.*",), "can_defer": False}, {}, caps=tight)
    rows = [p.placement_of(n) for n in p.always_load_tool_names]
    assert rows[0] is not None and rows[0].placement is Placement.DEFINED
    assert rows[1] is not None and rows[1].placement is Placement.SKIPPED
    assert "pinned, over the cap" in rows[1].reason and "defers nothing" in rows[1].reason
    assert any("skipped: mcp.small.wipe" in w for w in p.warnings)


def test_a_plan_without_pins_writes_none_of_their_keys_and_a_pinned_one_writes_them():
    bare = json.loads(pinned_plan("overflow", WRAPPER, {}, {}).to_json())
    assert "always_load_tool_names" not in bare and "always_load_servers" not in bare
    assert "always_load" not in bare["agent"] and not any("always_load" in t for t in bare["tools"])
    pinned = json.loads(
        pinned_plan(
            "overflow", WRAPPER, {"always_load": ("mcp.big.t11",)}, {"always_load_servers": ("small",)}
        ).to_json()
    )
    assert pinned["always_load_tool_names"] == ["mcp.big.t11", "mcp.small.send", "mcp.small.wipe"]
    assert pinned["always_load_servers"] == ["small"] and pinned["agent"]["always_load"] == ["mcp.big.t11"]
    by_name = {t["name"]: t for t in pinned["tools"]}
    assert by_name["mcp.big.t11"]["always_load"] == "always_load mcp.big.t11 in agent pins"
    assert by_name["mcp.small.send"]["always_load"] == "alwaysLoad in server small's mcpServers entry"
    assert "always_load" not in by_name["local.t0"]
    assert RosterPlan.model_validate_json(json.dumps(pinned)).always_load_tool_names == pinned["always_load_tool_names"]


def test_a_what_if_keeps_the_pins():
    p = pinned_plan("overflow", WRAPPER, {"always_load": ("mcp.big.t11",)}, {"always_load_servers": ("small",)})
    for strategy in STRATEGY_NAMES:
        other = what_if(p, strategy=strategy, policy=PolicyConfig(name="threshold"), estimator=EST)
        assert other.always_load_tool_names == p.always_load_tool_names
        assert tools_first(other)[:3] == p.always_load_tool_names


# --- ADR-0130: a chat bound to a website profile -----------------------------------------------------


def website_roster(**agent) -> dict:
    data = json.loads((resources.files("core.roster") / "rosters" / "production.json").read_text("utf-8"))
    data["agent"].update(profile={"kind": "website", "url": "https://ferries.example"}, **agent)
    return data


@pytest.mark.parametrize("strategy", STRATEGY_NAMES)
@pytest.mark.parametrize("policy", POLICIES)
def test_adr_0130_a_website_profile_pins_the_browser_tools_first(policy, strategy):
    # the profile's agent even asks to defer one of them: the pin wins
    r = parse_roster(website_roster(deferred=["schedule.update", "browser.act"]), "website")
    assert [t.name for t in r.configured][-3:] == list(WEBSITE_PROFILE_TOOLS)
    navigate = next(t for t in r.configured if t.name == "browser.navigate")
    assert "bound to the website https://ferries.example" in navigate.description
    inp = PlanInput(
        agent=r.agent,
        configured=r.configured,
        discovered=r.discovered,
        policy=PolicyConfig(name=policy),
        strategy=strategy,
    )
    p = plan_roster(inp, EST)
    assert p.always_load_tool_names == list(WEBSITE_PROFILE_TOOLS)
    assert tools_first(p)[:3] == list(WEBSITE_PROFILE_TOOLS)
    for name in WEBSITE_PROFILE_TOOLS:
        row = p.placement_of(name)
        assert row is not None and row.placement is Placement.DEFINED
        assert row.always_load == "the chat's website profile (ADR-0130)"
        assert row.reason.startswith("defined: pinned by the chat's website profile (ADR-0130); ranked first")
    assert p.agent["profile"] == {"kind": "website", "url": "https://ferries.example"}
    assert p.candidates == 49 and len(p.tools) == 49 + len(p.control_tool_names)


def test_the_production_roster_pins_nothing_and_a_website_production_still_skips_nothing():
    production = parse_roster(json.loads((resources.files("core.roster") / "rosters" / "production.json").read_text()))
    assert production.agent.always_load == () and production.agent.profile is None
    r = parse_roster(website_roster(), "website")
    p = plan_roster(PlanInput(agent=r.agent, configured=r.configured, discovered=r.discovered), EST)
    # three more definitions than production's 30 fit: the last three ranked move to the index
    assert len(p.defined_tool_names) == 30 and p.skipped_tool_names == []
    assert {"mcp.gmail_work.get_thread", "mcp.gmail_work.list_labels", "mcp.gmail_work.search_threads"} <= set(
        p.deferred_tool_names
    )


def test_roster_files_check_always_load_and_profile():
    for bad in ({"always_load": ["mcp.*.x"]}, {"always_load": ["mcp.a b"]}, {"profile": {"kind": "kiosk", "url": "x"}}):
        with pytest.raises(RosterError):
            parse_roster({"agent": bad})
    with pytest.raises(RosterError):
        parse_roster({"agent": {"profile": {"kind": "website", "url": "ftp://files.example"}}})
    ok = parse_roster(
        {"agent": {"always_load": ["time.now", "mcp.gmail_work.*"]}, "configured": [{"name": "time.now"}]}
    )
    assert ok.agent.always_load == ("time.now", "mcp.gmail_work.*")
    assert Profile(kind="website", url="https://a.example").pinned_tools == WEBSITE_PROFILE_TOOLS


def test_mcp_servers_always_load_is_claude_codes_key():
    config = config_from_dict(
        {
            "mcpServers": {
                "search": {"command": "srv", "alwaysLoad": True},
                "other": {"command": "srv2"},
                "snake": {"command": "srv3", "always_load": True},  # not the key: ignored like any unknown key
            }
        }
    )
    assert always_load_servers(config) == ("search",)
    assert config.get("search").always_load is True  # type: ignore[union-attr]


# --- the builder, and plans pinned by older builders ----------------------------------------------------


def test_the_builder_is_13_and_reads_a_12_plan_as_current():
    assert BUILDER == "context-builder@13"
    p = pinned_plan("overflow", WRAPPER, {}, {})
    old = RosterPlan.model_validate_json(p.to_json().replace(BUILDER, "context-builder@12"))
    assert plan_is_current(old) and render_sha256(old) == old.render_sha256
    pinned = pinned_plan("overflow", WRAPPER, {"always_load": ("mcp.small.*",)}, {})
    assert render_sha256(pinned) != render_sha256(p)  # a pinned plan renders other bytes
    assert not plan_is_current(
        pinned.model_copy(update={"builder": "context-builder@12", "render_sha256": p.render_sha256})
    )


def test_deferchat_plan_shows_the_pins(tmp_path):
    roster = tmp_path / "site.json"
    roster.write_text(json.dumps(website_roster(always_load=["mcp.bland_call.*"])))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", "--roster", str(roster)]) == 0
    table = out.getvalue()
    assert "Pinned 4 \u00b7 ranked first, never deferred" in table
    pinned_rows = [line for line in table.splitlines() if line.startswith(f"defined {PIN_MARK}")]
    assert [row.split()[2] for row in pinned_rows] == [*WEBSITE_PROFILE_TOOLS, "mcp.bland_call.start_call"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", "--roster", str(roster), "--json", "--strategy", "anthropic"]) == 0
    data = json.loads(out.getvalue())
    assert data["always_load_tool_names"] == [*WEBSITE_PROFILE_TOOLS, "mcp.bland_call.start_call"]
    controls = len(data["control_tool_names"])  # none: a native strategy defines no control tool
    assert data["defined_tool_names"][controls : controls + 4] == data["always_load_tool_names"]
