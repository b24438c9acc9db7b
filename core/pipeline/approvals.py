"""The approval interface: the pipeline asks, a person (TUI or CLI) answers."""

from __future__ import annotations

from enum import Enum
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from core.questions import AnswerQueue


class Decision(str, Enum):
    ALLOW_ONCE = "allow_once"
    ALLOW_CHAT = "allow_chat"  # this tool, for the rest of this chat
    DENY = "deny"
    PARK = "park"  # nobody can answer now: keep the run parked until `deferchat resume`


class ApprovalRequest(BaseModel):
    approval_id: str
    chat_id: str
    call_id: str
    tool: str  # the deferred tool's own name
    via: str | None = None
    side_effect: str
    arguments: Any = None
    reason: str = ""
    untrusted: bool = False


@runtime_checkable
class Approver(Protocol):
    async def decide(self, request: ApprovalRequest) -> Decision: ...


class FixedApprover:
    """Answers every request the same way (``deferchat ask --approve yes|no|park``)."""

    def __init__(self, decision: Decision):
        self.decision = decision
        self.asked: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        return self.decision


class QueueApprover(AnswerQueue[ApprovalRequest, Decision]):
    """Hands each request to whoever awaits :meth:`next_request` and waits for :meth:`answer`
    (the TUI's inline approval, and tests)."""

    def __init__(self) -> None:
        super().__init__(lambda r: r.approval_id)

    async def decide(self, request: ApprovalRequest) -> Decision:
        return await self.ask(request)
