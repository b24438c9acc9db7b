"""The MCP client: every configured server connected, listed, called and watched.

:class:`McpManager` is what the engine holds for one session::

    manager = McpManager(config, on_event=engine.emit)
    await manager.start()            # all servers in parallel, each bounded by its own timeout
    specs = manager.tools()          # discovered ToolSpecs, mcp.<server>.<tool>, sorted
    result = await manager.call(spec, {"timezone": "UTC"})   # a ToolResult, never an exception
    await manager.close()

Each server's SDK session lives in one long-lived asyncio task that enters and leaves the
transport and the ``mcp.Client`` itself, so anyio cancel scopes never cross tasks; callers
only send requests through it. That works the same from ``asyncio.run`` and from inside
Textual's loop.

What a caller sees:

* ``ServerStatus`` events through ``on_event``: ``starting``, then ``ready`` (with the tool
  count) or ``failed`` (with a message a person can act on). One server failing or timing
  out never holds the others up.
* A server that dies is reported ``failed`` at once. The call that finds it dead (or was
  running when it died) gets a clear tool error (``error_code`` ``mcp.server_crashed``) and
  the server is started again in the background for the next call; when it is back a
  ``restarted`` status follows. Restarts happen only on demand, so a server that keeps
  crashing cannot spin.
* Listings are read tool by tool (:class:`_ListingSieve`), before the SDK validates them as a
  whole: a tool with an unusable name or schema is set aside with its reason
  (:meth:`McpManager.rejected`), and the server's good tools are offered all the same.
* Values that came from ``${VAR}`` expansion never appear in a status, a report, a log line
  or an error: each server's messages pass through its config's ``redact``.
* A server from a file the user has not approved (``needs_approval``) is never started; it is
  reported ``needs_approval`` with the command that approves the file.
* ``notifications/tools/list_changed``: the server is listed again; if its tools really
  changed, ``manager.tools()`` returns the new list and a ``RosterChanged`` event says so. An
  open chat keeps the plan it pinned; only a new chat plans with the new list.

The MCP SDK is imported inside the functions that use it, so importing this module is cheap.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from core.events import RosterChanged, ServerStatus
from core.mcp.config import McpConfig, McpServerConfig, redact
from core.mcp.convert import error_result, listed_tool_problem, sort_listing, tool_result
from core.roster.models import RejectedTool
from core.tools import ToolResult, ToolSpec

log = logging.getLogger(__name__)

CLIENT_NAME = "deferchat"
CLIENT_VERSION = "0.1.0"
MAX_LIST_PAGES = 100
STDERR_TAIL = 600  # characters of a server's stderr quoted in a failure message

EventSink = Callable[[ServerStatus | RosterChanged], Awaitable[None] | None]
State = Literal["idle", "starting", "ready", "failed", "stopped", "needs_approval"]


class ServerReport(BaseModel):
    """One server as ``deferchat servers`` and the roster panel show it."""

    name: str
    transport: str
    target: str = Field(description="the command line or the URL")
    status: State
    message: str = ""
    tools: int = 0
    tool_names: list[str] = Field(default_factory=list)
    skipped: list[RejectedTool] = Field(default_factory=list, description="listed tools not offered, with reasons")
    needs_approval: str | None = Field(default=None, description="the unapproved file this server comes from")
    server_name: str | None = None
    server_version: str | None = None
    protocol_version: str | None = None
    source: str = ""
    start_ms: int | None = None
    restarts: int = 0
    list_changed: int = 0


class Discovery(BaseModel):
    """What a one-shot discovery found (``deferchat plan --mcp-config``, ``deferchat servers``)."""

    servers: list[ServerReport]
    tools: list[ToolSpec]
    rejected: list[RejectedTool] = Field(default_factory=list, description="listed tools not offered, with reasons")


# --- logs --------------------------------------------------------------------------------------

SDK_LOGGERS = ("mcp", "httpx2", "httpcore2", "httpx", "httpcore")  # they log urls, headers, requests


class _Redactor(logging.Filter):
    """Puts expanded ``${VAR}`` values back as ``${VAR}`` in log records, tracebacks included.

    Installed on this module's logger and on every logger of the MCP SDK and its HTTP client
    (their debug lines quote urls). Each manager registers its servers' secrets while it lives.
    """

    def __init__(self) -> None:
        super().__init__()
        self._secrets: dict[tuple[str, str], int] = {}

    def add(self, secrets: Iterable[tuple[str, str]]) -> None:
        for pair in secrets:
            self._secrets[pair] = self._secrets.get(pair, 0) + 1

    def remove(self, secrets: Iterable[tuple[str, str]]) -> None:
        for pair in secrets:
            left = self._secrets.get(pair, 0) - 1
            if left > 0:
                self._secrets[pair] = left
            else:
                self._secrets.pop(pair, None)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._secrets:
            return True
        pairs = sorted(self._secrets, key=lambda kv: (-len(kv[0]), kv[0]))
        text = record.getMessage()
        clean = redact(text, pairs)
        if clean != text:
            record.msg, record.args = clean, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info), pairs)
        elif record.exc_text:
            record.exc_text = redact(record.exc_text, pairs)
        return True


_REDACTOR = _Redactor()


def _guard_loggers() -> None:
    """Every logger of the SDK that exists by now (they are made at import) gets the redactor."""
    names = [n for n in list(logging.root.manager.loggerDict) if n.split(".")[0] in SDK_LOGGERS]
    for name in [__name__, *names]:
        logger = logging.getLogger(name)
        if _REDACTOR not in logger.filters:
            logger.addFilter(_REDACTOR)


# --- small helpers -----------------------------------------------------------------------------


def _leaf_errors(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for e in exc.exceptions:
            out.extend(_leaf_errors(e))
        return out
    return [exc]


def _describe_error(exc: BaseException) -> str:
    """A failure as one line: the innermost meaningful error of an exception group."""
    leaves = [e for e in _leaf_errors(exc) if not isinstance(e, asyncio.CancelledError)] or [exc]
    e = leaves[0]
    if isinstance(e, FileNotFoundError):
        return f"command not found: {e.filename or e}"
    if isinstance(e, PermissionError):
        return f"not allowed to run: {e.filename or e}"
    code = getattr(getattr(e, "error", None), "code", None)
    text = str(e) or type(e).__name__
    if code is not None:
        return f"{text} (MCP error {code})"
    return text if type(e).__name__ in text else f"{type(e).__name__}: {text}"


def _is_connection_closed(exc: BaseException) -> bool:
    from mcp_types import CONNECTION_CLOSED

    return any(getattr(getattr(e, "error", None), "code", None) == CONNECTION_CLOSED for e in _leaf_errors(exc))


def _is_timeout(exc: BaseException) -> bool:
    from mcp_types import REQUEST_TIMEOUT

    return any(
        isinstance(e, TimeoutError) or getattr(getattr(e, "error", None), "code", None) == REQUEST_TIMEOUT
        for e in _leaf_errors(exc)
    )


LISTING_METHOD = "tools/list"
FALLBACK_PROTOCOL = "2025-11-25"  # what the SDK validates against before a version is agreed


@dataclasses.dataclass
class _Page:
    cursor: str | None
    entries: list[tuple[Any, str | None]]  # (tool wire JSON, why it cannot be offered or None)


class _ListingSieve:
    """Reads each ``tools/list`` answer tool by tool before the SDK sees it.

    The SDK validates a listing as a whole, so one tool with an unusable ``inputSchema`` would
    fail the server and lose its good tools with it. Here each tool is checked on its own
    (:func:`core.mcp.convert.listed_tool_problem`, then the SDK's own schema for a listing of
    that one tool); the SDK is handed only the tools that pass, and every tool, with its
    problem if any, is kept for :meth:`take`. A malformed envelope (no ``tools`` array, a bad
    cursor) is left alone: the SDK fails that page, as it should.
    """

    def __init__(self) -> None:
        self.version: Callable[[], str | None] = lambda: None
        self._pending: dict[Any, str | None] = {}  # request id -> cursor asked for
        self._pages: list[_Page] = []

    def sent(self, item: Any) -> None:
        from mcp_types import JSONRPCRequest

        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCRequest) and message.method == LISTING_METHOD:
            cursor = (message.params or {}).get("cursor")
            self._pending[message.id] = cursor if isinstance(cursor, str) else None

    def received(self, item: Any) -> Any:
        from mcp_types import JSONRPCError, JSONRPCResponse

        message = getattr(item, "message", None) if dataclasses.is_dataclass(item) else None
        if isinstance(message, JSONRPCError):
            self._pending.pop(message.id, None)
            return item
        if not isinstance(message, JSONRPCResponse) or message.id not in self._pending:
            return item
        cursor = self._pending.pop(message.id)
        result = message.result
        tools = result.get("tools")
        envelope = {k: v for k, v in result.items() if k != "tools"}
        version = self.version() or FALLBACK_PROTOCOL
        if not isinstance(tools, list) or _listing_problem(version, {**envelope, "tools": []}) is not None:
            return item
        page = _Page(cursor, [])
        kept: list[Any] = []
        for tool in tools:
            problem = listed_tool_problem(tool)
            if problem is None:
                sdk = _listing_problem(version, {**envelope, "tools": [tool]})
                problem = None if sdk is None else f"its listing breaks the MCP schema ({sdk})"
            page.entries.append((tool, problem))
            if problem is None:
                kept.append(tool)
        self._pages.append(page)
        if len(kept) == len(tools):
            return item
        sieved = JSONRPCResponse(jsonrpc="2.0", id=message.id, result={**result, "tools": kept})
        return dataclasses.replace(item, message=sieved)

    def take(self, cursor: str | None) -> _Page | None:
        """The last page read for ``cursor``; earlier pages are dropped."""
        page = next((p for p in reversed(self._pages) if p.cursor == cursor), None)
        self._pages.clear()
        return page


def _negotiated(client: Any) -> str | None:
    try:
        return str(client.protocol_version)
    except RuntimeError:  # not connected yet (or any more)
        return None


def _listing_problem(version: str, result: dict[str, Any]) -> str | None:
    """What the SDK's schema for ``tools/list`` at ``version`` finds wrong in ``result``, if anything."""
    from mcp_types import methods
    from pydantic import ValidationError

    try:
        methods.validate_server_result(LISTING_METHOD, version, result)
    except ValidationError as e:
        first = e.errors()[0]
        loc = [str(p) for p in first["loc"]]
        if loc[:1] == ["tools"]:
            loc = loc[2:]
        return f"{'.'.join(loc) or 'the tool'}: {first['msg']}"
    except (KeyError, ValueError):
        return None  # a version or method the SDK has no schema for: nothing to hold against the tool
    return None


