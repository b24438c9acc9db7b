"""Signing in to a remote MCP server: the MCP SDK's OAuth client, wired to deferchat.

Every remote (``http``/``sse``) server without a static ``Authorization`` header is spoken to
through the SDK's :class:`~mcp.client.auth.OAuthClientProvider`. A server that needs no sign-in
never answers 401 and the provider does nothing. One that does gets the SDK's whole flow:
protected-resource metadata (RFC 9728) and authorization-server metadata (RFC 8414) discovery,
dynamic client registration (RFC 7591) or the entry's configured ``oauth.clientId`` (and
``clientSecret``), PKCE, the scopes the server asks for (with the entry's ``oauth.scopes``
added), the authorization code through the loopback redirect (:mod:`.listener`), the token
exchange, and refreshing an expired token. What deferchat adds:

* **Who is asked.** A connection opened without a :class:`SignIn` (a chat opening, ``deferchat
  ask``, ``deferchat servers``) never opens a browser and never waits for a person: when the SDK
  reaches the point of sending the person to the authorization page, the connection fails with
  :class:`SignInRequired` and the server is reported ``needs_sign_in`` (a refresh token the
  server refused is dropped first). A connection opened with one (``deferchat servers --login``,
  the app's sign-in) hands the page's URL to the :class:`SignInPresenter` and waits, bounded, for
  the redirect.
* **Where requests go.** Every request of the flow goes through :class:`.http.GuardedTransport`
  (the private-address guard). The authorization page is checked the same way before anyone is
  sent to it.
* **What is kept.** Tokens, a dynamic registration and the discovered metadata go to the sign-in
  file (:mod:`.tokens`); a token's absolute expiry and the metadata are handed back to the SDK
  when a later connection loads them (:class:`DeferchatOAuth`), so a token that expired between
  two runs is refreshed at the right endpoint instead of sending the person to sign in again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from core.mcp.oauth.listener import LoopbackListener, free_port
from core.mcp.oauth.tokens import ServerTokens, TokenFile

if TYPE_CHECKING:
    import httpx2
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull

    from core.mcp.resolve import McpServerConfig
    from core.net.guard import NetPolicy

SIGN_IN_TIMEOUT = 300.0  # seconds a person has to finish signing in in the browser
CLIENT_NAME = "deferchat"


class SignInRequired(Exception):
    """The server needs the person to sign in, and this connection may not ask them."""


class SignInFailed(Exception):
    """A sign-in the person started did not finish (refused, timed out, the redirect port taken)."""


class SignInPresenter(Protocol):
    """Shows the person the authorization page: the CLI prints its URL, the app opens a browser
    (and shows the URL to copy where none opens)."""

    async def show_sign_in(self, server: str, url: str) -> None: ...


@dataclass
class SignIn:
    """One interactive sign-in: who shows the page, and how long the redirect may take."""

    presenter: SignInPresenter
    timeout: float = SIGN_IN_TIMEOUT


def wants_oauth(config: McpServerConfig) -> bool:
    """A remote server whose entry does not send its own ``Authorization`` header."""
    if config.transport == "stdio":
        return False
    return not any(k.lower() == "authorization" for k in config.headers)


def _configured_client(config: McpServerConfig, redirect_uri: str) -> OAuthClientInformationFull | None:
    from mcp.shared.auth import OAuthClientInformationFull

    oauth = config.oauth
    if oauth is None or oauth.client_id is None:
        return None
    secret = config.endpoint().oauth_client_secret
    return OAuthClientInformationFull(
        client_id=oauth.client_id,
        client_secret=secret,
        redirect_uris=[redirect_uri],
        token_endpoint_auth_method="client_secret_post" if secret else "none",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        client_name=CLIENT_NAME,
    )


def _stored_redirect_port(storage: ServerTokens) -> int | None:
    from urllib.parse import urlsplit

    entry = storage.entry() or {}
    info = entry.get("client_info") if isinstance(entry.get("client_info"), dict) else None
    uris = (info or {}).get("redirect_uris") or []
    if not uris:
        return None
    parts = urlsplit(str(uris[0]))
    return parts.port if parts.hostname == "127.0.0.1" else None


class _Quiet(logging.Filter):
    """The SDK logs every failed flow with a traceback; a sign-in that is merely needed is not a fault."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, SignInRequired | SignInFailed)


