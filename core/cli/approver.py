"""Who answers approvals in a headless turn: ``--approve yes|no|park``, else the terminal when
there is one, else park (exit 3).

The terminal prompt shows the tool's name, the ``tool.call`` it came through, its class and its
arguments, each through :func:`core.display.safe`: a name or an argument from a server or the
model cannot move the cursor, erase the line or reorder it with bidi overrides, so the prompt
always shows the call that is really asked for."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from core.display import safe

if TYPE_CHECKING:
    from core.pipeline.approvals import ApprovalRequest, Approver, Decision

APPROVE_CHOICES = ("yes", "no", "park")


class TtyApprover:
    """Asks on the terminal when ``ask`` runs interactively without ``--approve``."""

    who = "terminal"

    async def decide(self, request: ApprovalRequest) -> Decision:
        import asyncio

        from core.cli import output
        from core.pipeline.approvals import Decision

        prompt = approval_prompt(request)
        while True:
            answer = (await asyncio.to_thread(output.ask, prompt)).strip().lower()
            choice = {"y": Decision.ALLOW_ONCE, "a": Decision.ALLOW_CHAT, "n": Decision.DENY, "p": Decision.PARK}.get(
                answer[:1]
            )
            if choice is not None:
                return choice


def approval_prompt(request: ApprovalRequest) -> str:
    """What the terminal shows for one approval, every untrusted part display-safe."""
    args = safe(json.dumps(request.arguments, ensure_ascii=False), max_len=300)
    return (
        f"\nApprove {safe(request.tool)}"
        + (f" (via {safe(request.via)})" if request.via else "")
        + f" [{safe(f'{request.side_effect}')}] {args}\n  [y] allow once  [a] allow for this chat  "
        "[n] deny  [p] park: "
    )


def approver_for(value: str | None) -> Approver:
    """The approver for an ``--approve`` value (None: the terminal if stdin is one, else park)."""
    from core.pipeline.approvals import Decision, FixedApprover

    if value is None:
        return TtyApprover() if sys.stdin.isatty() else FixedApprover(Decision.PARK)
    return FixedApprover({"yes": Decision.ALLOW_ONCE, "no": Decision.DENY, "park": Decision.PARK}[value])
