"""Log records of the MCP client and the SDK, with expanded ``${VAR}`` values put back.

The SDK and its HTTP client log urls, headers and requests at debug level; a url may hold a
token that came from ``${VAR}`` expansion. :data:`REDACTOR` is installed on every one of those
loggers and on the client's own (:data:`log`), and each :class:`core.mcp.client.McpManager`
registers its servers' secrets with it while it lives.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from core.mcp.config import redact

log = logging.getLogger("core.mcp.client")  # one logger for the whole client, whichever module logs

SDK_LOGGERS = ("mcp", "httpx2", "httpcore2", "httpx", "httpcore")  # they log urls, headers, requests


class Redactor(logging.Filter):
    """Puts expanded ``${VAR}`` values back as ``${VAR}`` in log records, tracebacks included.

    Installed on the client's logger and on every logger of the MCP SDK and its HTTP client
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


REDACTOR = Redactor()


def guard_loggers() -> None:
    """Every logger of the SDK that exists by now (they are made at import) gets the redactor."""
    names = [n for n in list(logging.root.manager.loggerDict) if n.split(".")[0] in SDK_LOGGERS]
    for name in [log.name, *names]:
        logger = logging.getLogger(name)
        if REDACTOR not in logger.filters:
            logger.addFilter(REDACTOR)
