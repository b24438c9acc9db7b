"""A hostile MCP server over HTTP costs what it sends, as one on stdio does.

A raw loopback server (asyncio, HTTP/1.1, JSON answers: what the streamable-HTTP transport
accepts) answers the SDK's client with a listing one of whose tools nests a thousand levels (the
SDK's parser would lose the whole answer), a listing gzipped twice over a gibibyte of zeros,
an answer larger than deferchat reads and an answer in a coding it does not decode.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import time
import tracemalloc
import zlib
from typing import Any

import pytest

from core.limits import MAX_JSON_DEPTH
from core.mcp import wire
from core.mcp.client import McpManager
from core.mcp.config import config_from_dict

GOOD = [{"name": "echo", "inputSchema": {"type": "object"}}, {"name": "add", "inputSchema": {"type": "object"}}]


def deep_tool(depth: int) -> str:
    schema = '{"type":"object","properties":{"a":' * depth + '{"type":"string"}' + "}}" * depth
    return '{"name":"deep","inputSchema":' + schema + "}"


def zeros_gzip(size: int) -> bytes:
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    return b"".join(comp.compress(block) for _ in range(size >> 20)) + comp.flush()


class RawMcp:
    """Just enough of MCP over HTTP; ``answers[method]`` overrides the next answer to ``method``:
    ``(headers, body)``, ``@ID@`` in the body standing for the request's id."""

    def __init__(self) -> None:
        self.answers: dict[str, tuple[dict[str, str], bytes]] = {}
        self.port = 0

    async def __aenter__(self) -> RawMcp:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode()
                lines = head.split("\r\n")
                verb = lines[0].split(" ", 1)[0]
                headers = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if ":" in x)}
                size = int(headers.get("content-length", "0"))
                body = await reader.readexactly(size) if size else b""
                if verb != "POST":
                    writer.write(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
                    await writer.drain()
                    continue
                message = json.loads(body)
                if "id" not in message:
                    writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
                    await writer.drain()
                    continue
                extra, out = self._answer(message)
                head_lines = "".join(f"{k}: {v}\r\n" for k, v in {"content-type": "application/json", **extra}.items())
                writer.write(f"HTTP/1.1 200 OK\r\n{head_lines}content-length: {len(out)}\r\n\r\n".encode() + out)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def _answer(self, message: dict[str, Any]) -> tuple[dict[str, str], bytes]:
        method, request_id = message["method"], message["id"]
        if method == "initialize":
            result: Any = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"},
            }
        elif method in self.answers:
            headers, template = self.answers.pop(method)
            return headers, template.replace(b"@ID@", json.dumps(request_id).encode())
        elif method == "tools/list":
            result = {"tools": GOOD}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": f"called {message['params']['name']}"}]}
        else:
            error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no such method"}}
            return {}, json.dumps(error).encode()
        return {}, json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


async def start(server: RawMcp) -> tuple[McpManager, Any]:
    config = config_from_dict({"mcpServers": {"raw": {"url": server.url, "timeout": 10}}}, source="raw.json")
    manager = McpManager(config)
    await manager.start()
    return manager, manager.servers()[0]


def listing(*tools: str) -> bytes:
    return b'{"jsonrpc":"2.0","id":@ID@,"result":{"tools":[' + ",".join(tools).encode() + b"]}}"


async def test_a_tool_nested_a_thousand_levels_costs_that_tool_only_over_http():
    async with RawMcp() as server:
        good = [json.dumps(t) for t in GOOD]
        server.answers["tools/list"] = ({}, listing(good[0], deep_tool(1000), good[1]))
        manager, report = await start(server)
        try:
            assert report.status == "ready", report.message
            assert sorted(report.tool_names) == ["mcp.raw.add", "mcp.raw.echo"]
            [skipped] = report.skipped
            assert skipped.name == "mcp.raw.deep" and f"deeper than {MAX_JSON_DEPTH} levels" in skipped.reason
            assert (await manager.call("mcp.raw.echo", {})).text() == "called echo"
        finally:
            await manager.close()


async def test_a_compressed_bomb_is_refused_in_bounded_memory(monkeypatch):
    monkeypatch.setattr(wire, "MAX_MESSAGE_BYTES", 1_000_000)
    bomb = gzip.compress(zeros_gzip(1 << 30))
    async with RawMcp() as server:
        server.answers["tools/call"] = ({"content-encoding": "gzip, gzip"}, bomb)
        manager, report = await start(server)
        try:
            assert report.status == "ready", report.message
            tracemalloc.start()
            try:
                began = time.monotonic()
                result = await manager.call("mcp.raw.echo", {})
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert result.is_error and "more than 1000000 bytes" in result.text()
            assert peak < 30_000_000, peak
            assert time.monotonic() - began < 5
            assert (await manager.call("mcp.raw.add", {})).text() == "called add"  # the server is still there
        finally:
            await manager.close()


@pytest.mark.parametrize("coding", ["compress", "gzip, gzip, gzip, gzip"])
async def test_a_coding_it_does_not_read_fails_that_call_only(coding):
    async with RawMcp() as server:
        server.answers["tools/call"] = ({"content-encoding": coding}, b"garbage")
        manager, report = await start(server)
        try:
            assert report.status == "ready"
            result = await manager.call("mcp.raw.echo", {})
            assert result.is_error and "Traceback" not in result.text()
        finally:
            await manager.close()


@pytest.mark.parametrize("transport", ["sse", "http"])
async def test_a_token_in_a_url_is_never_shown_however_httpx_spells_it(monkeypatch, caplog, transport):
    """The token needs percent-encoding (a space, a slash, a plus, an accent): whatever httpx and
    the SDK write in their errors and logs, only ``${TOK}`` is shown."""
    import logging

    from tests.mcp.conftest import free_port

    caplog.set_level(logging.DEBUG)
    token = "tok en/with+plus=é-9f2c71Q"
    monkeypatch.setenv("TOK", token)
    url = f"http://127.0.0.1:{free_port()}/sse?token=${{TOK}}&other=1"
    config = config_from_dict({"mcpServers": {"s": {"type": transport, "url": url, "timeout": 5}}}, source="s.json")
    manager = McpManager(config)
    try:
        await manager.start()
        report = manager.servers()[0]
        call = await manager.call("mcp.s.anything", {})
    finally:
        await manager.close()
    shown = [report.model_dump_json(), report.message, call.text(), *(r.getMessage() for r in caplog.records)]
    shown += [r.exc_text or "" for r in caplog.records]
    from urllib.parse import quote, quote_plus

    import httpx

    spellings = {
        token,
        quote(token, safe=""),
        quote(token),
        quote_plus(token),
        httpx.URL("http://h/", params={"token": token}).query.decode().partition("=")[2],
        quote(token, safe="").lower(),
    }
    for text in shown:
        for spelled in spellings:
            assert spelled not in text, (spelled, text)
    assert report.status == "failed" and "${TOK}" in report.message
