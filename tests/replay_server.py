"""A loopback HTTP server that serves recorded responses in order and records the requests.

Unlike ``httpx2.MockTransport`` it exercises the SDKs' real transport over 127.0.0.1, the way
``deferchat ask --provider ... --base-url http://127.0.0.1:PORT`` reaches a recorded response.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ReplayServer:
    def __init__(self, responses: list[tuple[int, str, bytes]]):
        """``responses``: (status, content type, body) served to successive POSTs."""
        self.responses = list(responses)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server calls it by this name
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                with replay._lock:
                    replay.requests.append(
                        {"path": self.path, "headers": dict(self.headers), "body": json.loads(body or b"{}")}
                    )
                    status, content_type, payload = (
                        replay.responses.pop(0)
                        if replay.responses
                        else (500, "application/json", b'{"error": "no more replies"}')
                    )
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

        return Handler
