"""The CLI's words (issue 19, item 9): every flag of every command says what it is for (``deferchat
--help`` showed ``--provider TUI_PROVIDER`` and no word more), no help line stops mid-sentence
(``servers --help`` did), and ``deferchat servers`` lists what the app runs (it said "no MCP servers
configured" while the app ran four demo servers)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest

import core.mcp.discovery
import tui.main
from core.cli import servers
from core.demo import DEMO_SERVERS
from core.mcp.reports import Discovery, ServerReport


def parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    found: list[tuple[str, argparse.ArgumentParser]] = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        found.append((path, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")

    walk(tui.main.build_parser(), "deferchat")
    return found


DANGLING = re.compile(r"(?:'s|\b(?:the|a|an|of|and|or))$", re.IGNORECASE)  # a line that stops mid-phrase


@pytest.mark.parametrize(("path", "parser"), parsers(), ids=[p for p, _ in parsers()])
def test_every_flag_says_what_it_is_for(path: str, parser: argparse.ArgumentParser) -> None:
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        name = "/".join(action.option_strings) or action.dest
        assert action.help, f"{path} {name} has no help"
        assert not DANGLING.search(action.help.rstrip(" .)")), f"{path} {name}: {action.help!r} stops mid-sentence"
    text = parser.format_help()
    assert not re.search(r"\bTUI_[A-Z_]+\b", text), text  # a metavar made from an internal dest
    for line in (parser.description or "",):
        assert not DANGLING.search(line.rstrip(" .)")), line


def test_servers_help_says_what_it_lists() -> None:
    [parser] = [p for path, p in parsers() if path == "deferchat servers"]
    text = " ".join(parser.format_help().split())
    assert "the offline demo's own servers (marked demo)" in text
    assert "an mcpServers file to add to yours and the project's" in text


def test_servers_lists_what_the_app_runs_the_demos_marked(home: Path, monkeypatch, capsys) -> None:
    source, demo = servers.as_the_app_runs(None)  # an empty home: the embedded default
    assert set(demo) == set(DEMO_SERVERS) and {s.name for s in source.servers} == set(DEMO_SERVERS)

    (home / "mcp.json").write_text(
        json.dumps({"mcpServers": {"gmail_work": {"command": "my-gmail"}, "mine": {"command": "mine"}}})
    )
    source, demo = servers.as_the_app_runs(None)  # a server the user names is the user's, not the demo's
    assert "gmail_work" not in demo and set(demo) == set(DEMO_SERVERS) - {"gmail_work"}
    assert {"mine", "gmail_work", *demo} == {s.name for s in source.servers}

    def discover(config: Any) -> Discovery:
        return Discovery(
            servers=[
                ServerReport(name=s.name, transport="stdio", target="x", status="ready", message="ok")
                for s in config.servers
            ],
            tools=[],
        )

    monkeypatch.setattr(core.mcp.discovery, "discover_servers", discover)
    args = argparse.Namespace(approve_project=None, demo=False, mcp_config=None, json=False)
    assert servers.run(args) == 0
    out = capsys.readouterr().out
    assert "no MCP servers configured" not in out
    lines = out.splitlines()
    assert lines[1].startswith("mine ") or lines[1].startswith("gmail_work ")  # the user's own first
    assert "gmail_work (demo)" not in out and "bland_call (demo)" in out and "(demo): the offline demo's" in out
    assert servers.run(argparse.Namespace(approve_project=None, demo=False, mcp_config=None, json=True)) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["server"]: r["demo"] for r in rows} == {"mine": False, "gmail_work": False} | dict.fromkeys(demo, True)
