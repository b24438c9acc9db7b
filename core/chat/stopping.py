"""A turn the owner stops: what is kept, and how the history stays valid for the next request.

The turn loop cancels the task that runs the turn (:meth:`core.chat.turn.TurnLoop.stop`): the
provider's stream is closed where it stood (its HTTP connection with it), a tool call in flight
is abandoned where it stood. What the model had written is kept, as an assistant message with
the thinking blocks that came whole, the text so far and the tool uses it had finished (a thinking
block cut before its signature is dropped: no API takes it back). Every tool use of the turn then gets its
result, so the next request is valid on every wire:

* a call that finished keeps its own result;
* a call that was running is settled as a killed process's would be: a write's outcome is
  unknown (``tool.outcome_unknown``; it is never run again), a read just did not finish
  (``tool.stopped``; a later turn may run it again);
* a call waiting for approval, or not started, was not run (``tool.stopped``; its pending
  approval is ``cancelled``).

Nothing here awaits: settling a stop cannot itself be interrupted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core import events as ev
from core.pipeline import codes
from core.pipeline.pipeline import PathBases, effective_side_effect, same_call
from core.pipeline.policy import Policy
from core.roster.controls import TOOL_CALL
from core.store import Store, now
from core.tools import ToolSpec

STOP_REASON = "owner"  # turn.completed's stop_reason for a stopped turn
STOPPED_ERROR = "stopped by the owner"  # the turn row's error
FINISHED = ("completed", "failed", "unknown", "denied")


@dataclass
class PartialResponse:
    """What one response had streamed when the turn was stopped."""

    texts: list[str] = field(default_factory=list)
    tool_uses: list[dict[str, Any]] = field(default_factory=list)
    thinking: list[dict[str, Any]] = field(default_factory=list)
    """The thinking blocks that came whole (``ThinkingBlock``: an Anthropic block with its
    signature, a ``reasoning_content``); thinking still streaming has no signature yet, could
    not be sent back, and is not kept."""

    @property
    def text(self) -> str:
        return "".join(self.texts)

    def content(self) -> list[dict[str, Any]]:
        """The blocks to keep: the whole thinking blocks (they come before the rest of a
        response, and a tool loop fails without them), the text so far, then the tool uses the
        model had finished writing (a half-written one never reached us: adapters yield a use
        once it is whole)."""
        text = self.text
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text.strip() else []
        return self.thinking + blocks + self.tool_uses


def _names(block: dict[str, Any]) -> tuple[str, str | None]:
    """The tool's own name and the wrapper it came through, as the pipeline would say them."""
    name = str(block.get("name") or "")
    raw = block.get("input")
    if name == TOOL_CALL and isinstance(raw, dict) and isinstance(raw.get("name"), str) and raw["name"].strip():
        return raw["name"].strip(), TOOL_CALL
    return name, None


def settle_unanswered(
    block: dict[str, Any],
    *,
    store: Store,
    chat_id: str,
    turn_id: str,
    specs: Mapping[str, ToolSpec],
    policy: Policy,
    emit: Callable[[ev.Event], None],
    paths: PathBases | None = None,
) -> dict[str, Any]:
    """The ``tool_result`` for a tool use that has none because the turn was stopped; its
    invocation row and its event say what became of it."""
    call_id = str(block.get("id") or "")
    inv = store.invocation(chat_id, call_id)
    if inv is not None and not same_call(
        inv, str(block.get("name") or ""), block.get("input"), specs=specs, policy=policy, paths=paths
    ):
        # the id is an earlier call's (another tool, other arguments): that call's row is never
        # touched and its result never given to this use, which did not run
        name, via = _names(block)
        message = f"{name} was not run: the owner stopped the turn (and its call id is an earlier call's)"
        emit(ev.ToolFailed(call_id=call_id, name=name, via=via, code=codes.STOPPED, message=message))
        return {
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": f"{codes.STOPPED}: {message}",
            "is_error": True,
        }
    if inv is not None and inv.status in FINISHED and inv.model_result is not None:
        # finished just as the stop came: its own result stands
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": inv.model_result}
        if inv.is_error:
            result["is_error"] = True
        return result
    name, via = (inv.name, inv.via) if inv is not None else _names(block)
    status = "failed"
    code = codes.STOPPED
    if inv is not None and inv.status == "running":
        spec = specs.get(inv.name)
        if spec is not None and effective_side_effect(spec, policy).is_read:
            message = f"{name} was running when the owner stopped the turn; it only reads, so it may be run again"
        else:
            status, code = "unknown", codes.OUTCOME_UNKNOWN
            message = (
                f"{name} was running when the owner stopped the turn; it changes the world, so it is not "
                "run again. Check whether it took effect before retrying."
            )
    elif inv is not None and inv.status == "awaiting_approval":
        approval = store.approval_for_call(chat_id, call_id)
        if approval is not None and approval.status == "pending":
            store.decide_approval(approval.id, "cancelled")
        message = f"{name} was not run: the owner stopped the turn before approving it"
    else:
        message = f"{name} was not run: the owner stopped the turn"
    text = f"{code}: {message}"
    fields: dict[str, Any] = {
        "status": status,
        "is_error": 1,
        "error_code": code,
        "error_message": message,
        "model_result": text,
        "finished_at": now(),
    }
    if inv is not None:
        store.update_invocation(inv.id, **fields)
    else:
        spec = specs.get(name)
        arguments = block.get("input")
        if via == TOOL_CALL and isinstance(arguments, dict):
            arguments = arguments.get("arguments")
        store.create_invocation(
            chat_id=chat_id,
            turn_id=turn_id,
            call_id=call_id,
            name=name,
            via=via,
            arguments=arguments,
            side_effect=spec.side_effect.value if spec else None,
            pin=spec.content_hash() if spec else None,
            **fields,
        )
    emit(ev.ToolFailed(call_id=call_id, name=name, via=via, code=code, message=message))
    return {"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": True}
