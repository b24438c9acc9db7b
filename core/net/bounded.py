"""What a network tool reads from a server it does not control, bounded on the wire, after
decoding, and in time.

A bound counted on decoded bytes alone is measured on the wrong side: ``Content-Encoding: gzip,
gzip`` carries a gibibyte of zeros in a kilobyte, and a decoder that expands a chunk in full
holds the gibibyte before anything counts it. A bound on each read is not a bound on the
request: a body that drips a byte every few seconds never trips a read timeout. So:

* :func:`read_body` reads the *raw* bytes off the wire (``aiter_raw``: httpx decodes nothing)
  and counts them, then decodes them itself, incrementally, with a maximum output at every step
  of every layer: ``gzip`` (every member), ``deflate`` (zlib or raw), ``br`` when a Brotli
  module is installed, ``zstd`` when ``zstandard`` is, ``identity``; stacked encodings are
  undone last first, up to :data:`MAX_CODINGS`; an encoding it does not read, or a stack
  deeper than that, is refused with a clear message (:class:`BadEncoding`). Both the wire
  bytes and the decoded bytes stop at ``max_bytes`` (what is kept is marked cut).
* :func:`bounded_fetch` is a request through :mod:`core.net.guard` (every hop checked) whose
  whole time, redirects and body included, is bounded by one deadline (:class:`TooSlow`).

:data:`ACCEPT_ENCODING` asks only for what can be decoded. Every built-in that reads from the
network goes through :func:`bounded_fetch` (``web.fetch``, the browser, ``web.search``,
``notify``).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.net.guard import Fetched, GuardError, NetPolicy, guarded_stream

if TYPE_CHECKING:
    import httpx

MAX_CODINGS = 3
"""The most content codings a body may be stacked in (``gzip, gzip`` is two)."""

DEFAULT_MAX_BYTES = 2_000_000
STEP_INPUT = 64  # bytes fed at a time to a decoder that cannot bound its own output
LAYER_STEP = 64 * 1024  # bytes one layer of a stack hands the next at a time


class BadEncoding(GuardError):
    """The server encoded the body in a way deferchat does not decode."""


class TooSlow(GuardError):
    """The whole request ran past its deadline."""

    def __init__(self, seconds: float):
        super().__init__(f"timed out after {seconds:g} s (the whole request: connecting, redirects and the body)")
        self.seconds = seconds


def _brotli() -> Any:
    for name in ("brotli", "brotlicffi"):
        try:
            return __import__(name)
        except ImportError:
            continue
    return None


def _zstandard() -> Any:
    try:
        import zstandard  # type: ignore[import-not-found]
    except ImportError:
        return None
    return zstandard


def readable_codings() -> tuple[str, ...]:
    """The content codings :func:`read_body` decodes here (br and zstd when their modules are)."""
    return ("gzip", "deflate", *(("br",) if _brotli() else ()), *(("zstd",) if _zstandard() else ()))


ACCEPT_ENCODING = ", ".join(readable_codings())


# --- decoders, each with a bounded output ----------------------------------------------------------


class _Decoder:
    """One content coding undone: ``feed`` returns at most ``room`` bytes and keeps the rest of
    its input for the next call; ``pending`` says whether it still holds input."""

    def feed(self, data: bytes, room: int) -> bytes:
        raise NotImplementedError

    @property
    def pending(self) -> bool:
        raise NotImplementedError


class _Zlib(_Decoder):
    """gzip (every member) and deflate (zlib-wrapped, or raw as some servers send it)."""

    def __init__(self, coding: str):
        self.coding = coding
        self._wbits = 16 + zlib.MAX_WBITS if coding == "gzip" else zlib.MAX_WBITS
        self._obj = zlib.decompressobj(self._wbits)
        self._tail = b""
        self._full = False  # the last call filled its room: zlib may hold more output
        self._started = False

    def feed(self, data: bytes, room: int) -> bytes:
        data = self._tail + data
        out = bytearray()
        while len(out) < room:
            if self._obj.eof:  # a member ended: another may follow (gzip); anything else is ignored
                rest = self._obj.unused_data + data
                if self.coding != "gzip" or not rest.startswith(b"\x1f\x8b"):
                    data = b""
                    break
                self._obj = zlib.decompressobj(self._wbits)
                data = rest
            if not data and not self._full:
                break
            want = room - len(out)
            try:
                piece = self._obj.decompress(data, want)
            except zlib.error as exc:
                if self.coding == "deflate" and not self._started:  # raw deflate, without the zlib header
                    self._wbits = -zlib.MAX_WBITS
                    self._obj = zlib.decompressobj(self._wbits)
                    self._started = True
                    continue
                raise BadEncoding(f"the body is not valid {self.coding} ({exc})") from None
            self._started = True
            self._full = len(piece) == want
            out += piece
            data = self._obj.unconsumed_tail
            if not piece and not data:
                break
        self._tail = data
        return bytes(out)

    @property
    def pending(self) -> bool:
        return bool(self._tail) or (self._full and not self._obj.eof)


class _Stepped(_Decoder):
    """A decoder without a bound on its output (Brotli, zstd), fed a few bytes at a time so that
    what one step can produce stays small; output past ``room`` waits for the next call."""

    def __init__(self, coding: str, process: Any):
        self.coding = coding
        self._process = process
        self._tail = b""
        self._ready = b""

    def feed(self, data: bytes, room: int) -> bytes:
        data = self._tail + data
        out = bytearray(self._ready[:room])
        self._ready = self._ready[room:]
        i = 0
        while i < len(data) and len(out) < room:
            try:
                piece = self._process(data[i : i + STEP_INPUT])
            except Exception as exc:
                raise BadEncoding(f"the body is not valid {self.coding} ({exc})") from None
            i += STEP_INPUT
            take = room - len(out)
            out += piece[:take]
            self._ready += piece[take:]
        self._tail = data[i:]
        return bytes(out)

    @property
    def pending(self) -> bool:
        return bool(self._tail or self._ready)


class _Identity(_Decoder):
    def __init__(self) -> None:
        self._tail = b""

    def feed(self, data: bytes, room: int) -> bytes:
        data = self._tail + data
        self._tail = data[room:]
        return data[:room]

    @property
    def pending(self) -> bool:
        return bool(self._tail)


def _decoder(coding: str) -> _Decoder:
    if coding in ("gzip", "x-gzip"):
        return _Zlib("gzip")
    if coding == "deflate":
        return _Zlib("deflate")
    if coding == "br" and (brotli := _brotli()) is not None:
        return _Stepped("br", brotli.Decompressor().process)
    if coding == "zstd" and (zstandard := _zstandard()) is not None:
        return _Stepped("zstd", zstandard.ZstdDecompressor().decompressobj().decompress)
    raise BadEncoding(
        f"the server sent the body encoded as {coding!r}, which deferchat does not decode "
        f"(it reads {', '.join(readable_codings())})"
    )


def decoders(content_encoding: str | None) -> list[_Decoder]:
    """The decoders for a ``Content-Encoding`` header, in the order they undo it (the last coding
    applied first). Raises :class:`BadEncoding` for an unknown coding or too deep a stack."""
    codings = [c.strip().lower() for c in (content_encoding or "").split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if len(codings) > MAX_CODINGS:
        raise BadEncoding(
            f"the server encoded the body {len(codings)} times over ({', '.join(codings)}); "
            f"deferchat undoes at most {MAX_CODINGS} stacked encodings"
        )
    return [_decoder(c) for c in reversed(codings)] or [_Identity()]


class Chain:
    """Stacked decoders with a bounded output at every layer."""

    def __init__(self, layers: list[_Decoder]):
        self.layers = layers

    def feed(self, data: bytes, room: int) -> bytes:
        """Push ``data`` through every layer, at most :data:`LAYER_STEP` bytes between two layers
        at a time, until ``room`` bytes came out or nothing more does."""
        out = bytearray()
        piece_in = data
        while len(out) < room:
            piece = piece_in
            piece_in = b""
            for layer in self.layers[:-1]:
                piece = layer.feed(piece, LAYER_STEP)
            got = self.layers[-1].feed(piece, room - len(out))
            out += got
            if not got and not piece:
                break
        return bytes(out)

    def drain(self, room: int) -> bytes:
        """What the layers still hold, up to ``room``."""
        out = bytearray()
        while len(out) < room and any(layer.pending for layer in self.layers):
            piece = self.feed(b"", room - len(out))
            if not piece:
                break
            out += piece
        return bytes(out)


@dataclass
class Body:
    """A body as read: at most ``max_bytes`` decoded bytes, how many came off the wire, and
    whether it was cut (more was on the wire, or would have come out of the decoders)."""

    data: bytes
    wire_bytes: int
    cut: bool


async def read_body(response: httpx.Response, max_bytes: int) -> Body:
    """Read ``response``'s body bounded on both sides (see the module)."""
    import httpx

    if response.is_stream_consumed:  # built whole in memory (httpx reads such a response at once)
        try:
            whole = response.content
        except httpx.ResponseNotRead:
            whole = b""
        return Body(whole[:max_bytes], min(len(whole), max_bytes), len(whole) > max_bytes)
    chain = Chain(decoders(response.headers.get("content-encoding")))
    out = bytearray()
    wire = 0
    cut = False
    async for chunk in response.aiter_raw():
        wire += len(chunk)
        if wire > max_bytes:  # the wire bound: what the server sends past it is never read
            chunk = chunk[: max(0, len(chunk) - (wire - max_bytes))]
            cut = True
        out += chain.feed(chunk, max_bytes + 1 - len(out))
        if cut or len(out) > max_bytes:
            break
    else:
        out += chain.drain(max_bytes + 1 - len(out))
    if len(out) > max_bytes or any(layer.pending for layer in chain.layers):
        cut = True
    return Body(bytes(out[:max_bytes]), min(wire, max_bytes), cut)


