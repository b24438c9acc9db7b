"""``chat.title {title}``: the model names the chat."""

from __future__ import annotations

from typing import Any

from core import events as ev
from core.controls.context import ControlContext
from core.tools import ToolResult

MAX_TITLE = 80


def run_chat_title(arguments: dict[str, Any], ctx: ControlContext) -> ToolResult:
    title = str(arguments.get("title", "")).strip()[:MAX_TITLE]
    ctx.store.update_chat(ctx.chat_id, title=title)
    ctx.emit(ev.ChatTitled(title=title))
    return ToolResult.of_text(f"The chat is now titled {title!r}.")
