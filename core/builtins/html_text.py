"""Readable text from an HTML page, with the standard library's ``html.parser``.

Scripts, styles and other non-content elements are dropped; paragraphs and other blocks are
separated by a blank line, list items and table rows start a line (items with a dash, cells
separated by ``|``), headings get a ``#`` prefix, and ``<pre>`` keeps its spacing.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "head"})
# Elements that start a new line, and elements that stand apart as paragraphs.
_LINE = frozenset({"br", "dd", "dt", "li", "tr"})
_PARA = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "details",
        "div",
        "dl",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "main",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "ul",
    }
)
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
)
# Placeholders that survive the line clean-up: newlines inside <pre>, and a mark before its
# first line so that line keeps its leading spaces.
_PRE_NEWLINE = "\x01"
_PRE_START = "\x02"
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")


class _Extractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self._skip_depth = 0
        self._in_title = False
        self._pre_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
            return
        if tag in _SKIP:
            if tag != "head":  # <head> is often left open; its children are skipped one by one
                self._skip_depth += 1
            return
        if tag in _LINE:
            self.parts.append("\n")
        elif tag in _PARA:
            self.parts.append("\n\n")
        elif tag in _VOID:
            return
        if tag == "li":
            self.parts.append("- ")
        elif len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self.parts.append("#" * int(tag[1]) + " ")
        elif tag == "pre":
            self._pre_depth += 1
            self.parts.append(_PRE_START)
        elif tag in ("td", "th"):
            self.parts.append(" | ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIP:
            if tag != "head" and self._skip_depth:
                self._skip_depth -= 1
        elif tag in _PARA:
            if tag == "pre" and self._pre_depth:
                self._pre_depth -= 1
            self.parts.append("\n\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _LINE or tag in _PARA:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
        elif not self._skip_depth:
            # Inside <pre> newlines become a placeholder so the line clean-up leaves them alone.
            self.parts.append(
                data.replace("\n", _PRE_NEWLINE) if self._pre_depth else _SPACES.sub(" ", data.replace("\n", " "))
            )


def html_to_text(html: str) -> tuple[str, str]:
    """``(title, text)`` of an HTML document."""
    parser = _Extractor()
    parser.feed(html)
    parser.close()
    title = _SPACES.sub(" ", " ".join(parser.title_parts)).strip()
    lines = [line.strip() for line in "".join(parser.parts).split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return title, text.replace(_PRE_NEWLINE, "\n").replace(_PRE_START, "")
