"""The one place engine events become widgets.

The session's subscriber posts every event to the app as a message; the app hands each to
:meth:`EventRouter.handle`, in order, which ``match``es it on its class. ``model.*`` events
speak as the model wrote (a deferred call first shows as ``tool.call``); ``tool.*`` events
carry the deferred tool's own name under the same call id, so the row is renamed, with "via
tool.call", as soon as the pipeline speaks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

from core.events import (
    ChatTitled,
    ElicitationAnswered,
    ErrorEvent,
    Event,
    GrantRevoked,
    HistoryCompacted,
    ModelText,
    ModelTextDelta,
    ModelThinking,
    ModelThinkingDelta,
    ModelToolSearch,
    ModelToolUse,
    PlanEvent,
    PrefixBreak,
    ProviderSwitched,
    ResourceAttached,
    RosterChanged,
    ServerStatus,
    SystemPromptChanged,
    ToolApprovalRequired,
    ToolApproved,
    ToolChanged,
    ToolCompleted,
    ToolDenied,
    ToolDiscovered,
    ToolFailed,
    ToolRequested,
    ToolStarted,
    TurnCompleted,
    TurnStarted,
    UsageEvent,
)
from core.roster.controls import TOOL_SEARCH
from tui.state import (
    AWAITING,
    DENIED,
    DONE,
    FAILED,
    PENDING,
    RUNNING,
    STOPPED_NOTE,
    AssistantItem,
    Item,
    NoteItem,
    ToolItem,
    UserItem,
    clip,
    first_key,
    is_native_search,
    marks_for,
)
from tui.widgets.thinking import STOPPED, ThinkingItem, ThinkingView, show_all

if TYPE_CHECKING:
    from tui.retry_status import RetryCountdown
    from tui.widgets.chat_log import ChatLog
    from tui.widgets.header import ChatHeader
    from tui.widgets.roster import RosterPanel


def granted_note(name: str, key: str = "") -> str:
    """The log's line when an answer allows a tool for the rest of the chat; ``key``: the
    permissions screen's, as the keymap has it."""
    where = f"{key} (or Permissions in ctrl+p)" if key else "Permissions in ctrl+p"
    return (
        f"{name} is allowed for the rest of this chat: it runs without asking, after a restart too. "
        f"{where} lists the chat's grants and takes them back."
    )


ToolEvent: TypeAlias = (
    ToolRequested | ToolApprovalRequired | ToolApproved | ToolStarted | ToolCompleted | ToolFailed | ToolDenied
)
"""The pipeline's events about one call: each updates the call's row."""


