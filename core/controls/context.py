"""What a control tool is given: a narrow view of its chat, nothing more."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from core.controls.search import DeferredSearch
from core.events import EventSink
from core.tools import ToolResult, ToolSpec

if TYPE_CHECKING:
    from core.store.rows import InvocationRow


class ControlStore(Protocol):
    """The two things control tools read and write in the store."""

    def invocation(self, chat_id: str, call_id: str) -> InvocationRow | None: ...

    def update_chat(self, chat_id: str, **fields: Any) -> None: ...


@dataclass
class ControlContext:
    chat_id: str
    specs: Mapping[str, ToolSpec]  # the chat's pinned tools
    search: DeferredSearch
    store: ControlStore
    emit: EventSink


class ControlTool(Protocol):
    def __call__(self, arguments: dict[str, Any], ctx: ControlContext) -> ToolResult: ...
