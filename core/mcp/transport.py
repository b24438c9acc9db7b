"""One server's transport: stdio, streamable HTTP or SSE, opened with the expanded values, or
the SDK's in-memory transport to a server that runs in this process.

The SDK's streams are wrapped: the read side tells the connection when it ends (the server
went away) and both sides feed the :class:`core.mcp.sieve.ListingSieve`, whichever the
transport: an in-process server is spoken to over the same JSON-RPC messages as one in a
process. :func:`open_transport` is the only place the expanded values of a config
(``endpoint()``) are used.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from core.mcp.config import McpServerConfig
from core.mcp.logs import guard_loggers
from core.mcp.sieve import ListingSieve

ServerFactory = Callable[[], Any]
"""Builds an SDK server object (``mcp.server.mcpserver.MCPServer`` or a low-level ``Server``)
that runs in this process. Called off the event loop (it may open files), once per start."""


class WatchedSend:
    """The transport's write stream, noting the listings asked for (see :class:`ListingSieve`)."""

    def __init__(self, inner: Any, sieve: ListingSieve):
        self._inner = inner
        self._sieve = sieve

    async def send(self, item: Any) -> None:
        self._sieve.sent(item)
        await self._inner.send(item)

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> WatchedSend:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class WatchedReceive:
    """The transport's read stream, telling us when it ends (the server went away), its
    listings read tool by tool on the way (see :class:`ListingSieve`).

    A transport of the SDK hands the session a parse failure as an exception item: one the SDK's
    parser gave up on for its depth is read here instead (:func:`core.mcp.wire.repaired`);
    any other is dropped and logged, the message it was lost with (a session passes such an
    item to nobody who could use it)."""

    def __init__(self, inner: Any, on_end: Callable[[], None], sieve: ListingSieve | None = None, server: str = ""):
        self._inner = inner
        self._on_end = on_end
        self._sieve = sieve
        self._server = server

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        import anyio

        while True:
            try:
                item = await self._inner.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._on_end()
                raise
            if isinstance(item, Exception):
                item = self._read_failure(item)
                if item is None:
                    continue
            return item if self._sieve is None else self._sieve.received(item)

    def _read_failure(self, exc: Exception) -> Any:
        from core.mcp.errors import describe_error
        from core.mcp.logs import log
        from core.mcp.wire import Dropped, refusal, repaired

        item = repaired(exc)
        if item is None:
            item = Dropped(f"a message the transport could not read ({describe_error(exc)[:200]})")
        if not isinstance(item, Dropped):
            return item
        log.info("MCP server %s: dropped %s", self._server, item.reason)
        return refusal(item.id, item.reason) if item.id is not None else None

    def __aiter__(self) -> WatchedReceive:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> WatchedReceive:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@asynccontextmanager
async def open_transport(
    server: McpServerConfig,
    errlog: Any,
    on_end: Callable[[], None],
    sieve: ListingSieve,
    *,
    local: ServerFactory | None = None,
    built: Any = None,
    sign_in: Any = None,
    tool_settings: Mapping[str, Any] | None = None,
    on_auth: Callable[[Any], None] | None = None,
) -> AsyncIterator[tuple[WatchedReceive, WatchedSend]]:
    """The SDK transport for one server, its read side watched for the end of the connection
    and its listings sieved. The only place the expanded values (``endpoint()``) are used.

    ``local``: the server runs in this process, built by that factory and reached over the
    SDK's in-memory transport (the config's command is not run). ``built``: what
    :func:`load_sdk` built ahead with ``local`` (the server, or the exception building it
    raised), used instead of building it again; None: nothing was built ahead.

    A remote server is reached through :func:`core.mcp.oauth.flow.remote_auth`: every request
    guarded, and signed in to with OAuth when it asks (``sign_in``: a
    :class:`~core.mcp.oauth.flow.SignIn`, the person may be asked; None: they are not).
    ``on_auth`` receives the connection's sign-in hooks (None when the entry sends its own
    ``Authorization``)."""
    if local is not None:
        async with _in_process(local, built) as (read, write):
            yield WatchedReceive(read, on_end, sieve, server.name), WatchedSend(write, sieve)
        return
    live = server.endpoint()
    if server.transport == "stdio":
        from core.mcp.stdio import stdio_transport

        assert live.command is not None
        cwd = str(live.cwd) if live.cwd is not None else None
        async with stdio_transport(
            live.command, list(live.args), server.process_env(), cwd, errlog, server=server.name
        ) as (read, write):
            yield WatchedReceive(read, on_end, sieve, server.name), WatchedSend(write, sieve)
        return
    from core.mcp.oauth.flow import remote_auth

    assert live.url is not None
    async with remote_auth(server, sign_in=sign_in, tool_settings=tool_settings) as auth:
        if on_auth is not None:
            on_auth(auth.hooks)
        if server.transport == "http":
            from mcp.client.streamable_http import streamable_http_client

            async with (
                auth.client(live.headers) as http,
                streamable_http_client(live.url, http_client=http) as (read, write),
            ):
                yield WatchedReceive(read, on_end, sieve, server.name), WatchedSend(write, sieve)
        else:
            from mcp.client.sse import sse_client

            async with sse_client(
                live.url, headers=dict(live.headers), auth=auth.provider, httpx_client_factory=auth.client
            ) as (read, write):
                yield WatchedReceive(read, on_end, sieve, server.name), WatchedSend(write, sieve)


@asynccontextmanager
async def _in_process(factory: ServerFactory, built: Any = None) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's in-memory transport to ``built`` (a server built ahead, or the exception
    building it raised, raised here), or, with nothing built ahead, to a server ``factory``
    builds now, off the event loop: the server's loop runs in a task of this connection, so it
    starts and ends with it."""
    import anyio.to_thread
    from mcp.client._memory import InMemoryTransport  # what mcp.Client(server) uses

    if isinstance(built, Exception):
        raise built
    if built is None:
        built = await anyio.to_thread.run_sync(_quiet_build, factory)
    async with InMemoryTransport(built) as (read, write):
        yield read, write


def _quiet_build(factory: ServerFactory) -> Any:
    """``factory()`` without the SDK's ``MCPServer`` configuring this process's root logger
    (it calls ``logging.basicConfig`` with a handler on stderr, fit for a server process of
    its own, not for the process the app draws in): basicConfig does nothing while the root
    logger has a handler, so one stands in while the server is built."""
    import logging

    stand_in = logging.NullHandler()
    logging.root.addHandler(stand_in)
    try:
        return factory()
    finally:
        logging.root.removeHandler(stand_in)


def load_sdk(ahead: Mapping[str, ServerFactory] | None = None) -> dict[str, Any]:
    """Import the SDK (off the event loop), then build the in-process servers ``ahead`` while
    the loop still has nothing for them: ``{name: server}``, or the exception that building
    one raised (its connection fails with it)."""
    import mcp.client.sse
    import mcp.client.stdio
    import mcp.client.streamable_http  # noqa: F401

    import core.mcp.stdio
    import core.mcp.wire
    import core.roster.loader  # noqa: F401

    guard_loggers()
    built: dict[str, Any] = {}
    for name, factory in (ahead or {}).items():
        try:
            built[name] = _quiet_build(factory)
        except Exception as exc:
            built[name] = exc
    return built
