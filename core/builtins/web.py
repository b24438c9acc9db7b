"""``web.search`` (through a SearXNG instance) and ``web.fetch`` (a page as readable text), and the HTTP
client the built-ins share. httpx is imported when a tool runs, not with this module.

Settings read from ``ctx.settings``:

* ``http_transport``: an ``httpx`` async transport (tests pass ``httpx.MockTransport``).
* ``http_timeout`` (seconds, default 20): the whole request, connecting, every redirect and the
  body; ``fetch_max_bytes`` (default 2 000 000): what is read of a body, counted both off the
  wire and after decoding (:mod:`core.net.bounded`).
* ``allow_private_hosts`` (names, addresses or networks) and ``allow_private_network`` (all of
  them): the private destinations web.fetch may reach on purpose; none by default. Every
  request goes through :mod:`core.net.guard`: each hop is checked (any notation of a private
  address, host names by every address they resolve to) and connected to as checked; a
  refusal is the error ``tool.denied.private_address``. Tests inject ``resolver``.
* ``searxng_url``: a SearXNG instance for web.search (none: web.search says how to set one up).
  It is the owner's own configuration, so its host may be private; a redirect away from it is
  checked like any other hop.

A web page is untrusted whoever configured the tool: what web.fetch read (the page, its title,
an error page's excerpt) and what web.search found (titles and snippets) come back with an
``envelope_source`` (``web.<host>`` of the page, ``web.search``), so the model reads them inside
an envelope (:func:`core.tools.result_envelope_source`), pages of them through ``tool.result`` too.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import Field

from core.builtins import ToolContext
from core.builtins.shared import Args, Text, ToolError, error_result, tool
from core.net.bounded import Limits, TooSlow, bounded_fetch
from core.net.guard import GuardError, NetPolicy, PrivateAddress
from core.tools import ToolResult

if TYPE_CHECKING:
    import httpx

USER_AGENT = "deferchat/0.1 (+https://github.com/deferchat)"
ACCEPT_PAGES = "text/html,application/xhtml+xml,application/json,text/plain;q=0.9,*/*;q=0.5"


class WebSearchArgs(Args):
    query: Text = Field(description="Search query.")
    max_results: int = Field(5, ge=1, le=10, description="Number of results.")


class WebFetchArgs(Args):
    url: Text = Field(description="Absolute http(s) URL.")
    max_chars: int = Field(8000, ge=100, le=50000, description="Maximum characters of text to return.")


def http_client(ctx: ToolContext, **kwargs: Any) -> httpx.AsyncClient:
    """The built-ins' HTTP client. It follows no redirects: :mod:`core.net.guard` does, hop by hop."""
    import httpx

    timeout = float(ctx.settings.get("http_timeout", 20.0))
    return httpx.AsyncClient(
        transport=ctx.settings.get("http_transport"),
        follow_redirects=False,
        timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
        headers={"User-Agent": USER_AGENT},
        **kwargs,
    )


def net_policy(ctx: ToolContext, *trusted_urls: str) -> NetPolicy:
    """What a built-in's requests may reach: the public web, the owner's allowed private hosts,
    and the hosts of ``trusted_urls`` (endpoints the owner configured)."""
    return NetPolicy.from_settings(ctx.settings, trusted_urls=trusted_urls)


def refusal(exc: PrivateAddress, what: str) -> ToolResult:
    """The tool error for a refused destination, with its own code."""
    return ToolResult.failure(
        exc.code,
        f"Refused {what}: {exc}. deferchat's tools only reach the public internet; "
        "to reach a private host on purpose, add it to allow_private_hosts in the [tools] "
        "table of config.toml.",
    )


def http_failure(exc: Exception, what: str, timeout: float) -> ToolError:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return ToolError(f"{what} timed out after {timeout:g} s.")
    if isinstance(exc, httpx.TooManyRedirects):
        return ToolError(f"{what} failed: too many redirects (more than 5).")
    return ToolError(f"{what} failed: {type(exc).__name__}: {exc}")


SEARCH_SOURCE = "web.search"  # results gathered from many sites


def page_source(url: httpx.URL) -> str:
    """The envelope source of a page: ``web.<host>`` (the host the page came from, after redirects)."""
    return f"web.{url.host or 'unknown'}"


