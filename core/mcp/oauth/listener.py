"""The loopback redirect of a sign-in: a one-shot HTTP listener on 127.0.0.1.

The authorization server sends the browser back to ``http://127.0.0.1:<port>/callback?code=...&state=...``
(RFC 8252's loopback redirect). :class:`LoopbackListener` is the standard library's HTTP server,
run in a thread for the one sign-in, bound to 127.0.0.1 only: the first request to the callback
path that carries a ``code`` or an ``error`` is the answer; anything else gets a 404 and is
ignored. The page the browser shows names the server (escaped) and says whether to go back to
deferchat. The ``state`` parameter is checked by the SDK, so a request another local program
makes up cannot complete someone's sign-in.
"""

from __future__ import annotations

import asyncio
import html
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

CALLBACK_PATH = "/callback"
HOST = "127.0.0.1"


@dataclass(frozen=True)
class Callback:
    """What the redirect brought: a code (and the state and issuer to check), or an error."""

    code: str | None = None
    state: str | None = None
    iss: str | None = None
    error: str | None = None
    error_description: str | None = None


class _Server(HTTPServer):
    listener: LoopbackListener


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)

        def one(key: str) -> str | None:
            values = query.get(key)
            return values[0] if values else None

        if parts.path != CALLBACK_PATH or not (one("code") or one("error")):
            self.send_error(404)
            return
        got = Callback(one("code"), one("state"), one("iss"), one("error"), one("error_description"))
        self.server.listener._deliver(got)
        self._page(got)

    def _page(self, got: Callback) -> None:
        server = html.escape(self.server.listener.server_name)
        if got.error:
            text = f"Signing in to {server} did not work ({html.escape(got.error)}). Go back to deferchat."
        else:
            text = f"Signed in to {server}. You can close this tab and go back to deferchat."
        body = f"<!doctype html><title>deferchat</title><p>{text}</p>\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


class LoopbackListener:
    """One sign-in's redirect listener. ``start`` binds (``port`` 0: any free one) and serves in a
    thread; ``wait`` returns the first callback; ``close`` stops it (idempotent)."""

    def __init__(self, port: int = 0, *, server_name: str = ""):
        self.server_name = server_name
        self._port = port
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._answer: asyncio.Future[Callback] | None = None
        self._bound: int | None = None

    @property
    def port(self) -> int:
        assert self._bound is not None, "start() first"
        return self._bound

    @property
    def redirect_uri(self) -> str:
        return f"http://{HOST}:{self.port}{CALLBACK_PATH}"

    def start(self) -> int:
        """Bind 127.0.0.1 and serve; the port. Raises OSError when the port is taken."""
        self._loop = asyncio.get_running_loop()
        self._answer = self._loop.create_future()
        httpd = _Server((HOST, self._port), _Handler)
        httpd.listener = self
        httpd.timeout = 0.5
        self._httpd = httpd
        self._bound = int(httpd.server_address[1])
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
        self._thread.start()
        return self.port

    def _deliver(self, got: Callback) -> None:
        loop, answer = self._loop, self._answer
        if loop is None or answer is None:
            return

        def settle() -> None:
            if not answer.done():
                answer.set_result(got)

        loop.call_soon_threadsafe(settle)

    async def wait(self, timeout: float) -> Callback:
        """The first callback; TimeoutError after ``timeout`` seconds."""
        assert self._answer is not None, "start() first"
        return await asyncio.wait_for(asyncio.shield(self._answer), timeout)

    async def close(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        await asyncio.to_thread(httpd.shutdown)
        httpd.server_close()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])
