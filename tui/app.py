"""The deferchat app: a chat log in the centre, the roster panel on the right, the input at
the bottom, approvals inline.

It only presents engine events and answers approvals. The engine runs inside Textual's
event loop: session open (which starts MCP servers), turns and resumes are async workers,
the session's subscriber posts each event to the app as an :class:`EngineEvent`, and one
handler (:class:`tui.router.EventRouter`) turns them into widgets. Quitting closes the
session, so its MCP servers stop before the loop does.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import ChainMap
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.events import Resize
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Static

from core.chat.options import ChatOptions
from core.display import safe
from core.errors import UserFacingError
from core.events import (
    Event,
    ModelTextDelta,
    ModelThinkingDelta,
    ToolApprovalRequired,
    ToolApproved,
    ToolDenied,
    TurnCompleted,
    TurnStarted,
)
from core.pipeline.approvals import ApprovalRequest, Decision, QueueApprover
from tui.collector import Collector
from tui.editor import edit_in, editor_command
from tui.retry_status import RetryCountdown
from tui.router import EventRouter
from tui.state import MARK_EVENT_TYPES, NoteItem, items_from_history, marks_from_events, tool_display
from tui.terminal import TerminalSignals
from tui.widgets.approval import ApprovalBar, ApprovalView
from tui.widgets.chat_log import ChatLog
from tui.widgets.composer import Composer, QueuedNote
from tui.widgets.footer import AppFooter
from tui.widgets.header import ChatHeader
from tui.widgets.roster import RosterPanel

if TYPE_CHECKING:  # the engine is built after the first frame (its modules are imported then)
    from core.chat.retry import RetryPlan
    from core.chat.session import ChatSession
    from core.config import Settings
    from core.engine import Engine
    from core.pipeline.policy import Policy
    from core.roster.models import RosterPlan
    from core.store import ChatRow
    from tui.screens.project_config import ProjectConfigs

log = logging.getLogger("deferchat.tui")

PREVIEW_FIRST = 0.3  # seconds a chat's open waits, at most, for its roster preview to be shown
COLLECT_AFTER = 0.5  # seconds after a turn ends (or stops for an approval) before the collector runs again


class EngineEvent(Message):
    """An engine event on its way to the one handler. ``generation`` names the session that
    sent it; events from a session the app has since closed are dropped."""

    def __init__(self, event: Event, generation: int) -> None:
        super().__init__()
        self.event = event
        self.generation = generation
        self.handled = False

    def absorb(self, delta: ModelTextDelta | ModelThinkingDelta) -> bool:
        """Take in a delta (of the answer or of the thinking) that came before this one, of the
        same kind, was handled: a burst of tokens is one message and one write, however fast
        the model sends (the app handles each message in turn, and thousands of one-token
        messages would leave it behind)."""
        event = self.event
        if self.handled or type(event) is not type(delta) or event.chat_id != delta.chat_id:
            return False
        assert isinstance(event, ModelTextDelta | ModelThinkingDelta)
        self.event = event.model_copy(update={"text": event.text + delta.text})
        return True


class ParkedAnswer:
    """Answers one parked approval with the owner's decision, and hands any later request
    in the resumed turn to the live queue (a fixed answer must not approve what comes next)."""

    def __init__(self, approval_id: str, decision: Decision, then: QueueApprover) -> None:
        self.approval_id = approval_id
        self.decision = decision
        self.then = then
        self.used = False

    async def decide(self, request: ApprovalRequest) -> Decision:
        if request.approval_id == self.approval_id and not self.used:
            self.used = True
            return self.decision
        return await self.then.decide(request)


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
    ("model_picker", "Switch model", "Continue this chat on another provider or model (the plan stays pinned)"),
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
    ("edit_last", "Edit the last message", "Put your last message back in the box; sending it replaces that turn"),
    ("external_editor", "Write the message in $EDITOR", "Edit the message box's text in your editor"),
    (
        "take_queued",
        "Take back the queued message",
        "The last message waiting for the turn to end comes back to the box (\u2191 in the empty box does the same)",
    ),
    (
        "project_config",
        "Review the project's MCP config",
        "Approve the servers this directory's .mcp.json would start (asked when a chat opens; Not now asks no more)",
    ),
)


ROSTER_FOLD_WIDTH = 100  # below this many columns the roster folds into one line
CRAMPED_WIDTH = 64  # a chat column narrower than this stacks the approval's buttons
FOOTER_SPARE = frozenset({"plan", "whatif"})  # the palette has them, with their keys


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
        self.session: ChatSession | None = None
        self.pinned = False
        self.fresh_chat = False  # the open chat was made new by this app
        self.approver = QueueApprover()
        self.generation = 0
        self.turn_running = False
        self.collector = Collector()
        self._collect_timer: Timer | None = None
        self.approval_queue: list[ApprovalView] = []
        self.status_text = ""
        self.terminal = TerminalSignals(self)
        self._switching = asyncio.Lock()
        self.header_bar = ChatHeader(id="header")
        self.log_view = ChatLog(id="log")
        self.status_line = Static("", id="status-line")
        self.composer = Composer(id="composer")
        self.queued_note = QueuedNote("", id="queued")
        self.bottom = Vertical(self.status_line, self.queued_note, self.composer, id="bottom")
        self.queued: list[str] = []  # messages sent while a turn runs, sent when it ends
        self.drafts: dict[str, tuple[str, tuple[int, int]]] = {}  # chat id -> its unsent text and cursor
        self.editing: str | None = None  # the user message that sending replaces (Edit last message)
        self._edit_draft = ""  # what the box held before the edit began (f4 again gives it back)
        self.roster = RosterPanel(id="roster")
        self.roster_wanted: bool | None = None  # the owner's toggle; None: the width decides
        self.retry_status = RetryCountdown(self)  # "retrying in N s" while a provider's retry waits
        self.router = EventRouter(self.log_view, self.roster, self.header_bar, self.retry_status)
        self._project_configs: ProjectConfigs | None = None

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

    async def _ready_engine(self) -> Engine:
        """The engine, built off the event loop the first time (importing it and opening the
        store take a while): the first frame never waits for it."""
        if self._engine is None:
            built = await asyncio.to_thread(self._make_engine)
            if self._engine is None:  # nothing asked for it meanwhile (the property builds at once)
                self._engine = built
        return self._engine

    @property
    def project_configs(self) -> ProjectConfigs:
        """A project's ``.mcp.json`` asks before a chat starts it (made at the first chat's open:
        its screen and the MCP config modules are not needed for the first frame)."""
        if self._project_configs is None:
            from tui.screens.project_config import ProjectConfigs

            self._project_configs = ProjectConfigs(self)
        return self._project_configs

    def end_with(self, exc: BaseException) -> None:
        """End the app on a failure it cannot work without (the database SQLite refuses, found
        after the first frame): :func:`run_app` raises it once the terminal is back, so it is
        the same one line on the normal terminal as a failure found before the app drew."""
        log.debug("the app cannot go on", exc_info=exc)
        self.fatal = exc
        self.exit(1)

    @property
    def store(self) -> Any:
        return self.engine.store

    def compose(self) -> ComposeResult:
        yield self.header_bar
        with Horizontal(id="body"):
            with MainColumn(id="main"):
                yield self.roster.strip
                yield self.log_view
                yield self.bottom
            yield self.roster
        yield AppFooter(id="footer", spare=self.footer_spare)

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
        self.lay_out(self.size.width)
        self.call_after_refresh(self.open_session, self.initial_chat)  # after the first frame

    def on_resize(self, event: Resize) -> None:
        self.lay_out(event.size.width)

    # -- layout -----------------------------------------------------------------------------------
    def lay_out(self, width: int) -> None:
        """Below ROSTER_FOLD_WIDTH columns the roster folds into its one-line strip (the chat
        gets the width) and the footer is compact; the toggle key brings the panel back."""
        self.screen.set_class(width < ROSTER_FOLD_WIDTH, "-narrow")
        self.screen.set_class(width >= 160, "-wide")
        for footer in self.query(Footer):
            footer.compact = width < ROSTER_FOLD_WIDTH
        self.refresh_bindings()  # the footer recomposes for the width (footer_spare)
        shown = self.roster_wanted if self.roster_wanted is not None else width >= ROSTER_FOLD_WIDTH
        self.roster.display = shown
        self.roster.strip.display = not shown
        key = self._keymap.get("toggle_roster", "ctrl+r").split(",")[0].strip()
        self.roster.strip.set_key(self.get_key_display(Binding(key, "toggle_roster")))

    def footer_spare(self) -> frozenset[str]:
        """What a narrow footer leaves out while a turn's own keys (Stop, Answer) need the room."""
        return FOOTER_SPARE if self.size.width < ROSTER_FOLD_WIDTH and self.turn_running else frozenset()

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

    def set_status(self, text: str) -> None:
        self.status_text = text
        self._render_status()

    def _render_status(self) -> None:
        """While an approval waits the line says so, whatever the turn's status says."""
        bar = self.approval_bar
        text = self.status_text
        if bar is not None:
            text = (
                f"\u26a0 waiting for your approval: {bar.view.display or bar.view.tool} \u2014 Tab to answer "
                "(what you type stays in the message box)"
            )
        self.status_line.update(Content(safe(text)))  # it names the waiting tool: a server's name
        self.status_line.display = bool(text)

    # -- sessions -------------------------------------------------------------------------------
    def open_session(self, chat_id: str | None) -> None:
        """Close the open chat (if any) and open ``chat_id``, or a new chat when None.

        Switches run one after another, never cancelled halfway: a chat being opened may
        already have started MCP servers, and only a finished open hands them back to close.
        A new chat asked for while the open one is new and unused is that one (not a second)."""
        if chat_id is None and self.unused_new_chat() and not self._switching.locked():
            self.notify("This chat is new and still unused: type your message here.", timeout=3)
            self.focus_input()
            return
        self.run_worker(self._switch(chat_id), group="session", exit_on_error=False)

    def _subscriber(self, generation: int) -> Callable[[Event], None]:
        last: EngineEvent | None = None

        def deliver(event: Event) -> None:
            nonlocal last
            if isinstance(event, ModelTextDelta | ModelThinkingDelta) and last is not None and last.absorb(event):
                return
            last = EngineEvent(event, generation)
            self.post_message(last)

        return deliver

    async def _switch(self, chat_id: str | None) -> None:
        async with self._switching:
            await self._switch_now(chat_id)

    async def _switch_now(self, chat_id: str | None) -> None:
        self._stash_draft()
        await self.close_session()
        self.generation += 1
        generation = self.generation
        self.approver = QueueApprover()
        await self._reset_view()
        self.set_status("Opening the chat: planning the roster and starting its MCP servers\u2026")
        self.header_bar.set_opening()
        preview: asyncio.Task[RosterPlan | None] | None = None
        try:
            engine = await self._ready_engine()
        except Exception as exc:  # the store cannot be opened: nothing in the app works without it
            self.end_with(exc)
            return
        try:
            # The roster first: the preview is short, and what it imports (the roster, the
            # builtins, the planner) the open needs too; run beside the open it would wait for
            # the open's own work. Never long, though: a preview that must load the tokenizer
            # goes on beside the open, whose servers then start without waiting for it.
            preview = asyncio.create_task(self._early_plan(engine, chat_id, generation))
            await asyncio.wait({preview}, timeout=PREVIEW_FIRST)
            # before the chat starts its servers: a running chat never starts one held for approval
            await self.project_configs.review(self.options.mcp_config if chat_id is None else None)
            session = await engine.open_chat(
                chat_id,
                self.options if chat_id is None else ChatOptions(),
                approver=self.approver,
                subscribers=[self._subscriber(generation)],
            )
        except UserFacingError as exc:
            self.set_status("")
            await self.log_view.add(NoteItem(text=str(exc), level="error"))
            self.header_bar.set_failed(str(exc))
            return
        except Exception as exc:  # keep the app usable: the chats list still works
            log.exception("opening a chat failed")
            self.set_status("")
            await self.log_view.add(
                NoteItem(text=f"could not open the chat: {type(exc).__name__}: {exc}", level="error")
            )
            self.header_bar.set_failed(f"{type(exc).__name__}: {exc}")
            return
        finally:
            shown = self._settle_preview(preview)
        if generation != self.generation:
            await session.close()
            return
        self.session = session
        self.pinned = chat_id is not None
        self.fresh_chat = chat_id is None
        self._load_history(session.chat_id)
        self._restore_draft(session.chat_id)
        await self._present(session)
        if shown is not None and session.plan is not None and shown.to_json() != session.plan.to_json():
            await self.log_view.add(
                NoteItem(
                    text="The roster preview changed: the servers listed other tools than the roster "
                    "recorded (or one did not start); the roster shows the plan this chat pinned.",
                    level="warning",
                )
            )
        self.set_status("")
        self.collector.settle()  # what startup built is frozen for the collector (once)
        # a callable, not a coroutine: a worker cancelled before it starts leaves nothing unawaited
        self.run_worker(partial(self._approvals, self.approver, generation), group="approvals", exit_on_error=False)  # type: ignore[arg-type]  # Textual cannot infer a worker type from a partial

    async def _early_plan(self, engine: Engine, chat_id: str | None, generation: int) -> RosterPlan | None:
        """The roster before the chat is open: a new chat's plan preview (planned from the
        roster's recorded listings, in a thread, while the servers start), or a reopened chat's
        stored pinned plan. Nothing is sent or pinned from it; the open chat's plan replaces it.
        Returns the preview shown (None: none, or the stored plan)."""
        if chat_id is not None:
            plan = stored_plan(engine, chat_id)  # one row and one plan: cheap, and the store is this loop's
            if plan is not None and generation == self.generation and self.session is None:
                self.roster.set_plan(plan, pinned=True)
                self._servers_starting(plan)
            return None
        counts: ChainMap[str, int] = ChainMap({}, engine.estimator.cache)  # counts made here stay here
        from core.tokens import TokenEstimator

        try:
            plan = await asyncio.to_thread(engine.preview_plan, self.options, TokenEstimator(counts))
        except Exception:  # the chat's own open says what is wrong
            log.debug("no roster preview", exc_info=True)
            return None
        engine.estimator.cache.update(counts.maps[0])  # the open plans from them too (on this loop)
        if generation != self.generation or self.session is not None:
            return None
        self.roster.set_plan(plan, pinned=False, preview=True)
        self._servers_starting(plan)
        return plan

    def _servers_starting(self, plan: RosterPlan) -> None:
        new = {t.server for t in plan.tools if t.server} - set(self.roster.servers)
        if new:
            self.roster.set_servers({**self.roster.servers, **{s: ("starting", 0, "") for s in new}})

    def _settle_preview(self, preview: asyncio.Task[RosterPlan | None] | None) -> RosterPlan | None:
        """The preview shown before the chat opened, if any; one still being planned is dropped."""
        if preview is None:
            return None
        if not preview.done():
            preview.cancel()
            return None
        if preview.cancelled() or preview.exception() is not None:
            return None
        return preview.result()

    async def _reset_view(self) -> None:
        await self._clear_approvals()
        self.router.reset()
        self.roster.reset()
        await self.log_view.clear()

    async def _present(self, session: ChatSession) -> None:
        assert session.plan is not None
        plan = session.plan
        row = session.chat()
        self.header_bar.set_chat(
            title=row.title,
            provider=row.provider,
            model=row.model,
            strategy=session.strategy.name,  # the chat's strategy now (a switch resolved it again)
            reason=session.strategy_reason,
            pinned=self.pinned,
        )
        from core.chat.meter import chat_usage

        self.header_bar.show_totals(chat_usage(self.store, session.chat_id).totals)  # a reopened chat's so far
        displays = {t.name: tool_display(t.name, t.remote_name, t.server) for t in plan.tools}
        self.router.reset(displays)
        marks = marks_from_events(self.store.events(session.chat_id, MARK_EVENT_TYPES))
        self.roster.set_plan(plan, pinned=self.pinned, marks=marks)
        self.roster.set_strategy(session.strategy.name, session.strategy_reason)  # after a switch
        self.roster.set_servers({s.server: (s.status, s.tools, s.message) for s in session.server_status.values()})
        for server in session.roster_changed:
            self.roster.roster_changed(server)
        if self.pinned:
            items = items_from_history(
                self.store.messages(session.chat_id), self.store.invocations(session.chat_id), displays
            )
            self.router.adopt(items)
            await self.log_view.load(items)
            await self._offer_parked()
        self.focus_input()

    async def _offer_parked(self) -> None:
        """A reopened chat shows its parked approvals again (or offers to resume)."""
        session = self.session
        if session is None or session.parked() is None:
            return
        busy = self.store.busy(session.chat_id)
        if busy is not None:  # its turn runs in another deferchat: resuming here would be refused
            await self.log_view.add(NoteItem(text=str(busy), level="warning"))
            return
        pending = session.pending_approvals()
        if not pending:
            await self.log_view.add(
                NoteItem(
                    text="This chat has an unfinished turn: run \u201cResume the "
                    "unfinished turn\u201d from the command palette (ctrl+p).",
                    level="warning",
                )
            )
            return
        row = pending[0]
        placement = session.plan.placement_of(row.tool) if session.plan else None
        self.approval_queue.append(
            ApprovalView(
                approval_id=row.id,
                tool=row.tool,
                side_effect=row.side_effect or "",
                arguments=row.arguments,
                via=row.via,
                reason=row.reason or "",
                untrusted=bool(placement and placement.untrusted),
                display=self.router.displays.get(row.tool, ""),
                parked=True,
            )
        )
        await self._show_next_approval()

    def unused_new_chat(self) -> bool:
        """The open chat was made new here, and nothing was sent, renamed or run in it."""
        session = self.session
        if session is None or not self.fresh_chat or self.turn_running:
            return False
        row = self.store.chat(session.chat_id)
        return row is not None and row.title in ("", "New chat") and not self.store.messages(session.chat_id)

    async def close_session(self) -> None:
        """Stop the open chat's workers and close it (its MCP servers stop). A new chat that
        was never used (no draft left in it either, to come back to) is not kept: the next new
        chat replaces it."""
        unused = self.session.chat_id if self.unused_new_chat() and self.session is not None else None
        if unused in self.drafts:
            unused = None
        for group in ("turn", "approvals"):
            self.workers.cancel_group(self, group)
        self.turn_running = False
        self.fresh_chat = False
        session, self.session = self.session, None
        if session is not None:
            try:
                await session.close()
            except Exception:  # closing must not stop the app from quitting
                log.exception("closing the session failed")
        if unused is not None:
            try:
                self.store.delete_chat(unused)
            except Exception:
                log.exception("could not drop the unused chat")

    async def on_engine_event(self, message: EngineEvent) -> None:
        message.handled = True  # a later delta is a message of its own now
        if message.generation != self.generation:
            return
        await self.router.handle(message.event)
        if isinstance(message.event, (TurnCompleted, ToolApprovalRequired)):
            self._resume_collector()  # the turn is over, or waits for a person: nothing streams
        elif isinstance(message.event, (ToolApproved, ToolDenied)) and self.turn_running:
            self._hold_collector()
        if isinstance(message.event, (TurnStarted, TurnCompleted)) and self.session is not None:
            # the engine titles a chat from its first message (and the model may retitle it)
            self.header_bar.set_title(self.session.chat().title)

    # -- turns ------------------------------------------------------------------------------------
    async def on_composer_submitted(self, message: Composer.Submitted) -> None:
        text = message.text
        session = self.session
        if session is None:
            opening = any(w.group == "session" and not w.is_finished for w in self.workers)
            self.notify(
                "The chat is still opening."
                if opening
                else "No chat is open: ctrl+n starts a new one, ctrl+o lists the chats.",
                severity="warning",
            )
            self.composer.put(text)
            return
        self._remember(session.chat_id, text)
        editing, self.editing = self.editing, None
        if self.turn_running or self.approval_bar is not None:
            # queued, not refused: sent when the turn ends (a replacement waits its turn too)
            self.queued.append(text)
            if editing is not None:
                self.notify("A turn is running: the edited message is queued as a new message.", severity="warning")
            self._show_queue()
            return
        busy = self.store.busy(session.chat_id)
        if busy is not None:  # a turn of this chat runs in another deferchat
            self.notify(str(busy), severity="warning")
            self.composer.put(text)
            return
        if session.parked() is not None:
            self.notify(
                "This chat has an unfinished turn: resume it first (ctrl+p, \u201cResume the unfinished turn\u201d).",
                severity="warning",
            )
            self.composer.put(text)
            return
        if editing is not None:
            self._run_turn(partial(self._replace_turn, session, editing, text))
        else:
            self._run_turn(partial(session.send, text))
        self._show_queue()

    # -- input: history, queue, drafts, editing ------------------------------------------------------
    def _remember(self, chat_id: str, text: str) -> None:
        """A sent message joins the input history (↑), in the store so it outlives the app."""
        self.composer.remember(text)
        try:
            self.store.add_input(chat_id, text)
        except Exception:  # the history is a convenience: it never stops a message
            log.exception("could not store the input history")

    def _load_history(self, chat_id: str) -> None:
        try:
            entries = self.store.input_history(chat_id)
        except Exception:
            log.exception("could not read the input history")
            entries = []
        self.composer.set_history(entries)

    def _show_queue(self) -> None:
        self.composer.queued = len(self.queued)
        self.queued_note.show(self.queued, editing=self.editing is not None)

    def _give_back_queue(self, why: str = "") -> None:
        """Queued messages that will not be sent go back to the box, nothing lost."""
        if not self.queued:
            return
        waiting, self.queued = self.queued, []
        current = self.composer.text
        self.composer.put("\n\n".join([*([current] if current.strip() else []), *waiting]))
        self._show_queue()
        if why:
            self.notify(f"{why}: your queued message is back in the box.", severity="warning")

    def _after_turn(self, status: str | None) -> None:
        """The turn ended: a finished one sends the next queued message; a failed or stopped
        one gives the queue back to the box (the owner decides what still makes sense)."""
        if not self.queued or self.session is None:
            return
        if status == "done":
            text = self.queued.pop(0)
            self._show_queue()
            self._run_turn(partial(self.session.send, text))
        elif status != "parked":
            self._give_back_queue("The turn " + ("was stopped" if status == "stopped" else "did not finish"))

    def on_composer_take_queued(self, message: Composer.TakeQueued) -> None:
        self.action_take_queued()

    def action_take_queued(self) -> None:
        if not self.queued:
            self.notify("No message is queued.")
            return
        text = self.queued.pop()
        current = self.composer.text
        self.composer.put(f"{text}\n\n{current}" if current.strip() else text)
        self._show_queue()
        self.composer.focus()

    async def on_composer_scroll_log(self, message: Composer.ScrollLog) -> None:
        view = self.log_view
        if message.where == "page_up":
            view.scroll_page_up(animate=False)
        elif message.where == "page_down":
            view.scroll_page_down(animate=False)
        elif message.where == "home":
            await view.action_load_all_earlier()
        else:
            await view.show_tail()
            view.scroll_end(animate=False)

    def _stash_draft(self) -> None:
        """The unsent text belongs to the chat it was typed in (and its queue, given back)."""
        session = self.session
        self._give_back_queue()
        self.editing = None
        if session is not None:
            text = self.composer.text
            if text.strip():
                self.drafts[session.chat_id] = (text, self.composer.cursor_location)
            else:
                self.drafts.pop(session.chat_id, None)
            self.composer.put("")
        self._show_queue()

    def _restore_draft(self, chat_id: str) -> None:
        draft = self.drafts.pop(chat_id, None)
        if draft is not None and not self.composer.text.strip():
            self.composer.put(*draft)

    def action_external_editor(self) -> None:
        """Write the message in $VISUAL / $EDITOR: the app steps aside until the editor exits."""
        command = editor_command()
        if command is None:
            self.notify("Set $EDITOR (or $VISUAL) to write messages in your editor.", severity="warning")
            return
        text, error = edit_in(self, command, self.composer.text)
        if error:
            self.notify(f"The editor did not run: {error}", severity="error")
            return
        if text is not None:
            self.composer.put(text.rstrip("\n"))
        self.composer.focus()

    def _run_turn(self, work: Callable[[], Awaitable[Any]]) -> None:
        self.turn_running = True
        self._hold_collector()  # no collector pause while the answer streams (tui/collector.py)
        self.refresh_bindings()  # the footer shows Stop
        self.set_status("Working\u2026 (Esc stops)")
        self.run_worker(partial(self._turn, work), group="turn", exit_on_error=False)  # type: ignore[arg-type]  # Textual cannot infer a worker type from a partial

    async def _turn(self, work: Callable[[], Awaitable[Any]]) -> None:
        status: str | None = None
        try:
            result = await work()
            status = getattr(result, "status", None)
        except UserFacingError as exc:
            self.notify(str(exc), severity="error")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("the turn failed")
            await self.log_view.add(NoteItem(text=f"the turn failed: {type(exc).__name__}: {exc}", level="error"))
        finally:
            self.turn_running = False
            self.refresh_bindings()
            self.set_status("")
            if status is None:  # no turn.completed is coming to resume the collector
                self._resume_collector()
            self._after_turn(status)

    def _hold_collector(self) -> None:
        if self._collect_timer is not None:
            self._collect_timer.stop()
            self._collect_timer = None
        self.collector.hold()

    def _resume_collector(self) -> None:
        """Let the collector run again once the answer's last frames are drawn: the turn's objects
        are walked then, in one pass (tui/collector.py), not in the middle of the last render."""
        if self._collect_timer is not None:
            self._collect_timer.stop()

        def resume() -> None:
            self._collect_timer = None
            if not self.turn_running or self.approval_bar is not None:
                self.collector.release()

        self._collect_timer = self.set_timer(COLLECT_AFTER, resume)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "answer_approval":
            bar = self.approval_bar
            return bar is not None and not bar.has_focus_within and self.screen is self.screen_stack[0]
        if action == "stop_turn":
            # only while a turn runs and the chat is in front: otherwise Esc and ctrl+c go on
            # to their other bindings (back to the input, TextArea's copy, the quit hint)
            return self.turn_running and self.session is not None and self.screen is self.screen_stack[0]
        if action in ("usage", "system_prompt"):  # otherwise f6/f7 are the focused text's own keys
            return self.screen is self.screen_stack[0]
        return True

    async def action_stop_turn(self) -> None:
        """Stop the running turn at once. The engine closes the provider's stream, keeps the
        partial answer and settles a tool call in flight (core.chat.stopping); the turn's events
        say the rest."""
        session = self.session
        if session is None or not session.stop():
            return
        self.set_status("Stopping\u2026")
        await self._clear_approvals()  # the stopped turn's approval is withdrawn
        self.focus_input()

    # -- approvals ---------------------------------------------------------------------------------
    async def _approvals(self, approver: QueueApprover, generation: int) -> None:
        while True:
            request = await approver.next_request()
            if generation != self.generation:
                return
            self.approval_queue.append(
                ApprovalView(
                    approval_id=request.approval_id,
                    tool=request.tool,
                    side_effect=request.side_effect,
                    arguments=request.arguments,
                    via=request.via,
                    reason=request.reason,
                    untrusted=request.untrusted,
                    display=self.router.displays.get(request.tool, ""),
                )
            )
            await self._show_next_approval()

    @property
    def approval_bar(self) -> ApprovalBar | None:
        bars = self.bottom.query(ApprovalBar)
        return bars.first() if bars else None

    async def _show_next_approval(self) -> None:
        """Show the next approval above the message box. It does not take the focus: what the
        owner is typing stays in the box (Tab moves to the bar; tui.widgets.approval)."""
        if self.approval_bar is not None or not self.approval_queue:
            self._approval_signals()
            return
        view = self.approval_queue.pop(0)
        await self.bottom.mount(ApprovalBar(view, id="approval"), before=self.composer)
        self._approval_signals()
        self.terminal.notify("deferchat: waiting for your approval", view.display or view.tool)

    def _approval_signals(self) -> None:
        """The status line and the terminal's title say whether an approval waits."""
        bar = self.approval_bar
        self._render_status()
        self.terminal.set_title("deferchat — waiting for your approval" if bar is not None else "deferchat")
        self.refresh_bindings()

    async def _remove_approval_bar(self) -> None:
        bar = self.approval_bar
        if bar is not None:
            had_focus = bar.has_focus_within
            await bar.remove()
            if had_focus or self.focused is None:
                self.composer.focus()

    async def _clear_approvals(self) -> None:
        self.approval_queue.clear()
        await self._remove_approval_bar()
        self._approval_signals()

    def on_approval_bar_leave(self, message: ApprovalBar.Leave) -> None:
        self.composer.focus()

    def action_answer_approval(self) -> None:
        bar = self.approval_bar
        if bar is not None:
            bar.focus()

    async def on_approval_bar_decided(self, message: ApprovalBar.Decided) -> None:
        await self._remove_approval_bar()
        view, decision = message.view, message.decision
        if view.parked:
            if self.session is not None and not self.turn_running:
                self._run_turn(partial(self.session.resume, ParkedAnswer(view.approval_id, decision, self.approver)))
        elif not self.approver.answer(view.approval_id, decision):
            self.notify("That approval is no longer waiting.", severity="warning")
        await self._show_next_approval()

    # -- actions ------------------------------------------------------------------------------------
    def focus_input(self) -> None:
        """Back to the message box (an open approval is reached with Tab, never by typing)."""
        self.composer.focus()

    def action_focus_input(self) -> None:
        self.focus_input()

    async def action_quit(self) -> None:
        await self.close_session()
        self.exit(0)

    async def on_unmount(self) -> None:
        await self.close_session()
        self.collector.close()
        self.terminal.restore()

    def action_new_chat(self) -> None:
        self.open_session(None)

    def action_chats(self) -> None:
        def chosen(result: tuple[str, str] | None) -> None:
            if result is None:
                return
            what, chat_id = result
            self.open_session(chat_id if what == "open" else None)

        from tui.screens.chats import ChatsScreen

        self.push_screen(ChatsScreen(self, self.session.chat_id if self.session else None), chosen)

    def action_toggle_roster(self) -> None:
        self.roster_wanted = not self.roster.display
        self.lay_out(self.size.width)

    def action_filter_tools(self) -> None:
        self.roster_wanted = True
        self.lay_out(self.size.width)
        self.roster.filter.focus()

    def action_copy_last(self) -> None:
        text = self.log_view.last_assistant_text()
        if not text:
            self.notify("No answer to copy yet.", severity="warning")
            return
        self.copy_to_clipboard(text)
        self.notify("Copied the last answer.", timeout=2)

    def action_toggle_thinking(self) -> None:
        shown = self.router.toggle_thinking()
        self.notify("The model's thinking is shown." if shown else "The model's thinking is folded.", timeout=2)

    def action_plan(self) -> None:
        if self.session is None or self.session.plan is None:
            self.notify("No chat is open.", severity="warning")
            return
        from tui.screens.plan import PlanScreen

        self.push_screen(PlanScreen(self.session.plan, self.pinned))

    def action_usage(self) -> None:
        if self.session is None:
            self.notify("No chat is open.", severity="warning")
            return
        from core.chat.meter import chat_usage
        from tui.screens.usage import UsageScreen

        self.push_screen(UsageScreen(chat_usage(self.store, self.session.chat_id)))

    def action_model_picker(self) -> None:
        session = self.session
        if session is None:
            self.notify("No chat is open.", severity="warning")
            return
        from core.chat.switch import models_of, owner_target, usable_providers

        usable = usable_providers(self.engine.settings)
        current = (session.provider_name, session.provider.model)
        if current[0] not in usable:
            usable.insert(0, current[0])

        def picked(choice: tuple[str, str] | None) -> None:
            if choice is None or self.session is not session or choice == current:
                return
            try:
                # a provider offered for its configured base URL is built with it
                session.switch(*owner_target(session, *choice))  # provider.switched: the log, the header
            except UserFacingError as exc:
                self.notify(str(exc), severity="error")

        from tui.screens.model_picker import ModelPicker

        self.push_screen(ModelPicker(current, usable, {p: models_of(p) for p in usable}), picked)

    def action_system_prompt(self) -> None:
        session = self.session
        if session is None:
            self.notify("No chat is open.", severity="warning")
            return
        prompt = session.prompt

        def saved(text: str | None) -> None:
            if text is not None and self.session is session:
                try:
                    changed = prompt.set(text)  # its chat.system_prompt event reaches the log
                except UserFacingError as exc:
                    self.notify(str(exc), severity="error")
                    return
                self.notify("System prompt saved." if changed else "The system prompt is unchanged.", timeout=3)

        from tui.screens.system_prompt import SystemPromptScreen

        self.push_screen(SystemPromptScreen(prompt.text(), started=not prompt.before_first_message()), saved)

    def action_whatif(self) -> None:
        if self.session is None or self.session.plan is None:
            self.notify("No chat is open.", severity="warning")
            return
        from tui.screens.whatif import WhatIfScreen

        self.push_screen(WhatIfScreen(self.session.plan, self.engine.estimator))

    def on_roster_panel_tool_selected(self, message: RosterPanel.ToolSelected) -> None:
        if self.roster.plan is not None:
            from tui.screens.tool import ToolScreen

            self.push_screen(ToolScreen(self.roster.plan, message.name, self.roster.marks.get(message.name, set())))

    def action_project_config(self) -> None:
        self.run_worker(self._review_project_config(), group="project_config", exclusive=True, exit_on_error=False)

    async def _review_project_config(self) -> None:
        """The open chat keeps the servers it started with: an approval opens a new chat in the
        place of an unused one, and says how otherwise."""
        if not await self.project_configs.review_again(self.options.mcp_config) or self.session is None:
            return
        if self.unused_new_chat():
            await self._switch(None)
        else:
            self.notify(
                "This chat keeps the servers it opened with: a new chat (ctrl+n) starts the approved ones.", timeout=6
            )

    async def action_resume(self) -> None:
        session = self.session
        if session is None or session.parked() is None:
            self.notify("Nothing to resume.")
            return
        if self.turn_running:
            self.notify("A turn is running.", severity="warning")
            return
        if session.pending_approvals():
            if self.approval_bar is None:
                await self._offer_parked()
            return
        self._run_turn(partial(session.resume, self.approver))

    # -- retry and edit: a turn run again, or replaced (core.chat.session; the store keeps both) -----
    def _can_rerun(self, what: str) -> ChatSession | None:
        session = self.session
        if session is None:
            self.notify("No chat is open.", severity="warning")
            return None
        if self.turn_running:
            self.notify(f"A turn is running: stop it (Esc) or let it end, then {what}.", severity="warning")
            return None
        if session.parked() is not None:
            self.notify("This chat has an unfinished turn: answer its approval or resume it first.", severity="warning")
            return None
        return session

    def action_retry(self) -> None:
        """Run the last turn again: a failed request is asked again where it failed (nothing the
        turn already ran runs twice); otherwise the last message is sent again in its place."""
        session = self._can_rerun("retry")
        if session is None:
            return
        try:
            plan = session.retry_plan()
        except UserFacingError as exc:
            self.notify(str(exc), severity="warning")
            return
        self.editing = None
        self._show_queue()
        self._run_turn(partial(self._retry_turn, session, plan))

    async def _retry_turn(self, session: ChatSession, plan: RetryPlan) -> Any:
        if plan.kind == "resend":
            await self._show_history_before(session, plan.message_id)
        return await session.retry()

    def action_edit_last(self) -> None:
        """Put the last message back in the box; sending it replaces that turn. Again: stop editing."""
        if self.editing is not None:
            self.editing = None
            self.composer.put(self._edit_draft)
            self._show_queue()
            return
        session = self._can_rerun("edit your message")
        if session is None:
            return
        prompt = session.last_prompt()
        if prompt is None:
            self.notify("There is no message to edit yet.")
            return
        self._edit_draft = self.composer.text
        self.editing = prompt.message_id
        self.composer.put(prompt.text)
        self.composer.focus()
        self._show_queue()

    async def _replace_turn(self, session: ChatSession, message_id: str, text: str) -> Any:
        await self._show_history_before(session, message_id)
        return await session.send(text, replaces=message_id)

    async def _show_history_before(self, session: ChatSession, message_id: str) -> None:
        """The log as the model will now see the chat: what came before the replaced message
        (the replaced turn stays in the store, the audit and the invocation rows)."""
        messages = self.store.messages(session.chat_id)
        ids = [m.id for m in messages]
        kept = messages[: ids.index(message_id)] if message_id in ids else messages
        items = items_from_history(kept, self.store.invocations(session.chat_id), self.router.displays)
        self.router.reset()
        self.router.adopt(items)
        await self.log_view.load(items)

    def action_rename_current(self) -> None:
        if self.session is not None:
            self.run_worker(self.rename_chat(self.session.chat_id), exit_on_error=False)

    def action_delete_current(self) -> None:
        if self.session is not None:
            self.run_worker(self.delete_chat(self.session.chat_id), exit_on_error=False)

    def action_export_current(self) -> None:
        if self.session is not None:
            self.run_worker(self.export_chat(self.session.chat_id), exit_on_error=False)

    # -- chat operations (also used by the chats list, as its ChatOperations) -----------------------
    def list_chats(self) -> list[ChatRow]:
        return self.store.chats()

    async def rename_chat(self, chat_id: str) -> bool:
        from tui.screens.dialogs import TextPrompt

        row = self.store.chat(chat_id)
        if row is None:
            return False
        title = await self.push_screen_wait(TextPrompt("Rename the chat", row.title or ""))
        if not title:
            return False
        self.store.update_chat(chat_id, title=title[:80])
        if self.session is not None and self.session.chat_id == chat_id:
            self.header_bar.set_title(title[:80])
        return True

    async def delete_chat(self, chat_id: str) -> bool:
        from tui.screens.dialogs import Confirm

        row = self.store.chat(chat_id)
        if row is None:
            return False
        if not await self.push_screen_wait(
            Confirm(f"Delete \u201c{row.title}\u201d for good? Its messages and tool calls go with it.", yes="Delete")
        ):
            return False
        current = self.session is not None and self.session.chat_id == chat_id
        if current:
            await self.close_session()
        self.store.delete_chat(chat_id)
        self.notify("Chat deleted.")
        if current:
            self.open_session(None)
        return True

    async def export_chat(self, chat_id: str) -> Path | None:
        from core.export import chat_markdown
        from tui.screens.dialogs import Confirm, TextPrompt

        row = self.store.chat(chat_id)
        if row is None:
            return None
        default = self.export_dir / f"{slug(row.title or 'chat')}.md"
        answer = await self.push_screen_wait(TextPrompt("Export to Markdown (tool calls included)", str(default)))
        if not answer:
            return None
        if await asyncio.to_thread(exists, answer) and not await self.push_screen_wait(
            Confirm(f"{answer} exists. Overwrite it with this chat?", yes="Overwrite", default_no=True)
        ):
            self.notify("Not exported: the file is unchanged.")
            return None
        path, error = await asyncio.to_thread(write_file, answer, chat_markdown(self.store, chat_id))
        if error is not None:
            self.notify(f"Could not write {path}: {error}", severity="error")
            return None
        self.notify(f"Exported to {path}")
        return path


def stored_plan(engine: Engine, chat_id: str) -> RosterPlan | None:
    """A chat's pinned plan as the store keeps it (None: no such chat, or not readable here)."""
    from core.roster.models import RosterPlan

    row = engine.store.find_chat(chat_id)
    text = engine.store.plan_json(row.plan_id) if row is not None and row.plan_id else None
    try:
        return RosterPlan.model_validate_json(text) if text else None
    except ValueError:
        return None


def exists(where: str) -> bool:
    """Whether ``where`` (``~`` expanded) names an existing file: export asks before it overwrites."""
    return Path(where).expanduser().exists()


def write_file(where: str, text: str) -> tuple[Path, OSError | None]:
    """Write ``text`` to ``where`` (``~`` expanded, folders made): the path, and the error if
    it failed. File I/O, so the app runs it off the event loop."""
    path = Path(where).expanduser()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        return path, exc
    return path, None


def slug(title: str) -> str:
    s = re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()
    return (s or "chat")[:60]


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
    return int(result or 0)
