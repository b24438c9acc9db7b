"""The HTTP client the MCP SDK's streamable-HTTP and SSE transports read a server through,
bounded as every other read of untrusted bytes is (:mod:`core.net.bounded`).

The SDK reads an answer with httpx, which decodes ``Content-Encoding`` in full before anything
counts it (a gibibyte of zeros arrives in a kilobyte) and reads a JSON answer whole however large;
its JSON parser gives up on a message nested deeper than two hundred levels and with it on the
whole answer (a listing whose one tool nests a thousand levels loses every tool). Its SSE reader
already bounds each event (a mebibyte). :class:`BoundedTransport` sits under the SDK's client:

* it asks only for the codings deferchat decodes and decodes them itself, each step bounded
  (:class:`core.net.bounded.Chain`); an unknown coding fails that request clearly;
* a JSON answer is read up to :data:`core.mcp.wire.MAX_MESSAGE_BYTES`; a larger one becomes a
  JSON-RPC error for the request it answers, naming the bound;
* a JSON answer nested deeper than a message may be is handed on with its too-deep parts as
  markers (:func:`core.limits.loads_bounded`), so the sieve skips the one tool that held them;
* an SSE stream is decoded piece by piece; the SDK's own event bound then applies.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2

from core.limits import MESSAGE_DEPTH, json_depth, loads_bounded
from core.mcp import wire
from core.net.bounded import ACCEPT_ENCODING, LAYER_STEP, BadEncoding, Chain, decoders


def _request_id(request: httpx2.Request) -> Any:
    try:
        body = json.loads(request.content or b"null")
    except (ValueError, httpx2.RequestNotRead):
        return None
    return body.get("id") if isinstance(body, dict) else None


def _message_text(data: bytes) -> bytes:
    """A JSON answer as the SDK may parse it: as it came, or, nested too deep, with markers."""
    try:
        value = json.loads(data)
    except RecursionError:
        value = None
    except ValueError:
        return data  # not JSON: the SDK says so for its request
    if value is not None and json_depth(value, MESSAGE_DEPTH) <= MESSAGE_DEPTH:
        return data
    return json.dumps(loads_bounded(data, MESSAGE_DEPTH), ensure_ascii=False).encode("utf-8")


class _BoundedBody(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, chain: Chain, *, whole: bool, request_id: Any):
        self._inner = inner
        self._chain = chain
        self._whole = whole
        self._request_id = request_id

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._whole:
            yield await self._read_whole()
            return
        async for chunk in self._inner:
            piece = self._chain.feed(chunk, LAYER_STEP)
            while piece:
                yield piece
                piece = self._chain.feed(b"", LAYER_STEP)
        while piece := self._chain.drain(LAYER_STEP):
            yield piece

    async def _read_whole(self) -> bytes:
        limit = wire.MAX_MESSAGE_BYTES
        data = bytearray()
        wire_bytes = 0
        async for chunk in self._inner:
            wire_bytes += len(chunk)
            data += self._chain.feed(chunk, limit + 1 - len(data))
            if len(data) > limit or wire_bytes > limit:
                break
        else:
            data += self._chain.drain(limit + 1 - len(data))
        if len(data) > limit or wire_bytes > limit or any(layer.pending for layer in self._chain.layers):
            reason = f"an answer of more than {limit} bytes, over what deferchat reads"
            refusal = wire.refusal(self._request_id, reason).message
            return refusal.model_dump_json(by_alias=True, exclude_none=True).encode("utf-8")
        return _message_text(bytes(data))

    async def aclose(self) -> None:
        await self._inner.aclose()


class BoundedTransport(httpx2.AsyncBaseTransport):
    """httpx's own transport underneath, every answer's body bounded (see the module)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport | None = None):
        self._inner = inner or httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.headers["Accept-Encoding"] = ACCEPT_ENCODING
        response = await self._inner.handle_async_request(request)
        try:
            layers = decoders(response.headers.get("content-encoding"))
        except BadEncoding as exc:
            await response.aclose()
            raise httpx2.DecodingError(str(exc), request=request) from None
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        headers = [
            (k, v) for k, v in response.headers.multi_items() if k.lower() not in ("content-encoding", "content-length")
        ]
        body = _BoundedBody(
            response.stream, Chain(layers), whole=kind == "application/json", request_id=_request_id(request)
        )
        return httpx2.Response(
            response.status_code, headers=headers, stream=body, extensions=response.extensions, request=request
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def bounded_client(
    headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
) -> httpx2.AsyncClient:
    """An httpx client for the MCP transports (the SDK's ``McpHttpClientFactory``), bounded."""
    return httpx2.AsyncClient(
        headers=headers,
        timeout=timeout or httpx2.Timeout(30.0, read=300.0),
        auth=auth,
        transport=BoundedTransport(),
    )