class _WatchedSend:
    """The transport's write stream, noting the listings asked for (see :class:`_ListingSieve`)."""

    def __init__(self, inner: Any, sieve: _ListingSieve):
        self._inner = inner
        self._sieve = sieve

    async def send(self, item: Any) -> None:
        self._sieve.sent(item)
        await self._inner.send(item)

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedSend:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _WatchedReceive:
    """The transport's read stream, telling us when it ends (the server went away), its
    listings read tool by tool on the way (see :class:`_ListingSieve`)."""

    def __init__(self, inner: Any, on_end: Callable[[], None], sieve: _ListingSieve | None = None):
        self._inner = inner
        self._on_end = on_end
        self._sieve = sieve

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        import anyio

        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise
        return item if self._sieve is None else self._sieve.received(item)

    def __aiter__(self) -> _WatchedReceive:
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

    async def __aenter__(self) -> _WatchedReceive:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@asynccontextmanager
async def _open_transport(
    server: McpServerConfig, errlog: Any, on_end: Callable[[], None], sieve: _ListingSieve
) -> AsyncIterator[tuple[_WatchedReceive, _WatchedSend]]:
    """The SDK transport for one server, its read side watched for the end of the connection
    and its listings sieved. The only place the expanded values (``endpoint()``) are used."""
    live = server.endpoint()
    if server.transport == "stdio":
        from mcp.client.stdio import StdioServerParameters, stdio_client

        assert live.command is not None
        params = StdioServerParameters(command=live.command, args=list(live.args), env=server.process_env(),
                                       cwd=live.cwd)
        async with stdio_client(params, errlog=errlog) as (read, write):
            yield _WatchedReceive(read, on_end, sieve), _WatchedSend(write, sieve)
    elif server.transport == "http":
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        assert live.url is not None
        http = httpx2.AsyncClient(headers=dict(live.headers), timeout=httpx2.Timeout(30.0, read=300.0))
        async with http, streamable_http_client(live.url, http_client=http) as (read, write):
            yield _WatchedReceive(read, on_end, sieve), _WatchedSend(write, sieve)
    else:
        from mcp.client.sse import sse_client

        assert live.url is not None
        async with sse_client(live.url, headers=dict(live.headers)) as (read, write):
            yield _WatchedReceive(read, on_end, sieve), _WatchedSend(write, sieve)