class EventRouter:
    def __init__(
        self,
        log: ChatLog,
        roster: RosterPanel,
        header: ChatHeader,
        retry: RetryCountdown | None = None,
        keys: Callable[[str], str] | None = None,
    ) -> None:
        self.log = log
        self.keys = keys or (lambda action: "")  # an action's key as the keymap has it (the app's keys_for)
        self.roster = roster
        self.header = header
        self.retry = retry  # provider.retrying: "retrying in N s" on the status line (tui/retry_status.py)
        self.displays: dict[str, str] = {}  # tool name -> the name a row shows
        self.thinking_shown = False  # the thinking blocks' text shown (toggle_thinking), else folded
        self.reset()

    def reset(self, displays: dict[str, str] | None = None) -> None:
        self.current: AssistantItem | None = None  # the text segment being streamed
        self.segments: list[AssistantItem] = []  # this response's streamed segments
        self.tools: dict[str, ToolItem] = {}
        self.thinking: ThinkingItem | None = None  # the thinking block being streamed
        self.thoughts: list[ThinkingItem] = []  # this response's streamed blocks, for model.thinking to finish
        if displays is not None:
            self.displays = displays

    def adopt(self, items: list[Item]) -> None:
        """Tool rows of a reopened chat, so a resumed call updates its row."""
        self.tools = {i.call_id: i for i in items if isinstance(i, ToolItem)}

    async def handle(self, event: Event) -> None:
        if self.retry is not None:  # a retry's wait starts, or the model's output (or the turn's end) ends it
            self.retry.see(event)
        for name, mark in marks_for(event):
            self.roster.mark(name, mark)
        match event:
            case ModelTextDelta():
                await self.on_delta(event)
            case ModelText():
                await self.on_text(event)
            case ModelThinkingDelta():
                await self.on_thinking_delta(event)
            case ModelThinking():
                await self.on_thinking(event)
            case ModelToolUse():
                await self.on_tool_use(event)
            case ModelToolSearch():
                await self.on_tool_search(event)
            case ToolDiscovered():
                await self.on_discovered(event)
            case (
                ToolRequested()
                | ToolApprovalRequired()
                | ToolApproved()
                | ToolStarted()
                | ToolCompleted()
                | ToolFailed()
                | ToolDenied()
            ):
                await self.on_tool_event(event)
            case TurnStarted():
                await self.on_turn_started(event)
            case TurnCompleted():
                await self.on_turn_completed(event)
            case UsageEvent():
                await self.on_usage(event)
            case PrefixBreak():
                await self.on_prefix_break(event)
            case SystemPromptChanged():
                await self.on_system_prompt(event)
            case ErrorEvent():
                await self.on_error(event)
            case ProviderSwitched():
                await self.on_switched(event)
            case HistoryCompacted():
                await self.on_compacted(event)
            case ServerStatus():
                await self.on_server_status(event)
            case RosterChanged():
                await self.on_roster_changed(event)
            case ToolChanged():
                await self.log.add(NoteItem(text=event.message, level="warning"))
            case ResourceAttached():
                cut = f", cut from {event.chars:,} characters" if event.truncated else ""
                await self.log.add(
                    NoteItem(text=f"\U0001f4ce {event.uri} from {event.server}: {event.tokens:,} tokens{cut}")
                )
            case ElicitationAnswered() if event.reason:
                await self.log.add(
                    NoteItem(text=f"MCP server {event.server}'s request for input: {event.action} ({event.reason})")
                )
            case ChatTitled():
                await self.on_chat_titled(event)
            case GrantRevoked():
                await self.on_grant_revoked(event)
            case PlanEvent():  # the app shows the plan from the session, not from the event
                pass

    # -- text ---------------------------------------------------------------------------------
    async def _end_segment(self) -> None:
        if self.current is not None:
            item, self.current = self.current, None
            await self.log.finish(item)

    # -- thinking (tui/widgets/thinking.py) ------------------------------------------------------
    async def on_thinking_delta(self, e: ModelThinkingDelta) -> None:
        if self.thinking is None:
            await self._end_segment()
            self.thinking = ThinkingItem(streaming=True, expanded=self.thinking_shown)
            self.thoughts.append(self.thinking)
            await self.log.add(self.thinking)
        self.thinking.text += e.text
        if isinstance(self.thinking.widget, ThinkingView) and self.thinking.widget.is_mounted:
            self.thinking.widget.streamed()

    async def on_thinking(self, e: ModelThinking) -> None:
        """A whole block, after its response: it finishes the block that streamed it, or is
        shown whole (a provider that did not stream it, a redacted block)."""
        self.thinking = None
        if self.thoughts:
            item = self.thoughts.pop(0)
            item.text, item.redacted, item.streaming = e.text, e.redacted, False
            self._redraw_thinking(item)
        else:
            await self.log.add(ThinkingItem(text=e.text, redacted=e.redacted, expanded=self.thinking_shown))

    def _redraw_thinking(self, item: ThinkingItem) -> None:
        if isinstance(item.widget, ThinkingView) and item.widget.is_mounted:
            item.widget.refresh_from_item()

    def _end_thinking(self, ended: str = "") -> None:
        """The response went on past its thinking (or the turn ended): no block streams now."""
        self.thinking = None
        if ended:
            for item in self.thoughts:
                if item.streaming:
                    item.streaming, item.ended = False, ended
                    self._redraw_thinking(item)
            self.thoughts = []

    def toggle_thinking(self) -> bool:
        """Show the text of every thinking block, or fold them all; True when shown now."""
        self.thinking_shown = not self.thinking_shown
        show_all(self.log.items, self.thinking_shown)
        return self.thinking_shown

    async def on_delta(self, e: ModelTextDelta) -> None:
        self._end_thinking()
        if self.current is None:
            self.current = AssistantItem(streaming=True)
            self.segments.append(self.current)
            await self.log.add(self.current)
        await self.log.stream(self.current, e.text)

    async def on_text(self, e: ModelText) -> None:
        """The response's whole text: it ends the streamed segment. One segment takes the
        engine's text (it joins a response's text blocks as paragraphs); segments split by
        tool calls keep their own."""
        segments, self.segments = self.segments, []
        if not segments:  # a provider that does not stream: the whole text at once
            await self.log.add(AssistantItem(text=e.text))
            return
        if self.current is not None:
            self.current = None
            await self.log.finish(segments[-1], e.text if len(segments) == 1 else None)
        elif len(segments) == 1 and segments[0].text != e.text:
            await self.log.finish(segments[0], e.text)

    # -- turns --------------------------------------------------------------------------------
    async def on_turn_started(self, e: TurnStarted) -> None:
        await self.log.show_tail()
        if e.resumed:
            await self.log.add(NoteItem(text="Resuming the unfinished turn\u2026"))
        elif e.text:
            await self.log.add(UserItem(text=e.text))

    async def on_turn_completed(self, e: TurnCompleted) -> None:
        self._end_thinking(STOPPED)
        await self._end_segment()
        self.segments = []
        if e.status == "parked":
            await self.log.add(NoteItem(text="The turn is parked on an approval.", level="warning"))
        elif e.status == "stopped":
            await self.log.add(NoteItem(text=STOPPED_NOTE, level="warning"))

    async def on_usage(self, e: UsageEvent) -> None:
        await self._end_segment()
        self.segments = []
        self.header.add_usage(e)

    async def on_prefix_break(self, e: PrefixBreak) -> None:
        self.header.add_break(e)
        await self.log.add(NoteItem(text=f"cached prefix breaks ({e.cause}): {e.detail}", level="warning"))

    async def on_system_prompt(self, e: SystemPromptChanged) -> None:
        if e.before_first_message:
            what = "This chat's system prompt is set." if e.text else "This chat has no system prompt of its own now."
            await self.log.add(NoteItem(text=what))
        else:
            what = "changed" if e.text else "removed"
            await self.log.add(
                NoteItem(
                    text=f"This chat's system prompt was {what}: the next request's cached prefix breaks.",
                    level="warning",
                )
            )

    async def on_switched(self, e: ProviderSwitched) -> None:
        """A switch of provider or model: a note in the log, and the header's model and strategy."""
        await self._end_segment()
        how = "fell back" if e.cause == "fallback" else "switched"
        why = f" ({e.reason})" if e.reason else ""
        text = f"{how} from {e.from_provider}/{e.from_model} to {e.provider}/{e.model}; strategy {e.strategy}{why}"
        await self.log.add(NoteItem(text=text, level="warning" if e.cause == "fallback" else "info"))
        self.header.show_run(provider=e.provider, model=e.model, strategy=e.strategy, reason=e.strategy_reason)
        self.roster.set_strategy(e.strategy, e.strategy_reason)

    async def on_compacted(self, e: HistoryCompacted) -> None:
        """The oldest turns were summarised (or left out): a note in the log says so and how."""
        await self._end_segment()
        await self.log.add(NoteItem(text=e.message, level="info" if e.method == "model" else "warning"))

    async def on_error(self, e: ErrorEvent) -> None:
        await self._end_segment()
        await self.log.add(NoteItem(text=f"{e.code}: {e.message}", level="error"))

    # -- tools --------------------------------------------------------------------------------
    async def on_tool_use(self, e: ModelToolUse) -> None:
        self._end_thinking()
        await self._end_segment()
        item = ToolItem(call_id=e.id, model_name=e.name, arguments=e.input)
        self.tools[e.id] = item
        await self.log.add(item)

    async def _row(self, call_id: str, name: str, via: str | None) -> ToolItem:
        item = self.tools.get(call_id)
        if item is None:  # a call the log has not seen (a resumed turn replays it)
            item = ToolItem(call_id=call_id, model_name=via or name)
            self.tools[call_id] = item
            await self.log.add(item)
        item.name = name
        item.via = via
        item.display = self.displays.get(name, "")
        return item

    async def on_tool_event(self, e: ToolEvent) -> None:
        item = await self._row(e.call_id, e.name, e.via)
        match e:
            case ToolRequested():
                item.status = PENDING
                item.arguments = e.arguments
            case ToolApprovalRequired():
                item.status = AWAITING
                item.side_effect = e.side_effect
            case ToolApproved():
                item.scope = e.scope
                if e.granted:  # this answer gave the grant: the log says what it means
                    key = first_key(self.keys, "permissions")
                    await self.log.add(NoteItem(text=granted_note(item.shown_name, key)))
            case ToolStarted():
                item.status = RUNNING
            case ToolCompleted():
                item.status = DONE
                item.result = e.result
                item.replayed = e.replayed
            case ToolFailed():
                item.status = FAILED
                item.code, item.message = e.code, e.message
            case ToolDenied():
                item.status = DENIED
                item.code, item.message = e.code, e.message
        self.log.refresh_item(item)

    async def on_tool_search(self, e: ModelToolSearch) -> None:
        if not e.references:
            return
        if not is_native_search(e.executor, e.id):
            how = TOOL_SEARCH
        else:
            how = "native tool search" + (" (run here)" if e.executor == "client" else "")
        await self.log.add(NoteItem(text=f"{how} {clip(repr(e.query), 60)}: {', '.join(e.references)}"))

    async def on_discovered(self, e: ToolDiscovered) -> None:
        await self.log.add(NoteItem(text=f"added to this turn's tools ({e.source}): {', '.join(e.names)}"))

    async def on_grant_revoked(self, e: GrantRevoked) -> None:
        from core.pipeline.grants import who

        name = self.displays.get(e.tool) or e.tool
        await self.log.add(
            NoteItem(text=f"{name} is no longer allowed for this chat (taken back by {who(e.by)}): it asks again.")
        )

    async def on_chat_titled(self, e: ChatTitled) -> None:
        self.header.set_title(e.title)

    # -- servers ------------------------------------------------------------------------------
    async def on_server_status(self, e: ServerStatus) -> None:
        self.roster.set_server(e.server, e.status, e.tools, e.message)
        if e.status == "failed":
            await self.log.add(NoteItem(text=f"MCP server {e.server} failed: {e.message}", level="warning"))
        elif e.status == "needs_sign_in":
            await self.log.add(
                NoteItem(
                    text=f"MCP server {e.server} needs you to sign in: type /mcp login {e.server}, or open "
                    "MCP servers in the palette (ctrl+p)",
                    level="warning",
                )
            )

    async def on_roster_changed(self, e: RosterChanged) -> None:
        self.roster.roster_changed(e.server)
        await self.log.add(
            NoteItem(
                text=e.message
                or f"server {e.server} changed its tools; this chat keeps its pinned plan, a new chat will pick it up",
                level="warning",
            )
        )
