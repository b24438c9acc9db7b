"""Who answers an MCP server's request for input in a headless run: the person at the terminal,
asked field by field on stderr (stdout stays the transcript or the JSON events), or, with no
terminal, nobody: the request is declined, saying so. Never a browser, never the model.

The server is named as the author of everything shown, and every string it wrote (its message,
field titles, descriptions, choices, a URL) passes :func:`core.display.safe`, so a request cannot
move the cursor, rewrite the question or disguise itself as deferchat's own prompt."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from core.display import safe

if TYPE_CHECKING:
    from core.mcp.elicitation import ElicitationAnswer, ElicitationRequest, ElicitField, Elicitor


def _ask(prompt: str) -> str:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")


class TtyElicitor:
    """Asks on the terminal (``ask`` and ``resume`` run interactively)."""

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        import asyncio

        return await asyncio.to_thread(self._elicit, request)

    def _elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        from core.mcp.elicitation import ElicitationAnswer

        try:
            return self._dialog(request)
        except EOFError:
            return ElicitationAnswer(action="cancel", reason="the terminal closed")

    def _dialog(self, request: ElicitationRequest) -> ElicitationAnswer:
        from core.mcp.elicitation import ElicitationAnswer

        out = [
            "",
            f"MCP server {safe(request.server)} (not deferchat; its words are its own) asks:",
            "  " + safe(request.message, multiline=True).replace("\n", "\n  "),
        ]
        if request.mode == "url":
            out.append(f"  It asks you to open: {safe(request.url or '')}")
            sys.stderr.write("\n".join(out) + "\n")
            while True:
                choice = _ask("  [o] I will open it  [d] decline  [c] cancel: ").strip().lower()[:1]
                if choice in ("o", "d", "c"):
                    return ElicitationAnswer(action={"o": "accept", "d": "decline", "c": "cancel"}[choice])
        sys.stderr.write("\n".join(out) + "\n")
        while True:
            choice = _ask("  [a] answer  [d] decline  [c] cancel: ").strip().lower()[:1]
            if choice == "d":
                return ElicitationAnswer(action="decline")
            if choice == "c":
                return ElicitationAnswer(action="cancel")
            if choice == "a":
                break
        from core.mcp.elicitation import check_answer

        while True:
            content = {f.name: self._field(f) for f in request.fields}
            try:
                return ElicitationAnswer(action="accept", content=check_answer(request.fields, content))
            except ValueError as exc:
                sys.stderr.write(f"  {safe(str(exc))}; once more:\n")

    def _field(self, field: ElicitField) -> Any:
        from core.mcp.elicitation import coerce

        head = f"  {safe(field.label)}" + ("" if field.required else " (optional)")
        if field.description:
            head += f": {safe(field.description, max_len=300)}"
        lines = [head]
        if field.kind in ("choice", "choices"):
            lines += [f"    {i}. {safe(o.label)}" for i, o in enumerate(field.options, 1)]
            if field.kind == "choices":
                lines.append("    (numbers separated by commas)")
        sys.stderr.write("\n".join(lines) + "\n")
        hint = {"boolean": " [y/n]", "integer": " [number]", "number": " [number]"}.get(field.kind, "")
        if field.format:
            hint += f" [{field.format}]"
        if field.default is not None:
            hint += f" (Enter: {safe(str(field.default))})"
        while True:
            text = _ask(f"    ?{hint} ")
            if not text.strip():
                return field.default
            try:
                return coerce(field, text)
            except ValueError as exc:
                sys.stderr.write(f"    {safe(str(exc))}\n")


def elicitor_for(interactive: bool | None = None) -> Elicitor:
    """The terminal when stdin is one (or ``interactive``), else a decline that says why."""
    from core.mcp.elicitation import DecliningElicitor

    if interactive if interactive is not None else sys.stdin.isatty():
        return TtyElicitor()
    return DecliningElicitor("no terminal to ask on (deferchat ask without a terminal declines every request)")
