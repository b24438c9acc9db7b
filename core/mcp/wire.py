"""One message off an MCP server's wire, read so that a bad one costs that message only.

Whatever the transport, a server's bytes become a :class:`mcp.shared.message.SessionMessage`
here, or a :class:`Dropped` that says why not (and is logged, never raised):

* a line longer than :data:`MAX_MESSAGE_BYTES` is not kept (the stdio reader stops buffering
  it, :mod:`core.mcp.stdio`);
* bytes that are not UTF-8, text that is not JSON, JSON that is not a JSON-RPC message;
* JSON of any depth is read (:func:`core.limits.loads_bounded`): parts nested deeper than
  :data:`core.limits.MESSAGE_DEPTH` stand as markers, so a listing whose one tool nests a
  thousand levels is still read tool by tool (the sieve skips that tool) and the SDK's own
  parser, which gives up at two hundred levels and loses the whole message, never sees it.

A dropped answer whose id can still be read becomes a JSON-RPC error for that id
(:func:`refusal`), so the call that waits for it fails at once with the reason instead of
waiting out its timeout.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from core.limits import MESSAGE_DEPTH, loads_bounded

MAX_MESSAGE_BYTES = 32 * 1024 * 1024
"""The longest message deferchat reads from a server (a tool result with a large image fits)."""

PEEK_BYTES = 512  # the start of a dropped line read for its id

_ID = re.compile(rb'^\s*\{[^{}\[\]]*?"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


@dataclasses.dataclass
class Dropped:
    """A line (or an event) that is not a message deferchat can use, and why."""

    reason: str
    id: Any = None  # the JSON-RPC id it answered, when one could be read


def peek_id(start: bytes | str) -> Any:
    """The id of a response whose start is ``start``, when its envelope names one before any
    nested value and names no ``method`` (a request from the server is not answered for it)."""
    raw = start.encode("utf-8", "replace") if isinstance(start, str) else start
    m = _ID.match(raw[:PEEK_BYTES])
    if m is None or b'"method"' in m.group(0):
        return None
    token = m.group(1)
    if token.startswith(b'"'):
        import json

        try:
            return json.loads(token)
        except ValueError:
            return None
    return int(token)


def parse(data: bytes | str) -> Any:
    """A message's bytes or text as a SessionMessage, or :class:`Dropped`."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage
    from pydantic import ValidationError

    if len(data) > MAX_MESSAGE_BYTES:
        return Dropped(f"a message of {len(data)} bytes, over the {MAX_MESSAGE_BYTES} deferchat reads", peek_id(data))
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad = data[exc.start : exc.start + 1].hex()
            return Dropped(f"a line that is not UTF-8 (byte 0x{bad} at {exc.start})", peek_id(data))
    else:
        text = data
    if not text.strip():
        return Dropped("an empty line")
    try:
        value = loads_bounded(text, MESSAGE_DEPTH)
    except ValueError as exc:
        return Dropped(f"a line that is not JSON ({exc})", peek_id(text))
    try:
        message = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        found = value.get("id") if isinstance(value, dict) and "method" not in value else None
        return Dropped(f"JSON that is not a JSON-RPC message ({where or 'message'}: {first.get('msg')})", found)
    return SessionMessage(message)


def refusal(request_id: Any, reason: str) -> Any:
    """A JSON-RPC error answering ``request_id``: the server's answer could not be read."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    why = f"deferchat could not read the server's answer: {reason}"
    error = types.ErrorData(code=types.INTERNAL_ERROR, message=why)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def repaired(exc: BaseException) -> Any:
    """What an SDK transport's parse failure still holds: the SDK's JSON parser gives up on a
    message nested deeper than it reads, and its error keeps the text, which is read here
    instead (a SessionMessage or :class:`Dropped`); None when there is nothing to read."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    try:
        first = errors()[0]
    except Exception:
        return None
    source = first.get("input")
    if first.get("type") != "json_invalid" or not isinstance(source, str | bytes):
        return None
    return parse(source)
