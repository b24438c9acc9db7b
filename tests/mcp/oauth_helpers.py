"""The loopback OAuth server (``tests.mcp_servers.oauth_server``) as a process, and a stand-in for
the person's browser: it follows the printed authorization URL to the loopback redirect."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.mcp.conftest import REPO, free_port


@dataclass
class OAuthServer:
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.origin}/mcp"

    def state(self) -> dict[str, Any]:
        return httpx.get(f"{self.origin}/test/state", timeout=10).json()

    def post(self, path: str) -> None:
        httpx.post(f"{self.origin}{path}", timeout=10).raise_for_status()


@contextlib.contextmanager
def oauth_server(*args: str, port: int | None = None) -> Iterator[OAuthServer]:
    port = port or free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.mcp_servers.oauth_server", "--port", str(port), *args],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        server = OAuthServer(port, proc)
        for _ in range(200):
            try:
                httpx.get(f"{server.origin}/test/state", timeout=1)
                break
            except httpx.HTTPError:
                if proc.poll() is not None:
                    raise RuntimeError("the OAuth test server exited") from None
                import time

                time.sleep(0.05)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()


@dataclass
class Browser:
    """A :class:`core.mcp.oauth.flow.SignInPresenter` that does what a person's browser does:
    open the authorization page, follow its redirect to the loopback listener."""

    shown: list[str] = field(default_factory=list)
    pages: list[str] = field(default_factory=list)
    follow: bool = True
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def show_sign_in(self, server: str, url: str) -> None:
        self.shown.append(url)
        if self.follow:
            self.tasks.append(asyncio.get_running_loop().create_task(self._open(url)))

    async def _open(self, url: str) -> None:
        async with httpx.AsyncClient(follow_redirects=True, timeout=10) as http:
            page = await http.get(url)
            self.pages.append(page.text)
