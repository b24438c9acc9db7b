"""``browser.navigate``, ``browser.observe`` and ``browser.act``: a website one page at a time,
for chats bound to a website profile (ADR-0130 pins the three; see :mod:`core.roster.loader`).

No scripted browser: a page is what an HTTP request returns, read with web.fetch's own code
(:func:`core.builtins.web.read_page`, so every request and every redirect hop goes through the
private-address guard of :mod:`core.net.guard`, with the same ``[tools]`` settings:
``allow_private_hosts``, ``allow_private_network``, ``http_timeout``, ``fetch_max_bytes``,
``http_transport``, ``resolver``).

* ``browser.navigate`` fetches a URL and keeps the page as the chat's *current page*.
* ``browser.observe`` returns the current page: its readable text, its links and its forms,
  each numbered.
* ``browser.act`` follows a link of the current page (a GET) or submits one of its forms (a GET
  or a url-encoded POST, with the values the caller gives), and the answer becomes the
  current page.

The current page is kept in the built-ins' database, one row per chat (table
``browser_pages``, made by the built-ins' migration ``0004_browser_pages``, see
:mod:`core.builtins.data`), so a turn parked on an approval and resumed in another process
still acts on it. A page is untrusted whoever configured the tool: every result that
carries its words (title, text, link texts, field values) has the page's ``envelope_source``
(``web.<host>``), so the model reads it inside an envelope.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urljoin, urlsplit

from pydantic import Field

from core.builtins import ToolContext
from core.builtins.shared import Args, Text, ToolError, tool
from core.builtins.web import Page, not_text, page_source, read_page, readable, refusal, web_url
from core.net.guard import PrivateAddress
from core.pipeline.preview import ActionPreview, decisive, detail
from core.tools import ToolResult

if TYPE_CHECKING:
    import httpx

TABLE = "browser_pages"
MAX_LINKS = 100  # listed by observe; the rest are counted
MAX_FORMS = 20
_SPACES = re.compile(r"\s+")
# Inputs that hold no value of their own: buttons are pressed, not filled (the form's first
# submit button goes with it, as a browser's implicit submission sends it).
_BUTTONS = frozenset({"submit", "button", "reset", "image"})


class NavigateArgs(Args):
    url: Text = Field(description="Absolute http(s) URL of the page to open.")


class ObserveArgs(Args):
    max_chars: int = Field(8000, ge=100, le=50000, description="Maximum characters of the page's text to return.")


class ActArgs(Args):
    link: int | None = Field(None, ge=1, description="Number of a link of the current page to follow.")
    form: int | None = Field(None, ge=1, description="Number of a form of the current page to submit.")
    fields: dict[str, str] | None = Field(
        None,
        description="Values for the form's fields, by name; fields left out keep the page's values, and an "
        "empty value unchecks a checkbox.",
    )


# --- a page's links and forms -------------------------------------------------------------------------


@dataclass
class FormField:
    name: str
    type: str
    value: str | None  # None: not sent (an unchecked box, a radio group with nothing chosen)
    options: list[str] = field(default_factory=list)


@dataclass
class Form:
    action: str
    method: str
    enctype: str
    fields: list[FormField] = field(default_factory=list)
    submit: tuple[str, str] | None = None  # the first named submit button: (name, value)


class _Structure(HTMLParser):
    """The links and forms of an HTML page (the text comes from :mod:`core.builtins.html_text`)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.base: str | None = None
        self.links: list[tuple[str, str]] = []  # (text, href as written)
        self.forms: list[Form] = []
        self._link: tuple[str, list[str]] | None = None
        self._form: Form | None = None
        self._textarea: tuple[str, list[str]] | None = None
        self._select: FormField | None = None
        self._option: tuple[str | None, bool, list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "base" and self.base is None and a.get("href"):
            self.base = a["href"]
        elif tag == "a" and "href" in a:
            self._link = (a["href"], [a.get("aria-label", "") or a.get("title", "")])
        elif tag == "form":
            self._form = Form(
                action=a.get("action", ""),
                method=(a.get("method") or "get").lower(),
                enctype=(a.get("enctype") or "application/x-www-form-urlencoded").lower(),
            )
            self.forms.append(self._form)
        elif self._form is not None:
            self._form_tag(tag, a)

    def _form_tag(self, tag: str, a: dict[str, str]) -> None:
        assert self._form is not None
        name = a.get("name", "")
        if tag == "input":
            kind = (a.get("type") or "text").lower()
            if kind in _BUTTONS:
                if kind in ("submit", "image") and name and self._form.submit is None:
                    self._form.submit = (name, a.get("value", ""))
            elif name and kind == "radio":
                group = next((f for f in self._form.fields if f.name == name and f.type == "radio"), None)
                if group is None:
                    group = FormField(name, "radio", None)
                    self._form.fields.append(group)
                group.options.append(a.get("value", "on"))
                if "checked" in a:
                    group.value = a.get("value", "on")
            elif name:
                default = "on" if kind == "checkbox" else ""
                checked = "checked" in a or kind != "checkbox"
                self._form.fields.append(FormField(name, kind, a.get("value", default) if checked else None))
        elif tag == "button":
            if (a.get("type") or "submit").lower() == "submit" and name and self._form.submit is None:
                self._form.submit = (name, a.get("value", ""))
        elif tag == "textarea" and name:
            self._textarea = (name, [])
        elif tag == "select" and name:
            self._select = FormField(name, "select", None)
            self._form.fields.append(self._select)
        elif tag == "option" and self._select is not None:
            self._option = (a.get("value"), "selected" in a, [])

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._link is not None:
            href, words = self._link
            self.links.append((_SPACES.sub(" ", " ".join(words[1:]) or words[0]).strip(), href))
            self._link = None
        elif tag == "form":
            self._form = None
        elif tag == "textarea" and self._textarea is not None and self._form is not None:
            name, words = self._textarea
            self._form.fields.append(FormField(name, "textarea", "".join(words)))
            self._textarea = None
        elif tag == "option":
            self._end_option()
        elif tag == "select":
            self._end_option()
            if self._select is not None and self._select.value is None and self._select.options:
                self._select.value = self._select.options[0]  # a browser sends the first option
            self._select = None

    def _end_option(self) -> None:
        if self._option is None or self._select is None:
            return
        value, selected, words = self._option
        chosen = value if value is not None else _SPACES.sub(" ", "".join(words)).strip()
        self._select.options.append(chosen)
        if selected and self._select.value is None:
            self._select.value = chosen
        self._option = None

    def handle_data(self, data: str) -> None:
        if self._link is not None:
            self._link[1].append(data)
        if self._textarea is not None:
            self._textarea[1].append(data)
        if self._option is not None:
            self._option[2].append(data)


def _clip(text: str, width: int = 120) -> str:
    return text if len(text) <= width else text[: width - 1] + "\u2026"


def structure(html: str, url: str) -> tuple[list[dict[str, str]], list[Form]]:
    """The page's http(s) links (text and absolute URL, each once) and its forms (absolute actions)."""
    parser = _Structure()
    parser.feed(html)
    parser.close()
    base = urljoin(url, parser.base) if parser.base else url
    links: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for text, href in parser.links:
        target = urljoin(base, href.strip())
        if urlsplit(target).scheme not in ("http", "https") or (text, target) in seen:
            continue
        seen.add((text, target))
        links.append({"text": _clip(text) or "(no text)", "url": target})
    for form in parser.forms:
        form.action = urljoin(base, form.action.strip()) if form.action.strip() else url
    return links, parser.forms


# --- the chat's current page -------------------------------------------------------------------------


@dataclass
class CurrentPage:
    url: str
    status: int
    reason_phrase: str
    content_type: str
    title: str | None
    text: str
    links: list[dict[str, str]]
    forms: list[Form]
    cut_bytes: bool

    @property
    def source(self) -> str:
        import httpx

        return page_source(httpx.URL(self.url))  # web.fetch's source for the same page


def _save(ctx: ToolContext, page: CurrentPage) -> None:
    row = asdict(page)
    row.update(
        chat_id=ctx.chat_id,
        links=json.dumps(page.links, ensure_ascii=False),
        forms=json.dumps([asdict(f) for f in page.forms], ensure_ascii=False),
        cut_bytes=int(page.cut_bytes),
        call_id=ctx.call_id,
        at=time.time(),
        demo=0,  # written by a tool, not by the demo database's seed
    )
    ctx.db[TABLE].upsert(row, pk="chat_id")


def _load(ctx: ToolContext) -> CurrentPage:
    rows = list(ctx.db[TABLE].rows_where("chat_id = ?", [ctx.chat_id]))
    if not rows:
        raise ToolError("This chat has no current page yet: open one with browser.navigate first.")
    row = rows[0]
    forms = [
        Form(
            action=f["action"],
            method=f["method"],
            enctype=f["enctype"],
            fields=[FormField(**x) for x in f["fields"]],
            submit=(f["submit"][0], f["submit"][1]) if f["submit"] else None,
        )
        for f in json.loads(row["forms"])
    ]
    return CurrentPage(
        url=row["url"],
        status=row["status"],
        reason_phrase=row["reason_phrase"],
        content_type=row["content_type"],
        title=row["title"],
        text=row["text"],
        links=json.loads(row["links"]),
        forms=forms,
        cut_bytes=bool(row["cut_bytes"]),
    )


async def _open(
    ctx: ToolContext, tool_name: str, method: str, url: httpx.URL, *, content: bytes | None = None
) -> ToolResult:
    """Request a page; a readable one becomes the chat's current page, and the answer says what it is."""
    headers = {"Content-Type": "application/x-www-form-urlencoded"} if content is not None else None
    try:
        fetched: Page = await read_page(ctx, method, url, f"Opening {url}", content=content, headers=headers)
    except PrivateAddress as exc:
        return refusal(exc, f"to open {url}")
    read = readable(fetched)
    if read is None:
        return not_text(fetched, tool_name)
    title, text = read
    links, forms = structure(fetched.text, str(fetched.url)) if fetched.is_html else ([], [])
    page = CurrentPage(
        url=str(fetched.url),
        status=fetched.status,
        reason_phrase=fetched.reason_phrase,
        content_type=fetched.content_type,
        title=title or None,
        text=text,
        links=links,
        forms=forms,
        cut_bytes=fetched.cut_bytes,
    )
    _save(ctx, page)
    status = f"{page.status} {page.reason_phrase}" + (" (an error page)" if page.status >= 400 else "")
    lines = [f"Opened {page.url} ({method}).", f"Status: {status}", f"Content-Type: {page.content_type or 'unknown'}"]
    if page.title:
        lines.append(f"Title: {page.title}")
    lines.append(
        f"{len(page.text)} characters of text, {len(page.links)} links, {len(page.forms)} forms: "
        "browser.observe reads them, browser.act follows a link or submits a form."
    )
    return ToolResult(
        content=[{"type": "text", "text": "\n".join(lines)}],
        structured={**_summary(page), "method": method},
        envelope_source=page.source,
    )


def _summary(page: CurrentPage) -> dict[str, Any]:
    return {
        "url": page.url,
        "status": page.status,
        "content_type": page.content_type,
        "title": page.title,
        "characters": len(page.text),
        "links": len(page.links),
        "forms": len(page.forms),
    }


def _form_lines(n: int, form: Form) -> list[str]:
    lines = [f"[{n}] {form.method.upper()} {form.action}" + ("" if _urlencoded(form) else f" ({form.enctype})")]
    for f in form.fields:
        value = "(not sent)" if f.value is None else json.dumps(_clip(f.value, 80), ensure_ascii=False)
        options = f" options {', '.join(json.dumps(o, ensure_ascii=False) for o in f.options)}" if f.options else ""
        lines.append(f"    {f.name} ({f.type}) = {value}{options}")
    if form.submit:
        lines.append(f"    submits with {form.submit[0]}={json.dumps(form.submit[1], ensure_ascii=False)}")
    return lines


def _urlencoded(form: Form) -> bool:
    return form.enctype == "application/x-www-form-urlencoded"


# --- the tools -----------------------------------------------------------------------------------------


@tool(
    "browser.navigate",
    NavigateArgs,
    "Open a web page by its URL and keep it as this chat's current page; browser.observe then reads its text, "
    "links and forms.",
)
async def browser_navigate(args: NavigateArgs, ctx: ToolContext) -> ToolResult:
    return await _open(ctx, "browser.navigate", "GET", web_url(args.url))


@tool(
    "browser.observe",
    ObserveArgs,
    "Read this chat's current page: its readable text, cut to a maximum length, and its numbered links and forms "
    "(with each field's name, type and value).",
)
async def browser_observe(args: ObserveArgs, ctx: ToolContext) -> ToolResult:
    page = _load(ctx)
    text = page.text[: args.max_chars]
    lines = [f"URL: {page.url}", f"Status: {page.status} {page.reason_phrase}"]
    if page.title:
        lines.append(f"Title: {page.title}")
    if len(page.text) > args.max_chars:
        lines.append(f"[Showing the first {args.max_chars} of {len(page.text)} characters; the rest was cut.]")
    if page.cut_bytes:
        lines.append("[The download stopped early; the page is longer.]")
    lines += ["", text, "", f"Links ({len(page.links)}):"]
    lines += [f"[{i}] {link['text']} -> {link['url']}" for i, link in enumerate(page.links[:MAX_LINKS], 1)]
    if len(page.links) > MAX_LINKS:
        lines.append(f"[{len(page.links) - MAX_LINKS} more links not listed]")
    lines.append(f"Forms ({len(page.forms)}):")
    for i, form in enumerate(page.forms[:MAX_FORMS], 1):
        lines += _form_lines(i, form)
    return ToolResult(
        content=[{"type": "text", "text": "\n".join(lines)}],
        structured={
            **_summary(page),
            "links": page.links[:MAX_LINKS],
            "forms": [asdict(f) for f in page.forms[:MAX_FORMS]],
        },
        envelope_source=page.source,
    )


def _act_request(args: ActArgs, page: CurrentPage) -> tuple[str, httpx.URL, list[tuple[str, str]]]:
    """The request a browser.act call sends from ``page``: its method, its URL (a GET form's
    values in its query) and a form's values."""
    if (args.link is None) == (args.form is None):
        raise ToolError("Give either link (a link's number) or form (a form's number), as browser.observe lists them.")
    if args.link is not None:
        if args.fields:
            raise ToolError("fields go with a form; a link is followed as it is.")
        if args.link > len(page.links):
            raise ToolError(f"The current page has {len(page.links)} links; there is no link {args.link}.")
        return "GET", web_url(page.links[args.link - 1]["url"]), []
    assert args.form is not None
    if args.form > len(page.forms):
        raise ToolError(f"The current page has {len(page.forms)} forms; there is no form {args.form}.")
    form = page.forms[args.form - 1]
    if not _urlencoded(form):
        raise ToolError(f"Form {args.form} is sent as {form.enctype}; browser.act submits url-encoded forms only.")
    given = dict(args.fields or {})
    known = {f.name for f in form.fields}
    unknown = sorted(set(given) - known)
    if unknown:
        raise ToolError(
            f"Form {args.form} has no field {', '.join(unknown)}; its fields are: {', '.join(sorted(known)) or 'none'}."
        )
    data: list[tuple[str, str]] = []
    for f in form.fields:
        value = given.get(f.name, f.value)
        if f.type == "checkbox" and value == "":
            value = None  # an empty value unchecks a box
        if value is not None:
            data.append((f.name, value))
    if form.submit:
        data.append(form.submit)
    if form.method == "post":
        return "POST", web_url(form.action), data
    encoded = urlencode(data)
    return "GET", web_url(form.action).copy_with(query=encoded.encode("ascii") or None), data


def _describe_act(args: ActArgs, ctx: ToolContext) -> ActionPreview:
    page = _load(ctx)
    method, url, data = _act_request(args, page)
    on_page = decisive("From the page", page.url, kind="url", note=page.title or "")
    if args.link is not None:
        text = page.links[args.link - 1].get("text") or ""
        return ActionPreview(
            summary=f"Follow link {args.link} of the current page" + (f" (\u201c{text}\u201d)" if text else ""),
            fields=[decisive("Opens", str(url), kind="url", argument="link", note=f"link {args.link}"), on_page],
        )
    assert args.form is not None
    fields = [
        decisive("Sends to", str(url), kind="url", argument="form", note=f"form {args.form}, {method}"),
        on_page,
    ]
    given = set(args.fields or {})
    fields += [detail(name, value, note="as the page filled it" if name not in given else "") for name, value in data]
    fields.append(detail("fields", json.dumps(args.fields or {}, ensure_ascii=False), argument="fields"))
    return ActionPreview(summary=f"Submit form {args.form} of the current page ({method})", fields=fields)


@tool(
    "browser.act",
    ActArgs,
    "On this chat's current page, follow a link (link: its number) or submit a form (form: its number, fields: "
    "the values to fill in); the page that answers becomes the current page.",
    preview=_describe_act,
)
async def browser_act(args: ActArgs, ctx: ToolContext) -> ToolResult:
    method, url, data = _act_request(args, _load(ctx))
    if method == "POST":
        return await _open(ctx, "browser.act", "POST", url, content=urlencode(data).encode("ascii"))
    return await _open(ctx, "browser.act", "GET", url)
