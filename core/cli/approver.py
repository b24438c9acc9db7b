"""Who answers approvals in a headless turn: ``--approve yes|no|park``, else the terminal when
there is one, else park (exit 3).

The terminal prompt shows what will run, from the preview the pipeline built of the canonical
values the tool receives (:mod:`core.pipeline.preview`): the tool's name, the ``tool.call`` it
came through and its class; a summary in words; what decides where the action goes (recipients,
accounts, paths, URLs, phone numbers, ids with what they name) first and whole, whatever order
the model wrote the arguments in; the changes ``before → after``; the other fields folded to a
readable length (``d`` shows them whole, with the raw canonical arguments); an MCP server's tool
with its server named as untrusted and its own claims. Every part passes
:func:`core.display.safe` (decisive values in identifier mode, so an invisible character in an
address is shown, ``\\ufe0f``): a name or an argument from a server or the model cannot move the
cursor, erase the line, reorder it with bidi overrides or hide a character, so the prompt always
shows the call that is really asked for."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from core.display import safe

if TYPE_CHECKING:
    from core.pipeline.approvals import ApprovalRequest, Approver, Decision
    from core.pipeline.preview import PreviewLine

APPROVE_CHOICES = ("yes", "no", "park")
CHOICES_LINE = "  [y] allow once  [a] allow for this chat  [n] deny  [p] park  [d] details: "
INDENT = "  "


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
            if answer[:1] == "d":
                prompt = approval_prompt(request, expanded=True)
                continue
            choice = {"y": Decision.ALLOW_ONCE, "a": Decision.ALLOW_CHAT, "n": Decision.DENY, "p": Decision.PARK}.get(
                answer[:1]
            )
            if choice is not None:
                return choice


def _field_lines(lines: list[PreviewLine]) -> list[str]:
    """Labelled lines, the labels in one column; a value of several lines goes on under it."""
    width = max((len(line.label) for line in lines if line.label), default=0) + 1
    out: list[str] = []
    for line in lines:
        if line.section == "summary":
            out.append(INDENT + line.text)
        elif line.section in ("problem", "server"):
            out.append(f"{INDENT}\u26a0 {line.text}")
        else:
            head = f"{INDENT}{(line.label + ':').ljust(width)} "
            first, *rest = line.text.split("\n")
            out.append(head + first)
            out += [" " * len(head) + more for more in rest]
            pad = " " * len(head)
            if line.note:
                out.append(f"{pad}({line.note})")
            if line.folded:
                out.append(f"{pad}[{line.folded}: d shows it whole]")
    return out


def approval_prompt(request: ApprovalRequest, *, expanded: bool = False) -> str:
    """What the terminal shows for one approval, every untrusted part display-safe; ``expanded``:
    every field whole, and the raw canonical arguments (what the tool receives) after them."""
    from core.pipeline.preview import SIDE_EFFECT_WORDS, layout, spec_preview_of

    preview = request.preview or spec_preview_of(request.tool, request.arguments)
    head = f"\nApprove {safe(request.tool)}" + (f" (via {safe(request.via)})" if request.via else "")
    meaning = SIDE_EFFECT_WORDS.get(request.side_effect)  # the class's code is in the detail (d)
    lines = [head + (f" \u2014 it {meaning}" if meaning else f" [{safe(request.side_effect)}]")]
    lines += _field_lines(layout(preview, expanded=expanded))
    if request.reason:
        lines.append(f"{INDENT}why it asks: {safe(request.reason)}")
    if expanded:
        lines.append(f"{INDENT}class: {safe(request.side_effect)}")
        raw = json.dumps(request.arguments, ensure_ascii=False, indent=2, sort_keys=True)
        lines += [f"{INDENT}the arguments the tool receives (canonical JSON):"]
        lines += [INDENT * 2 + line for line in safe(raw, multiline=True).split("\n")]
    return "\n".join(lines) + "\n" + CHOICES_LINE


def approver_for(value: str | None) -> Approver:
    """The approver for an ``--approve`` value (None: the terminal if stdin is one, else park)."""
    from core.pipeline.approvals import Decision, FixedApprover

    if value is None:
        return TtyApprover() if sys.stdin.isatty() else FixedApprover(Decision.PARK)
    return FixedApprover({"yes": Decision.ALLOW_ONCE, "no": Decision.DENY, "park": Decision.PARK}[value])
