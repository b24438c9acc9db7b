"""A preview's lines as the TUI shows them (the approval bar and its detail view): the parts
:func:`core.pipeline.preview.layout` made display-safe, with styles."""

from __future__ import annotations

from textual.content import Content

from core.pipeline.preview import PreviewLine

STYLES = {"summary": "bold", "problem": "bold", "label": "bold", "note": "dim", "folded": "dim italic"}


def line_content(line: PreviewLine) -> Content:
    """One line of the preview (its parts already display-safe) with the bar's styles."""
    if line.section in ("summary", "problem", "server"):
        prefix = "\u26a0 " if line.section == "problem" else ""
        return Content.assemble((prefix + line.text, STYLES.get(line.section, "")))
    parts: list[str | tuple[str, str]] = [(f"{line.label}: ", STYLES["label"])]
    if line.folded:  # before the value: a folded line is cut at the bar's edge
        parts.append((f"[{line.folded}] ", STYLES["folded"]))
    parts.append(line.text)
    if line.note:
        parts.append((f" \u2014 {line.note}", STYLES["note"]))
    return Content.assemble(*parts)


def one_line(line: PreviewLine) -> PreviewLine:
    """A detail folded to one line: its lines joined with ``↵``, its size said when it is long."""
    text = line.text
    lines = text.count("\n") + 1
    joined = " \u21b5 ".join(part for part in text.split("\n"))
    size = (
        f"{len(text):,} characters" + (f", {lines:,} lines" if lines > 1 else "") if len(text) > 60 or lines > 1 else ""
    )
    return line.model_copy(update={"text": joined, "folded": f"{size}, e shows it" if size else ""})
