"""The ``deferchat`` script (``tui.main``) decides: a subcommand runs headless through
``core.cli`` and never loads Textual; no subcommand, or only the app's own flags, starts the
full-screen app."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

import core.cli
import tui.main
from core.deferral.names import STRATEGY_CHOICES
from core.errors import UsageError
from tests.helpers import ROOT, subprocess_env

COMMANDS = ("plan", "ask", "resume", "chats", "search", "servers")
APP_FLAGS = ("--chat", "--roster", "--mcp-config", "--provider", "--model", "--base-url", "--strategy")
SDKS = ("anthropic", "openai", "mcp")


@pytest.fixture
def app_runs(monkeypatch: pytest.MonkeyPatch) -> list[argparse.Namespace]:
    """Stands in for the full-screen app: records the arguments it was started with."""
    started: list[argparse.Namespace] = []

    def run_app(args: argparse.Namespace) -> int:
        started.append(args)
        return 7

    monkeypatch.setattr(tui.main, "_run_app", run_app)
    return started


def headless(home: Path, tmp_path: Path, command: str) -> list[str]:
    """Arguments for one offline run of ``command``."""
    if command == "plan":
        return ["plan", "--roster", "production", "--json"]
    if command == "search":
        return ["search", "send an email", "--json"]
    roster, script = tmp_path / "roster.json", tmp_path / "script.json"
    roster.write_text(json.dumps({"agent": {"name": "t", "version": "1"}}))
    script.write_text(json.dumps({"turns": [[{"type": "text", "text": "Hello."}]]}))
    return ["ask", "hi", "--roster", str(roster), "--script", str(script), "--json"]


@pytest.mark.parametrize(
    "command, forbidden",
    [
        ("plan", ("textual", *SDKS)),
        ("ask", ("textual",)),
        ("search", ("textual",)),
    ],
)
def test_headless_commands_do_not_import_textual(
    home: Path, tmp_path: Path, command: str, forbidden: tuple[str, ...]
) -> None:
    code = (
        "import sys; from tui.main import main; rc = main(sys.argv[1:]);"
        f"bad = [m for m in {forbidden!r} if m in sys.modules];"
        "sys.stderr.write(repr(bad)); sys.exit(rc or (1 if bad else 0))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, *headless(home, tmp_path, command)],
        capture_output=True,
        text=True,
        env=subprocess_env(home),
        cwd=tmp_path,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert r.stderr.endswith("[]")
    assert r.stdout.strip()  # it did its work: JSON on stdout


def test_no_subcommand_starts_the_app_with_its_flags(app_runs: list[argparse.Namespace]) -> None:
    assert tui.main.main([]) == 7
    assert (
        tui.main.main(
            [
                "--chat",
                "chat_x",
                "--roster",
                "r.json",
                "--mcp-config",
                "m.json",
                "--provider",
                "demo",
                "--model",
                "demo-1",
                "--base-url",
                "http://127.0.0.1:9",
                "--strategy",
                "active-tools",
            ]
        )
        == 7
    )
    bare, flagged = app_runs
    assert bare.command is None and bare.open_chat is None and bare.tui_provider is None
    assert flagged.command is None
    assert (
        flagged.open_chat,
        flagged.tui_roster,
        flagged.tui_mcp_config,
        flagged.tui_provider,
        flagged.tui_model,
        flagged.tui_base_url,
        flagged.tui_strategy,
    ) == ("chat_x", "r.json", "m.json", "demo", "demo-1", "http://127.0.0.1:9", "active-tools")


def test_a_subcommand_runs_headless_and_never_starts_the_app(
    home: Path, app_runs: list[argparse.Namespace], capsys: pytest.CaptureFixture[str]
) -> None:
    assert tui.main.main(["--provider", "demo", "plan", "--roster", "production", "--json"]) == 0
    assert app_runs == []
    assert len(json.loads(capsys.readouterr().out)["defined_tool_names"]) == 30


def test_an_app_that_cannot_start_says_why_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def run_app(args: argparse.Namespace) -> int:
        raise UsageError("policy file /nope does not exist")

    monkeypatch.setattr(tui.main, "_run_app", run_app)
    assert tui.main.main(["--provider", "demo"]) == 2
    assert capsys.readouterr().err == "deferchat: policy file /nope does not exist\n"


def test_help_lists_the_app_flags_and_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert tui.main.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "With no subcommand it opens the full-screen chat." in out
    assert all(f"    {c} " in out for c in COMMANDS), out
    assert all(flag in out for flag in APP_FLAGS), out


@pytest.mark.parametrize("prefix", [[], ["plan"], ["ask", "hi"]])
def test_every_strategy_name_and_no_other_is_accepted(prefix: list[str]) -> None:
    parser = tui.main.build_parser()
    for name in STRATEGY_CHOICES:
        args = parser.parse_args([*prefix, "--strategy", name])
        assert (args.tui_strategy if not prefix else args.strategy) == name
    assert tui.main.main([*prefix, "--strategy", "nope"]) == 2


def test_the_cli_alone_needs_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert core.cli.main([]) == 2
    assert "give a command" in capsys.readouterr().err


def test_python_dash_m_core_cli_runs_the_headless_commands(home: Path) -> None:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "core.cli",
            "search",
            "--tools",
            str(ROOT / "tests" / "data" / "toolsearch" / "tools.jsonl"),
            "weather",
            "-k",
            "2",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=subprocess_env(home),
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)["hits"]) == 2
