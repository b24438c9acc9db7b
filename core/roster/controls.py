"""The control tools: a closed set, fixed at build time (ADR-0123 decision 12).

Control tools act on the session, never on the world, add no authority and are classified
``NONE``; every policy decision about a deferred tool uses that tool's own class.

* ``tool.call``     reaches a deferred tool by name (wrapper strategy, ADR-0123 decision 7-11).
* ``tool.search``   searches the deferred tools and adds the matches to the tools array
                    (active-tools strategy, seed 004).
* ``tool.describe`` returns a pinned tool's full definition (its input schema), so a model on
                    the wrapper can fill a deferred tool's arguments from the real schema
                    before calling it instead of after a failed call.
* ``tool.result``   pages through the full stored result of an earlier call whose result was
                    cut down for the model (large MCP results are kept whole in the store).
* ``chat.title``    names the chat, so the chat list reads well without a second model call.
"""

from __future__ import annotations

from types import MappingProxyType

from core.deferral.names import ACTIVE_TOOLS, ANTHROPIC, OPENAI, WRAPPER
from core.tools import Origin, SideEffect, ToolSpec

TOOL_CALL = "tool.call"
TOOL_SEARCH = "tool.search"
TOOL_DESCRIBE = "tool.describe"
TOOL_RESULT = "tool.result"
CHAT_TITLE = "chat.title"


def _control(name: str, description: str, schema: dict) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=description,
        input_schema=schema,
        origin=Origin.CONTROL,
        side_effect=SideEffect.NONE,
        requires_approval=False,
    )


_SPECS = (
    _control(
        TOOL_CALL,
        "Call a deferred tool listed in the deferred tool index by its exact name. "
        "Pass the tool's arguments as an object that matches its parameters.",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Exact name of a tool from the deferred tool index."},
                "arguments": {"type": "object", "description": "Arguments for that tool."},
            },
            "required": ["name", "arguments"],
            "additionalProperties": False,
        },
    ),
    _control(
        TOOL_SEARCH,
        "Search the tools that are available but not loaded. Matching tools are loaded and "
        "can be called directly from your next step. Describe the capability you need.",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What the tool should do, in a few words."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 10,
                    "default": 5,
                    "description": "Maximum number of tools to load.",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    ),
    _control(
        TOOL_DESCRIBE,
        "Return the full definition of a tool you may call, including its input schema.",
        {
            "type": "object",
            "properties": {"name": {"type": "string", "description": "Exact tool name."}},
            "required": ["name"],
            "additionalProperties": False,
        },
    ),
    _control(
        TOOL_RESULT,
        "Read more of an earlier tool result that was cut short, by its call id.",
        {
            "type": "object",
            "properties": {
                "call_id": {"type": "string", "description": "The id of the earlier tool call."},
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 0,
                    "description": "Character offset to continue from.",
                },
            },
            "required": ["call_id"],
            "additionalProperties": False,
        },
    ),
    _control(
        CHAT_TITLE,
        "Give this chat a short title that says what it is about.",
        {
            "type": "object",
            "properties": {"title": {"type": "string", "maxLength": 80, "description": "At most 80 characters."}},
            "required": ["title"],
            "additionalProperties": False,
        },
    ),
)

CONTROL_TOOLS: MappingProxyType[str, ToolSpec] = MappingProxyType({s.name: s for s in _SPECS})
CONTROL_NAMES: frozenset[str] = frozenset(CONTROL_TOOLS)
# Controls an agent may opt into; tool.call and tool.search are placed by the strategy.
OPTIONAL_CONTROLS: frozenset[str] = frozenset({TOOL_DESCRIBE, TOOL_RESULT, CHAT_TITLE})

# The control tool through which each strategy reaches deferred tools (None: the provider's
# own server-side tool search does it).
STRATEGY_CONTROL: MappingProxyType[str, str | None] = MappingProxyType(
    {
        WRAPPER: TOOL_CALL,
        ACTIVE_TOOLS: TOOL_SEARCH,
        ANTHROPIC: None,
        OPENAI: None,
    }
)


def is_control(name: str) -> bool:
    return name in CONTROL_NAMES
