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

from core.events import ElicitationAnswered, ElicitationRequested, OffersChanged, RosterChanged, ServerStatus
from core.imports import bulk_import
from core.mcp.config import McpServerConfig
from core.mcp.convert import error_result, sort_listing, tool_result
from core.mcp.elicitation import ElicitationAnswer, Elicitor
from core.mcp.errors import describe_error, is_connection_closed, is_timeout
from core.mcp.logs import StderrLog, guard_loggers, log
from core.mcp.reports import ServerReport, State
from core.mcp.sieve import ListingSieve, negotiated
from core.mcp.transport import ServerFactory, open_transport
from core.roster.models import RejectedTool
from core.tools import ToolResult, ToolSpec

McpEvent = ServerStatus | RosterChanged | ElicitationRequested | ElicitationAnswered | OffersChanged

CLIENT_NAME = "deferchat"
CLIENT_VERSION = "0.1.0"
MAX_LIST_PAGES = 100
STDERR_TAIL = 600  # characters of a server's stderr quoted in a failure message
STDERR_DRAIN_S = 0.5  # how long a failure waits for the last stderr lines of a server that exited


class ServerHost(Protocol):
    """What a server needs of the manager that holds it."""

    @property
    def closed(self) -> bool:
        """The session is closing: no more restarts."""
        ...

    @property
    def tool_settings(self) -> Mapping[str, Any]:
        """config.toml's ``[tools]`` (``allow_private_hosts``) for the guard a remote server's requests pass."""
        ...

    @property
    def elicitor(self) -> Elicitor | None:
        """Who answers a server's request for input (None: nobody; elicitation is not declared)."""
        ...

    @property
    def elicitation_timeout(self) -> float: ...

    async def emit(self, event: McpEvent) -> None: ...

    async def sdk_loaded(self) -> dict[str, Any]:
        """Returns once the MCP SDK is imported (it is imported off the event loop), with the
        in-process servers built alongside: ``{name: server}``, each to be used once."""
        ...


def _fingerprint(specs: Iterable[ToolSpec]) -> tuple[tuple[str, str, str], ...]:
    return tuple(sorted((s.name, s.content_hash(), repr(sorted(s.hints.items()))) for s in specs))


