"""What an MCP server offers besides tools: resources (and resource templates) to attach to a
message, and prompts to start one with.

Each server's lists are read when first asked for (:meth:`Offers.resources`, :meth:`Offers.prompts`),
kept, and read again when the server says they changed (``notifications/resources/list_changed``,
``notifications/prompts/list_changed``; on a 2026-era connection through its ``subscriptions/listen``
stream). Everything here is the server's: names, descriptions and contents are untrusted, shown
through :func:`core.display.safe`, and a resource's content reaches the model only inside the
server's envelope (:func:`attachment_block`, :func:`core.context.envelope.fence`), cut as a tool
result is cut (:data:`core.pipeline.pipeline.MAX_MODEL_RESULT_CHARS`).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

MAX_PAGES = 100  # pages of one listing read before it is cut short
MAX_ITEMS = 2_000  # resources, templates or prompts kept of one server
PROMPT_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # a prompt usable as /server:prompt


class ResourceInfo(BaseModel):
    """One listed resource or resource template of a server (the server's words)."""

    server: str
    uri: str = Field(description="the resource's URI, or the template's uriTemplate")
    name: str = ""
    title: str = ""
    description: str = ""
    mime_type: str | None = None
    size: int | None = None
    template: bool = False

    @property
    def label(self) -> str:
        return self.title or self.name or self.uri

    def variables(self) -> list[str]:
        """A template's variables, in order (``{name}``, ``{+path}``, ``{?a,b}`` ...)."""
        found: list[str] = []
        for expr in re.findall(r"\{([^}]*)\}", self.uri):
            for var in expr.lstrip("+#./;?&").split(","):
                var = var.split(":")[0].rstrip("*")
                if var and var not in found:
                    found.append(var)
        return found


class PromptArgument(BaseModel):
    name: str
    description: str = ""
    required: bool = False


class PromptInfo(BaseModel):
    """One listed prompt of a server."""

    server: str
    name: str
    title: str = ""
    description: str = ""
    arguments: list[PromptArgument] = Field(default_factory=list)

    @property
    def command(self) -> str:
        """Its slash command: ``/server:prompt``."""
        return f"/{self.server}:{self.name}"


class Attachment(BaseModel):
    """A resource read to go with a message: its text as the model gets it (cut when long)."""

    server: str
    uri: str
    name: str = ""
    mime_type: str | None = None
    text: str = Field("", description="what the model reads (cut to the limit), the server's untrusted text")
    chars: int = Field(0, description="the whole text's length in characters (or a binary's size in bytes)")
    truncated: bool = False
    binary: bool = False


class PromptText(BaseModel):
    """What a prompt returned, ready to become the person's message: its text, and the resources it
    embedded (attached to the message, inside the server's envelope)."""

    server: str
    name: str
    text: str
    attachments: list[Attachment] = Field(default_factory=list)


def _clip(value: Any, limit: int = 2_000) -> str:
    return value[:limit] if isinstance(value, str) else ""


def resource_info(server: str, item: Any, *, template: bool) -> ResourceInfo:
    return ResourceInfo(
        server=server,
        uri=_clip(item.uri_template if template else item.uri, 2_000),
        name=_clip(item.name, 200),
        title=_clip(getattr(item, "title", None), 200),
        description=_clip(item.description),
        mime_type=_clip(item.mime_type, 200) or None,
        size=getattr(item, "size", None) if not template else None,
        template=template,
    )


def prompt_info(server: str, item: Any) -> PromptInfo | None:
    """A listed prompt, or None when its name cannot be a slash command."""
    if not isinstance(item.name, str) or not PROMPT_NAME.fullmatch(item.name):
        return None
    args = [
        PromptArgument(name=_clip(a.name, 64), description=_clip(a.description), required=bool(a.required))
        for a in (item.arguments or [])
        if isinstance(a.name, str) and a.name
    ]
    return PromptInfo(
        server=server,
        name=item.name,
        title=_clip(getattr(item, "title", None), 200),
        description=_clip(item.description),
        arguments=args,
    )


async def list_all(fetch: Any, attr: str) -> tuple[list[Any], bool]:
    """Every page of a listing (``fetch(cursor=...)``), bounded; whether it was cut short."""
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await fetch(cursor=cursor)
        items += list(getattr(page, attr) or [])
        if len(items) >= MAX_ITEMS:
            return items[:MAX_ITEMS], True
        cursor = page.next_cursor
        if not cursor:
            return items, False
    return items, True


def expand_template(template: str, values: Mapping[str, str]) -> str:
    """A resource template with its variables filled in (RFC 6570 simple and reserved expansion,
    path, query and fragment forms); each value is percent-encoded as its form requires."""
    from urllib.parse import quote

    def sub(match: re.Match[str]) -> str:
        expr = match.group(1)
        op = expr[0] if expr and expr[0] in "+#./;?&" else ""
        names = [n.split(":")[0].rstrip("*") for n in (expr[1:] if op else expr).split(",")]
        safe = ":/?#[]@!$&'()*+,;=" if op in ("+", "#") else ""
        parts = [(n, quote(str(values[n]), safe=safe)) for n in names if n in values and values[n] != ""]
        if not parts:
            return ""
        if op in ("?", "&"):
            return op + "&".join(f"{n}={v}" for n, v in parts)
        if op == ";":
            return "".join(f";{n}={v}" for n, v in parts)
        joiner = {"": ",", "+": ",", "#": ",", ".": ".", "/": "/"}[op]
        lead = {"": "", "+": "", "#": "#", ".": ".", "/": "/"}[op]
        return lead + joiner.join(v for _, v in parts)

    return re.sub(r"\{([^}]*)\}", sub, template)


def attachment_from(server: str, uri: str, name: str, result: Any, limit: int) -> Attachment:
    """A ``resources/read`` answer as an attachment: its text contents joined and cut to ``limit``
    characters; binary contents are described, not sent."""
    texts: list[str] = []
    size = 0
    binary = False
    mime: str | None = None
    for item in result.contents:
        mime = mime or getattr(item, "mime_type", None)
        if hasattr(item, "text"):
            texts.append(item.text)
        else:
            binary = True
            try:
                raw = len(base64.b64decode(item.blob, validate=False))
            except ValueError:
                raw = len(item.blob)
            size += raw
            texts.append(f"[binary content, {raw:,} bytes, {getattr(item, 'mime_type', None) or 'unknown type'}]")
    whole = "\n".join(texts)
    cut = len(whole) > limit
    text = whole[:limit] + f"\n[resource cut at {limit:,} of {len(whole):,} characters]" if cut else whole
    return Attachment(
        server=server,
        uri=uri,
        name=name,
        mime_type=mime,
        text=text,
        chars=size if binary and len(texts) == 1 else len(whole),
        truncated=cut,
        binary=binary and len(texts) == 1,
    )


def attachment_block(att: Attachment) -> dict[str, Any]:
    """The content block a message carries for an attachment: deferchat's own header, then the
    server's text inside the server's envelope."""
    from core.context.envelope import fence

    head = f"Attached resource {att.uri} from MCP server {att.server}"
    if att.truncated:
        head += f" (cut: {att.chars:,} characters in all)"
    return {"type": "text", "text": f"{head}:\n{fence(att.text, f'mcp.{att.server}')}"}


def prompt_text(server: str, name: str, result: Any, limit: int) -> PromptText:
    """A ``prompts/get`` answer as the person's message: its messages' text in order (a message
    of the assistant's marked so), embedded resources as attachments, anything else named."""
    parts: list[str] = []
    attachments: list[Attachment] = []
    for message in result.messages:
        content = message.content
        kind = getattr(content, "type", "")
        if kind == "text":
            text = content.text
        elif kind == "resource":
            res = content.resource
            fake = type("R", (), {"contents": [res]})()
            attachments.append(attachment_from(server, res.uri, "", fake, limit))
            continue
        elif kind == "resource_link":
            text = f"(resource {content.uri})"
        else:
            text = f"({kind or 'content'} left out)"
        parts.append(text if message.role == "user" else f"(assistant) {text}")
    return PromptText(server=server, name=name, text="\n\n".join(parts), attachments=attachments)


ListKind = Literal["resources", "prompts"]


def prompt_fields(prompt: PromptInfo) -> list[Any]:
    """A prompt's arguments as a form's fields (every prompt argument is a string)."""
    from core.mcp.elicitation import ElicitField

    return [
        ElicitField(name=a.name, kind="string", title=a.name, description=a.description, required=a.required)
        for a in prompt.arguments
    ]


def template_fields(resource: ResourceInfo) -> list[Any]:
    """A resource template's variables as a form's fields, all required."""
    from core.mcp.elicitation import ElicitField

    return [ElicitField(name=v, kind="string", title=v, required=True) for v in resource.variables()]


def matching(resources: list[ResourceInfo], query: str) -> list[ResourceInfo]:
    """The resources whose server, address, name, title or description hold every word of
    ``query`` (case folded), those whose name or address starts with it first: what ``@``
    completion and the picker offer."""
    words = query.casefold().split()

    def text(r: ResourceInfo) -> str:
        return " ".join((r.server, r.uri, r.name, r.title, r.description)).casefold()

    found = [r for r in resources if all(w in text(r) for w in words)]
    head = query.casefold().strip()
    return sorted(
        found, key=lambda r: (not (r.name.casefold().startswith(head) or r.uri.casefold().startswith(head)), r.server)
    )


# -- @ mentions: a resource named in the message box ---------------------------------------------
_OPENERS = "([{\"'"  # what may stand before a mention's @: "(@notes" is one, "bob@example.com" is not
_CLOSERS = ".,;:!?)]}\"'"  # what may follow a mention as the sentence goes on: "see @desk:notes://a."


class Mention(BaseModel):
    """The ``@word`` the message box's cursor is in: where it starts and ends in the text (the
    ``@`` at ``start``), and what is typed of it before the cursor (after the ``@``)."""

    start: int
    end: int
    query: str

    def span(self, text: str) -> str:
        return text[self.start : self.end]


def _mention_start(text: str, at: int) -> bool:
    """``text[at]`` is an ``@`` that starts a mention: at the start, after a space or an opening
    bracket or quote (never inside a word, as in an email address)."""
    if text[at] != "@":
        return False
    if at == 0 or text[at - 1].isspace():
        return True
    return text[at - 1] in _OPENERS and (at == 1 or text[at - 2].isspace())


def mention_at(text: str, cursor: int) -> Mention | None:
    """The mention the cursor (an offset into ``text``) is in or at the end of, or None."""
    if not 0 <= cursor <= len(text):
        return None
    start = cursor
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    at = start + 1 if start < len(text) and text[start] in _OPENERS else start
    if at >= cursor or not _mention_start(text, at):
        return None
    end = cursor
    while end < len(text) and not text[end].isspace():
        end += 1
    while end > cursor and text[end - 1] in ")]}\"'":  # "(@wel)": the bracket stays the sentence's
        end -= 1
    return Mention(start=at, end=end, query=text[at + 1 : cursor])


def mention(resource: ResourceInfo, uri: str | None = None) -> str:
    """How a message names a resource: ``@server:uri`` (``uri``: a template's, filled in)."""
    return f"@{resource.server}:{uri or resource.uri}"


def mentions(text: str) -> set[str]:
    """Every ``@word`` of ``text`` that stands as a mention, as written and without the
    punctuation a sentence puts after it (an email address's ``@`` is none)."""
    found: set[str] = set()
    for match in re.finditer(r"@\S*", text):
        if not _mention_start(text, match.start()):
            continue
        word = match.group()
        found.add(word)
        found.add(word.rstrip(_CLOSERS))
    return found


def mention_matching(resources: list[ResourceInfo], query: str) -> list[ResourceInfo]:
    """What ``@query`` offers: ``server:rest`` narrows to that server's resources matching the
    rest (``@desk:notes://welcome`` names one), anything else as :func:`matching` reads it."""
    server, colon, rest = query.partition(":")
    if colon and any(r.server == server for r in resources):
        return matching([r for r in resources if r.server == server], rest)
    return matching(resources, query)
