"""Slash commands in the message box: the completion list as one types ``/``, and what a sent
line that starts with ``/`` does.

The registry (:class:`tui.slash.SlashRegistry`) is the app's, on the host
(``host.slash_commands``): every room adds its own commands there, this one adds the app's
(:func:`app_commands`). While the box holds ``/`` and a partial name, the list shows the
commands that match (the first highlighted: Tab completes it, Enter runs it); once a command is
named and a space typed, the arguments it offers (none highlighted until ↑/↓: Enter sends what
was typed). Esc closes the list. Typing never goes anywhere but the box.

The same list completes a word of a message at the cursor for the rooms that offer one
(:meth:`Slash.complete_words`; the MCP room's ``@`` names a server's resource): the first
entry highlighted, Tab or Enter hands the chosen one to the room that offered it
(:class:`WordOffer`), Esc closes the list and keeps the text.

A sent line that names no command is not sent at once: the owner is told, and Enter again
(the same line) sends it as typed; ``//text`` sends ``/text`` without asking.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from core.errors import UserFacingError
from tui.controllers.chat_ops import ChatOps
from tui.controllers.drafts import Drafts
from tui.controllers.host import Host
from tui.slash import Completion, SlashCommand
from tui.widgets.slash_menu import Entry, SlashMenu, WordOffer

if TYPE_CHECKING:
    from tui.slash import SlashRegistry

log = logging.getLogger("deferchat.tui")


WordCompleter = Callable[[str, int], "WordOffer | None"]
"""A room's completion of the word at the cursor: the box's text and the cursor's offset in it."""


class Slash:
    def __init__(self, host: Host, drafts: Drafts, chat_ops: ChatOps) -> None:
        self.host = host
        self.menu: SlashMenu = host.slash_menu
        self.drafts = drafts
        self.registry: SlashRegistry = host.slash_commands
        self.asked: str | None = None  # the line that names no command, the owner told about it once
        self.closed_at: str | None = None  # the box's text when Esc closed the list
        self.arguments = False  # the list shows a command's arguments (else command names)
        self.words: list[WordCompleter] = []  # the rooms' completions of a word in a message (@: mcp)
        self.offer: WordOffer | None = None  # the list shows a room's offer for the word at the cursor
        for command in app_commands(host, chat_ops, self):
            self.registry.add(command)

    # -- the completion list ------------------------------------------------------------------------
    @property
    def open(self) -> bool:
        return bool(self.menu.display)

    def complete_words(self, completer: WordCompleter) -> None:
        """A room's completion of the word at the cursor in a message (tried in the order added)."""
        self.words.append(completer)

    def typed(self) -> None:
        """The box's text (or its cursor) changed: the list follows it."""
        text = self.host.composer.text
        if text != self.closed_at:
            self.closed_at = None
        self.offer = None
        entries, highlight = self._entries(text) if self.closed_at is None else ([], False)
        if not entries and self.closed_at is None:
            entries, highlight = self._word_entries(text)
        if entries:
            self.menu.show(entries, highlight=highlight)
        else:
            self.menu.hide()
        self.host.composer.completing = self.open

    def _entries(self, text: str) -> tuple[list[Entry], bool]:
        if not text.startswith("/") or text.startswith("//") or "\n" in text:
            return [], False
        body = text[1:]
        named = self.registry.matching(body)
        if named:
            self.arguments = False
            return [self._entry(c) for c in named], True
        read = self.registry.read(text)
        command = read.command
        self.arguments = True
        if command is None or command.complete is None or len(body) <= len(command.name):
            return [], False
        try:
            offered: Sequence[Completion] = command.complete(read.args)
        except Exception:  # a room's completer must not break typing
            log.exception("completing /%s failed", command.name)
            return [], False
        typed = read.args.lower()
        entries = [
            Entry(fill=f"/{command.name} {c.value}", label=c.value, description=c.description)
            for c in offered
            if c.value.lower().startswith(typed) and c.value != read.args
        ]
        return entries, False

    def _word_entries(self, text: str) -> tuple[list[Entry], bool]:
        if text.startswith("/") and not text.startswith("//"):  # a command's line: its own list
            return [], False
        cursor = self.host.composer.cursor_offset
        for completer in self.words:
            try:
                offer = completer(text, cursor)
            except Exception:  # a room's completer must not break typing
                log.exception("completing a word failed")
                continue
            if offer is not None and offer.entries:
                self.offer = offer
                return offer.entries, True
        return [], False

    def _entry(self, command: SlashCommand) -> Entry:
        keys = self.host.keys_for(command.action) if command.action else ""
        return Entry(
            fill=f"/{command.name}" + (" " if command.takes_args else ""),
            label=command.usage,
            description=command.description,
            keys=keys,
            unavailable=command.why_not() or "",
        )

    def key(self, key: str) -> None:
        """↑/↓, Tab, Enter or Esc in the box while the list is open."""
        menu, composer = self.menu, self.host.composer
        if key == "escape":
            self.closed_at = composer.text
            self.typed()
            return
        if key in ("up", "down"):
            menu.move(-1 if key == "up" else 1)
            return
        offer = self.offer
        if offer is not None:  # a room's word: Tab and Enter hand the chosen row to the room
            at = menu.highlighted or 0
            self.closed_at = composer.text
            self.typed()
            if 0 <= at < len(offer.entries):
                offer.take(at)
            return
        chosen = menu.chosen
        if key == "tab":
            chosen = chosen or (menu.entries[0] if menu.entries else None)
            if chosen is not None:
                composer.put(chosen.fill)
            return
        # enter: take the highlighted entry and run it; one that still needs its arguments waits for them
        if chosen is not None:
            composer.put(chosen.fill)
            command = None if self.arguments else self.registry.find(chosen.fill[1:].rstrip())
            if command is not None and command.needs_args:
                return
        composer.action_send()

    # -- a sent line --------------------------------------------------------------------------------
    def message(self, text: str) -> str | None:
        """The message to send for the line the owner sent, or None: a command ran (or was
        refused, said why), or the owner is told the line names no command."""
        host = self.host
        read = self.registry.read(text)
        if read.kind == "message":
            self.asked = None
            return read.text
        if read.kind == "unknown":
            if self.asked == text:  # asked once: sent as typed
                self.asked = None
                return text
            self.asked = text
            host.composer.put(text)
            shown = f"/{read.name}" if read.name else "/"
            host.notify(
                f"{shown} is not a command (/help lists them). Enter again sends your message as typed; "
                "//\u2026 always does.",
                severity="warning",
                timeout=6,
            )
            return None
        self.asked = None
        command = read.command
        assert command is not None
        if host.session is not None:
            self.drafts.remember(host.session.chat_id, text)  # ↑ brings a command back too
        else:
            host.composer.remember(text)
        reason = command.why_not()
        if reason:
            host.notify(f"/{command.name}: {reason}.", severity="warning")
            return None
        if read.args and not command.takes_args:
            host.notify(f"/{command.name} takes no arguments.", severity="warning")
            host.composer.put(text)
            return None
        if not read.args and command.needs_args:
            host.notify(f"Usage: {command.usage}", severity="warning")
            host.composer.put(f"/{command.name} ")
            return None
        host.run_worker(self._run(command, read.args), group="slash", exit_on_error=False)
        return None

    async def _run(self, command: SlashCommand, args: str) -> None:
        host = self.host
        try:
            if command.run is not None and (args or command.action is None):
                done = command.run(args)
                if inspect.isawaitable(done):
                    await done
            elif command.action is not None:
                await host.run_action(command.action)
        except UserFacingError as exc:
            host.notify(str(exc), severity="error")
        except Exception as exc:
            log.exception("/%s failed", command.name)
            host.notify(f"/{command.name} failed: {type(exc).__name__}: {exc}", severity="error")

    def help(self) -> None:
        from tui.screens.slash_help import SlashHelp

        rows = [
            (
                c.usage,
                c.description,
                self.host.keys_for(c.action) if c.action else "",
                c.why_not() or "",
            )
            for c in self.registry.commands()
        ]
        self.host.push_screen(SlashHelp(rows))