class Conn:
    """One connection attempt: its task, its SDK client, and how it ends."""

    def __init__(self, restart: bool, sign_in: Any = None):
        self.restart = restart
        self.sign_in = sign_in  # a core.mcp.oauth.flow.SignIn: this connection may ask the person to sign in
        self.hooks: Any = None  # its sign-in hooks (a remote server's), once the transport is open
        self.ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.stop = asyncio.Event()
        self.lost = asyncio.Event()
        self.relist = asyncio.Event()
        self.listed = asyncio.Event()  # set while no re-listing the server announced is pending
        self.listed.set()
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
        self.capabilities: list[str] = []  # what the server said it offers (tools, resources, prompts, ...)
        self.auth = "none"  # none | signed_in | needs_sign_in (a remote server's OAuth sign-in)
        self.offered: dict[str, list[Any] | None] = {"resources": None, "templates": None, "prompts": None}
        self._offer_tasks: set[asyncio.Task[None]] = set()
        self.conn: Conn | None = None
        self._stderr = StderrLog(log_dir / f"{self.name}.stderr.log")  # bounded on disk

    # -- reporting --------------------------------------------------------------------------------

    def report(self) -> ServerReport:
        return ServerReport(
            name=self.name,
            transport="in-process" if self.local is not None else self.config.transport,
            target=self.config.redact(self.config.describe()),
            status=self.state,
            message=self._redact(self.message),
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
            capabilities=list(self.capabilities),
            auth=self.auth,
        )

    def _redact(self, text: str) -> str:
        """No expanded ``${VAR}`` value and no OAuth token in anything shown or stored."""
        from core.mcp.oauth.tokens import redact_tokens

        return redact_tokens(self.config.redact(text))

    async def _status(self, status: str, message: str = "") -> None:
        event = ServerStatus(server=self.name, status=status, tools=len(self.specs), message=self._redact(message))
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

    def launch(self, *, restart: bool = False, sign_in: Any = None) -> Conn:
        """Start a connection task. Its ``ready`` resolves when it is up or has failed.
        ``sign_in``: a :class:`core.mcp.oauth.flow.SignIn`; the person may be asked to sign in."""
        previous = self.conn
        conn = Conn(restart, sign_in)
        self.conn = conn
        self.state = "starting"
        self.message = "waiting for you to sign in" if sign_in else "restarting" if restart else "connecting"
        conn.task = asyncio.get_running_loop().create_task(self._run(conn, previous), name=f"mcp:{self.name}")
        conn.watchdog = asyncio.get_running_loop().create_task(self._watchdog(conn), name=f"mcp:{self.name}:timeout")
        return conn

    async def _watchdog(self, conn: Conn) -> None:
        limit = self.config.timeout + (conn.sign_in.timeout if conn.sign_in is not None else 0)  # a person signs in
        try:
            await asyncio.wait_for(asyncio.shield(conn.ready), limit)
        except TimeoutError:
            conn.cancel()
            await self._fail(conn, f"did not start within {self.config.timeout:g}s (timeout){self._stderr_tail()}")

    async def _run(self, conn: Conn, previous: Conn | None) -> None:
        import anyio

        if previous is not None and previous.task is not None and not previous.task.done():
            previous.stop.set()
            await asyncio.wait([previous.task])  # the old process is reaped before a new one starts
        await self._status(
            "starting", self.message if conn.sign_in else "restarting after a crash" if conn.restart else "connecting"
        )
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
            from core.mcp.oauth.flow import SignInRequired, find_required

            problem = find_required(exc)
            if isinstance(problem, SignInRequired) or (conn.hooks is not None and conn.hooks.required):
                await self._needs_sign_in(conn)
            elif problem is not None:  # the person's sign-in did not finish
                await self._needs_sign_in(conn, f"signing in did not finish: {problem}")
            elif conn.ready.done() and not conn.failed:
                await self._crashed(conn)  # it was up: it broke while running
            else:
                detail = _guard_problem(exc) or describe_error(exc)
                if is_connection_closed(exc):
                    detail = "the server exited before finishing the MCP handshake"
                    # its last stderr lines may still be in the pipe: the tail waits for them, briefly
                    await asyncio.to_thread(self._stderr.drained, STDERR_DRAIN_S)
                if self.config.transport != "stdio":
                    detail = f"cannot use {self.config.url}: {detail}"  # the url as written, never expanded
                await self._fail(conn, self._redact(detail + self._stderr_tail()))
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

    async def _needs_sign_in(self, conn: Conn, why: str = "") -> None:
        """The server wants the person to sign in (or again: its refresh was refused). Nothing
        restarts it until they do; its tools are kept for the plan's sake, calls are refused."""
        conn.lost.set()
        if conn.failed:
            return
        conn.failed = True
        if not conn.ready.done():
            conn.ready.set_result(None)
        if self.conn is not conn:
            return
        self.state = "needs_sign_in"
        self.auth = "needs_sign_in"
        self.message = (why + "; " if why else "") + sign_in_hint(self.name)
        await self._status("needs_sign_in", self.message)

    async def _crashed(self, conn: Conn) -> None:
        """The connection was up and broke (not by our hand). Tools are kept: a call restarts it."""
        if conn.hooks is not None and conn.hooks.required:
            await self._needs_sign_in(conn)
            return
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

        with bulk_import():
            from mcp import Client
            from mcp_types import Implementation

        async def on_message(message: Any) -> None:
            method = getattr(message, "method", None)
            if method == "notifications/tools/list_changed":
                self.list_changed += 1
                conn.listed.clear()  # a call waits for the new listing (settled)
                conn.relist.set()
            elif method in ("notifications/resources/list_changed", "notifications/prompts/list_changed"):
                kind = "resources" if "resources" in method else "prompts"
                task = asyncio.get_running_loop().create_task(self._offers_changed(kind))
                self._offer_tasks.add(task)
                task.add_done_callback(self._offer_tasks.discard)

        def on_auth(hooks: Any) -> None:
            conn.hooks = hooks

        guard_loggers()  # the transport's modules are loaded now
        sieve = ListingSieve()
        transport = open_transport(
            self.config,
            errlog,
            conn.lost.set,
            sieve,
            local=self.local,
            built=built,
            sign_in=conn.sign_in,
            tool_settings=self.host.tool_settings,
            on_auth=on_auth,
        )
        client = Client(
            transport,
            cache=None,
            message_handler=on_message,
            client_info=Implementation(name=CLIENT_NAME, version=CLIENT_VERSION),
            # declared only when someone can answer: the SDK declares elicitation with a callback
            elicitation_callback=self._on_elicit if self.host.elicitor is not None else None,
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
            self.capabilities = capability_names(client.server_capabilities)
            self.auth = "signed_in" if conn.hooks is not None and conn.hooks.storage.entry_has_tokens() else "none"
            self.start_ms = int((time.monotonic() - began) * 1000)
            conn.client = client
            self.state = "ready"
            self.message = self._ready_message()
            restarted = conn.restart and conn.sign_in is None  # a sign-in is not a crash recovered from
            if restarted:
                self.restarts += 1
            conn.ready.set_result(None)
            if conn.hooks is not None and conn.hooks.completed:
                self.message = f"signed in; {self.message}"
            await self._status("restarted" if restarted else "ready", self.message)

            async with anyio.create_task_group() as tg:
                tg.start_soon(self._relist_worker, conn)
                caps = client.server_capabilities
                if any(getattr(getattr(caps, k), "list_changed", False) for k in ("tools", "resources", "prompts")):
                    tg.start_soon(self._listen, client)
                waits = [asyncio.ensure_future(conn.stop.wait()), asyncio.ensure_future(conn.lost.wait())]
                try:
                    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for w in waits:
                        w.cancel()
                tg.cancel_scope.cancel()
            conn.client = None
            conn.listed.set()  # nothing more is listed on this connection
        if conn.stop.is_set():
            if self.conn is conn:
                self.state = "stopped"
                self.message = ""
                await self._status("stopped")
        else:
            await self._crashed(conn)

    async def _on_elicit(self, context: Any, params: Any) -> Any:
        """The server asks the person for input (see :mod:`core.mcp.elicitation`)."""
        from mcp_types import INVALID_PARAMS, ElicitResult, ErrorData

        from core.mcp.elicitation import UnusableForm, check_answer, request_from

        elicitor = self.host.elicitor
        assert elicitor is not None
        try:
            request = request_from(self.name, params)
        except UnusableForm as exc:
            await self.host.emit(
                ElicitationAnswered(
                    server=self.name, request_id="", action="decline", reason=f"its request cannot be shown: {exc}"
                )
            )
            return ErrorData(code=INVALID_PARAMS, message=f"deferchat cannot show this request: {exc}")
        await self.host.emit(
            ElicitationRequested(
                server=self.name,
                request_id=request.id,
                mode=request.mode,
                message=request.message,
                fields=request.summary(),
                url=request.url,
            )
        )
        limit = self.host.elicitation_timeout
        try:
            answer = await asyncio.wait_for(elicitor.elicit(request), limit)
        except TimeoutError:
            answer = ElicitationAnswer(action="cancel", reason=f"no answer within {limit:g} s")
        except Exception:
            log.exception("MCP server %s: answering its request for input failed", self.name)
            answer = ElicitationAnswer(action="cancel", reason="the request could not be answered")
        content: dict[str, Any] | None = None
        if answer.action == "accept" and request.mode == "form":
            try:
                content = check_answer(request.fields, answer.content or {})
            except ValueError as exc:
                answer = ElicitationAnswer(action="cancel", reason=f"the answer did not fit the form: {exc}")
        await self.host.emit(
            ElicitationAnswered(
                server=self.name,
                request_id=request.id,
                action=answer.action,
                answered=sorted(content or {}),
                reason=answer.reason,
            )
        )
        return ElicitResult(action=answer.action, content=content)

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
        caps = client.server_capabilities
        wanted = {
            f"{kind}_list_changed": bool(getattr(getattr(caps, kind), "list_changed", False))
            for kind in ("tools", "resources", "prompts")
        }
        try:
            async with client.listen(**wanted) as sub:
                async for _ in sub:  # the notification also reaches on_message, which re-lists
                    pass
        except Exception as exc:
            log.info(
                "MCP server %s: tools/list_changed subscription ended: %s",
                self.name,
                self.config.redact(describe_error(exc)),
            )

    async def settled(self) -> None:
        """Returns once a re-listing the server announced (``list_changed``) is done, so a call
        is judged by the listing as it is now; bounded by the server's timeout."""
        conn = self.conn
        if conn is None or conn.listed.is_set() or not conn.up:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(conn.listed.wait(), self.config.timeout)

    async def _relist_worker(self, conn: Conn) -> None:
        while True:
            await conn.relist.wait()
            conn.relist.clear()
            try:
                await self._relist(conn)
            finally:
                if not conn.relist.is_set():  # no announcement came meanwhile (else: list again)
                    conn.listed.set()

    async def _relist(self, conn: Conn) -> None:
        import anyio

        try:
            with anyio.fail_after(self.config.timeout):
                specs, rejected, listing = await self._list(conn.client, conn.sieve)
        except Exception as exc:
            log.info("MCP server %s: re-listing tools failed: %s", self.name, self.config.redact(describe_error(exc)))
            return
        self.listing = listing
        if _fingerprint(specs) == _fingerprint(self.specs) and rejected == self.rejected:
            return
        if _fingerprint(specs) == _fingerprint(self.specs):
            self.rejected = rejected
            self.message = self._ready_message()
            return
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
                "The open chat keeps its plan (a new chat will pick this up); a call of a changed tool is "
                "judged by the stricter of its pinned and its new description.",
            )
        )

    # -- resources and prompts ----------------------------------------------------------------------

    async def _offers_changed(self, kind: str) -> None:
        """The server's resources or prompts changed: read them again, say so."""
        try:
            count = len(await self.resources(refresh=True) if kind == "resources" else await self.prompts(refresh=True))
        except Exception as exc:
            log.info("MCP server %s: re-listing its %s failed: %s", self.name, kind, self._redact(describe_error(exc)))
            return
        await self.host.emit(OffersChanged(server=self.name, kind=kind, count=count))

    async def _client(self) -> Any:
        conn = await self._usable()
        if isinstance(conn, ToolResult):
            raise OfferError(conn.text())
        return conn.client

    async def _offer(self, what: str, call: Any) -> Any:
        try:
            with anyio_fail_after(self.config.call_timeout):
                return await call()
        except OfferError:
            raise
        except Exception as exc:
            raise OfferError(
                self._redact(f"MCP server {self.name!r} could not {what}: {describe_error(exc)}")
            ) from None

    async def resources(self, *, refresh: bool = False) -> list[Any]:
        """Its resources and resource templates (:class:`core.mcp.offers.ResourceInfo`), listed once."""
        from core.mcp.offers import list_all, resource_info

        if "resources" not in self.capabilities:
            return []
        if refresh or self.offered["resources"] is None:
            client = await self._client()
            listed, _ = await self._offer("list its resources", lambda: list_all(client.list_resources, "resources"))
            try:
                templates, _ = await list_all(client.list_resource_templates, "resource_templates")
            except Exception:
                templates = []  # a server may offer no templates at all
            self.offered["resources"] = [resource_info(self.name, r, template=False) for r in listed]
            self.offered["templates"] = [resource_info(self.name, t, template=True) for t in templates]
        return [*(self.offered["resources"] or []), *(self.offered["templates"] or [])]

    async def read_resource(self, uri: str, limit: int) -> Any:
        """The resource at ``uri`` as an :class:`core.mcp.offers.Attachment`, cut to ``limit`` characters."""
        from core.mcp.offers import attachment_from

        client = await self._client()
        result = await self._offer(f"read {uri}", lambda: client.read_resource(uri))
        if self.offered["resources"] is None:
            with contextlib.suppress(Exception):  # only for its name
                await self.resources()
        listed = {r.uri: r for r in self.offered.get("resources") or []}
        return attachment_from(self.name, uri, listed[uri].label if uri in listed else "", result, limit)

    async def prompts(self, *, refresh: bool = False) -> list[Any]:
        """Its prompts usable as slash commands (:class:`core.mcp.offers.PromptInfo`), listed once."""
        from core.mcp.offers import list_all, prompt_info

        if "prompts" not in self.capabilities:
            return []
        if refresh or self.offered["prompts"] is None:
            client = await self._client()
            listed, _ = await self._offer("list its prompts", lambda: list_all(client.list_prompts, "prompts"))
            self.offered["prompts"] = [p for p in (prompt_info(self.name, item) for item in listed) if p is not None]
        return list(self.offered["prompts"] or [])

    async def get_prompt(self, name: str, arguments: Mapping[str, str], limit: int) -> Any:
        """What prompt ``name`` returns with ``arguments``, as a :class:`core.mcp.offers.PromptText`."""
        from core.mcp.offers import prompt_text

        client = await self._client()
        result = await self._offer(f"run its prompt {name!r}", lambda: client.get_prompt(name, dict(arguments)))
        return prompt_text(self.name, name, result, limit)

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
        if self.state == "needs_sign_in":
            return error_result("mcp.needs_sign_in", self._redact(f"MCP server {self.name!r} {self.message}"))
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
                        {**b, "text": self._redact(b["text"])} if isinstance(b.get("text"), str) else b
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
            if conn.hooks is not None and conn.hooks.required:
                await self._needs_sign_in(conn)
                return error_result(
                    "mcp.needs_sign_in",
                    f"{spec.name} was not run: MCP server {self.name!r} {self.message}",
                )
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


