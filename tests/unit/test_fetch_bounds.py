"""Bounds on what a network tool reads are measured on the wire, after decoding, and in time.

A real loopback HTTP server (asyncio, HTTP/1.1, in the test's own loop) sends what a hostile
site sends: a gibibyte of zeros in about a kilobyte (``Content-Encoding: gzip, gzip``), every
stack of the codings deferchat decodes, codings it does not, and bodies that drip a byte at a
time. ``web.fetch`` and the browser (on the same reader, :mod:`core.net.bounded`) keep at most
``fetch_max_bytes`` of any of them, hold no more than a few times that in memory, and end the
whole request, redirects included, within ``http_timeout``.
"""

from __future__ import annotations

import asyncio
import gzip
import time
import tracemalloc
import zlib
from functools import lru_cache
from urllib.parse import parse_qs, urlsplit

import pytest
import sqlite_utils
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.builtins import ToolContext, get_builtin
from core.builtins.shared import ToolError
from core.builtins.web import read_page, web_url
from core.net import bounded
from core.net.bounded import MAX_CODINGS, readable_codings

GIB = 1 << 30


@lru_cache(maxsize=1)
def zeros_gzip(size: int = GIB) -> bytes:
    """``size`` zero bytes gzipped, made a megabyte at a time."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    parts = [comp.compress(block) for _ in range(size >> 20)]
    return b"".join(parts) + comp.flush()


def encode(data: bytes, coding: str) -> bytes:
    if coding == "gzip":
        return gzip.compress(data)
    if coding == "deflate":
        return zlib.compress(data)
    if coding == "deflate-raw":
        comp = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        return comp.compress(data) + comp.flush()
    if coding == "br":
        import brotli  # type: ignore[import-not-found]

        return brotli.compress(data)
    if coding == "zstd":
        import zstandard  # type: ignore[import-not-found]

        return zstandard.ZstdCompressor().compress(data)
    assert coding == "identity"
    return data


class Loopback:
    """A tiny HTTP/1.1 server: each route answers from its query."""

    def __init__(self) -> None:
        self.bodies: dict[str, tuple[dict[str, str], bytes]] = {}
        self.server: asyncio.Server | None = None
        self.port = 0
        self.hits: list[str] = []

    async def __aenter__(self) -> Loopback:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            target = head.split(b" ", 2)[1].decode()
            self.hits.append(target)
            parts = urlsplit(target)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            if parts.path == "/drip":
                every, count = float(query["every"]), int(query["bytes"])
                writer.write(f"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {count}\r\n\r\n".encode())
                for _ in range(count):
                    await writer.drain()
                    await asyncio.sleep(every)
                    writer.write(b"d")
            elif parts.path == "/slow-redirect":
                await asyncio.sleep(float(query["wait"]))
                location = f"/drip?every={query['every']}&bytes={query['bytes']}"
                writer.write(f"HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\n\r\n".encode())
            else:
                headers, body = self.bodies[parts.path]
                lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
                writer.write(f"HTTP/1.1 200 OK\r\n{lines}content-length: {len(body)}\r\n\r\n".encode())
                writer.write(body)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


def ctx(tmp_path, **tools) -> ToolContext:
    return ToolContext(
        db=sqlite_utils.Database(memory=True),
        chat_id="chat_t",
        call_id="call_t",
        workspace=tmp_path,
        settings={"allow_private_network": True, **tools},  # the loopback server is on purpose
    )


async def fetch(context: ToolContext, url: str):
    fn = get_builtin("web.fetch")
    assert fn is not None
    return await fn({"url": url, "max_chars": 50000}, context)


async def test_a_gibibyte_in_a_kilobyte_is_read_as_fetch_max_bytes(tmp_path):
    bomb = gzip.compress(zeros_gzip())  # gzip, gzip: about a kilobyte and a half
    assert len(bomb) < 4096
    async with Loopback() as server:
        server.bodies["/bomb"] = ({"content-type": "text/plain", "content-encoding": "gzip, gzip"}, bomb)
        context = ctx(tmp_path, fetch_max_bytes=2_000_000, http_timeout=20)
        tracemalloc.start()
        try:
            began = time.monotonic()
            result = await fetch(context, server.url("/bomb"))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert not result.is_error, result.text()
    assert result.structured["truncated"] and "stopped at 2000000 bytes" in result.text()
    assert peak < 40_000_000, peak  # was 2.2 GB
    assert time.monotonic() - began < 5


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    stack=st.lists(
        st.sampled_from(["gzip", "deflate", "deflate-raw", "identity", *readable_codings()[2:]]), max_size=4
    ),
    size=st.integers(min_value=0, max_value=300_000),
    cap=st.sampled_from([1_000, 65_536, 200_000]),
)
def test_every_stack_of_codings_at_every_size_is_decoded_within_the_cap(tmp_path, stack, size, cap):
    payload = _text(size)
    body = payload
    for coding in stack:
        body = encode(body, coding)
    header = ", ".join("deflate" if c == "deflate-raw" else c for c in stack)

    async def go():
        async with Loopback() as server:
            server.bodies["/p"] = ({"content-type": "text/plain", "content-encoding": header}, body)
            context = ctx(tmp_path, fetch_max_bytes=cap, http_timeout=10)
            return await read_page(context, "GET", web_url(server.url("/p")), "Fetching")

    real = [c for c in stack if c != "identity"]
    if len(real) > MAX_CODINGS:
        with pytest.raises(ToolError, match=f"at most {MAX_CODINGS} stacked encodings"):
            asyncio.run(go())
        return
    page = asyncio.run(go())
    got = page.text.encode()
    assert len(got) <= cap and payload.startswith(got)
    assert page.cut_bytes == (got != payload)
    if len(body) <= cap and size <= cap:  # nothing needed cutting
        assert got == payload


def _text(size: int) -> bytes:
    words = b"ferry harbour pier timetable sunday morning evening route "
    return (words * (size // len(words) + 1))[:size]


@pytest.mark.parametrize("header", ["compress", "x-unknown", "gzip, sdch", "gzip, gzip, gzip, gzip"])
async def test_codings_it_does_not_read_are_refused_clearly(tmp_path, header):
    async with Loopback() as server:
        server.bodies["/p"] = ({"content-type": "text/plain", "content-encoding": header}, b"whatever")
        result = await fetch(ctx(tmp_path), server.url("/p"))
    assert result.is_error
    text = result.text()
    assert "deferchat does not decode" in text or "stacked encodings" in text
    assert "Traceback" not in text


async def test_only_what_can_be_decoded_is_asked_for(tmp_path):
    seen: list[str] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append((await reader.readuntil(b"\r\n\r\n")).decode().lower())
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-type: text/plain\r\n\r\nok")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        await fetch(ctx(tmp_path), f"http://127.0.0.1:{port}/")
    finally:
        server.close()
    assert f"accept-encoding: {bounded.ACCEPT_ENCODING}".lower() in seen[0]


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    every=st.sampled_from([0.05, 0.15, 0.3]),
    count=st.integers(min_value=2, max_value=12),
    timeout=st.sampled_from([0.4, 0.8]),
    redirect_wait=st.sampled_from([0.0, 0.2]),
)
def test_a_dripping_body_is_bounded_by_one_deadline_for_the_whole_request(
    tmp_path, every, count, timeout, redirect_wait
):
    """Each byte comes well within any per-read timeout; the whole request still ends in time,
    the wait before a redirect included."""

    async def go():
        async with Loopback() as server:
            url = server.url(f"/slow-redirect?wait={redirect_wait}&every={every}&bytes={count}")
            began = time.monotonic()
            result = await fetch(ctx(tmp_path, http_timeout=timeout), url)
            return result, time.monotonic() - began

    result, elapsed = asyncio.run(go())
    needed = redirect_wait + every * count
    assert elapsed < timeout + 0.5, elapsed
    if needed > timeout + 0.1:
        assert result.is_error and f"timed out after {timeout:g} s" in result.text()
    elif needed < timeout - 0.15:
        assert not result.is_error and result.text().endswith("d" * count)


async def test_the_browser_reads_through_the_same_bounds(tmp_path):
    bomb = gzip.compress(zeros_gzip())
    async with Loopback() as server:
        server.bodies["/bomb"] = ({"content-type": "text/html", "content-encoding": "gzip, gzip"}, bomb)
        context = ctx(tmp_path, fetch_max_bytes=100_000)
        from core.builtins.data import BUILTIN_SCHEMA

        BUILTIN_SCHEMA.apply(context.db)
        navigate = get_builtin("browser.navigate")
        assert navigate is not None
        tracemalloc.start()
        try:
            result = await navigate({"url": server.url("/bomb")}, context)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert not result.is_error, result.text()
    assert peak < 20_000_000, peak