_QUIET = _Quiet()


class Hooks:
    """The redirect and callback handlers the SDK calls, for one connection."""

    def __init__(
        self,
        server: str,
        storage: ServerTokens,
        policy: NetPolicy,
        sign_in: SignIn | None,
        listener: LoopbackListener | None,
    ):
        self.server = server
        self.storage = storage
        self.policy = policy
        self.sign_in = sign_in
        self.listener = listener
        self.required = False  # the connection stopped because the person must sign in
        self.completed = False  # an interactive sign-in finished: tokens are stored

    async def redirect(self, url: str) -> None:
        import httpx

        from core.net.guard import check_url

        await check_url(httpx.URL(url), self.policy)  # the page the person is sent to: guarded too
        if self.sign_in is None or self.listener is None:
            self.required = True
            self.storage.forget_tokens()  # they no longer work (or there were none)
            raise SignInRequired(f"MCP server {self.server!r} needs you to sign in")
        await self.sign_in.presenter.show_sign_in(self.server, url)

    async def callback(self) -> AuthorizationCodeResult:
        from mcp.shared.auth import AuthorizationCodeResult

        assert self.sign_in is not None and self.listener is not None
        try:
            got = await self.listener.wait(self.sign_in.timeout)
        except TimeoutError:
            raise SignInFailed(
                f"no sign-in arrived within {self.sign_in.timeout:g} s; start the sign-in again when you are ready"
            ) from None
        finally:
            await self.listener.close()
        if got.error or not got.code:
            detail = f": {got.error_description}" if got.error_description else ""
            raise SignInFailed(f"the server's sign-in page answered {got.error or 'without a code'}{detail}")
        self.completed = True
        self.sign_in = None  # from now on a lost sign-in is reported, never asked again mid-call
        return AuthorizationCodeResult(code=got.code, state=got.state, iss=got.iss)


def _provider_class() -> type[Any]:
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.auth.utils import union_scopes

    class DeferchatOAuth(OAuthClientProvider):
        """The SDK's provider, given back what the sign-in file kept (see the module)."""

        storage_: ServerTokens
        scopes_: str | None

        async def _initialize(self) -> None:
            await super()._initialize()
            from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata

            ctx = self.context
            if ctx.current_tokens is not None:
                ctx.token_expiry_time = self.storage_.expires_at()
            saved = self.storage_.saved_metadata()
            with contextlib.suppress(ValueError):
                if ctx.oauth_metadata is None and isinstance(saved["oauth_metadata"], dict):
                    ctx.oauth_metadata = OAuthMetadata.model_validate(saved["oauth_metadata"])
                if ctx.protected_resource_metadata is None and isinstance(saved["resource_metadata"], dict):
                    ctx.protected_resource_metadata = ProtectedResourceMetadata.model_validate(
                        saved["resource_metadata"]
                    )
            if ctx.auth_server_url is None and isinstance(saved["auth_server_url"], str):
                ctx.auth_server_url = saved["auth_server_url"]

        async def _perform_authorization_code_grant(self) -> tuple[str, str]:
            if self.scopes_:  # the entry's own scopes, beside what the server asked for
                self.context.client_metadata.scope = union_scopes(self.context.client_metadata.scope, self.scopes_)
            return await super()._perform_authorization_code_grant()

    return DeferchatOAuth


