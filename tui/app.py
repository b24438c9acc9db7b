"""The deferchat app: a chat log in the centre, the roster panel on the right, the input at
the bottom, approvals inline.

It only presents engine events and answers approvals. The engine runs inside Textual's
event loop: session open (which starts MCP servers), turns and resumes are async workers,
the session's subscriber posts each event to the app as an :class:`EngineEvent`, and one
handler (:class:`tui.router.EventRouter`) turns them into widgets. Quitting closes the
session, so its MCP servers stop before the loop does.

This module puts the app together: it makes the widgets and the rooms (``tui/controllers/``,
one per concern: sessions, turns, approvals, drafts, chat management, views, layout, permissions), binds the
keys, and routes each message and action to the room that owns it. The rooms reach the app
only through :class:`tui.controllers.host.Host`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.screen import Screen
from textual.widgets import TextArea

from core.chat.options import ChatOptions
from tui.collector import Collector
from tui.controllers.approvals import Approvals
from tui.controllers.chat_ops import ChatOps
from tui.controllers.drafts import Drafts
from tui.controllers.layout import ROSTER_FOLD_WIDTH, Layout
from tui.controllers.mcp import Mcp
from tui.controllers.permissions import Permissions
from tui.controllers.quit_signals import QuitSignals
from tui.controllers.sessions import EngineEvent, Sessions
from tui.controllers.slash import Slash
from tui.controllers.turns import Turns
from tui.controllers.views import Views
from tui.retry_status import RetryCountdown
from tui.router import EventRouter
from tui.slash import SlashRegistry
from tui.terminal import TerminalSignals
from tui.widgets.approval import ApprovalBar
from tui.widgets.chat_log import ChatLog
from tui.widgets.composer import Composer, QueuedNote
from tui.widgets.footer import AppFooter
from tui.widgets.header import ChatHeader
from tui.widgets.roster import RosterPanel
from tui.widgets.slash_menu import SlashMenu
from tui.widgets.status import StatusLine

if TYPE_CHECKING:  # the engine is built after the first frame (its modules are imported then)
    from core.chat.session import ChatSession
    from core.config import Settings
    from core.engine import Engine
    from core.pipeline.policy import Policy
    from core.store import Store

__all__ = ["COMMANDS", "ROSTER_FOLD_WIDTH", "DeferchatApp", "EngineEvent", "run_app"]

log = logging.getLogger("deferchat.tui")

# (action, palette title, palette help); every binding's action is here, so the command
# palette has every action.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("new_chat", "New chat", "Open a new chat, planned now"),
    ("chats", "Chats", "List chats: open, rename, delete, export"),
    ("rename_current", "Rename this chat", "Give the open chat a new title"),
    ("delete_current", "Delete this chat", "Delete the open chat for good"),
    ("export_current", "Export this chat to Markdown", "Write the chat, tool calls included, to a file"),
    ("plan", "Plan inspector", "The chat's whole plan and the index text as sent"),
    ("whatif", "What-if", "The same candidates under another strategy, policy or caps"),
    ("usage", "Usage and cost", "The cost meter per request: tokens, cache hits, prefix breaks, dollars"),
    (
        "permissions",
        "Permissions: this chat's grants",
        "The tools you allowed for the rest of this chat: when, by whom; take one or all of them back",
    ),
    ("model_picker", "Switch model", "Continue this chat on another provider or model (the plan stays pinned)"),
    ("list_models", "List the provider's models", "Ask each provider's server for its models now, in the model picker"),
    (
        "system_prompt",
        "Edit this chat's system prompt",
        "Its own prompt, beside the agent's (after the first message a change breaks the cached prefix once)",
    ),
    ("toggle_roster", "Toggle the roster panel", "Show or hide the roster (below 100 columns it folds into one line)"),
    ("filter_tools", "Filter the roster", "Focus the roster's filter box"),
    ("copy_last", "Copy the last answer", "Copy the assistant's last message to the clipboard"),
    ("toggle_thinking", "Show or hide the thinking", "Unfold or fold the model's thinking blocks in the log"),
    ("resume", "Resume the unfinished turn", "Show a parked approval again, or continue an interrupted turn"),
    ("stop_turn", "Stop the turn", "Stop the running turn at once (Esc, ctrl+c); its partial answer is kept"),
    ("focus_input", "Focus the message box", "Back to typing"),
    ("answer_approval", "Answer the approval", "Move to the waiting approval's bar (typing never answers it)"),
    ("retry", "Retry the last turn", "Run the last turn again after a provider error or a stop"),
    (
        "compact",
        "Summarise the chat's history",
        "Every turn but the latest into one summary that takes their place in requests; the turns are kept",
    ),
    ("edit_last", "Edit the last message", "Put your last message back in the box; sending it replaces that turn"),
    ("external_editor", "Write the message in $EDITOR", "Edit the message box's text in your editor"),
    (
        "take_queued",
        "Take back the queued message",
        "The last message waiting for the turn to end comes back to the box (\u2191 in the empty box does the same)",
    ),
    ("mcp_servers", "MCP servers", "The chat's servers: what each offers, sign in (OAuth) or out"),
    ("attach_resource", "Attach a resource", "A server's resource goes with your next message (also: @ in the box)"),
    ("use_prompt", "Use a server's prompt", "A server's prompt, its arguments asked, put in the message box"),
    (
        "project_config",
        "Review the project's MCP config",
        "Approve the servers this directory's .mcp.json would start (asked when a chat opens; Not now asks no more)",
    ),
)


CRAMPED_WIDTH = 64  # a chat column narrower than this stacks the approval's buttons


class MainColumn(Vertical):
    """The chat column: it marks itself cramped when the roster leaves it little room."""

    def on_resize(self, event: Resize) -> None:
        self.set_class(event.size.width < CRAMPED_WIDTH, "-cramped")


class DeferchatApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "deferchat"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", id="quit", priority=True),
        Binding("ctrl+n", "new_chat", "New", id="new_chat"),
        Binding("ctrl+o", "chats", "Chats", id="chats"),
        Binding("ctrl+r", "toggle_roster", "Roster", id="toggle_roster"),
        Binding("ctrl+g", "plan", "Plan", id="plan"),
        Binding("ctrl+t", "whatif", "What-if", id="whatif"),
        Binding("ctrl+f", "filter_tools", "Filter", id="filter_tools", show=False),  # in the palette: 80 cols
        Binding("f2", "rename_current", "Rename", id="rename_current", show=False),
        Binding("ctrl+s", "export_current", "Export", id="export_current", show=False),
        Binding("f3", "copy_last", "Copy answer", id="copy_last", show=False),
        Binding("ctrl+b", "toggle_thinking", "Thinking", id="toggle_thinking", show=False),
        Binding("f8", "delete_current", "Delete chat", id="delete_current", show=False),
        Binding("f9", "change_theme", "Theme", id="change_theme", show=False),
        # over the message box's own f6/f7 (TextArea: select line, select all), on the chat only
        Binding("f6", "system_prompt", "System prompt", id="system_prompt", show=False, priority=True),
        Binding("f7", "usage", "Usage", id="usage", show=False, priority=True),
        Binding("f10", "model_picker", "Model", id="model_picker", show=False, priority=True),
        Binding("f12", "permissions", "Permissions", id="permissions", show=False),
        Binding("escape", "focus_input", "Input", id="focus_input", show=False),
        # an open approval is answered in its bar, reached on purpose (check_action: only then)
        Binding("tab", "answer_approval", "Answer", id="answer_approval", priority=True),
        Binding("f4", "edit_last", "Edit last", id="edit_last", show=False),
        Binding("f5", "retry", "Retry", id="retry", show=False),
        Binding("ctrl+l", "external_editor", "Editor", id="external_editor", show=False),
        # while a turn runs (check_action), Esc and ctrl+c stop it; otherwise they do what they did
        Binding("escape", "stop_turn", "Stop", id="stop_turn", priority=True),
        Binding("ctrl+c", "stop_turn", "Stop", id="stop_turn_ctrl_c", priority=True, show=False),
        # listing ctrl+c here replaces App's own binding for it: keep its quit hint for the idle app
        Binding("ctrl+c", "help_quit", show=False, system=True, id="quit_hint"),
    ]

    def __init__(
        self,
        engine: Engine | None = None,
        *,
        options: ChatOptions | None = None,
        open_chat: str | None = None,
        export_dir: str | Path | None = None,
        engine_factory: Callable[[], Engine] | None = None,
        settings: Settings | None = None,
        policy: Policy | None = None,
    ) -> None:
        super().__init__()
        self._engine = engine
        self._engine_factory = engine_factory
        # read before the first frame (by the preflight, else at mount), handed to the engine
        self._settings = settings
        self._policy = policy
        self.fatal: BaseException | None = None  # what ended the app, raised again by run_app
        self.options = options or ChatOptions()
        self.initial_chat = open_chat
        self.export_dir = Path(export_dir) if export_dir else Path.cwd()
        self.collector = Collector()
        self.terminal = TerminalSignals(self)
        # -- the widgets
        self.header_bar = ChatHeader(id="header")
        self.log_view = ChatLog(id="log")
        self.status_line = StatusLine(id="status-line")
        self.composer = Composer(id="composer")
        self.queued_note = QueuedNote("", id="queued")
        self.slash_menu = SlashMenu(id="slash-menu")
        self.bottom = Vertical(self.status_line, self.queued_note, self.slash_menu, self.composer, id="bottom")
        self.roster = RosterPanel(id="roster")
        self.retry_status = RetryCountdown(self)  # "retrying in N s" while a provider's retry waits
        self.router = EventRouter(self.log_view, self.roster, self.header_bar, self.retry_status, self.keys_for)
        self.slash_commands = SlashRegistry()  # every room adds its own
        # -- the rooms, each given the rooms it commands
        self.layout = Layout(self)
        self.footer = AppFooter(id="footer", spare=self.layout.footer_spare)
        self.drafts = Drafts(self)
        self.approvals = Approvals(self)
        self.mcp = Mcp(self, replace_unused_chat=self._replace_unused_chat)
        for command in self.mcp.commands():
            self.slash_commands.add(command)
        self.slash_commands.source(self.mcp.prompt_commands)  # /server:prompt, as the servers offer them
        self.turns = Turns(self, self.drafts, self.approvals, self.mcp.prepare)
        for command in self.turns.commands():
            self.slash_commands.add(command)
        self.sessions = Sessions(self, self.drafts, self.approvals, self.turns, self.post_message, mcp=self.mcp)
        self.chat_ops = ChatOps(self, self.sessions)
        self.views = Views(self, self.sessions)
        self.permissions = Permissions(self)
        self.slash = Slash(self, self.drafts, self.chat_ops)
        self.slash.complete_words(self.mcp.mention_offer)  # @ in a message: the servers' resources
        self.quit_signals = QuitSignals(self)  # SIGTERM, SIGHUP: stop the turn and quit (stop_and_quit)
        self._asking_quit = False  # ctrl+q's question is up

    # -- set-up ---------------------------------------------------------------------------------
    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = self._make_engine()
        return self._engine

    def _make_engine(self) -> Engine:
        if self._engine_factory is not None:
            return self._engine_factory()
        from core.engine import Engine

        return Engine(settings=self._settings, policy=self._policy, demo_delay=0.015)

    async def ready_engine(self) -> Engine:
        """The engine, built off the event loop the first time (importing it and opening the
        store take a while): the first frame never waits for it."""
        if self._engine is None:
            built = await asyncio.to_thread(self._make_engine)
            if self._engine is None:  # nothing asked for it meanwhile (the property builds at once)
                self._engine = built
        return self._engine

    def end_with(self, exc: BaseException) -> None:
        """End the app on a failure it cannot work without (the database SQLite refuses, found
        after the first frame): :func:`run_app` raises it once the terminal is back, so it is
        the same one line on the normal terminal as a failure found before the app drew."""
        log.debug("the app cannot go on", exc_info=exc)
        self.fatal = exc
        self.exit(1)

    @property
    def store(self) -> Store:
        return self.engine.store

    def compose(self) -> ComposeResult:
        yield self.header_bar
        with Horizontal(id="body"):
            with MainColumn(id="main"):
                yield self.roster.strip
                yield self.log_view
                yield self.bottom
            yield self.roster
        yield self.footer

    def on_mount(self) -> None:
        if self._engine is None and self._engine_factory is None:
            from core.config import load_settings

            # the light loader: the engine is built after the first frame
            settings = self._settings = self._settings or load_settings()
        else:
            settings = self.engine.settings
        if settings.theme in self.available_themes:
            self.theme = settings.theme
        if settings.keymap:
            self.set_keymap(settings.keymap)
        self.composer.focus()
        self.layout.lay_out(self.size.width)
        if not self.is_headless:  # a Pilot test runs inside pytest's process: its signals are pytest's
            self.quit_signals.install()
        self.call_after_refresh(self.open_session, self.initial_chat)  # after the first frame

    def on_resize(self, event: Resize) -> None:
        self.layout.lay_out(event.size.width)

    # -- what the rooms share (Host) ------------------------------------------------------------
    @property
    def session(self) -> ChatSession | None:
        return self.sessions.session

    @property
    def generation(self) -> int:
        return self.sessions.generation

    @property
    def opening(self) -> bool:
        return self.sessions.opening

    @property
    def turn_running(self) -> bool:
        return self.turns.running

    @property
    def approval_bar(self) -> ApprovalBar | None:
        return self.approvals.bar

    @property
    def status_text(self) -> str:
        return self.status_line.text

    def set_status(self, text: str) -> None:
        self.status_line.say(text)

    def focus_input(self) -> None:
        """Back to the message box (an open approval is reached with Tab, never by typing)."""
        self.composer.focus()

    def open_session(self, chat_id: str | None) -> None:
        self.sessions.open(chat_id)

    # -- the palette and the keys ---------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        for command in super().get_system_commands(screen):  # Textual's own (Quit, Theme): with our keys too
            action = getattr(command.callback, "__name__", "").removeprefix("action_")
            keys = self.keys_for(action) if action else ""
            yield command._replace(help=f"{command.help} ({keys})") if keys else command
        for action, title, help_text in COMMANDS:
            keys = self.keys_for(action)
            yield SystemCommand(title, f"{help_text} ({keys})" if keys else help_text, self._action_runner(action))

    def keys_for(self, action: str) -> str:
        """The keys bound to an app action, as the keymap has them (the palette shows them)."""
        keys = [
            self._keymap.get(b.id, b.key) if b.id else b.key
            for b in self.BINDINGS
            if isinstance(b, Binding) and b.action == action
        ]
        return ", ".join(keys)

    def _action_runner(self, action: str) -> Callable[[], Any]:
        async def run() -> None:
            await self.run_action(action)

        return run

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        in_front = self.screen is self.screen_stack[0]
        if action == "answer_approval":
            # Tab completes a slash command while its list is open (Esc closes it, then Tab answers)
            bar = self.approval_bar
            return bar is not None and not bar.has_focus_within and in_front and not self._completing()
        if action == "stop_turn":
            # only while a turn runs and the chat is in front: otherwise Esc and ctrl+c go on
            # to their other bindings (back to the input, TextArea's copy, the quit hint); Esc
            # in the message box closes an open completion list first, in the bar leaves it
            return (
                self.turn_running
                and self.session is not None
                and in_front
                and not self._completing()
                and not self._in_approval_bar()
            )
        if action in ("usage", "system_prompt"):  # otherwise f6/f7 are the focused text's own keys
            return in_front
        return True

    def _in_approval_bar(self) -> bool:
        """The owner is in the approval bar: Esc there goes back to the box, and neither Esc nor
        ctrl+c stops the turn (the bar is answered, or left, never the turn ended by accident)."""
        bar = self.approval_bar
        return bar is not None and bar.has_focus_within

    def _completing(self) -> bool:
        return self.composer.completing and self.composer.has_focus

    # -- messages, each to its room ---------------------------------------------------------------
    async def on_engine_event(self, message: EngineEvent) -> None:
        message.handled = True  # a later delta is a message of its own now
        if message.generation != self.generation:
            return
        await self.router.handle(message.event)
        self.turns.seen(message.event)
        self.mcp.seen(message.event)
        self.permissions.seen(message.event)

    def on_composer_submitted(self, message: Composer.Submitted) -> None:
        text = self.slash.message(message.text)  # a slash command runs here
        if text is not None:
            self.turns.submit(text)

    def on_text_area_changed(self, message: TextArea.Changed) -> None:
        if message.text_area is self.composer:
            self.slash.typed()

    def on_text_area_selection_changed(self, message: TextArea.SelectionChanged) -> None:
        if message.text_area is self.composer:  # the cursor left (or came into) an @word
            self.slash.typed()

    def on_composer_completion_key(self, message: Composer.CompletionKey) -> None:
        self.slash.key(message.key)

    def on_composer_take_queued(self, message: Composer.TakeQueued) -> None:
        self.drafts.take_queued()

    async def on_composer_scroll_log(self, message: Composer.ScrollLog) -> None:
        await self.views.scroll_log(message.where)

    def on_approval_bar_leave(self, message: ApprovalBar.Leave) -> None:
        self.composer.focus()

    async def on_approval_bar_decided(self, message: ApprovalBar.Decided) -> None:
        await self.approvals.decided(message.view, message.decision, self.turns.resume_parked)

    def on_roster_panel_tool_selected(self, message: RosterPanel.ToolSelected) -> None:
        self.views.tool(message.name)

    # -- actions, each to its room ------------------------------------------------------------------
    async def action_quit(self) -> None:
        """ctrl+q: quit. While a turn runs (an approval it waits for included) the app asks
        first: quit and stop it (as Esc stops it: its partial answer kept), or stay. ctrl+q
        again while it asks means quit."""
        if not self.turn_running or self._asking_quit:
            await self.stop_and_quit()
            return
        from tui.screens.dialogs import Confirm

        def answered(quit_now: bool | None) -> None:
            self._asking_quit = False
            if quit_now:
                self.run_worker(self.stop_and_quit(), group="quit", exclusive=True, exit_on_error=False)

        self._asking_quit = True
        waits = " and waits for your approval" if self.approval_bar is not None else ""
        self.push_screen(
            Confirm(
                f"A turn is running{waits}. Quit and stop it? What the model wrote so far is kept, and the "
                "chat takes your next message when you come back.",
                yes="Quit and stop",
                no="Stay",
                default_no=True,
            ),
            answered,
        )

    async def stop_and_quit(self) -> None:
        """Stop the running turn the way Esc does (its partial answer kept, the turn marked
        stopped: core.chat.stopping), close the chat (its MCP servers stop), and exit. What a
        quit does from any path: ctrl+q, the palette's Quit, a signal that ends the app."""
        await self.turns.stop_for_good()
        await self.sessions.close()
        self.exit(0)

    async def on_unmount(self) -> None:
        self.quit_signals.remove()
        await self.sessions.close()
        self.collector.close()
        self.terminal.restore()

    def action_focus_input(self) -> None:
        self.focus_input()

    def action_new_chat(self) -> None:
        self.open_session(None)

    def action_chats(self) -> None:
        self.chat_ops.show_chats()

    def action_rename_current(self) -> None:
        self.chat_ops.rename_current()

    def action_delete_current(self) -> None:
        self.chat_ops.delete_current()

    def action_export_current(self) -> None:
        self.chat_ops.export_current()

    def action_model_picker(self) -> None:
        self.chat_ops.pick_model()

    def action_list_models(self) -> None:
        self.chat_ops.pick_model(refresh=True)

    def action_system_prompt(self) -> None:
        self.chat_ops.edit_system_prompt()

    def action_toggle_roster(self) -> None:
        self.layout.toggle_roster()

    def action_filter_tools(self) -> None:
        self.layout.filter_tools()

    def action_plan(self) -> None:
        self.views.plan()

    def action_whatif(self) -> None:
        self.views.whatif()

    def action_usage(self) -> None:
        self.views.usage()

    def action_permissions(self) -> None:
        self.permissions.show()

    def action_copy_last(self) -> None:
        self.views.copy_last()

    def action_toggle_thinking(self) -> None:
        self.views.toggle_thinking()

    def action_mcp_servers(self) -> None:
        self.mcp.show_servers()

    def action_attach_resource(self) -> None:
        self.mcp.attach()

    def action_use_prompt(self) -> None:
        self.mcp.use_prompt()

    def _replace_unused_chat(self) -> bool:
        """An unused new chat opened again (its servers' tools now planned); whether it was. What
        the message box holds comes along to the new chat."""
        if not self.sessions.unused_new_chat():
            return False
        text = self.composer.text

        async def replace() -> None:
            self.composer.put("")  # no draft left behind: the unused chat is dropped, not kept
            await self.sessions.switch(None)
            if text.strip():
                self.composer.put(text)

        self.run_worker(replace(), group="session", exit_on_error=False)
        return True

    def action_project_config(self) -> None:
        self.run_worker(
            self.sessions.review_project_config(), group="project_config", exclusive=True, exit_on_error=False
        )

    async def action_resume(self) -> None:
        await self.turns.resume()

    async def action_stop_turn(self) -> None:
        await self.turns.stop()

    def action_retry(self) -> None:
        self.turns.retry()

    def action_edit_last(self) -> None:
        self.turns.edit_last()

    def action_compact(self) -> None:
        self.turns.compact()

    def action_answer_approval(self) -> None:
        self.approvals.go_to_bar()

    def action_take_queued(self) -> None:
        self.drafts.take_queued()

    def action_external_editor(self) -> None:
        self.drafts.external_editor()


def run_app(args: Any, *, settings: Settings | None = None, policy: Policy | None = None) -> int:
    """Entry point of the ``deferchat`` script (``tui.main``): argparse args in, exit code out;
    ``settings`` and ``policy`` as the preflight read them (else read here)."""
    options = ChatOptions(
        roster=getattr(args, "tui_roster", None),
        mcp_config=getattr(args, "tui_mcp_config", None),
        provider=getattr(args, "tui_provider", None),
        model=getattr(args, "tui_model", None),
        base_url=getattr(args, "tui_base_url", None),
        strategy=getattr(args, "tui_strategy", None),
    )
    app = DeferchatApp(options=options, open_chat=getattr(args, "open_chat", None), settings=settings, policy=policy)
    result = app.run()
    if app.fatal is not None:
        raise app.fatal  # guarded() says it in one line, with its exit code
    return app.quit_signals.exit_code(result)  # 143 or 129 when SIGTERM or SIGHUP ended it
