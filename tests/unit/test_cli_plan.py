"""`deferchat plan`: the JSON contract, the table, roster files and usage errors."""

from __future__ import annotations

import json

import pytest

from core.cli import main

CONTRACT_KEYS = {
    "builder",
    "policy",
    "strategy",
    "caps",
    "candidates",
    "defined_tool_names",
    "deferred_tool_names",
    "skipped_tool_names",
    "definition_tokens",
    "index_tokens",
    "index_entries",
    "index_text",
    "tools",
}
TOOL_KEYS = {"name", "origin", "server", "side_effect", "placement", "reason", "tokens", "input_schema"}

pytestmark = pytest.mark.usefixtures("home")


def run_json(capsys, *argv):
    assert main(["plan", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_plan_json_contract(capsys):
    p = run_json(capsys, "--roster", "production")
    assert CONTRACT_KEYS <= set(p)
    assert all(TOOL_KEYS <= set(t) for t in p["tools"])
    assert (len(p["defined_tool_names"]), len(p["deferred_tool_names"]), len(p["skipped_tool_names"])) == (30, 17, 0)
    assert len(p["index_entries"]) == len(p["deferred_tool_names"])
    for name, entry in zip(p["deferred_tool_names"], p["index_entries"]):
        assert entry.startswith(name + "(") and len(entry) <= 200
        assert entry in p["index_text"]
    assert p["caps"] == {
        "max_definitions": 30,
        "max_definition_tokens": 9000,
        "max_index_entries": 40,
        "max_index_tokens": 2000,
    }


def test_plan_table_is_readable(capsys):
    assert main(["plan", "--roster", "production"]) == 0
    out = capsys.readouterr().out
    assert "Defined 30/30" in out and "Indexed 17/40" in out and "Skipped 0" in out
    header = next(line for line in out.splitlines() if line.startswith("PLACEMENT"))
    assert header.split() == ["PLACEMENT", "NAME", "ORIGIN", "SIDE", "EFFECT", "TOKENS", "REASON"]
    assert any(line.startswith("indexed") and "mcp.bland_call.start_call" in line for line in out.splitlines())


def test_roster_file_and_caps_options(tmp_path, capsys):
    roster = {
        "agent": {"name": "mine", "version": "3", "deferred": ["b.two"]},
        "configured": [
            {"name": "a.one", "description": "One.", "input_schema": {"type": "object", "properties": {}}},
            {"name": "b.two", "description": "Two.", "input_schema": {"type": "object"}},
        ],
        "servers": [
            {
                "name": "srv",
                "tools": [
                    {
                        "name": "look",
                        "description": "Looks.",
                        "inputSchema": {"type": "object"},
                        "annotations": {"readOnlyHint": True, "openWorldHint": False},
                    },
                    {"name": "poke", "description": "Pokes."},
                ],
            }
        ],
    }
    f = tmp_path / "r.json"
    f.write_text(json.dumps(roster))
    p = run_json(capsys, "--roster", str(f), "--max-definitions", "3")
    assert p["defined_tool_names"] == ["tool.call", "a.one", "mcp.srv.look"]
    assert p["deferred_tool_names"] == ["b.two", "mcp.srv.poke"]
    look = next(t for t in p["tools"] if t["name"] == "mcp.srv.look")
    assert look["side_effect"] == "WORKSPACE_READ" and look["origin"] == "discovered" and look["server"] == "srv"
    poke = next(t for t in p["tools"] if t["name"] == "mcp.srv.poke")
    assert poke["side_effect"] == "NETWORK_WRITE"  # no annotations: it changes the world


@pytest.mark.parametrize(
    "content, needle",
    [
        ("{not json", "r.json"),
        ('{"configured": [{"description": "no name"}]}', "configured.0.name"),
        ('{"servers": [{"name": "bad name!", "tools": []}]}', "server name"),
    ],
)
def test_bad_roster_files_are_usage_errors(tmp_path, capsys, content, needle):
    f = tmp_path / "r.json"
    f.write_text(content)
    assert main(["plan", "--roster", str(f)]) == 2
    assert needle in capsys.readouterr().err


def test_unknown_roster_and_bad_flag(capsys):
    assert main(["plan", "--roster", "nope"]) == 2
    assert "production" in capsys.readouterr().err
    assert main(["plan", "--policy", "whatever"]) == 2
