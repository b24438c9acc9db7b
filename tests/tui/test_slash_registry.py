"""The slash-command registry and how a sent line reads (tui/slash.py: no app needed)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.slash import Completion, SlashCommand, SlashRegistry


def registry() -> SlashRegistry:
    reg = SlashRegistry()
    for name, args in (("model", "[PROVIDER:MODEL]"), ("mcp", ""), ("mcp login", "NAME"), ("help", "")):
        reg.add(SlashCommand(name, f"the {name} command", args=args, action=name.replace(" ", "_")))
    return reg


def test_a_line_names_the_longest_command_it_starts_with_and_the_rest_are_its_arguments() -> None:
    reg = registry()
    read = reg.read("/mcp login github")
    assert read.kind == "command" and read.command is not None
    assert (read.command.name, read.args) == ("mcp login", "github")
    read = reg.read("/mcp")
    assert read.command is not None and (read.command.name, read.args) == ("mcp", "")
    read = reg.read("/model  openai:gpt-5.4 ")
    assert read.command is not None and (read.command.name, read.args) == ("model", "openai:gpt-5.4")
    assert reg.read("/MODEL").command is not None  # a name is not case-sensitive
    # a name is matched on word boundaries: /models is not /model
    assert reg.read("/models").kind == "unknown" and reg.read("/models").name == "models"


def test_messages_escapes_and_unknown_lines() -> None:
    reg = registry()
    assert reg.read("hello /model").kind == "message"
    escaped = reg.read("//model is a command")
    assert (escaped.kind, escaped.text) == ("message", "/model is a command")
    unknown = reg.read("/etc/hosts holds the names")
    assert (unknown.kind, unknown.name, unknown.text) == ("unknown", "etc/hosts", "/etc/hosts holds the names")


def test_a_source_adds_commands_that_change_while_the_app_runs() -> None:
    reg = registry()
    prompts: list[str] = []
    reg.source(lambda: [SlashCommand(f"time:{p}", f"prompt {p}", args="[ARGS]", run=lambda a: None) for p in prompts])
    assert reg.read("/time:now").kind == "unknown"
    prompts.append("now")
    read = reg.read("/time:now Europe/Paris")
    assert read.command is not None and (read.command.name, read.args) == ("time:now", "Europe/Paris")
    assert [c.name for c in reg.matching("ti")] == ["time:now"]
    # a source never hides a command added by name
    reg.source(lambda: [SlashCommand("help", "a server's own help", run=lambda a: None)])
    assert reg.find("help") is not None and reg.find("help").description == "the help command"  # type: ignore[union-attr]


def test_matching_puts_the_exact_name_first() -> None:
    reg = registry()
    assert [c.name for c in reg.matching("mcp")] == ["mcp", "mcp login"]
    assert [c.name for c in reg.matching("")] == ["help", "mcp", "mcp login", "model"]
    assert reg.matching("x") == []


def test_a_command_is_checked_when_it_is_made() -> None:
    with pytest.raises(ValueError, match="name"):
        SlashCommand("Has Caps", "x", action="x")
    with pytest.raises(ValueError, match="runs nothing"):
        SlashCommand("idle", "x")
    optional = SlashCommand("export", "x", args="[PATH]", action="export")
    required = SlashCommand("mcp login", "x", args="NAME", run=lambda a: None)
    assert optional.takes_args and not optional.needs_args and required.needs_args
    assert required.usage == "/mcp login NAME"
    assert SlashCommand("x", "x", action="x", complete=lambda t: [Completion("a")]).complete is not None


names = st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True)


@settings(max_examples=150, deadline=None)
@given(st.text())
def test_any_line_reads_as_exactly_one_thing_and_a_message_loses_nothing(line: str) -> None:
    read = registry().read(line)
    if not line.startswith("/"):
        assert (read.kind, read.text) == ("message", line)
    elif line.startswith("//"):
        assert (read.kind, read.text) == ("message", line[1:])
    elif read.kind == "command":
        assert read.command is not None
        assert line[1:].lower().startswith(read.command.name)
        assert read.args == line[1 + len(read.command.name) :].strip()
    else:
        assert read.kind == "unknown" and read.text == line


@settings(max_examples=100, deadline=None)
@given(names, st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_a_registered_command_reads_back_with_its_arguments(name: str, args: str) -> None:
    reg = SlashRegistry()
    reg.add(SlashCommand(name, "x", args="[A]", run=lambda a: None))
    read = reg.read(f"/{name} {args}")
    assert read.kind == "command" and read.command is not None and read.command.name == name
    assert read.args == args.strip()
