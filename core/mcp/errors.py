"""What went wrong, from the exceptions the MCP SDK raises: one line a person can act on, and
whether the connection closed or a request timed out (looked for through exception groups)."""

from __future__ import annotations

import asyncio


def leaf_errors(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for e in exc.exceptions:
            out.extend(leaf_errors(e))
        return out
    return [exc]


def describe_error(exc: BaseException) -> str:
    """A failure as one line: the innermost meaningful error of an exception group."""
    leaves = [e for e in leaf_errors(exc) if not isinstance(e, asyncio.CancelledError)] or [exc]
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


def is_connection_closed(exc: BaseException) -> bool:
    from mcp_types import CONNECTION_CLOSED

    return any(getattr(getattr(e, "error", None), "code", None) == CONNECTION_CLOSED for e in leaf_errors(exc))


def is_timeout(exc: BaseException) -> bool:
    from mcp_types import REQUEST_TIMEOUT

    return any(
        isinstance(e, TimeoutError) or getattr(getattr(e, "error", None), "code", None) == REQUEST_TIMEOUT
        for e in leaf_errors(exc)
    )
