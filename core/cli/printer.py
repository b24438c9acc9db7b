"""How the headless commands show engine events: one JSON line each, or a readable transcript
(the model's text on stdout, one bracketed line per tool step on stderr; thinking is one
``[thinking...]`` note, and in JSON only its whole ``model.thinking`` blocks).

Every string of an event in the transcript (tool and server names, messages, queries, the
model's text, which may repeat what a tool said) passes :func:`core.display.safe`, so nothing
an MCP server, a web page or the model wrote can drive the terminal. ``--json`` lines are data
and stay exact (JSON escapes every C0 control character)."""

from __future__ import annotations

from typing import Any

from core.cli import output
from core.display import safe
from core.tools import EFFECT_WORDS


class EventPrinter:
    """Prints events: one JSON line each (``--json``), or a readable transcript."""

    def __init__(self, as_json: bool):
        self.as_json = as_json
        self.in_text = False
        self.thinking = False  # thinking deltas are arriving (one note says so)

    def __call__(self, event: Any) -> None:
        try:
            self._print(event)
        except OSError as exc:  # the reader left (`| head -1`) or the terminal closed: the turn goes on
            output.streams_gone(exc)

    def _print(self, event: Any) -> None:
        t = event.type
        if t == "model.thinking.delta":  # the whole block follows as model.thinking
            if not self.as_json and not self.thinking:
                self._note("[thinking...]")
            self.thinking = True
            return
        self.thinking = False
        if self.as_json:
            output.data(event.to_json())
            return
        if t == "model.text.delta":
            output.out(event.text, end="", flush=True)
            self.in_text = True
            return
        if self.in_text and t != "model.text":
            output.out()
            self.in_text = False
        line = transcript_line(event)
        if line:
            self._note(line)

    def _note(self, line: str) -> None:
        if self.in_text:
            output.out()
            self.in_text = False
        output.err(line)


def _s(value: Any) -> str:
    return safe(f"{value}")


def transcript_line(event: Any) -> str | None:
    """The bracketed stderr line for one event, or None for events the transcript leaves out."""
    t = event.type
    if t == "plan":
        return (
            f"[plan {'pinned' if event.pinned else 'new'}: {len(event.defined_tool_names)} defined, "
            f"{len(event.deferred_tool_names)} deferred, {len(event.skipped_tool_names)} skipped; "
            f"strategy {_s(event.strategy)}]"
        )
    if t == "tool.requested":
        return f"[tool {_s(event.name)}" + (f" via {_s(event.via)}" if event.via else "") + "]"
    if t == "tool.approval_required":
        what = f": {_s(event.preview.summary)}" if event.preview is not None else ""
        does = EFFECT_WORDS.get(str(event.side_effect))  # in words; the class's code is in the prompt's detail
        return (
            f"[approval required: {_s(event.name)}, it {does}{what}]"
            if does
            else (f"[approval required: {_s(event.name)} ({_s(event.side_effect)}){what}]")
        )
    if t == "tool.approved" and event.granted:
        return (
            f"[approved {_s(event.name)} for the rest of this chat: "
            f"`deferchat chats grants {_s(event.chat_id)} --revoke {_s(event.name)}` takes it back]"
        )
    if t == "tool.approved":
        return f"[approved {_s(event.name)} ({_s(event.scope)})]"
    if t in ("tool.denied", "tool.failed"):
        return f"[{t.split('.')[1]} {_s(event.name)}: {_s(event.code)}: {_s(event.message)}]"
    if t == "tool.completed":
        return f"[done {_s(event.name)}" + (" (replayed)" if event.replayed else "") + "]"
    if t == "model.tool_search" and event.references:
        return f"[tool search {_s(repr(event.query))}: {_s(', '.join(event.references))}]"
    if t == "tool.changed":
        return f"[tool changed: {_s(event.message)}]"
    if t == "tool.discovered":
        return f"[loaded {_s(', '.join(event.names))}]"
    if t == "server.status" and event.status == "failed":
        return f"[MCP server {_s(event.server)} failed: {_s(event.message)}]"
    if t == "server.status" and event.status in ("needs_approval", "needs_sign_in"):
        return f"[MCP server {_s(event.server)} {_s(event.message)}]"
    if t == "mcp.resource.attached":
        cut = ", cut" if event.truncated else ""
        return f"[attached {_s(event.uri)} from {_s(event.server)}: {event.tokens:,} tokens{cut}]"
    if t == "mcp.elicitation.answered":
        why = f" ({_s(event.reason)})" if event.reason else ""
        return f"[MCP server {_s(event.server)}'s request for input: {event.action}{why}]"
    if t == "provider.retrying":
        return f"[retrying in {event.seconds:g} s: {_s(event.reason)}]"
    if t == "error":
        return f"[error {_s(event.code)}: {_s(event.message)}]"
    if t == "provider.switched":
        why = "falling back" if event.cause == "fallback" else "switched"
        return f"[{why} to {_s(event.provider)}/{_s(event.model)}, strategy {_s(event.strategy)}]"
    if t == "history.compacted":
        return f"[{_s(event.message)}]"
    if t == "prefix.break":
        return f"[prefix break ({event.cause}): {_s(event.detail)}]"
    if t == "chat.system_prompt":
        return "[system prompt " + ("set]" if event.before_first_message else "changed: the cached prefix breaks]")
    if t == "turn.completed" and event.status == "parked":
        return f"[parked: run `deferchat resume {_s(event.chat_id)} --approve yes|no`]"
    if t == "turn.completed" and event.status == "stopped":
        return "[stopped: the partial answer is kept]"
    return None


def server_failures_to_stderr(event: Any) -> None:
    """For commands that plan without a chat (``plan``, ``search``): say which MCP server failed."""
    if getattr(event, "type", "") == "server.status" and event.status == "failed":
        output.err(f"deferchat: MCP server {_s(event.server)} failed: {_s(event.message)}")
    elif getattr(event, "type", "") == "server.status" and event.status in ("needs_approval", "needs_sign_in"):
        output.err(f"deferchat: MCP server {_s(event.server)} {_s(event.message)}")