@dataclass
class Auth:
    """What one connection to a remote server is sent with: the guard's transport, the SDK's
    OAuth provider (None when the entry sends its own ``Authorization``) and its hooks."""

    transport: httpx2.AsyncBaseTransport
    provider: httpx2.Auth | None
    hooks: Hooks | None

    def client(self, headers: Mapping[str, str] | None = None, timeout: Any = None, auth: Any = None) -> Any:
        """An ``httpx2`` client over this transport and provider (the SDK's client factory shape)."""
        import httpx2

        return httpx2.AsyncClient(
            headers=dict(headers or {}),
            timeout=timeout or httpx2.Timeout(30.0, read=300.0),
            transport=self.transport,
            auth=auth or self.provider,
        )


@contextlib.asynccontextmanager
async def remote_auth(
    config: McpServerConfig,
    *,
    sign_in: SignIn | None = None,
    tool_settings: Mapping[str, Any] | None = None,
    file: TokenFile | None = None,
) -> AsyncIterator[Auth]:
    """How a remote server is reached (see :class:`Auth`). Raises :class:`SignInFailed` when an
    interactive sign-in cannot listen for its redirect."""
    from mcp.shared.auth import OAuthClientMetadata

    from core.mcp.http import BoundedTransport
    from core.mcp.oauth.http import GuardedTransport, net_policy

    live = config.endpoint()
    assert live.url is not None
    policy = net_policy(live.url, tool_settings)
    transport = GuardedTransport(live.url, policy, inner=BoundedTransport())  # every answer bounded too
    if not wants_oauth(config):
        yield Auth(transport, None, None)
        return
    logging.getLogger("mcp.client.auth.oauth2").addFilter(_QUIET)
    storage = ServerTokens(config.name, live.url, file=file)
    oauth = config.oauth
    port = oauth.callback_port if oauth and oauth.callback_port else None
    listener: LoopbackListener | None = None
    stored = None
    if port is None and (oauth is None or oauth.client_id is None):
        stored = _stored_redirect_port(storage)  # a dynamic registration is for its redirect port
    if sign_in is not None:
        try:
            listener = LoopbackListener(port or stored or 0, server_name=config.name)
            port = listener.start()
        except OSError as exc:
            if stored is None:
                raise SignInFailed(
                    f"cannot listen for the sign-in's redirect on 127.0.0.1:{port}: {exc.strerror or exc}"
                    + (" (oauth.callbackPort in the server's entry)" if oauth and oauth.callback_port else "")
                ) from None
            storage.forget_client()  # its redirect port is taken now: register again on a free one
            listener = LoopbackListener(0, server_name=config.name)
            port = listener.start()
    else:
        port = port or stored
    redirect_uri = f"http://127.0.0.1:{port or free_port()}/callback"
    storage.configured = _configured_client(config, redirect_uri)
    if storage.configured is not None:
        from core.mcp.oauth.tokens import remember_secret

        remember_secret(storage.configured.client_secret)
    hooks = Hooks(config.name, storage, policy, sign_in, listener)
    provider = _provider_class()(
        live.url,
        OAuthClientMetadata(
            client_name=CLIENT_NAME,
            redirect_uris=[redirect_uri],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope=" ".join(oauth.scopes) if oauth and oauth.scopes else None,
        ),
        storage,
        redirect_handler=hooks.redirect,
        callback_handler=hooks.callback,
    )
    provider.storage_ = storage
    provider.scopes_ = " ".join(oauth.scopes) if oauth and oauth.scopes else None
    storage.context = provider.context
    try:
        yield Auth(transport, provider, hooks)
    finally:
        if listener is not None:
            await asyncio.shield(listener.close())


def find_required(exc: BaseException) -> SignInRequired | SignInFailed | None:
    """The sign-in problem an exception (group) carries, if any."""
    from core.mcp.errors import leaf_errors

    for leaf in leaf_errors(exc):
        if isinstance(leaf, SignInRequired | SignInFailed):
            return leaf
    return None


def logout(name: str, file: TokenFile | None = None) -> bool:
    """Forget server ``name``'s sign-in (tokens and registration); whether it held tokens."""
    return (file or TokenFile()).remove(name)