def app_commands(host: Host, chat_ops: ChatOps, slash: Slash) -> list[SlashCommand]:
    """The app's own commands, each mirroring a palette entry (:data:`tui.app.COMMANDS`); the
    other rooms add theirs (/permissions: tui/controllers/permissions.py)."""

    def open_chat(args: str) -> None:
        row = host.store.find_chat(args)
        if row is None:
            host.notify(f"No chat {args!r} (ctrl+o lists the chats and their ids).", severity="warning")
            return
        if host.session is not None and host.session.chat_id == row.id:
            host.notify("That chat is open.", timeout=3)
            return
        host.open_session(row.id)

    def chats(typed: str) -> list[Completion]:
        if host.session is None:  # the store is opened with the first chat
            return []
        return [Completion(r.id, r.title or "") for r in host.store.chats(50)]

    def switch(args: str) -> None:
        provider, _, model = args.partition(":")
        if not model:  # one word: a provider the switch can reach, else a model of this one
            known = {p for p, _ in chat_ops.model_choices()}
            provider, model = (args, "") if args in known else ("", args)
        chat_ops.switch_to(provider or None, model or None)

    def models(typed: str) -> list[Completion]:
        if host.session is None:
            return []
        return [Completion(f"{p}:{m}") for p, m in chat_ops.model_choices()]

    async def export(args: str) -> None:
        if host.session is not None:
            await chat_ops.export_chat(host.session.chat_id, to=args)

    return [
        SlashCommand("new", "Open a new chat", action="new_chat"),
        SlashCommand("chats", "List the chats (with their ids): open, rename, delete, export", action="chats"),
        SlashCommand(
            "resume",
            "Resume the unfinished turn, or open the chat CHAT",
            args="[CHAT]",
            action="resume",
            run=open_chat,
            complete=chats,
        ),
        SlashCommand(
            "model",
            "Switch model: the picker, or PROVIDER:MODEL at once",
            args="[PROVIDER:MODEL]",
            action="model_picker",
            run=switch,
            complete=models,
        ),
        SlashCommand("cost", "Usage and cost, request by request", action="usage"),
        SlashCommand("system", "Edit this chat's system prompt", action="system_prompt"),
        SlashCommand("plan", "The plan inspector", action="plan"),
        SlashCommand("whatif", "The plan under another strategy, policy or caps", action="whatif"),
        SlashCommand(
            "export",
            "Export this chat to Markdown",
            args="[PATH]",
            action="export_current",
            run=export,
        ),
        SlashCommand("help", "List the slash commands", run=lambda args: slash.help()),
    ]
