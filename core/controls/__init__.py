"""The control tools' implementations, one small module each, all given a narrow
:class:`~core.controls.context.ControlContext`. ``tool.call`` has none: the pipeline unwraps it
before resolution, so it never runs (ADR-0123 decision 7)."""

from __future__ import annotations

from core.controls.context import ControlContext, ControlTool
from core.controls.describe import run_tool_describe
from core.controls.result import run_tool_result
from core.controls.search import run_tool_search
from core.controls.title import run_chat_title
from core.roster.controls import CHAT_TITLE, TOOL_DESCRIBE, TOOL_RESULT, TOOL_SEARCH

CONTROL_TOOLS: dict[str, ControlTool] = {
    TOOL_SEARCH: run_tool_search,
    TOOL_DESCRIBE: run_tool_describe,
    TOOL_RESULT: run_tool_result,
    CHAT_TITLE: run_chat_title,
}

__all__ = ["CONTROL_TOOLS", "ControlContext", "ControlTool"]