@dataclass
class Limits:
    """How much a request may read (``fetch_max_bytes``) and how long it may take in all
    (``http_timeout``, seconds: connecting, every redirect and the body)."""

    max_bytes: int = DEFAULT_MAX_BYTES
    seconds: float = 20.0

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], max_bytes: int | None = None) -> Limits:
        return cls(
            max_bytes=int(max_bytes or settings.get("fetch_max_bytes", DEFAULT_MAX_BYTES)),
            seconds=float(settings.get("http_timeout", 20.0)),
        )


@dataclass
class Page:
    """A bounded fetch: the response (its body already read) and the body as read."""

    fetched: Fetched
    body: Body

    @property
    def response(self) -> httpx.Response:
        return self.fetched.response

    @property
    def url(self) -> httpx.URL:
        return self.fetched.url


async def bounded_fetch(
    client: httpx.AsyncClient,
    method: str,
    url: httpx.URL | str,
    policy: NetPolicy,
    limits: Limits,
    *,
    headers: Mapping[str, str] | None = None,
    content: bytes | None = None,
) -> Page:
    """A request through the guard, its body read by :func:`read_body`, all of it within
    ``limits.seconds``. Raises :class:`TooSlow`, :class:`BadEncoding`, the guard's errors and
    httpx's."""
    import asyncio  # here, not at the top: the roster loader imports this module for its schemas only

    sent = {"Accept-Encoding": ACCEPT_ENCODING, **(headers or {})}
    try:
        async with asyncio.timeout(limits.seconds):
            async with guarded_stream(client, method, url, policy, headers=sent, content=content) as fetched:
                body = await read_body(fetched.response, limits.max_bytes)
    except TimeoutError:
        raise TooSlow(limits.seconds) from None
    return Page(fetched, body)
