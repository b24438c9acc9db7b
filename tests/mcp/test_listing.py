"""Nothing vanishes: every tool a server lists is offered or skipped with its reason.

A real stdio server (``tests/mcp_servers/bad_listing.py``) lists 18 tools, 5 of them
unusable (an over-long name, whitespace, a duplicate, a ``{"type": "string"}`` schema, an
ANSI escape in a name). Its 13 good tools are offered; the 5 others reach the plan (JSON and
table) and ``deferchat servers`` as skipped, each with its reason, their names display-safe.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.mcp.client import McpManager
from core.mcp.config import config_from_dict
from core.mcp.convert import listed_tool_problem, shown_name, sort_listing
from core.roster.models import REJECTED_REASON_PREFIX, Placement, PlanInput, RejectedTool
from core.roster.planner import plan_roster
from core.roster.report import plan_table
from core.roster.whatif import what_if
from tests.helpers import subprocess_env
from tests.mcp.conftest import own_server
from tests.mcp_servers.bad_listing import GOOD, LONG_NAME

OBJECT = {"type": "object", "properties": {}}
BAD_REASONS = {  # rejected row name -> a fragment of its reason
    "mcp.bad.look up": "whitespace",
    "mcp.bad.read\\x1b[31m_forecast": "control characters",
    "mcp.bad.stringly": "inputSchema has type 'string'",
    "mcp.bad.tool_01#2": "more than once",
    f"mcp.bad.{shown_name(LONG_NAME)}": "140 characters",
}


# --- the rules, on literal wire JSON ------------------------------------------------------------


@pytest.mark.parametrize(
    "tool, fragment",
    [
        ({"name": "ok", "inputSchema": OBJECT}, None),
        ({"name": "dotted.name-1_x", "inputSchema": OBJECT}, None),
        ({"name": "x" * 128, "inputSchema": OBJECT}, None),
        ({"name": "x" * 129, "inputSchema": OBJECT}, "129 characters"),
        ({"name": "two words", "inputSchema": OBJECT}, "whitespace"),
        ({"name": "tab\there", "inputSchema": OBJECT}, "control characters"),  # a tab is both: control wins
        ({"name": "esc\x1b[2Jx", "inputSchema": OBJECT}, "control characters"),
        ({"name": "rtl\u202eevil", "inputSchema": OBJECT}, "control characters"),  # a bidi override
        ({"name": "zero\u200bwidth", "inputSchema": OBJECT}, "control characters"),
        ({"name": "a/b", "inputSchema": OBJECT}, "the MCP tool-name rule"),
        ({"name": "météo", "inputSchema": OBJECT}, "the MCP tool-name rule"),
        ({"name": "", "inputSchema": OBJECT}, "no name"),
        ({"name": 7, "inputSchema": OBJECT}, "no name"),
        ({"inputSchema": OBJECT}, "no name"),
        ({"name": "s", "inputSchema": {"type": "string"}}, "type 'string'"),
        ({"name": "s", "inputSchema": {"properties": {}}}, "type None"),
        ({"name": "s", "inputSchema": [OBJECT]}, "is a list"),
        ({"name": "s", "inputSchema": None}, "is a null"),
        ({"name": "s"}, "no inputSchema"),
        ("just a string", "not a tool object"),
    ],
)
def test_each_listed_tool_is_judged_on_its_own(tool, fragment):
    problem = listed_tool_problem(tool)
    if fragment is None:
        assert problem is None
    else:
        assert problem is not None and fragment in problem


def test_sort_listing_accounts_for_every_entry():
    listing = [
        ({"name": "b", "inputSchema": OBJECT, "annotations": {"readOnlyHint": True}}, None),
        ({"name": "a", "inputSchema": OBJECT}, None),
        ({"name": "b", "inputSchema": OBJECT}, None),  # a duplicate of an offered name
        ({"name": "b", "inputSchema": {"type": "string"}}, None),  # and another
        ({"name": "bad\x07", "inputSchema": OBJECT}, None),
        ({"name": "sdk", "inputSchema": OBJECT}, "the SDK says no"),  # a problem found on the wire
        ({"name": "c", "inputSchema": {"type": "string"}}, None),
        ({"name": "c", "inputSchema": OBJECT}, None),  # the first 'c' owns the name, though it was rejected
        ({"name": "desc", "description": 5, "inputSchema": OBJECT}, None),  # caught by the ToolSpec rules
    ]
    specs, rejected = sort_listing("srv", listing)
    assert [s.name for s in specs] == ["mcp.srv.a", "mcp.srv.b"]
    assert specs[1].side_effect.is_read  # the first 'b' (read-only) is the one offered
    names = {r.name: r.reason for r in rejected}
    assert len(specs) + len(rejected) == len(listing)
    assert set(names) == {
        "mcp.srv.b#2",
        "mcp.srv.b#3",
        "mcp.srv.bad\\x07",
        "mcp.srv.sdk",
        "mcp.srv.c",
        "mcp.srv.c#2",
        "mcp.srv.desc",
    }
    assert "more than once" in names["mcp.srv.b#2"] and "more than once" in names["mcp.srv.b#3"]
    assert names["mcp.srv.sdk"] == "the SDK says no"
    assert "type 'string'" in names["mcp.srv.c"] and "more than once" in names["mcp.srv.c#2"]
    assert "description" in names["mcp.srv.desc"]
    assert all(r.server == "srv" and "\x07" not in r.name for r in rejected)


def test_shown_names_are_safe_and_short():
    assert shown_name("a\x1b[31mb\u202ec") == "a\\x1b[31mb\\u202ec"
    long = shown_name("y" * 500)
    assert len(long) < 70 and long.endswith("(500 chars)")


# --- the planner: rejected tools are skipped rows, and a plan without them is unchanged ----------


def test_planner_lists_rejected_tools_as_skipped_and_what_if_keeps_them():
    from tests.helpers import discovered

    tools = (discovered("srv", "a"), discovered("srv", "b"))
    rejected = (
        RejectedTool(name="mcp.srv.z z", server="srv", reason="its name contains whitespace"),
        RejectedTool(name="mcp.srv.a#2", server="srv", reason="listed twice"),
    )
    plain = plan_roster(PlanInput(discovered=tools))
    with_rejects = plan_roster(PlanInput(discovered=tools, rejected=rejected))
    # The candidates' own placements are untouched; the rejected rows come after, sorted.
    assert with_rejects.tools[: len(plain.tools)] == plain.tools
    rows = with_rejects.tools[len(plain.tools) :]
    assert [r.name for r in rows] == ["mcp.srv.a#2", "mcp.srv.z z"]
    assert all(
        r.placement is Placement.SKIPPED and r.rejected and r.reason.startswith(REJECTED_REASON_PREFIX) for r in rows
    )
    assert with_rejects.skipped_tool_names == [*plain.skipped_tool_names, "mcp.srv.a#2", "mcp.srv.z z"]
    assert with_rejects.render_sha256 == plain.render_sha256  # the prompt is the same bytes
    assert with_rejects.spec_of("mcp.srv.z z") is None
    assert "mcp.srv.z z" in plan_table(with_rejects) and "its name contains whitespace" in plan_table(with_rejects)
    # A what-if from the stored plan shows the same skipped entries.
    again = what_if(with_rejects, strategy="active-tools")
    assert [t.name for t in again.tools if t.rejected] == ["mcp.srv.a#2", "mcp.srv.z z"]
    assert with_rejects.rejected_tools() == sorted(rejected, key=lambda r: r.name)


# --- a real server ---------------------------------------------------------------------------------


def _bad_server(**env: str) -> dict:
    return own_server("tests.mcp_servers.bad_listing", env=env)


async def test_a_bad_tool_never_costs_a_server_its_good_ones():
    manager = McpManager(
        config_from_dict({"mcpServers": {"bad": _bad_server(), "more": _bad_server(BAD_LISTING_MORE="1")}})
    )
    try:
        await manager.start()
        reports = {r.name: r for r in manager.servers()}
        assert reports["bad"].status == "ready" and reports["more"].status == "ready"
        tools = {t.name for t in manager.tools()}
        assert {f"mcp.bad.{n}" for n in GOOD} <= tools and len([t for t in tools if t.startswith("mcp.bad.")]) == 13
        rejected = {r.name: r.reason for r in manager.rejected() if r.server == "bad"}
        assert set(rejected) == set(BAD_REASONS)
        for name, fragment in BAD_REASONS.items():
            assert fragment in rejected[name], (name, rejected[name])
        assert reports["bad"].tools == 13 and len(reports["bad"].skipped) == 5
        assert "5 listed tools skipped" in reports["bad"].message
        more = {r.name: r.reason for r in manager.rejected() if r.server == "more"}
        assert len(more) == 8
        assert "is a list" in more["mcp.more.listy"] and "no inputSchema" in more["mcp.more.schemaless"]
        assert "tool-name rule" in more["mcp.more.a/b"]
        assert len(manager.listing("bad")) == 18  # the listing as the server sent it, every tool
        # The good tools work.
        result = await manager.call("mcp.bad.tool_07", {})
        assert not result.is_error and result.text() == "called tool_07"
    finally:
        await manager.close()


def _run(args: list[str], home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.main", *args],
        env=subprocess_env(home),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


@pytest.fixture
def bad_config(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"mcpServers": {"bad": _bad_server()}}))
    return path


def test_plan_and_servers_show_the_same_skipped_entries(tmp_path, bad_config):
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    listed = 18

    proc = _run(["plan", "--mcp-config", str(bad_config), "--json"], home, cwd)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x1b" not in proc.stderr
    plan = json.loads(proc.stdout)
    rows = [t for t in plan["tools"] if t["server"] == "bad"]
    assert len(rows) == listed  # every listed tool has a row: 13 placed, 5 skipped
    skipped = {t["name"]: t["reason"] for t in rows if t["placement"] == "skipped"}
    assert set(skipped) == set(BAD_REASONS)
    assert set(BAD_REASONS) <= set(plan["skipped_tool_names"])
    for name, fragment in BAD_REASONS.items():
        assert skipped[name].startswith(REJECTED_REASON_PREFIX) and fragment in skipped[name]
    placed = {t["name"] for t in rows if t["placement"] != "skipped"}
    assert placed == {f"mcp.bad.{n}" for n in GOOD}

    table = _run(["plan", "--mcp-config", str(bad_config)], home, cwd)
    assert table.returncode == 0 and "\x1b" not in table.stdout
    for name in BAD_REASONS:
        line = next(line for line in table.stdout.splitlines() if f" {name} " in line)
        assert line.startswith("skipped")

    servers = _run(["servers", "--mcp-config", str(bad_config), "--json"], home, cwd)
    assert servers.returncode == 0, servers.stderr
    row = next(json.loads(line) for line in servers.stdout.splitlines() if json.loads(line)["server"] == "bad")
    assert row["status"] == "ready" and row["tools"] == 13
    assert {s["name"]: s["reason"] for s in row["skipped"]} == {
        n: r[len(REJECTED_REASON_PREFIX) :] for n, r in skipped.items()
    }

    text = _run(["servers", "--mcp-config", str(bad_config)], home, cwd)
    assert "\x1b" not in text.stdout
    for name in BAD_REASONS:
        assert name in text.stdout
