"""A provider's answers come from the origin it was asked at: a redirect elsewhere is refused.

The SDKs' HTTP clients follow redirects. On a redirect to another host they drop the API key,
but they send the request again, body and all, so the whole conversation would go to wherever
a base URL (a gateway, a misconfigured proxy, a hostile server) points it. :func:`install` adds
a response hook (httpx's own ``event_hooks``, which run on every hop before the client follows
it) to the HTTP client an SDK sends with: a redirect to the same origin (scheme, host, port) is
followed as before; one to another origin raises :class:`CrossOriginRedirect`, which the
adapter reports as ``provider.connection`` naming the redirect's origin (never its credential)
and does not retry. It sits in the client's configuration, not in the adapters' ``_send``, so
however a request is sent it holds.

Imported when an adapter first builds its SDK client: it imports httpx2.
"""

from __future__ import annotations

import httpx2

from core.redaction import origin


class CrossOriginRedirect(Exception):
    """A provider's base URL redirected to another origin; the request was not sent there."""

    def __init__(self, source: str, target: str, status: int):
        super().__init__(
            f"{source} redirected (HTTP {status}) to another origin, {target}; deferchat does not follow "
            "a provider's redirect elsewhere, which would send the conversation there. "
            "Set the base URL to where the server really answers"
        )
        self.source = source
        self.target = target
        self.status = status


def _origin_of(url: httpx2.URL) -> tuple[str, str, int | None]:
    port = url.port or {"http": 80, "https": 443}.get(url.scheme)
    return (url.scheme, url.host.lower(), port)


async def refuse_cross_origin(response: httpx2.Response) -> None:
    """The response hook: a redirect that leaves the request's origin is refused."""
    location = response.headers.get("location")
    if not response.is_redirect or location is None:
        return
    here = response.request.url
    try:
        there = here.join(location)
    except (httpx2.InvalidURL, ValueError):
        raise CrossOriginRedirect(origin(str(here)), "an unreadable location", response.status_code) from None
    if _origin_of(there) != _origin_of(here):
        await response.aclose()
        raise CrossOriginRedirect(origin(str(here)), origin(str(there)), response.status_code)


def install(client: httpx2.AsyncClient) -> None:
    """Refuse redirects to another origin on ``client`` (once, however often it is called)."""
    hooks = client.event_hooks
    if refuse_cross_origin not in hooks["response"]:
        hooks["response"].insert(0, refuse_cross_origin)