def _decode(body: bytes, charset: str | None, content_type: str) -> str:
    encoding = charset
    if not encoding and "html" in content_type:
        meta = re.search(rb"""<meta[^>]+charset=["']?([\w-]+)""", body[:4096], re.I)
        encoding = meta.group(1).decode("ascii") if meta else None
    try:
        return body.decode(encoding or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


_TEXTUAL_TYPES = (
    "application/xml",
    "application/javascript",
    "application/x-yaml",
    "application/yaml",
    "application/csv",
    "application/x-ndjson",
)


@dataclass
class Page:
    """A page as a built-in read it: the URL it came from (as written, after redirects), its
    status and content type, and its body decoded to text (cut at ``fetch_max_bytes``)."""

    url: httpx.URL
    status: int
    reason_phrase: str
    content_type: str
    text: str
    size: int  # bytes read
    cut_bytes: bool
    max_bytes: int

    @property
    def source(self) -> str:
        return page_source(self.url)

    @property
    def is_html(self) -> bool:
        return self.content_type in ("text/html", "application/xhtml+xml") or (
            not self.content_type and self.text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))
        )


def web_url(text: str) -> httpx.URL:
    """An absolute http(s) URL, as the hardline rules would see it and a connection would read it."""
    import httpx

    from core.pipeline.canonical import CanonicalError, canonical_url

    try:
        url = httpx.URL(canonical_url(text))
    except (CanonicalError, httpx.InvalidURL, ValueError) as exc:
        raise ToolError(f"Bad URL {text!r}: {exc}; give an absolute http:// or https:// URL.") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ToolError(f"Bad URL {text!r}: give an absolute http:// or https:// URL.")
    return url


