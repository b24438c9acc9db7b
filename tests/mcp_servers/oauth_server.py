"""A real OAuth-protected MCP server on loopback: the SDK's own authorization server routes
(``mcp.server.auth``: metadata, dynamic registration, authorize, token, revoke) and its bearer
middleware in front of a streamable HTTP MCP endpoint, all on one origin.

The authorization step needs no person: ``/authorize`` answers with a redirect straight to the
client's loopback ``redirect_uri`` carrying a fresh code, so whatever follows the printed URL
(a test, a ``BROWSER`` script) completes the sign-in. What a test needs to see or change:

* ``GET /test/state``: counts of registrations, authorizations, code exchanges, refreshes, the
  registered client ids, and the requests seen without a valid token;
* ``POST /test/revoke-refresh``: every refresh token is revoked, so once the access token expires
  (``--token-ttl``) the client's refresh is refused and it must sign in again;
* ``POST /test/expire``: every access token expires (a refresh then succeeds).

Tools: ``whoami`` (the client id and scopes of the token the call came with) and ``echo``.

Run: ``python -m tests.mcp_servers.oauth_server --port N`` with, optionally,
``--token-ttl S`` (access token lifetime, default 3600), ``--client-id ID`` and
``--client-secret S`` with ``--redirect-uri URI`` (a pre-registered client), ``--no-registration``
(dynamic registration off), ``--issuer URL`` (the authorization server the protected-resource
metadata names; by default this server's own origin), ``--scopes a,b`` (scopes offered and
required).
"""

from __future__ import annotations

import argparse
import secrets
import time
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl
from starlette.requests import Request
from starlette.responses import JSONResponse


class LoopbackProvider:
    """An in-memory authorization server that approves every authorization at once."""

    def __init__(self, token_ttl: int, scopes: list[str]):
        self.token_ttl = token_ttl
        self.scopes = scopes
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.counts = {"registrations": 0, "authorizations": 0, "exchanges": 0, "refreshes": 0, "refresh_refused": 0}
        self.unauthorized = 0

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.counts["registrations"] += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        self.counts["authorizations"] += 1
        code = secrets.token_urlsafe(24)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or self.scopes,
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str) -> Any:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = f"at-{secrets.token_urlsafe(24)}", f"rt-{secrets.token_urlsafe(24)}"
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.token_ttl,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.token_ttl,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, authorization_code: Any) -> Any:
        self.codes.pop(authorization_code.code, None)
        self.counts["exchanges"] += 1
        assert client.client_id is not None
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> Any:
        token = self.refresh.get(refresh_token)
        if token is None or token.client_id != client.client_id:
            self.counts["refresh_refused"] += 1
            return None
        return token

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: Any, scopes: list[str]
    ) -> Any:
        if self.refresh.pop(refresh_token.token, None) is None:
            raise TokenError(error="invalid_grant", error_description="refresh token revoked")
        self.counts["refreshes"] += 1
        assert client.client_id is not None
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> Any:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            self.unauthorized += 1
            return None
        return found

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    async def exchange_identity_assertion(self, client: Any, params: Any) -> Any:
        raise TokenError(error="unsupported_grant_type")


def build(args: argparse.Namespace) -> MCPServer:
    origin = f"http://127.0.0.1:{args.port}"
    scopes = [s for s in (args.scopes or "").split(",") if s]
    provider = LoopbackProvider(args.token_ttl, scopes)
    if args.client_id:
        provider.clients[args.client_id] = OAuthClientInformationFull(
            client_id=args.client_id,
            client_secret=args.client_secret,
            redirect_uris=[AnyUrl(args.redirect_uri)],
            token_endpoint_auth_method="client_secret_post" if args.client_secret else "none",
            grant_types=["authorization_code", "refresh_token"],
            scope=" ".join(scopes) or None,
        )
    server = MCPServer(
        "oauth-loopback",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=args.issuer or origin,
            resource_server_url=f"{origin}/mcp",
            validate_token_resource=False,
            required_scopes=scopes or None,
            client_registration_options=ClientRegistrationOptions(
                enabled=not args.no_registration, valid_scopes=scopes or None, default_scopes=scopes or None
            ),
            revocation_options=RevocationOptions(enabled=True),
        ),
    )

    @server.tool()
    def whoami() -> dict[str, Any]:
        """The client id and scopes of the token this call came with."""
        token = get_access_token()
        return {"client_id": token.client_id if token else None, "scopes": token.scopes if token else None}

    @server.tool()
    def echo(message: str) -> str:
        """Say the message back."""
        return f"echo: {message}"

    @server.custom_route("/test/state", methods=["GET"])
    async def state(request: Request) -> JSONResponse:
        return JSONResponse(
            {**provider.counts, "clients": sorted(provider.clients), "unauthorized": provider.unauthorized}
        )

    @server.custom_route("/test/revoke-refresh", methods=["POST"])
    async def revoke(request: Request) -> JSONResponse:
        provider.refresh.clear()
        return JSONResponse({"ok": True})

    @server.custom_route("/test/expire", methods=["POST"])
    async def expire(request: Request) -> JSONResponse:
        for token in provider.access.values():
            token.expires_at = 0
        return JSONResponse({"ok": True})

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token-ttl", type=int, default=3600)
    parser.add_argument("--client-id", default=None)
    parser.add_argument("--client-secret", default=None)
    parser.add_argument("--redirect-uri", default=None)
    parser.add_argument("--no-registration", action="store_true")
    parser.add_argument("--issuer", default=None)
    parser.add_argument("--scopes", default="")
    args = parser.parse_args()
    build(args).run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
