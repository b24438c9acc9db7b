"""Slash commands: the registry, and how a line the owner sent is read (no Textual here).

A command is a name (one or more words, ``model``, ``mcp login``; a server's prompt may be
``github:review``), the help for its arguments, a description, the palette action it mirrors,
and whether it can run now. Any room adds its own (:meth:`SlashRegistry.add`); commands that
come and go (a server's prompts) come from a *source* asked at each look
(:meth:`SlashRegistry.source`). :mod:`tui.controllers.slash` shows the completion list and runs
what is sent.

How a sent line reads (:func:`SlashRegistry.read`):

* not starting with ``/``: a message;
* ``//text``: the message ``/text``, as typed otherwise (the escape for a message that starts
  with a slash);
* ``/name args``: the command with the longest name the line starts with (on word boundaries),
  and the rest as its arguments;
* ``/anything else``: names no command (the app asks once before sending it as a message).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*(?::[a-zA-Z0-9_.-]+)?( [a-z0-9][a-z0-9_.-]*)*$")
"""A command's name: lower-case words (``mcp login``), or ``server:prompt``."""

Runner = Callable[[str], Awaitable[None] | None]
"""What a command does with its arguments (the text after its name, stripped; may be empty)."""
Availability = Callable[[], str | None]
"""None when the command can run now, else why not (in the owner's words)."""


@dataclass(frozen=True)
class Completion:
    """One argument a command offers as the owner types: the text put in, and what it is."""

    value: str
    description: str = ""


Completer = Callable[[str], Sequence[Completion]]
"""The arguments to offer for what was typed after the name so far."""


@dataclass(frozen=True)
class SlashCommand:
    name: str
    description: str
    args: str = ""  # the help for its arguments: "NAME", "[PROVIDER:MODEL]" (optional in brackets)
    action: str | None = None  # the palette action it mirrors: run when it is given no arguments
    run: Runner | None = None  # with arguments (or instead of the action)
    available: Availability | None = None
    complete: Completer | None = None
    origin: str = ""  # who added it, for /help ("" the app's own; a server's name for its prompts)

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise ValueError(f"not a slash command name: {self.name!r}")
        if self.action is None and self.run is None:
            raise ValueError(f"/{self.name} runs nothing: give it an action or a runner")

    @property
    def needs_args(self) -> bool:
        """Its arguments are required (their help is not in brackets)."""
        return bool(self.args) and not self.args.startswith("[")

    @property
    def takes_args(self) -> bool:
        return bool(self.args)

    def why_not(self) -> str | None:
        return self.available() if self.available is not None else None

    @property
    def usage(self) -> str:
        return f"/{self.name}" + (f" {self.args}" if self.args else "")


@dataclass(frozen=True)
class Read:
    """A sent line, read: ``message`` (send ``text``), ``command`` (run ``command`` with
    ``args``) or ``unknown`` (``text`` starts with a slash and names no command: ``name``)."""

    kind: Literal["message", "command", "unknown"]
    text: str = ""
    command: SlashCommand | None = None
    args: str = ""
    name: str = ""


@dataclass
class SlashRegistry:
    _commands: dict[str, SlashCommand] = field(default_factory=dict)
    _sources: list[Callable[[], Iterable[SlashCommand]]] = field(default_factory=list)

    def add(self, command: SlashCommand) -> None:
        """Add (or replace, by name) one command."""
        self._commands[command.name] = command

    def remove(self, name: str) -> None:
        self._commands.pop(name, None)

    def source(self, commands: Callable[[], Iterable[SlashCommand]]) -> None:
        """Commands that change while the app runs (a server's prompts): asked at each look.
        A source's command never hides one added by name."""
        self._sources.append(commands)

    def commands(self) -> list[SlashCommand]:
        """Every command now, by name."""
        found = dict(self._commands)
        for source in self._sources:
            for command in source():
                found.setdefault(command.name, command)
        return sorted(found.values(), key=lambda c: c.name)

    def find(self, name: str) -> SlashCommand | None:
        return next((c for c in self.commands() if c.name == name), None)

    def matching(self, typed: str) -> list[SlashCommand]:
        """The commands whose name starts with ``typed`` (case-insensitive), a name equal to
        it first, then by name."""
        typed = typed.lower()
        found = [c for c in self.commands() if c.name.lower().startswith(typed)]
        return sorted(found, key=lambda c: (c.name.lower() != typed, c.name))

    def read(self, line: str) -> Read:
        if not line.startswith("/"):
            return Read("message", text=line)
        if line.startswith("//"):
            return Read("message", text=line[1:])
        body = line[1:]
        head, _, _ = body.partition("\n")
        words = head.split(" ")
        by_name = {c.name: c for c in self.commands()}
        for n in range(len(words), 0, -1):  # the longest name the line starts with
            name = " ".join(words[:n])
            command = by_name.get(name) or by_name.get(name.lower())
            if command is not None:
                return Read("command", text=line, command=command, args=body[len(name) :].strip())
        return Read("unknown", text=line, name=words[0])
