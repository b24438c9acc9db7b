"""One configured MCP server: its connection's lifecycle, its listing, and its calls.

A :class:`Server` holds what is known of one server (state, tools, rejected tools, versions)
and its current :class:`Conn`, one connection attempt run in one long-lived asyncio task
that enters and leaves the transport and the ``mcp.Client`` itself, so anyio cancel scopes
never cross tasks. It starts, fails, crashes and restarts as :mod:`core.mcp.client`
describes; the manager that holds it (a :class:`ServerHost`) gives it the event sink.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from core.events import RosterChanged, ServerStatus
from core.mcp.config import McpServerConfig
from core.mcp.convert import error_result, sort_listing, tool_result
from core.mcp.errors import describe_error, is_connection_closed, is_timeout
from core.mcp.logs import StderrLog, guard_loggers, log
from core.mcp.reports import ServerReport, State
from core.mcp.sieve import ListingSieve, negotiated
from core.mcp.transport import ServerFactory, open_transport
from core.roster.models import RejectedTool
from core.tools import ToolResult, ToolSpec

CLIENT_NAME = "deferchat"
CLIENT_VERSION = "0.1.0"
MAX_LIST_PAGES = 100
STDERR_TAIL = 600  # characters of a server's stderr quoted in a failure message


class ServerHost(Protocol):
    """What a server needs of the manager that holds it."""

    @property
    def closed(self) -> bool:
        """The session is closing: no more restarts."""
        ...

    async def emit(self, event: ServerStatus | RosterChanged) -> None: ...

    async def sdk_loaded(self) -> dict[str, Any]:
        """Returns once the MCP SDK is imported (it is imported off the event loop), with the
        in-process servers built alongside: ``{name: server}``, each to be used once."""
        ...


def _fingerprint(specs: Iterable[ToolSpec]) -> tuple[tuple[str, str, str], ...]:
    return tuple(sorted((s.name, s.content_hash(), repr(sorted(s.hints.items()))) for s in specs))


class Conn:
    """One connection attempt: its task, its SDK client, and how it ends."""

    def __init__(self, restart: bool):
        self.restart = restart
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.stop = asyncio.Event()
        self.lost = asyncio.Event()
        self.relist = asyncio.Event()
        self.scope: Any = None  # the anyio CancelScope around the connection
        self.client: Any = None
        self.sieve = ListingSieve()
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


class Server:
    """One configured server: what is known of it, and its current connection."""

    def __init__(self, config: McpServerConfig, host: ServerHost, log_dir: Path, local: ServerFactory | None = None):
        self.config = config
        self.local = local  # runs in this process (see open_transport)
        self.name = config.name
        self.host = host
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
        self.conn: Conn | None = None
        self._stderr = StderrLog(log_dir / f"{self.name}.stderr.log")  # bounded on disk

    # -- reporting --------------------------------------------------------------------------------

    def report(self) -> ServerReport:
        return ServerReport(
            name=self.name,
            transport="in-process" if self.local is not None else self.config.transport,
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
        event = ServerStatus(
            server=self.name, status=status, tools=len(self.specs), message=self.config.redact(message)
        )
        await self.host.emit(event)

    async def hold_for_approval(self) -> None:
        """A server from a file the user has not approved: reported, never started."""
        from core.mcp.approval import approve_command

        file = self.config.needs_approval or self.config.source
        self.state = "needs_approval"
        self.message = (
            f"needs approval: it comes from {file}, a project file you have not approved; nothing in it "
            f"runs until you do. Review and approve it with: {approve_command(file)}"
        )
        await self._status("needs_approval", self.message)

    def _stderr_tail(self) -> str:
        tail, cut = self._stderr.tail(STDERR_TAIL, self.config.secrets)
        if not tail:
            return ""
        return f"; its stderr ends: {'...' + tail if cut else tail}"

    # -- lifecycle --------------------------------------------------------------------------------

    def launch(self, *, restart: bool = False) -> Conn:
        """Start a connection task. Its ``ready`` resolves when it is up or has failed."""
        previous = self.conn
        conn = Conn(restart)
        self.conn = conn
        self.state = "starting"
        self.message = "restarting" if restart else "connecting"
        conn.task = asyncio.get_running_loop().create_task(self._run(conn, previous), name=f"mcp:{self.name}")
        conn.watchdog = asyncio.get_running_loop().create_task(self._watchdog(conn), name=f"mcp:{self.name}:timeout")
        return conn

    async def _watchdog(self, conn: Conn) -> None:
        try:
            await asyncio.wait_for(asyncio.shield(conn.ready), self.config.timeout)
        except TimeoutError:
            conn.cancel()
            await self._fail(conn, f"did not start within {self.config.timeout:g}s (timeout){self._stderr_tail()}")

    async def _run(self, conn: Conn, previous: Conn | None) -> None:
        import anyio

        if previous is not None and previous.task is not None and not previous.task.done():
            previous.stop.set()
            await asyncio.wait([previous.task])  # the old process is reaped before a new one starts
        await self._status("starting", "restarting after a crash" if conn.restart else "connecting")
        built = (await self.host.sdk_loaded()).pop(self.name, None)  # the first start's, built ahead
        if self.config.error:
            await self._fail(conn, self.config.error)
            return
        began = time.monotonic()
        try:
            with anyio.CancelScope() as scope:
                conn.scope = scope
                await self._connect(conn, self._stderr, began, built)
        except Exception as exc:
            if conn.ready.done() and not conn.failed:
                await self._crashed(conn)  # it was up: it broke while running
            else:
                detail = describe_error(exc)
                if is_connection_closed(exc):
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

    async def _fail(self, conn: Conn, message: str) -> None:
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

    async def _crashed(self, conn: Conn) -> None:
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

    async def _connect(self, conn: Conn, errlog: Any, began: float, built: Any = None) -> None:
        import anyio
        from mcp import Client
        from mcp_types import Implementation

        async def on_message(message: Any) -> None:
            if getattr(message, "method", None) == "notifications/tools/list_changed":
                self.list_changed += 1
                conn.relist.set()

        guard_loggers()  # the transport's modules are loaded now
        sieve = ListingSieve()
        transport = open_transport(self.config, errlog, conn.lost.set, sieve, local=self.local, built=built)
        client = Client(
            transport,
            cache=None,
            message_handler=on_message,
            client_info=Implementation(name=CLIENT_NAME, version=CLIENT_VERSION),
        )
        sieve.version = lambda: negotiated(client)
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
            text += f"; {k} listed tool{'' if k == 1 else 's'} skipped: " + "; ".join(
                f"{r.name} ({r.reason})" for r in self.rejected
            )
        return text + (f"; {self.list_note}" if self.list_note else "")

    async def _list(
        self, client: Any, sieve: ListingSieve
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
            log.info(
                "MCP server %s: tools/list_changed subscription ended: %s",
                self.name,
                self.config.redact(describe_error(exc)),
            )

    async def _relist_worker(self, conn: Conn) -> None:
        import anyio

        while True:
            await conn.relist.wait()
            conn.relist.clear()
            try:
                with anyio.fail_after(self.config.timeout):
                    specs, rejected, listing = await self._list(conn.client, conn.sieve)
            except Exception as exc:
                log.info(
                    "MCP server %s: re-listing tools failed: %s", self.name, self.config.redact(describe_error(exc))
                )
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
            parts = [
                f"{label}: {', '.join(names)}"
                for label, names in (("added", added), ("removed", removed), ("changed", changed))
                if names
            ]
            await self.host.emit(
                RosterChanged(
                    server=self.name,
                    message=f"{self.name} now offers {len(specs)} tools ({'; '.join(parts) or 'hints changed'}). "
                    "The open chat keeps its plan; a new chat will pick this up.",
                )
            )

    # -- calls ------------------------------------------------------------------------------------

    async def _usable(self) -> Conn | ToolResult:
        """The connection a call can use, or the error the call gets (a restart is then under way)."""
        conn = self.conn
        if conn is not None and self.state == "starting":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(conn.ready), self.config.timeout + 1)
            conn = self.conn
        if conn is not None and conn.up:
            return conn
        if self.config.needs_approval:
            return error_result(
                "mcp.needs_approval",
                self.config.redact(
                    f"MCP server {self.name!r} is not started: it comes from {self.config.needs_approval}, which the "
                    "user has not approved."
                ),
            )
        if self.config.error:
            return error_result("mcp.server_unavailable", f"MCP server {self.name!r} cannot start: {self.config.error}")
        if conn is not None and not conn.crashed and conn.lost.is_set() and not conn.failed:
            await self._crashed(conn)  # dropped a moment ago; its task has not caught up yet
        crashed = conn is not None and conn.crashed
        was = self.message or "it is not running"
        if self.state != "starting" and not self.host.closed:
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
            result = result.model_copy(
                update={
                    "content": [
                        {**b, "text": self.config.redact(b["text"])} if isinstance(b.get("text"), str) else b
                        for b in result.content
                    ]
                }
            )
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
            if is_connection_closed(exc) or conn.lost.is_set():
                await self._crashed(conn)
                if self.conn is conn and not self.host.closed:
                    self.launch(restart=True)
                return error_result(
                    "mcp.server_crashed",
                    f"MCP server {self.name!r} stopped during {spec.name}; whether the call took effect is "
                    "unknown. deferchat is restarting the server; a later call can try again.",
                )
            if is_timeout(exc):
                return error_result(
                    "mcp.timeout",
                    f"{spec.name} got no answer from MCP server {self.name!r} within {limit:g}s; the server was "
                    "asked to cancel it. Whether it took effect is unknown.",
                )
            return error_result("mcp.error", f"{spec.name} failed in MCP server {self.name!r}: {describe_error(exc)}")
        wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        problem = await self._output_problem(remote, wire)
        if problem is not None:
            return error_result("mcp.error", f"{spec.name} failed in MCP server {self.name!r}: {problem}")
        return tool_result(wire)

    async def _output_problem(self, remote: str, result: Mapping[str, Any]) -> str | None:
        """What MCP's rule finds wrong with a result against the tool's ``outputSchema``: checked
        here, bounded and off the event loop, not by the SDK (which is never shown the schema:
        :func:`core.mcp.sieve.for_sdk`)."""
        from core.pipeline.validation import check_value

        if result.get("isError"):
            return None
        listed = next((t for t in self.listing if isinstance(t, Mapping) and t.get("name") == remote), None)
        schema = listed.get("outputSchema") if listed is not None else None
        if not isinstance(schema, Mapping):
            return None
        if result.get("structuredContent") is None:
            return "it has an output schema but returned no structured content"
        found = await check_value(dict(schema), result["structuredContent"], what="its output schema")
        return None if found is None else f"its structured content does not match its output schema: {found}"
