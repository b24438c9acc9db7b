"""The HTTP a remote MCP server is spoken to over: every request checked by the private-address
guard, and the sign-in flow's own requests bounded.

The MCP SDK (its streamable HTTP and SSE transports, and its OAuth client) sends everything
through one ``httpx2`` client; :class:`GuardedTransport` is that client's transport, so every
request and every redirect hop it follows passes :func:`core.net.guard.check_url` before a
connection is made:

* The server the owner configured (its URL's scheme, host and port) is trusted as it is, as the
  guard trusts the owner's ``searxng_url``: a user's entry pointing at a private host is the
  owner's choice.
* Anything else (protected-resource metadata naming another host, an authorization server, its
  token or registration endpoint) must be public internet, unless ``allow_private_hosts`` in
  ``[tools]`` names it. A connection then goes to the address that was checked (the ``Host``
  header and TLS SNI keep the name), so a second DNS answer cannot rebind it.
* A request that is not to the MCP endpoint itself (metadata, registration, tokens) is read
  whole here, bounded: :data:`MAX_AUTH_BYTES` and :data:`AUTH_TIMEOUT` seconds from the request
  to the last byte. The MCP endpoint's own streams are bounded by the SDK (its SSE event limit).

The loopback redirect the sign-in opened is never fetched by deferchat (the browser goes there),
so it is not a request of this client at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx2

from core.net.guard import NetPolicy, check_url

MAX_AUTH_BYTES = 1_000_000  # a metadata document, a registration or a token answer
AUTH_TIMEOUT = 20.0  # seconds for one of those requests, from sending it to its last byte


class ResponseTooLarge(Exception):
    """A sign-in request's answer was larger than :data:`MAX_AUTH_BYTES`."""


def net_policy(endpoint_url: str, tool_settings: Mapping[str, Any] | None) -> NetPolicy:
    """The guard's policy for one configured server: its own origin trusted, the owner's
    ``allow_private_hosts`` (``[tools]``) honoured, everything else public internet only."""
    return NetPolicy.from_settings(dict(tool_settings or {}), trusted_urls=[endpoint_url])


def _same_endpoint(url: httpx2.URL, endpoint: httpx2.URL) -> bool:
    return (url.scheme, url.host, url.port, url.path.rstrip("/")) == (
        endpoint.scheme,
        endpoint.host,
        endpoint.port,
        endpoint.path.rstrip("/"),
    )


class GuardedTransport(httpx2.AsyncBaseTransport):
    """An ``httpx2`` transport that lets a request go only where the guard allows (see the module)."""

    def __init__(
        self,
        endpoint_url: str,
        policy: NetPolicy,
        *,
        inner: httpx2.AsyncBaseTransport | None = None,
        max_auth_bytes: int = MAX_AUTH_BYTES,
        auth_timeout: float = AUTH_TIMEOUT,
    ):
        self._endpoint = httpx2.URL(endpoint_url)
        self._policy = policy
        self._inner = inner or httpx2.AsyncHTTPTransport()
        self._max = max_auth_bytes
        self._timeout = auth_timeout

    async def __aenter__(self) -> GuardedTransport:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._inner.__aexit__(*exc)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        import httpx

        dest = await check_url(httpx.URL(str(request.url)), self._policy)  # GuardError: not sent
        if _same_endpoint(request.url, self._endpoint):
            return await self._send(request, dest.addresses)
        import anyio

        with anyio.fail_after(self._timeout):
            response = await self._send(request, dest.addresses)
            try:
                body = bytearray()
                async for chunk in response.aiter_bytes():  # decoded: a compressed bomb is bounded too
                    body += chunk
                    if len(body) > self._max:
                        raise ResponseTooLarge(
                            f"{request.url.copy_with(query=None)} answered with more than {self._max:,} bytes"
                        )
            finally:
                await response.aclose()
        headers = [
            (k, v) for k, v in response.headers.multi_items() if k.lower() not in ("content-encoding", "content-length")
        ]
        return httpx2.Response(
            response.status_code,
            headers=headers,
            content=bytes(body),
            request=request,
            extensions=response.extensions,
        )

    async def _send(self, request: httpx2.Request, addresses: tuple[Any, ...]) -> httpx2.Response:
        """To the checked addresses in turn (the next only when one cannot be reached), or as it
        is for a trusted origin (no addresses)."""
        if not addresses:
            return await self._inner.handle_async_request(request)
        from ipaddress import IPv6Address

        original, host = request.url, request.url.host
        failure: Exception | None = None
        for address in addresses:
            plain = IPv6Address(int(address)) if isinstance(address, IPv6Address) else address
            request.url = original.copy_with(host=str(plain))
            request.headers["Host"] = original.netloc.decode("ascii")
            if original.scheme == "https":
                request.extensions["sni_hostname"] = host
            try:
                return await self._inner.handle_async_request(request)
            except httpx2.ConnectError as exc:
                failure = exc
            finally:
                request.url = original
        assert failure is not None
        raise failure
