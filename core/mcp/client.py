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
* Listings are read tool by tool (:class:`core.mcp.sieve.ListingSieve`), before the SDK validates them as a
  whole: a tool with an unusable name or schema is set aside with its reason
  (:meth:`McpManager.rejected`), and the server's good tools are offered all the same.
* Values that came from ``${VAR}`` expansion never appear in a status, a report, a log line
  or an error: each server's messages pass through its config's ``redact``.
* A server from a file the user has not approved (``needs_approval``) is never started; it is
  reported ``needs_approval`` with the command that approves the file.
* ``in_process={name: factory}``: those servers run in this process (the embedded demo's),
  each built by its factory off the event loop and spoken to over the SDK's in-memory
  transport, with the same messages, listing sieve, failures and restarts as a server in a
  process; their report's ``transport`` is ``in-process``.
* ``notifications/tools/list_changed``: the server is listed again; if its tools really
  changed, ``manager.tools()`` returns the new list and a ``RosterChanged`` event says so. An
  open chat keeps the plan it pinned; only a new chat plans with the new list. Each call asks
  :meth:`McpManager.listed_now` how the tool is listed now (waiting for a re-listing the server
  announced), and the pipeline judges it by the stricter of that and the pin.

The rooms of the client, one job each:

* :mod:`core.mcp.server`: one server's lifecycle (connect, list, call, crash, restart);
* :mod:`core.mcp.transport`: its transport (stdio, streamable HTTP, SSE, in-memory), watched;
* :mod:`core.mcp.sieve`: the listing sieve, each ``tools/list`` answer read tool by tool;
* :mod:`core.mcp.errors`: SDK exceptions as one line; :mod:`core.mcp.logs`: redacted log records;
* :mod:`core.mcp.reports`: ``ServerReport`` and ``Discovery``; :mod:`core.mcp.discovery`: one-shot discovery.

The MCP SDK is imported inside the functions that use it, so importing this module is cheap.
"""

from __future__ import annotations

import asyncio
import inspect
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.mcp.config import McpConfig, McpServerConfig
from core.mcp.convert import error_result
from core.mcp.discovery import discover
from core.mcp.elicitation import ELICITATION_TIMEOUT, Elicitor
from core.mcp.logs import REDACTOR, log
from core.mcp.reports import Discovery, ServerReport, State
from core.mcp.server import (
    CLIENT_NAME,
    CLIENT_VERSION,
    MAX_LIST_PAGES,
    STDERR_TAIL,
    McpEvent,
    OfferError,
    Server,
    sign_in_hint,
)
from core.mcp.transport import ServerFactory, load_sdk
from core.roster.models import RejectedTool
from core.tools import ToolResult, ToolSpec

if TYPE_CHECKING:
    from core.mcp.oauth.flow import SignIn

__all__ = [
    "CLIENT_NAME",
    "CLIENT_VERSION",
    "MAX_LIST_PAGES",
    "STDERR_TAIL",
    "Discovery",
    "EventSink",
    "McpManager",
    "ServerReport",
    "State",
    "discover",
]

EventSink = Callable[[McpEvent], Awaitable[None] | None]


class McpManager:
    """All MCP servers of one session. See the module docstring for the contract."""

    def __init__(
        self,
        config: McpConfig | Iterable[McpServerConfig],
        *,
        on_event: EventSink | None = None,
        log_dir: str | Path | None = None,
        in_process: Mapping[str, ServerFactory] | None = None,
        tool_settings: Mapping[str, Any] | None = None,
        elicitor: Elicitor | None = None,
        elicitation_timeout: float = ELICITATION_TIMEOUT,
    ):
        servers = config.servers if isinstance(config, McpConfig) else tuple(config)
        self._on_event = on_event
        self._tool_settings = dict(tool_settings or {})
        self._elicitor = elicitor
        self._elicitation_timeout = elicitation_timeout
        self._own_log_dir = log_dir is None
        self._log_dir = Path(tempfile.mkdtemp(prefix="deferchat-mcp-")) if log_dir is None else Path(log_dir)
        self._log_dir.mkdir(parents=True, exist_ok=True)
        local = in_process or {}
        self._servers = {
            s.name: Server(s, self, self._log_dir, local.get(s.name)) for s in sorted(servers, key=lambda s: s.name)
        }
        self._secrets = [pair for s in self._servers.values() for pair in s.config.secrets]
        REDACTOR.add(self._secrets)
        self._launched: set[str] = set()  # the servers start() was asked for
        self._closed = False
        self._sdk: asyncio.Future[dict[str, Any]] | None = None

    async def __aenter__(self) -> McpManager:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def tool_settings(self) -> Mapping[str, Any]:
        return self._tool_settings

    @property
    def elicitor(self) -> Elicitor | None:
        return self._elicitor

    @property
    def elicitation_timeout(self) -> float:
        return self._elicitation_timeout

    async def sdk_loaded(self) -> dict[str, Any]:
        if self._sdk is None:
            return {}
        return await asyncio.shield(self._sdk)

    async def emit(self, event: McpEvent) -> None:
        """Hand a server's event to the subscriber (a failing subscriber is logged, never raised)."""
        if self._on_event is None:
            return
        try:
            out = self._on_event(event)
            if inspect.isawaitable(out):
                await out
        except Exception:
            log.exception("MCP event subscriber failed on %s", event.type)

    async def start(self, only: Iterable[str] | None = None) -> list[ServerReport]:
        """Connect to every server in parallel (``only``: to those named, the others left
        unstarted until a later call names them); return when each is ready or has failed.

        Each server is bounded by its own ``timeout``, so this returns within the largest one.
        A server already started is not started again; one still starting is waited for.
        """
        wanted = [s for s in self._servers.values() if only is None or s.name in set(only)]
        todo = [s for s in wanted if s.name not in self._launched]
        self._launched.update(s.name for s in todo)
        if todo:
            self._load_sdk(todo)
        for held in (s for s in todo if s.config.needs_approval):
            await held.hold_for_approval()
        for s in todo:
            if not s.config.needs_approval:
                s.launch()
        conns = [s.conn for s in wanted if s.conn is not None and not s.conn.ready.done()]
        if conns:
            await asyncio.gather(*(asyncio.shield(c.ready) for c in conns))
        return self.servers()

    def started(self, server: str) -> bool:
        """Whether ``server`` was started (or held for approval) in this session."""
        return server in self._launched

    def _load_sdk(self, servers: Iterable[Server] | None = None) -> None:
        """Import the SDK off the event loop (a Textual UI keeps drawing), and build the in-process
        servers there too (of ``servers``, the ones being started: default all); connections wait
        for it. Once: a server started later is built when it connects."""
        if self._sdk is None:
            chosen = self._servers.values() if servers is None else servers
            ahead = {s.name: s.local for s in chosen if s.local and not s.config.needs_approval}
            self._sdk = asyncio.ensure_future(asyncio.to_thread(load_sdk, ahead))

    async def sign_in(self, name: str, sign_in: SignIn) -> ServerReport:
        """Connect to remote server ``name`` again, letting it ask the person to sign in (through
        ``sign_in``'s presenter); returns its report once it is ready, needs sign-in still (the
        sign-in failed or timed out: its message says why) or failed. Stored tokens that still
        work are used without asking. Raises :class:`UsageError` for a server that cannot sign in."""
        from core.errors import UsageError

        server = self._servers.get(name)
        if server is None:
            raise UsageError(f"no MCP server {name!r} is configured (`deferchat servers` lists them)")
        if server.config.needs_approval:
            raise UsageError(
                f"MCP server {name!r} comes from {server.config.needs_approval}, which you have not approved: "
                "approve the file before signing in to its servers"
            )
        if server.config.transport == "stdio" or server.local is not None:
            raise UsageError(f"MCP server {name!r} runs on this machine; only a remote server (a url) signs in")
        if server.config.error:
            raise UsageError(f"MCP server {name!r} cannot start: {server.config.error}")
        if self._closed:
            raise UsageError("the MCP session is closed")
        self._launched.add(name)
        self._load_sdk([server])
        conn = server.launch(restart=server.conn is not None, sign_in=sign_in)
        await asyncio.shield(conn.ready)
        return server.report()

    def _server(self, name: str) -> Server:
        from core.errors import UsageError

        server = self._servers.get(name)
        if server is None:
            raise UsageError(f"no MCP server {name!r} in this session")
        return server

    async def _gather(self, kind: str, server: str | None, refresh: bool) -> list[Any]:
        """``kind`` (``resources`` or ``prompts``) of one server (its failure raised), or of every
        ready one (a server that cannot list them is left out)."""
        names = [server] if server else [s.name for s in self._servers.values() if s.state == "ready"]
        found: list[Any] = []
        for name in names:
            one = self._server(name)
            try:
                found += await (one.resources(refresh=refresh) if kind == "resources" else one.prompts(refresh=refresh))
            except OfferError:
                if server:
                    raise
        return found

    async def resources(self, server: str | None = None, *, refresh: bool = False) -> list[Any]:
        """The resources and resource templates (:class:`core.mcp.offers.ResourceInfo`) of one
        server, or of every ready one."""
        return await self._gather("resources", server, refresh)

    async def read_resource(self, server: str, uri: str, *, limit: int | None = None) -> Any:
        """Read one resource as an :class:`core.mcp.offers.Attachment`, cut as a tool result is cut.
        Raises :class:`core.mcp.server.OfferError` with a line a person can act on."""
        from core.pipeline.pipeline import MAX_MODEL_RESULT_CHARS

        return await self._server(server).read_resource(uri, limit or MAX_MODEL_RESULT_CHARS)

    async def prompts(self, server: str | None = None, *, refresh: bool = False) -> list[Any]:
        """The prompts (:class:`core.mcp.offers.PromptInfo`) of one server, or of every ready one."""
        return await self._gather("prompts", server, refresh)

    async def get_prompt(self, server: str, name: str, arguments: Mapping[str, str] | None = None) -> Any:
        """Run one prompt: a :class:`core.mcp.offers.PromptText` (the person's message to be, and
        its embedded resources). Raises :class:`core.mcp.server.OfferError`."""
        from core.pipeline.pipeline import MAX_MODEL_RESULT_CHARS

        return await self._server(server).get_prompt(name, arguments or {}, MAX_MODEL_RESULT_CHARS)

    def tools(self) -> list[ToolSpec]:
        """Discovered tools of every ready server, sorted by name (byte-stable)."""
        return sorted((spec for s in self._servers.values() for spec in s.specs), key=lambda t: t.name)

    def rejected(self) -> list[RejectedTool]:
        """Tools the servers listed but deferchat cannot offer, each with its reason, sorted by
        name. Hand them to the planner (``PlanInput.rejected``): nothing leaves the roster silently."""
        held = [
            RejectedTool(name=f"mcp.{s.name}.*", server=s.name, reason=f"MCP server {s.name} {sign_in_hint(s.name)}")
            for s in self._servers.values()
            if s.state == "needs_sign_in"
        ]
        return sorted([*(r for s in self._servers.values() for r in s.rejected), *held], key=lambda r: r.name)

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools() if t.name == name), None)

    async def listed_now(self, spec: ToolSpec) -> tuple[bool, ToolSpec | None]:
        """How ``spec``'s server lists it now, after any re-listing it announced
        (``list_changed``) is done: ``(True, the tool as listed)``, ``(True, None)`` when the
        server no longer lists it, ``(False, None)`` when the server never listed its tools. A
        server that crashed or is starting again answers with its last listing, which stands
        until the new one is read."""
        server = self._servers.get(spec.server or "")
        if server is None or (server.state != "ready" and not server.specs):
            return False, None
        if server.state == "ready":
            await server.settled()
        return True, next((t for t in server.specs if t.name == spec.name), None)

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
        REDACTOR.remove(self._secrets)
