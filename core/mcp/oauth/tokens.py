"""Where a remote MCP server's sign-in is kept: one file only the user can read, outside the chat
database.

``mcp-oauth.json`` in the config folder (:func:`core.config.config_dir`: ``$DEFERCHAT_HOME``, else
``$XDG_CONFIG_HOME/deferchat``), mode 0600 in a folder created 0700::

    {"version": 1, "servers": {"<server name>": {
        "url_sha256": "...",              # the server URL the sign-in belongs to (expanded)
        "tokens": {...}, "expires_at": 1767225600.0, "signed_in_at": "2026-...Z",
        "client_info": {...},             # a dynamic registration (never a configured client)
        "oauth_metadata": {...}, "resource_metadata": {...}, "auth_server_url": "..."}}}

A sign-in is for one server name *and* its URL: when the config points the name somewhere else,
the stored tokens are not sent there (the entry counts as signed out, and a new sign-in
replaces it). Every write goes through a temporary file in the same folder, renamed into place,
under a lock file, so two deferchat processes refreshing at once never leave half a file; a
file someone loosened is put back to 0600 when read. An unreadable or corrupt file counts as no
sign-in.

Token values never leave this file and the SDK's memory: each one read or stored is registered
with the log redactor (:data:`core.mcp.logs.REDACTOR`) and :func:`redact_tokens`, which every
message of a server passes, so a token an error quotes is shown as ``<oauth token>``.
:class:`ServerTokens` is the MCP SDK's :class:`~mcp.client.auth.TokenStorage` for one server.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.mcp.logs import REDACTOR, log

if TYPE_CHECKING:
    from mcp.client.auth.oauth2 import OAuthContext
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

TOKENS_FILE = "mcp-oauth.json"
LOCK_FILE = ".mcp-oauth.lock"
TOKEN_PLACEHOLDER = "<oauth token>"

_known: set[str] = set()  # every token value this process has seen, for redaction


def tokens_path() -> Path:
    from core.config import config_dir

    return config_dir() / TOKENS_FILE


def url_digest(url: str) -> str:
    return hashlib.sha256(url.encode("utf-8")).hexdigest()


def remember_secret(*values: str | None) -> None:
    """Register token values (and client secrets) with the log redactor for this process."""
    fresh = [v for v in values if v and len(v) >= 8 and v not in _known]
    for value in fresh:
        _known.add(value)
    if fresh:
        REDACTOR.add((v, TOKEN_PLACEHOLDER) for v in fresh)


def redact_tokens(text: str) -> str:
    """``text`` with every token value this process has seen shown as ``<oauth token>``."""
    if not _known or not text:
        return text
    from core.mcp.expansion import redact

    return redact(text, [(v, TOKEN_PLACEHOLDER) for v in sorted(_known, key=len, reverse=True)])


class TokenFile:
    """The sign-in file: read, changed under a lock, written all or nothing with mode 0600."""

    def __init__(self, path: Path | None = None):
        self.path = path or tokens_path()

    def read(self) -> dict[str, dict[str, Any]]:
        """Every server's entry (an unreadable or corrupt file: none)."""
        try:
            st = self.path.stat()
            if st.st_mode & 0o077 and st.st_uid == os.getuid():
                os.chmod(self.path, 0o600)  # someone loosened it: only the user may read tokens
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("%s cannot be read (%s); it counts as no sign-in", self.path, type(exc).__name__)
            return {}
        servers = data.get("servers") if isinstance(data, dict) else None
        if not isinstance(servers, dict):
            return {}
        return {k: v for k, v in servers.items() if isinstance(k, str) and isinstance(v, dict)}

    def entry(self, name: str) -> dict[str, Any] | None:
        return self.read().get(name)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        lock = os.open(self.path.parent / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                import fcntl

                fcntl.flock(lock, fcntl.LOCK_EX)
            except ImportError:  # pragma: no cover - no fcntl (Windows): one process at a time is assumed
                pass
            yield
        finally:
            os.close(lock)

    def update(self, name: str, change: Callable[[dict[str, Any] | None], dict[str, Any] | None]) -> None:
        """Replace server ``name``'s entry with ``change(entry)`` (None removes it), under the lock."""
        with self._locked():
            servers = self.read()
            new = change(servers.get(name))
            if new is None:
                if name not in servers:
                    return
                servers.pop(name)
            else:
                servers[name] = new
            self._write(servers)

    def remove(self, name: str) -> bool:
        """Forget server ``name``'s entry (tokens, registration, metadata); whether it held tokens."""
        found = False

        def drop(entry: dict[str, Any] | None) -> None:
            nonlocal found
            found = entry is not None and isinstance(entry.get("tokens"), dict)
            return None

        self.update(name, drop)
        return found

    def _write(self, servers: dict[str, dict[str, Any]]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=".mcp-oauth-", dir=self.path.parent)  # created 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                os.fchmod(f.fileno(), stat.S_IRUSR | stat.S_IWUSR)
                json.dump({"version": 1, "servers": servers}, f, indent=2, sort_keys=True)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def sign_in_state(name: str, url: str, file: TokenFile | None = None) -> str:
    """``signed_in`` when tokens for this server and URL are stored, else ``signed_out``."""
    entry = (file or TokenFile()).entry(name)
    if entry and entry.get("url_sha256") == url_digest(url) and isinstance(entry.get("tokens"), dict):
        return "signed_in"
    return "signed_out"


class ServerTokens:
    """The MCP SDK's ``TokenStorage`` for one server, over :class:`TokenFile`.

    ``configured``: a client registered ahead of time (the entry's ``oauth.clientId``), handed to
    the SDK as its client and never written to the file. ``context``: the provider's, once built,
    so the discovered metadata is kept with the tokens (a later process refreshes at the right
    token endpoint without discovering again)."""

    def __init__(
        self,
        name: str,
        url: str,
        *,
        file: TokenFile | None = None,
        configured: OAuthClientInformationFull | None = None,
    ):
        self.name = name
        self.digest = url_digest(url)
        self.file = file or TokenFile()
        self.configured = configured
        self.context: OAuthContext | None = None
        if configured is not None:
            remember_secret(configured.client_secret)

    def entry(self) -> dict[str, Any] | None:
        """This server's entry, when it belongs to this URL."""
        entry = self.file.entry(self.name)
        return entry if entry is not None and entry.get("url_sha256") == self.digest else None

    def _change(self, **fields: Any) -> None:
        def apply(entry: dict[str, Any] | None) -> dict[str, Any]:
            base = (
                entry if entry is not None and entry.get("url_sha256") == self.digest else {"url_sha256": self.digest}
            )
            for key, value in fields.items():
                if value is None:
                    base.pop(key, None)
                else:
                    base[key] = value
            return base

        self.file.update(self.name, apply)

    def entry_has_tokens(self) -> bool:
        entry = self.entry()
        return entry is not None and isinstance(entry.get("tokens"), dict)

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        entry = self.entry()
        raw = entry.get("tokens") if entry else None
        if not isinstance(raw, dict):
            return None
        try:
            token = OAuthToken.model_validate(raw)
        except ValueError:
            return None
        remember_secret(token.access_token, token.refresh_token)
        return token

    def expires_at(self) -> float | None:
        entry = self.entry()
        value = entry.get("expires_at") if entry else None
        return float(value) if isinstance(value, int | float) else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        remember_secret(tokens.access_token, tokens.refresh_token)
        fields: dict[str, Any] = {
            "tokens": tokens.model_dump(mode="json", exclude_none=True),
            "expires_at": time.time() + int(tokens.expires_in) if tokens.expires_in is not None else None,
            "signed_in_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        ctx = self.context
        if ctx is not None:
            if ctx.oauth_metadata is not None:
                fields["oauth_metadata"] = ctx.oauth_metadata.model_dump(mode="json", exclude_none=True)
            if ctx.protected_resource_metadata is not None:
                fields["resource_metadata"] = ctx.protected_resource_metadata.model_dump(mode="json", exclude_none=True)
            fields["auth_server_url"] = ctx.auth_server_url
        self._change(**fields)

    def forget_tokens(self) -> None:
        """The tokens no longer work (a refresh was refused): drop them, keep the registration."""
        self._change(tokens=None, expires_at=None, signed_in_at=None)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.configured is not None:
            return self.configured
        from mcp.shared.auth import OAuthClientInformationFull

        entry = self.entry()
        raw = entry.get("client_info") if entry else None
        if not isinstance(raw, dict):
            return None
        try:
            info = OAuthClientInformationFull.model_validate(raw)
        except ValueError:
            return None
        remember_secret(info.client_secret)
        return info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.configured is not None:
            return  # the configured client is the config's, not the file's
        remember_secret(client_info.client_secret)
        self._change(client_info=client_info.model_dump(mode="json", exclude_none=True))

    def forget_client(self) -> None:
        """A registration that cannot be used again (its redirect port is taken): register anew."""
        self._change(client_info=None)

    def saved_metadata(self) -> dict[str, Any]:
        entry = self.entry() or {}
        return {k: entry.get(k) for k in ("oauth_metadata", "resource_metadata", "auth_server_url")}
