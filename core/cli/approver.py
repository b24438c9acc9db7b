"""Who answers approvals in a headless turn: ``--approve yes|no|park``, else the terminal when
there is one, else park (exit 3)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.pipeline.approvals import ApprovalRequest, Approver, Decision

APPROVE_CHOICES = ("yes", "no", "park")


class TtyApprover:
    """Asks on the terminal when ``ask`` runs interactively without ``--approve``."""

    async def decide(self, request: ApprovalRequest) -> Decision:
        import asyncio

        from core.pipeline.approvals import Decision

        args = json.dumps(request.arguments, ensure_ascii=False)
        prompt = (
            f"\nApprove {request.tool}"
            + (f" (via {request.via})" if request.via else "")
            + f" [{request.side_effect}] {args[:300]}\n  [y] allow once  [a] allow for this chat  "
            "[n] deny  [p] park: "
        )
        while True:
            answer = (await asyncio.to_thread(input, prompt)).strip().lower()
            choice = {"y": Decision.ALLOW_ONCE, "a": Decision.ALLOW_CHAT, "n": Decision.DENY, "p": Decision.PARK}.get(
                answer[:1]
            )
            if choice is not None:
                return choice


def approver_for(value: str | None) -> Approver:
    """The approver for an ``--approve`` value (None: the terminal if stdin is one, else park)."""
    from core.pipeline.approvals import Decision, FixedApprover

    if value is None:
        return TtyApprover() if sys.stdin.isatty() else FixedApprover(Decision.PARK)
    return FixedApprover({"yes": Decision.ALLOW_ONCE, "no": Decision.DENY, "park": Decision.PARK}[value])
