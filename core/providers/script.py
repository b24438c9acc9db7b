"""The ``script`` provider: replays a file of model turns, offline and exactly.

    {"turns": [[{"type": "text", "text": "..."},
                {"type": "tool_use", "id": "call_1", "name": "tool.call",
                 "input": {"name": "schedule.update", "arguments": {...}}}],
               [{"type": "text", "text": "Done."}]]}

Each model call consumes the next turn. Which turn is next is read from the request itself
(the number of assistant messages already in it), so a chat parked and resumed in another
process picks up exactly where it stopped.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from core.errors import UsageError, first_validation_error, read_text
from core.providers.base import (
    ModelRequest,
    ProviderBase,
    ProviderError,
    ProviderEvent,
    ResponseDone,
    TextDelta,
    ToolUse,
    Usage,
)
from core.providers.profiles import SCRIPT


class _Script(BaseModel):
    model_config = ConfigDict(extra="forbid")
    turns: list[list[dict[str, Any]]]


def load_script(path: str | Path) -> list[list[dict[str, Any]]]:
    p = Path(path)
    text = read_text(p, f"script file {p}", missing=f"script file {p} does not exist")
    try:
        turns = _Script.model_validate(json.loads(text)).turns
    except json.JSONDecodeError as exc:
        raise UsageError(f"script file {p}: not valid JSON: {exc}") from exc
    except ValidationError as exc:
        raise UsageError(f"script file {p}: {first_validation_error(exc)}") from exc
    for i, turn in enumerate(turns):
        for block in turn:
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                continue
            if kind == "tool_use" and isinstance(block.get("id"), str) and isinstance(block.get("name"), str):
                continue
            raise UsageError(
                f"script file {p}: turn {i}: blocks are text or tool_use (with id and name), "
                f"not {json.dumps(block)[:80]}"
            )
    return turns


class ScriptProvider(ProviderBase):
    name = SCRIPT.name

    def __init__(self, path: str | Path, model: str = SCRIPT.default_model):
        self.path = str(path)
        self.model = model
        self.turns = load_script(path)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        index = sum(1 for m in request.messages if m.get("role") == "assistant")
        if index >= len(self.turns):
            raise ProviderError(
                "script.exhausted",
                f"the script {self.path} has {len(self.turns)} turns and the chat asked for turn {index + 1}",
            )
        content: list[dict[str, Any]] = []
        for block in self.turns[index]:
            if block["type"] == "text":
                yield TextDelta(text=block["text"])
                content.append({"type": "text", "text": block["text"]})
            else:
                tool_input = block.get("input", {})
                yield ToolUse(id=block["id"], name=block["name"], input=tool_input)
                content.append({"type": "tool_use", "id": block["id"], "name": block["name"], "input": tool_input})
        out = sum(len(b.get("text", "")) for b in content) // 4 + 1
        usage = Usage(input_tokens=len(json.dumps(request.record())) // 4, output_tokens=out)
        yield usage
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        yield ResponseDone(stop_reason=stop, content=content, usage=usage)
