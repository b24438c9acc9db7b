"""The one place engine events become widgets.

The session's subscriber posts every event to the app as a message; the app hands each to
:meth:`EventRouter.handle`, in order. ``model.*`` events speak as the model wrote (a
deferred call first shows as ``tool.call``); ``tool.*`` events carry the deferred tool's own
name under the same call id, so the row is renamed, with "via tool.call", as soon as the
pipeline speaks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tui.state import (
    AWAITING, DENIED, DONE, FAILED, PENDING, RUNNING, AssistantItem, NoteItem, ToolItem, UserItem, clip,
    is_native_search, marks_for_event,
)

if TYPE_CHECKING:
    from tui.widgets.chat_log import ChatLog
    from tui.widgets.header import ChatHeader
    from tui.widgets.roster import RosterPanel


class EventRouter:
    def __init__(self, log: ChatLog, roster: RosterPanel, header: ChatHeader) -> None:
        self.log = log
        self.roster = roster
        self.header = header
        self.displays: dict[str, str] = {}  # tool name -> the name a row shows
        self.reset()

    def reset(self, displays: dict[str, str] | None = None) -> None:
        self.current: AssistantItem | None = None  # the text segment being streamed
        self.segments: list[AssistantItem] = []  # this response's streamed segments
        self.tools: dict[str, ToolItem] = {}
        if displays is not None:
            self.displays = displays

    def adopt(self, items: list[Any]) -> None:
        """Tool rows of a reopened chat, so a resumed call updates its row."""
        self.tools = {i.call_id: i for i in items if isinstance(i, ToolItem)}

    async def handle(self, event: Any) -> None:
        kind = event.type
        handler = _HANDLERS.get(kind)
        for name, mark in marks_for_event(kind, event):
            self.roster.mark(name, mark)
        if handler is not None:
            await handler(self, event)

    # -- text ---------------------------------------------------------------------------------
    async def _end_segment(self) -> None:
        if self.current is not None:
            item, self.current = self.current, None
            await self.log.finish(item)

    async def on_delta(self, e: Any) -> None:
        if self.current is None:
            self.current = AssistantItem(streaming=True)
            self.segments.append(self.current)
            await self.log.add(self.current)
        await self.log.stream(self.current, e.text)

    async def on_text(self, e: Any) -> None:
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
    async def on_turn_started(self, e: Any) -> None:
        await self.log.show_tail()
        if e.resumed:
            await self.log.add(NoteItem(text="Resuming the unfinished turn\u2026"))
        elif e.text:
            await self.log.add(UserItem(text=e.text))

    async def on_turn_completed(self, e: Any) -> None:
        await self._end_segment()
        self.segments = []
        if e.status == "parked":
            await self.log.add(NoteItem(text="The turn is parked on an approval.", level="warning"))

    async def on_usage(self, e: Any) -> None:
        await self._end_segment()
        self.segments = []
        self.header.set_usage(e.input_tokens, e.output_tokens, e.cache_read_input_tokens,
                              e.cache_creation_input_tokens)

    async def on_error(self, e: Any) -> None:
        await self._end_segment()
        await self.log.add(NoteItem(text=f"{e.code}: {e.message}", level="error"))

    # -- tools --------------------------------------------------------------------------------
    async def on_tool_use(self, e: Any) -> None:
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

    async def on_tool_event(self, e: Any) -> None:
        item = await self._row(e.call_id, e.name, e.via)
        kind = e.type
        if kind == "tool.requested":
            item.status = PENDING
            item.arguments = e.arguments
        elif kind == "tool.approval_required":
            item.status = AWAITING
            item.side_effect = e.side_effect
        elif kind == "tool.approved":
            item.scope = e.scope
        elif kind == "tool.started":
            item.status = RUNNING
        elif kind == "tool.completed":
            item.status = DONE
            item.result = e.result
            item.replayed = e.replayed
        elif kind in ("tool.failed", "tool.denied"):
            item.status = FAILED if kind == "tool.failed" else DENIED
            item.code = e.code
            item.message = e.message
        self.log.refresh_item(item)

    async def on_tool_search(self, e: Any) -> None:
        if not e.references:
            return
        if not is_native_search(e.executor, e.id):
            how = "tool.search"
        else:
            how = "native tool search" + (" (run here)" if e.executor == "client" else "")
        await self.log.add(NoteItem(text=f"{how} {clip(repr(e.query), 60)}: {', '.join(e.references)}"))

    async def on_discovered(self, e: Any) -> None:
        await self.log.add(NoteItem(text=f"added to this turn's tools ({e.source}): {', '.join(e.names)}"))

    async def on_chat_titled(self, e: Any) -> None:
        self.header.set_title(e.title)

    # -- servers ------------------------------------------------------------------------------
    async def on_server_status(self, e: Any) -> None:
        self.roster.set_server(e.server, e.status, e.tools, e.message)
        if e.status == "failed":
            await self.log.add(NoteItem(text=f"MCP server {e.server} failed: {e.message}", level="warning"))

    async def on_roster_changed(self, e: Any) -> None:
        self.roster.roster_changed(e.server)
        await self.log.add(NoteItem(text=e.message or f"server {e.server} changed its tools; this chat keeps its "
                                    "pinned plan, a new chat will pick it up", level="warning"))


_HANDLERS = {
    "model.text.delta": EventRouter.on_delta,
    "model.text": EventRouter.on_text,
    "model.tool_use": EventRouter.on_tool_use,
    "model.tool_search": EventRouter.on_tool_search,
    "tool.discovered": EventRouter.on_discovered,
    "tool.requested": EventRouter.on_tool_event,
    "tool.approval_required": EventRouter.on_tool_event,
    "tool.approved": EventRouter.on_tool_event,
    "tool.started": EventRouter.on_tool_event,
    "tool.completed": EventRouter.on_tool_event,
    "tool.failed": EventRouter.on_tool_event,
    "tool.denied": EventRouter.on_tool_event,
    "turn.started": EventRouter.on_turn_started,
    "turn.completed": EventRouter.on_turn_completed,
    "usage": EventRouter.on_usage,
    "error": EventRouter.on_error,
    "server.status": EventRouter.on_server_status,
    "roster.changed": EventRouter.on_roster_changed,
    "chat.titled": EventRouter.on_chat_titled,
}