def sign_in_hint(name: str) -> str:
    """What a server that needs sign-in says to the person: how to sign in."""
    return (
        f"needs you to sign in: run `deferchat servers --login {name}`, or in the app open the servers "
        f"screen or type /mcp login {name}"
    )


def capability_names(caps: Any) -> list[str]:
    """The capabilities a server declared, by name, in a fixed order."""
    names = ("tools", "resources", "prompts", "completions", "logging")
    return [n for n in names if getattr(caps, n, None) is not None]


def _guard_problem(exc: BaseException) -> str | None:
    """A request the private-address guard refused, or a sign-in answer over its bound, as one line."""
    from core.mcp.errors import leaf_errors
    from core.mcp.oauth.http import ResponseTooLarge
    from core.net.guard import GuardError

    for leaf in leaf_errors(exc):
        if isinstance(leaf, GuardError):
            return (
                f"refused to reach {leaf} (its sign-in leads away from the server you configured, to an address "
                "that is not on the public internet; allow_private_hosts in config.toml's [tools] allows one "
                "on purpose)"
            )
        if isinstance(leaf, ResponseTooLarge):
            return f"refused its sign-in: {leaf}"
    return None


class OfferError(Exception):
    """A server's resources or prompts could not be listed, read or run; one line saying why."""


@contextlib.contextmanager
def anyio_fail_after(seconds: float) -> Any:
    import anyio

    with anyio.fail_after(seconds):
        yield