async def read_page(
    ctx: ToolContext,
    method: str,
    url: httpx.URL,
    what: str,
    *,
    content: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> Page:
    """Request ``url`` through :mod:`core.net.guard` and read the body, bounded by
    :func:`core.net.bounded.bounded_fetch`: ``fetch_max_bytes`` off the wire and after decoding,
    ``http_timeout`` for the whole request (connecting, every redirect, the body).

    ``what`` names the request in error messages ("Fetching https://..."). Raises
    :class:`PrivateAddress` for a refused destination (the caller answers with :func:`refusal`)
    and :class:`ToolError` for anything else that went wrong.
    """
    import httpx

    limits = Limits.from_settings(ctx.settings)
    sent = {"Accept": ACCEPT_PAGES, **(headers or {})}
    try:
        async with http_client(ctx) as client:
            fetched = await bounded_fetch(client, method, url, net_policy(ctx), limits, headers=sent, content=content)
    except PrivateAddress:
        raise
    except TooSlow as exc:
        raise ToolError(f"{what} {exc}; the server sent its answer too slowly.") from None
    except GuardError as exc:
        raise ToolError(f"{what} failed: {exc}.") from None
    except httpx.HTTPError as exc:
        raise http_failure(exc, what, limits.seconds) from None
    resp = fetched.response
    content_type = resp.headers.get("content-type", "").split(";")[0].strip().lower()
    return Page(
        url=fetched.url,
        status=resp.status_code,
        reason_phrase=resp.reason_phrase,
        content_type=content_type,
        text=_decode(fetched.body.data, resp.charset_encoding, content_type),
        size=len(fetched.body.data),
        cut_bytes=fetched.body.cut,
        max_bytes=limits.max_bytes,
    )


def readable(page: Page) -> tuple[str | None, str] | None:
    """``(title, text)`` of a page: HTML as readable text, JSON indented, other text as it is;
    None when the page is not text."""
    content_type = page.content_type
    if page.is_html:
        from core.builtins.html_text import html_to_text

        return html_to_text(page.text)
    if content_type == "application/json" or content_type.endswith("+json"):
        with contextlib.suppress(ValueError):  # cut short or not JSON after all: give the raw text
            return None, json.dumps(json.loads(page.text), ensure_ascii=False, indent=1)
        return None, page.text
    if content_type and not content_type.startswith("text/") and content_type not in _TEXTUAL_TYPES:
        return None
    return None, page.text


def not_text(page: Page, tool_name: str) -> ToolResult:
    """The error for a page that is not text (the server's words: enveloped)."""
    refused = error_result(
        f"{page.url} returned {page.content_type} ({page.size} bytes), which is not text; "
        f"{tool_name} returns readable text only."
    )
    return refused.model_copy(update={"envelope_source": page.source})


def error_page(page: Page, text: str) -> ToolResult:
    """The error for an HTTP error status, with an excerpt of the page (enveloped)."""
    excerpt = text[:500] + ("..." if len(text) > 500 else "")
    failed = error_result(
        f"HTTP {page.status} {page.reason_phrase} from {page.url}." + (f"\n\n{excerpt}" if excerpt.strip() else "")
    )
    return failed.model_copy(update={"envelope_source": page.source})


@tool(
    "web.fetch",
    WebFetchArgs,
    "Fetch a web page or API URL over HTTPS and return its readable text, cut to a maximum length.",
)
async def web_fetch(args: WebFetchArgs, ctx: ToolContext) -> ToolResult:
    url = web_url(args.url)
    try:
        page = await read_page(ctx, "GET", url, f"Fetching {args.url}")
    except PrivateAddress as exc:
        return refusal(exc, f"to fetch {args.url}")
    final_url = str(page.url)  # the URL as written, not the address connected to
    read = readable(page)
    if read is None:
        return not_text(page, "web.fetch")
    title, text = read
    if page.status >= 400:
        return error_page(page, text)
    total = len(text)
    shown = text[: args.max_chars]
    header = [f"URL: {final_url}", f"Status: {page.status}", f"Content-Type: {page.content_type or 'unknown'}"]
    if title:
        header.append(f"Title: {title}")
    if total > args.max_chars:
        header.append(f"[Showing the first {args.max_chars} of {total} characters; the rest was cut.]")
    if page.cut_bytes:
        header.append(f"[The download stopped at {page.max_bytes} bytes; the page is longer.]")
    structured = {
        "url": args.url,
        "final_url": final_url,
        "status": page.status,
        "content_type": page.content_type,
        "title": title,
        "characters": total,
        "truncated": total > args.max_chars or page.cut_bytes,
    }
    return ToolResult(
        content=[{"type": "text", "text": "\n".join(header) + "\n\n" + shown}],
        structured=structured,
        envelope_source=page.source,
    )


NO_SEARCH_BACKEND = (
    "No web-search backend is configured, so web.search cannot run (deferchat has no built-in search "
    "engine offline). To enable it, point deferchat at a SearXNG instance with its JSON API turned on: set "
    "searxng_url in the [tools] table of deferchat's config.toml to its address, e.g. http://127.0.0.1:8888, "
    "and list json under search.formats in SearXNG's settings.yml. "
    "web.fetch still works for a URL you already know."
)


@tool(
    "web.search",
    WebSearchArgs,
    "Search the web and return titles, URLs and snippets of the top results. Use it for current events and facts "
    "you are unsure of.",
)
async def web_search(args: WebSearchArgs, ctx: ToolContext) -> ToolResult:
    import httpx

    base = ctx.settings.get("searxng_url")
    if not base:
        return error_result(NO_SEARCH_BACKEND)
    endpoint = str(base).rstrip("/") + "/search"
    limits = Limits.from_settings(ctx.settings)
    try:
        url = httpx.URL(endpoint, params={"q": args.query, "format": "json"})
        async with http_client(ctx) as client:
            fetched = await bounded_fetch(
                client, "GET", url, net_policy(ctx, str(base)), limits, headers={"Accept": "application/json"}
            )
        resp = fetched.response
    except PrivateAddress as exc:
        return refusal(exc, f"to search through SearXNG at {endpoint}")
    except GuardError as exc:
        raise ToolError(f"The SearXNG search at {endpoint} failed: {exc}.") from None
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise http_failure(exc, f"The SearXNG search at {endpoint}", limits.seconds) from None
    if resp.status_code == 403:
        raise ToolError(
            f"SearXNG at {endpoint} refused the JSON API (HTTP 403); list json under search.formats "
            "in its settings.yml."
        )
    if resp.status_code >= 400:
        raise ToolError(f"SearXNG at {endpoint} answered HTTP {resp.status_code} {resp.reason_phrase}.")
    try:
        data = json.loads(fetched.body.data)
        raw_results = data.get("results") or []
    except (ValueError, AttributeError):
        raise ToolError(
            f"SearXNG at {endpoint} did not return JSON; is searxng_url the instance's base "
            "address with the json format enabled?"
        ) from None
    results = [
        {
            "title": (r.get("title") or "").strip(),
            "url": r.get("url"),
            "snippet": (r.get("content") or "").strip(),
            "engine": r.get("engine"),
        }
        for r in raw_results
        if isinstance(r, dict) and r.get("url")
    ][: args.max_results]
    found = ToolResult.of_json({"query": args.query, "backend": "searxng", "count": len(results), "results": results})
    return found.model_copy(update={"envelope_source": SEARCH_SOURCE})