def _load_sdk() -> None:
    import mcp.client.sse
    import mcp.client.stdio
    import mcp.client.streamable_http  # noqa: F401

    import core.roster.loader  # noqa: F401

    _guard_loggers()


def _fingerprint(specs: Iterable[ToolSpec]) -> tuple[tuple[str, str, str], ...]:
    return tuple(sorted((s.name, s.content_hash(), repr(sorted(s.hints.items()))) for s in specs))


# --- one server --------------------------------------------------------------------------------


class _Conn:
    """One connection attempt: its task, its SDK client, and how it ends."""

    def __init__(self, restart: bool):
        self.restart = restart
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.stop = asyncio.Event()
        self.lost = asyncio.Event()
        self.relist = asyncio.Event()
        self.scope: Any = None  # the anyio CancelScope around the connection
        self.client: Any = None
        self.sieve = _ListingSieve()
        self.task: asyncio.Task[None] | None = None
        self.watchdog: asyncio.Task[None] | None = None
        self.failed = False
        self.crashed = False

    @property
    def up(self) -> bool:
        return self.client is not None and not self.lost.is_set() and not self.stop.is_set()

    def cancel(self) -> None:
        if self.scope is not None:
            self.scope.cancel()


class _Server:
    """One configured server: what is known of it, and its current connection."""

    def __init__(self, config: McpServerConfig, manager: McpManager):
        self.config = config
        self.name = config.name
        self.m = manager
        self.state: State = "idle"
        self.message = ""
        self.specs: tuple[ToolSpec, ...] = ()
        self.listing: list[Any] = []
        self.rejected: tuple[RejectedTool, ...] = ()
        self.list_note = ""  # something about the listing as a whole (it was cut short)
        self.server_name: str | None = None
        self.server_version: str | None = None
        self.protocol_version: str | None = None
        self.start_ms: int | None = None
        self.restarts = 0
        self.list_changed = 0
        self.conn: _Conn | None = None
        self._log_path = manager._log_dir / f"{self.name}.stderr.log"

    # -- reporting --------------------------------------------------------------------------------

    def report(self) -> ServerReport:
        return ServerReport(
            name=self.name,
            transport=self.config.transport,
            target=self.config.redact(self.config.describe()),
            status=self.state,
            message=self.config.redact(self.message),
            tools=len(self.specs),
            tool_names=[s.name for s in self.specs],
            skipped=list(self.rejected),
            needs_approval=self.config.needs_approval,
            server_name=self.server_name,
            server_version=self.server_version,
            protocol_version=self.protocol_version,
            source=self.config.source,
            start_ms=self.start_ms,
            restarts=self.restarts,
            list_changed=self.list_changed,
        )

    async def _status(self, status: str, message: str = "") -> None:
        event = ServerStatus(server=self.name, status=status, tools=len(self.specs),
                             message=self.config.redact(message))
        await self.m._emit(event)

    async def hold_for_approval(self) -> None:
        """A server from a file the user has not approved: reported, never started."""
        from core.mcp.approval import approve_command

        file = self.config.needs_approval or self.config.source
        self.state = "needs_approval"
        self.message = (f"needs approval: it comes from {file}, a project file you have not approved; nothing in it "
                        f"runs until you do. Review and approve it with: {approve_command(file)}")
        await self._status("needs_approval", self.message)

    def _stderr_tail(self) -> str:
        try:
            text = self._log_path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return ""
        if not text:
            return ""
        tail = text[-STDERR_TAIL:]
        return f"; its stderr ends: {tail if len(text) <= STDERR_TAIL else '...' + tail}"

    # -- lifecycle --------------------------------------------------------------------------------

    def launch(self, *, restart: bool = False) -> _Conn:
        """Start a connection task. Its ``ready`` resolves when it is up or has failed."""
        previous = self.conn
        conn = _Conn(restart)
        self.conn = conn
        self.state = "starting"
        self.message = "restarting" if restart else "connecting"
        conn.task = asyncio.get_running_loop().create_task(self._run(conn, previous), name=f"mcp:{self.name}")
        conn.watchdog = asyncio.get_running_loop().create_task(self._watchdog(conn), name=f"mcp:{self.name}:timeout")
        return conn

    async def _watchdog(self, conn: _Conn) -> None:
        try:
            await asyncio.wait_for(asyncio.shield(conn.ready), self.config.timeout)
        except TimeoutError:
            conn.cancel()
            await self._fail(conn, f"did not start within {self.config.timeout:g}s (timeout){self._stderr_tail()}")

    async def _run(self, conn: _Conn, previous: _Conn | None) -> None:
        import anyio

        if previous is not None and previous.task is not None and not previous.task.done():
            previous.stop.set()
            await asyncio.wait([previous.task])  # the old process is reaped before a new one starts
        await self._status("starting", "restarting after a crash" if conn.restart else "connecting")
        if self.m._sdk is not None:
            await asyncio.shield(self.m._sdk)
        if self.config.error:
            await self._fail(conn, self.config.error)
            return
        began = time.monotonic()
        try:
            with anyio.CancelScope() as scope, open(self._log_path, "a", encoding="utf-8") as errlog:
                conn.scope = scope
                await self._connect(conn, errlog, began)
        except Exception as exc:
            if conn.ready.done() and not conn.failed:
                await self._crashed(conn)  # it was up: it broke while running
            else:
                detail = _describe_error(exc)
                if _is_connection_closed(exc):
                    detail = "the server exited before finishing the MCP handshake"
                if self.config.transport != "stdio":
                    detail = f"cannot use {self.config.url}: {detail}"  # the url as written, never expanded
                await self._fail(conn, self.config.redact(detail + self._stderr_tail()))
        finally:
            conn.client = None
            conn.scope = None
            if not conn.ready.done():  # cancelled before it was up (close() during start)
                await self._fail(conn, "stopped before it was ready")
            if conn.watchdog is not None:
                conn.watchdog.cancel()

    async def _fail(self, conn: _Conn, message: str) -> None:
        """The connection never came up."""
        if conn.failed or conn.crashed:
            return
        conn.failed = True
        if not conn.ready.done():
            conn.ready.set_result(None)
        if self.conn is conn:
            self.state = "failed"
            self.message = message
            self.specs = ()
            await self._status("failed", message)

    async def _crashed(self, conn: _Conn) -> None:
        """The connection was up and broke (not by our hand). Tools are kept: a call restarts it."""
        conn.lost.set()
        if conn.crashed or conn.failed or conn.stop.is_set():
            return
        conn.crashed = True
        if self.conn is conn:
            self.state = "failed"
            self.message = (
                "the server stopped unexpectedly (its process exited or the connection dropped); "
                "it will be restarted for the next call" + self._stderr_tail()
            )
            await self._status("failed", self.message)

    async def _connect(self, conn: _Conn, errlog: Any, began: float) -> None:
        import anyio
        from mcp import Client
        from mcp_types import Implementation

        async def on_message(message: Any) -> None:
            if getattr(message, "method", None) == "notifications/tools/list_changed":
                self.list_changed += 1
                conn.relist.set()

        _guard_loggers()  # the transport's modules are loaded now
        sieve = _ListingSieve()
        transport = _open_transport(self.config, errlog, conn.lost.set, sieve)
        client = Client(
            transport,
            cache=None,
            message_handler=on_message,
            client_info=Implementation(name=CLIENT_NAME, version=CLIENT_VERSION),
        )
        sieve.version = lambda: _negotiated(client)
        conn.sieve = sieve
        async with client:
            specs, rejected, listing = await self._list(client, sieve)
            if conn.failed:  # the watchdog gave up on it meanwhile
                return
            info = client.server_info
            self.specs, self.rejected, self.listing = specs, rejected, listing
            self.server_name = info.name if info else None
            self.server_version = info.version if info else None
            self.protocol_version = client.protocol_version
            self.start_ms = int((time.monotonic() - began) * 1000)
            conn.client = client
            self.state = "ready"
            self.message = self._ready_message()
            if conn.restart:
                self.restarts += 1
            conn.ready.set_result(None)
            await self._status("restarted" if conn.restart else "ready", self.message)

            async with anyio.create_task_group() as tg:
                tg.start_soon(self._relist_worker, conn)
                caps = client.server_capabilities
                if caps.tools is not None and caps.tools.list_changed:
                    tg.start_soon(self._listen, client)
                waits = [asyncio.ensure_future(conn.stop.wait()), asyncio.ensure_future(conn.lost.wait())]
                try:
                    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for w in waits:
                        w.cancel()
                tg.cancel_scope.cancel()
            conn.client = None
        if conn.stop.is_set():
            if self.conn is conn:
                self.state = "stopped"
                self.message = ""
                await self._status("stopped")
        else:
            await self._crashed(conn)

    def _ready_message(self) -> str:
        n = len(self.specs)
        text = f"{n} tool{'' if n == 1 else 's'}"
        if self.rejected:
            k = len(self.rejected)
            text += (f"; {k} listed tool{'' if k == 1 else 's'} skipped: "
                     + "; ".join(f"{r.name} ({r.reason})" for r in self.rejected))
        return text + (f"; {self.list_note}" if self.list_note else "")

    async def _list(
        self, client: Any, sieve: _ListingSieve
    ) -> tuple[tuple[ToolSpec, ...], tuple[RejectedTool, ...], list[Any]]:
        """Every page of the server's listing, each tool offered or rejected with its reason."""
        entries: list[tuple[Any, str | None]] = []
        cursor: str | None = None
        self.list_note = ""
        for _ in range(MAX_LIST_PAGES):
            sieve.take(cursor)  # forget pages nobody collected (an SDK-internal re-listing)
            page = await client.list_tools(cursor=cursor)
            read = sieve.take(cursor)
            if read is None:  # not seen by the sieve: take what the SDK parsed
                entries += [(t.model_dump(by_alias=True, mode="json", exclude_none=True), None) for t in page.tools]
            else:
                kept = {t.name for t in page.tools}
                for tool, problem in read.entries:
                    if problem is None and tool.get("name") not in kept:
                        problem = "the MCP SDK dropped it from the listing (an invalid x-mcp-header in its inputSchema)"
                    entries.append((tool, problem))
            cursor = page.next_cursor
            if not cursor:
                break
        else:
            self.list_note = f"its listing was read for {MAX_LIST_PAGES} pages and then cut short"
        specs, rejected = sort_listing(self.name, entries)
        return tuple(specs), tuple(rejected), [tool for tool, _ in entries]

    async def _listen(self, client: Any) -> None:
        """2026-era servers send list_changed only on a ``subscriptions/listen`` stream."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return  # earlier servers send the notification unasked
        try:
            async with client.listen(tools_list_changed=True) as sub:
                async for _ in sub:  # the notification also reaches on_message, which re-lists
                    pass
        except Exception as exc:
            log.info("MCP server %s: tools/list_changed subscription ended: %s", self.name,
                     self.config.redact(_describe_error(exc)))

    async def _relist_worker(self, conn: _Conn) -> None:
        import anyio

        while True:
            await conn.relist.wait()
            conn.relist.clear()
            try:
                with anyio.fail_after(self.config.timeout):
                    specs, rejected, listing = await self._list(conn.client, conn.sieve)
            except Exception as exc:
                log.info("MCP server %s: re-listing tools failed: %s", self.name,
                         self.config.redact(_describe_error(exc)))
                continue
            self.listing = listing
            if _fingerprint(specs) == _fingerprint(self.specs) and rejected == self.rejected:
                continue
            if _fingerprint(specs) == _fingerprint(self.specs):
                self.rejected = rejected
                self.message = self._ready_message()
                continue
            before = {s.name: s.content_hash() for s in self.specs}
            after = {s.name: s.content_hash() for s in specs}
            added = sorted(set(after) - set(before))
            removed = sorted(set(before) - set(after))
            changed = sorted(n for n in set(before) & set(after) if before[n] != after[n])
            self.specs, self.rejected = specs, rejected
            self.message = self._ready_message()
            parts = [f"{label}: {', '.join(names)}" for label, names in
                     (("added", added), ("removed", removed), ("changed", changed)) if names]
            await self.m._emit(RosterChanged(
                server=self.name,
                message=f"{self.name} now offers {len(specs)} tools ({'; '.join(parts) or 'hints changed'}). "
                "The open chat keeps its plan; a new chat will pick this up.",
            ))

    # -- calls ------------------------------------------------------------------------------------

    async def _usable(self) -> _Conn | ToolResult:
        """The connection a call can use, or the error the call gets (a restart is then under way)."""
        conn = self.conn
        if conn is not None and self.state == "starting":
            try:
                await asyncio.wait_for(asyncio.shield(conn.ready), self.config.timeout + 1)
            except TimeoutError:
                pass
            conn = self.conn
        if conn is not None and conn.up:
            return conn
        if self.config.needs_approval:
            return error_result("mcp.needs_approval", self.config.redact(
                f"MCP server {self.name!r} is not started: it comes from {self.config.needs_approval}, which the "
                "user has not approved."))
        if self.config.error:
            return error_result("mcp.server_unavailable", f"MCP server {self.name!r} cannot start: {self.config.error}")
        if conn is not None and not conn.crashed and conn.lost.is_set() and not conn.failed:
            await self._crashed(conn)  # dropped a moment ago; its task has not caught up yet
        crashed = conn is not None and conn.crashed
        was = self.message or "it is not running"
        if self.state != "starting" and not self.m._closed:
            self.launch(restart=True)
        if crashed:
            return error_result(
                "mcp.server_crashed",
                f"MCP server {self.name!r} stopped unexpectedly before this call. "
                "deferchat is restarting it; a later call can try again.",
            )
        return error_result(
            "mcp.server_unavailable",
            f"MCP server {self.name!r} is not running ({was}). deferchat is starting it again; "
            "a later call can try again.",
        )

    async def call(self, spec: ToolSpec, arguments: Mapping[str, Any] | None, timeout: float | None) -> ToolResult:
        result = await self._call(spec, arguments, timeout)
        if result.is_error:  # a failure's text may quote a url or an argument: no expanded secret in it
            result = result.model_copy(update={"content": [
                {**b, "text": self.config.redact(b["text"])} if isinstance(b.get("text"), str) else b
                for b in result.content]})
        return result

    async def _call(self, spec: ToolSpec, arguments: Mapping[str, Any] | None, timeout: float | None) -> ToolResult:
        conn = await self._usable()
        if isinstance(conn, ToolResult):
            return conn
        remote = spec.remote_name or spec.name.rsplit(".", 1)[-1]
        limit = timeout if timeout is not None else self.config.call_timeout
        try:
            result = await conn.client.call_tool(remote, dict(arguments or {}), read_timeout_seconds=limit)
        except Exception as exc:
            if _is_connection_closed(exc) or conn.lost.is_set():
                await self._crashed(conn)
                if self.conn is conn and not self.m._closed:
                    self.launch(restart=True)
                return error_result(
                    "mcp.server_crashed",
                    f"MCP server {self.name!r} stopped during {spec.name}; whether the call took effect is "
                    "unknown. deferchat is restarting the server; a later call can try again.",
                )
            if _is_timeout(exc):
                return error_result(
                    "mcp.timeout",
                    f"{spec.name} got no answer from MCP server {self.name!r} within {limit:g}s; the server was "
                    "asked to cancel it. Whether it took effect is unknown.",
                )
            return error_result("mcp.error", f"{spec.name} failed in MCP server {self.name!r}: {_describe_error(exc)}")
        return tool_result(result.model_dump(by_alias=True, mode="json", exclude_none=True))


# --- the manager -------------------------------------------------------------------------------


class McpManager:
    """All MCP servers of one session. See the module docstring for the contract."""

    def __init__(
        self,
        config: McpConfig | Iterable[McpServerConfig],
        *,
        on_event: EventSink | None = None,
        log_dir: str | Path | None = None,
    ):
        servers = config.servers if isinstance(config, McpConfig) else tuple(config)
        self._on_event = on_event
        self._own_log_dir = log_dir is None
        self._log_dir = Path(tempfile.mkdtemp(prefix="deferchat-mcp-")) if log_dir is None else Path(log_dir)
        self._log_dir.mkdir(parents=True, exist_ok=True)
        self._servers = {s.name: _Server(s, self) for s in sorted(servers, key=lambda s: s.name)}
        self._secrets = [pair for s in self._servers.values() for pair in s.config.secrets]
        _REDACTOR.add(self._secrets)
        self._started = False
        self._closed = False
        self._sdk: asyncio.Future[None] | None = None

    async def __aenter__(self) -> McpManager:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _emit(self, event: ServerStatus | RosterChanged) -> None:
        if self._on_event is None:
            return
        try:
            out = self._on_event(event)
            if inspect.isawaitable(out):
                await out
        except Exception:
            log.exception("MCP event subscriber failed on %s", event.type)

    async def start(self) -> list[ServerReport]:
        """Connect to every server in parallel; return when each is ready or has failed.

        Each server is bounded by its own ``timeout``, so this returns within the largest one.
        """
        if self._started:
            return self.servers()
        self._started = True
        # Import the SDK off the event loop (a Textual UI keeps drawing); connections wait for it.
        self._sdk = asyncio.ensure_future(asyncio.to_thread(_load_sdk))
        for held in (s for s in self._servers.values() if s.config.needs_approval):
            await held.hold_for_approval()
        conns = [s.launch() for s in self._servers.values() if not s.config.needs_approval]
        if conns:
            await asyncio.gather(*(asyncio.shield(c.ready) for c in conns))
        return self.servers()

    def tools(self) -> list[ToolSpec]:
        """Discovered tools of every ready server, sorted by name (byte-stable)."""
        return sorted((spec for s in self._servers.values() for spec in s.specs), key=lambda t: t.name)

    def rejected(self) -> list[RejectedTool]:
        """Tools the servers listed but deferchat cannot offer, each with its reason, sorted by
        name. Hand them to the planner (``PlanInput.rejected``): nothing leaves the roster silently."""
        return sorted((r for s in self._servers.values() for r in s.rejected), key=lambda r: r.name)

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools() if t.name == name), None)

    def servers(self) -> list[ServerReport]:
        return [s.report() for s in self._servers.values()]

    def listing(self, server: str) -> list[Any]:
        """The server's last ``tools/list`` answer, every tool verbatim wire JSON (camelCase),
        the rejected ones included."""
        s = self._servers.get(server)
        return list(s.listing) if s is not None else []

    async def call(
        self,
        tool: ToolSpec | str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> ToolResult:
        """Call a discovered tool. Failures come back as ``ToolResult(is_error=True)``.

        ``tool`` is the ToolSpec the chat pinned (its ``server`` and ``remote_name`` are used,
        so a pinned spec keeps working after a list change) or a ``mcp.<server>.<tool>`` name.
        ``error_code`` is set when deferchat, not the tool, failed: ``mcp.unknown_server``,
        ``mcp.server_unavailable``, ``mcp.server_crashed``, ``mcp.timeout``, ``mcp.error``.
        """
        spec = tool if isinstance(tool, ToolSpec) else self.tool(tool)
        if spec is None:
            name = str(tool)
            parts = name.split(".", 2)
            if len(parts) == 3 and parts[0] == "mcp" and parts[1] in self._servers:
                if self._servers[parts[1]].state == "ready":
                    return error_result("mcp.error", f"MCP server {parts[1]!r} does not offer a tool {parts[2]!r}.")
                from core.tools import Origin

                spec = ToolSpec(name=name, origin=Origin.DISCOVERED, server=parts[1], remote_name=parts[2])
            else:
                return error_result("mcp.unknown_server", f"{name} is not a tool of any connected MCP server.")
        server = self._servers.get(spec.server or "")
        if server is None:
            return error_result(
                "mcp.unknown_server", f"{spec.name}: MCP server {spec.server!r} is not configured in this session."
            )
        if self._closed:
            return error_result("mcp.server_unavailable", f"{spec.name}: the MCP session is closed.")
        return await server.call(spec, arguments, timeout)

    async def close(self, timeout: float = 10.0) -> None:
        """Stop every server (stdin closed, then terminate and kill, each bounded) and wait for them."""
        if self._closed:
            return
        self._closed = True
        conns = [s.conn for s in self._servers.values() if s.conn is not None]
        for c in conns:
            c.stop.set()
            if not c.ready.done():
                c.cancel()  # still starting: nothing to wind down gracefully
        tasks = [t for c in conns for t in (c.task, c.watchdog) if t is not None and not t.done()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=timeout)
            if pending:
                for c in conns:
                    c.cancel()
                await asyncio.wait(pending, timeout=5)
        if self._own_log_dir:
            shutil.rmtree(self._log_dir, ignore_errors=True)
        _REDACTOR.remove(self._secrets)


async def discover(
    config: McpConfig | Iterable[McpServerConfig],
    *,
    on_event: EventSink | None = None,
) -> Discovery:
    """Start every server, take their tools and statuses, stop them."""
    async with McpManager(config, on_event=on_event) as manager:
        return Discovery(servers=manager.servers(), tools=manager.tools(), rejected=manager.rejected())
