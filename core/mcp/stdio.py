"""A stdio server's transport: the SDK's own process handling, and a reader that bounds what
the server writes.

The SDK's ``stdio_client`` reads the server's stdout as text: one byte that is not UTF-8 ends
its reader and with it the server; a line without an end is buffered whole, and grown by
copying, however long; a line nested deeper than its parser reads is lost whole, and the
request waiting for it waits out its timeout. Here the process is started and stopped by the
SDK's own functions (a session of its own, stdin closed, then the whole tree killed, every wait
bounded), and stdout is read as bytes, line by line:

* a line is kept up to :data:`core.mcp.wire.MAX_MESSAGE_BYTES`; a longer one is dropped as it
  streams, never held;
* each line becomes a message or is dropped with its reason (:func:`core.mcp.wire.parse`);
  a dropped answer whose id can be read fails its request at once
  (:func:`core.mcp.wire.refusal`); every drop is noted in the server's stderr log and logged.

The server's stderr goes to its :class:`core.mcp.logs.StderrLog`, which bounds it on disk.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from core.imports import bulk_import
from core.mcp import wire
from core.mcp.logs import StderrLog, log
from core.mcp.wire import PEEK_BYTES, Dropped, parse, peek_id, refusal

_WRITER_FLUSH = 0.5  # seconds the writer has to flush what was accepted before stdin closes


class LineSplitter:
    """Bytes in, whole lines out (without their ``\\n``); a line over ``limit`` bytes comes out as
    :class:`Dropped` once it ends, none of it held but its first bytes (for its id)."""

    def __init__(self, limit: int | None = None):
        self.limit = limit or wire.MAX_MESSAGE_BYTES
        self._parts: list[bytes] = []
        self._size = 0
        self._overlong: bytes | None = None  # the start of a line being dropped

    def feed(self, chunk: bytes) -> list[bytes | Dropped]:
        out: list[bytes | Dropped] = []
        start = 0
        while start <= len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if self._overlong is None:
                if self._size + len(piece) > self.limit:
                    joined = b"".join(self._parts) + piece
                    self._overlong = joined[:PEEK_BYTES]
                    self._size += len(piece)
                    self._parts = []
                else:
                    self._parts.append(piece)
                    self._size += len(piece)
            else:
                self._size += len(piece)
            if end < 0:
                break
            out.append(self._finish())
            start = end + 1
        return out

    def _finish(self) -> bytes | Dropped:
        if self._overlong is not None:
            dropped = Dropped(
                f"a line of {self._size} bytes, over the {self.limit} deferchat reads", peek_id(self._overlong)
            )
            self._overlong, self._size = None, 0
            return dropped
        line = b"".join(self._parts)
        self._parts, self._size = [], 0
        return line.rstrip(b"\r")


def read_item(line: bytes | Dropped, server: str, note: Callable[[str], None]) -> Any:
    """One line as what the session reads: a message, a refusal for a dropped answer with an id,
    or None (dropped, noted and logged)."""
    item = line if isinstance(line, Dropped) else parse(line)
    if not isinstance(item, Dropped):
        return item
    if item.reason == "an empty line":
        return None
    note(f"dropped {item.reason} from the server's stdout")
    log.info("MCP server %s: dropped %s from its stdout", server, item.reason)
    return refusal(item.id, item.reason) if item.id is not None else None


@asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    env: dict[str, str],
    cwd: str | None,
    stderr: StderrLog,
    *,
    server: str,
) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server and yield the session's ``(read, write)`` streams; stop it on exit."""
    import anyio
    import anyio.lowlevel

    with bulk_import():
        from mcp.client import stdio as sdk
        from mcp.shared.message import SessionMessage

    executable = await sdk._get_executable_command(command)
    errlog = stderr.open_pipe()
    try:
        process = await sdk._create_platform_compatible_process(
            command=executable,
            args=args,
            env=sdk.get_default_environment() | env,
            errlog=errlog,  # type: ignore[arg-type]  # any file with a descriptor
            cwd=cwd,
        )
    finally:
        stderr.close_parent_end()  # the child holds its own copy; ours would keep the pipe open
    to_session, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()

    async def read_stdout() -> None:
        assert process.stdout is not None
        lines = LineSplitter()
        try:
            async with to_session:
                async for chunk in process.stdout:
                    for line in lines.feed(chunk):
                        item = read_item(line, server, stderr.note)
                        if item is not None:
                            await to_session.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError):
            pass  # the session or the server went away; the read side shows it as the end
        finally:
            await sdk._drain_stdout(process)

    async def write_stdin() -> None:
        assert process.stdin is not None
        try:
            async with from_session:
                async for message in from_session:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await to_session.aclose()  # the server stopped reading: end the session, not hang a request
        finally:
            writer_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_stdout)
        tg.start_soon(write_stdin)
        try:
            yield from_server, to_server
        finally:
            with anyio.CancelScope(shield=True):  # the process must be stopped, whoever cancels
                from_server.close()
                to_server.close()
                with anyio.move_on_after(_WRITER_FLUSH):
                    await writer_done.wait()
                await sdk._stop_server_process(process)
                await sdk._aclose_all(from_server, to_server, to_session, from_session)
                await anyio.lowlevel.checkpoint()
            tg.cancel_scope.cancel()
