"""Signing in to a remote MCP server with OAuth, against a real loopback authorization and
resource server built from the MCP SDK's server-side auth (``tests.mcp_servers.oauth_server``).

No network: the server, the loopback redirect and the "browser" (an HTTP client following the
printed URL) all run on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path

import pytest

from core.mcp.client import McpManager
from core.mcp.config import config_from_dict
from core.mcp.oauth.flow import SignIn
from core.mcp.oauth.tokens import TokenFile, tokens_path
from tests.mcp.conftest import Events, free_port
from tests.mcp.oauth_helpers import Browser, oauth_server


def remote(url: str, **entry: object) -> object:
    return config_from_dict({"mcpServers": {"remote": {"url": url, "timeout": 15, **entry}}}, environ=os.environ)


def stored(name: str = "remote") -> dict:
    entry = TokenFile().entry(name)
    assert entry is not None
    return entry


async def test_sign_in_with_dynamic_registration(home: Path) -> None:
    with oauth_server() as server:
        events = Events()
        async with McpManager(remote(server.url), on_event=events) as manager:
            [report] = manager.servers()
            assert (report.status, report.auth) == ("needs_sign_in", "needs_sign_in")
            assert "deferchat servers --login remote" in report.message
            assert [r.name for r in manager.rejected()] == ["mcp.remote.*"]  # skipped in a plan, with the reason
            refused = await manager.call("mcp.remote.whoami", {})
            assert refused.is_error and refused.error_code == "mcp.needs_sign_in"
            assert events.of("remote")[-1].status == "needs_sign_in"

            browser = Browser()
            report = await manager.sign_in("remote", SignIn(browser, timeout=20))
            assert (report.status, report.auth, report.tools) == ("ready", "signed_in", 2)
            assert report.capabilities[0] == "tools"
            [url] = browser.shown
            assert url.startswith(f"{server.origin}/authorize?") and "code_challenge_method=S256" in url
            assert "Signed in to remote" in browser.pages[0]
            who = (await manager.call("mcp.remote.whoami", {})).structured
            state = server.state()
            assert state["registrations"] == 1 and who["client_id"] in state["clients"]

        path = tokens_path()
        assert path.parent == home
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        entry = stored()
        assert entry["tokens"]["access_token"].startswith("at-") and entry["client_info"]["client_id"]

        # a later run uses the stored sign-in: no browser, no new authorization
        async with McpManager(remote(server.url)) as manager:
            [report] = manager.servers()
            assert (report.status, report.auth) == ("ready", "signed_in")
        assert server.state()["authorizations"] == 1


async def test_sign_in_with_a_configured_client_id_and_secret(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    monkeypatch.setenv("REMOTE_SECRET", "s3cret-of-the-configured-client")
    with oauth_server(
        "--client-id",
        "deferchat-desk",
        "--client-secret",
        "s3cret-of-the-configured-client",
        "--redirect-uri",
        f"http://127.0.0.1:{port}/callback",
        "--no-registration",
        "--scopes",
        "notes.read",
    ) as server:
        config = remote(
            server.url,
            oauth={"clientId": "deferchat-desk", "clientSecret": "${REMOTE_SECRET}", "callbackPort": port},
        )
        async with McpManager(config) as manager:
            browser = Browser()
            report = await manager.sign_in("remote", SignIn(browser, timeout=20))
            assert report.status == "ready", report.message
            assert f"redirect_uri=http%3A%2F%2F127.0.0.1%3A{port}%2Fcallback" in browser.shown[0]
            assert "scope=notes.read" in browser.shown[0]
            who = (await manager.call("mcp.remote.whoami", {})).structured
            assert who == {"client_id": "deferchat-desk", "scopes": ["notes.read"]}
        assert server.state()["registrations"] == 0
    text = tokens_path().read_text()
    assert "s3cret" not in text and "client_info" not in stored()  # the configured client stays the config's


@pytest.mark.slow
async def test_an_expired_token_is_refreshed_in_the_session_and_in_a_later_run(home: Path) -> None:
    with oauth_server("--token-ttl", "3") as server:
        async with McpManager(remote(server.url)) as manager:
            await manager.sign_in("remote", SignIn(Browser(), timeout=20))
            first = stored()["tokens"]["access_token"]
            await asyncio.sleep(3.3)
            who = await manager.call("mcp.remote.whoami", {})
            assert not who.is_error, who.text()
            assert server.state()["refreshes"] == 1
            assert stored()["tokens"]["access_token"] != first
        await asyncio.sleep(3.3)
        async with McpManager(remote(server.url)) as manager:  # a new process would load what the file holds
            assert manager.servers()[0].status == "ready"
            assert not (await manager.call("mcp.remote.echo", {"message": "hi"})).is_error
        state = server.state()
        assert state["refreshes"] == 2 and state["authorizations"] == 1


@pytest.mark.slow
async def test_a_revoked_refresh_token_leads_to_signing_in_again(home: Path) -> None:
    with oauth_server("--token-ttl", "3") as server:
        events = Events()
        async with McpManager(remote(server.url), on_event=events) as manager:
            await manager.sign_in("remote", SignIn(Browser(), timeout=20))
            server.post("/test/revoke-refresh")
            await asyncio.sleep(3.3)
            refused = await manager.call("mcp.remote.whoami", {})
            assert refused.is_error and refused.error_code == "mcp.needs_sign_in", refused.text()
            assert manager.servers()[0].status == "needs_sign_in"
            assert events.of("remote")[-1].status == "needs_sign_in"
            assert "tokens" not in stored()  # the dead tokens are dropped, the registration kept
            again = await manager.call("mcp.remote.whoami", {})  # no restart loop: still refused, nothing sent
            assert again.error_code == "mcp.needs_sign_in"

            report = await manager.sign_in("remote", SignIn(Browser(), timeout=20))
            assert report.status == "ready"
            assert not (await manager.call("mcp.remote.whoami", {})).is_error
        state = server.state()
        assert state["authorizations"] == 2 and state["registrations"] == 1 and state["refresh_refused"] >= 1


@pytest.mark.parametrize(
    ("issuer", "why"),
    [
        ("https://169.254.169.254", "169.254.169.254 is a link-local address"),
        ("http://localhost:{port}", "localhost is this machine"),
    ],
)
async def test_metadata_pointing_at_a_private_address_is_refused(home: Path, issuer: str, why: str) -> None:
    port = free_port()
    with oauth_server("--issuer", issuer.format(port=port), port=port) as server:
        browser = Browser()
        async with McpManager(remote(server.url)) as manager:
            [report] = manager.servers()
            assert report.status == "failed" and why in report.message, report.message
            assert "refused to reach" in report.message
            report = await manager.sign_in("remote", SignIn(browser, timeout=5))
            assert report.status == "failed" and why in report.message
        assert browser.shown == []  # nobody was sent anywhere
        assert server.state()["registrations"] == 0


async def test_a_private_authorization_server_the_owner_allowed_is_reached(home: Path) -> None:
    port = free_port()
    with oauth_server("--issuer", f"http://localhost:{port}", port=port) as server:
        async with McpManager(remote(server.url), tool_settings={"allow_private_hosts": ["localhost"]}) as manager:
            report = await manager.sign_in("remote", SignIn(Browser(), timeout=20))
            assert report.status == "ready", report.message


async def test_a_sign_in_nobody_finishes_times_out_and_still_needs_sign_in(home: Path) -> None:
    with oauth_server() as server:
        async with McpManager(remote(server.url)) as manager:
            report = await manager.sign_in("remote", SignIn(Browser(follow=False), timeout=0.5))
            assert report.status == "needs_sign_in"
            assert "no sign-in arrived within 0.5 s" in report.message


async def test_tokens_for_another_url_are_not_sent(home: Path) -> None:
    with oauth_server() as server:
        async with McpManager(remote(server.url)) as manager:
            await manager.sign_in("remote", SignIn(Browser(), timeout=20))
        with oauth_server() as other:  # the same name now points at another server
            async with McpManager(remote(other.url)) as manager:
                assert manager.servers()[0].status == "needs_sign_in"
            assert other.state()["unauthorized"] == 0  # no token of the first server reached it


def test_the_token_file_is_private_and_logout_removes_the_sign_in(home: Path) -> None:
    file = TokenFile()
    file.update("remote", lambda _: {"url_sha256": "x", "tokens": {"access_token": "a" * 20}})
    assert stat.S_IMODE(file.path.stat().st_mode) == 0o600
    os.chmod(file.path, 0o644)
    assert file.entry("remote") is not None
    assert stat.S_IMODE(file.path.stat().st_mode) == 0o600  # loosened by someone: put back
    file.path.write_text("{not json")
    assert file.entry("remote") is None  # corrupt: no sign-in, never a crash
    file.update("remote", lambda _: {"url_sha256": "x", "tokens": {"access_token": "b" * 20}})
    assert json.loads(file.path.read_text())["servers"]["remote"]["url_sha256"] == "x"
    from core.mcp.oauth.flow import logout

    assert logout("remote") is True and logout("remote") is False
    assert file.read() == {}


def test_an_oauth_entry_is_read_and_checked() -> None:
    from core.mcp.config import McpConfigError

    config = config_from_dict(
        {"mcpServers": {"r": {"url": "https://x.example/mcp", "oauth": {"clientId": "c", "scopes": "a b"}}}}
    )
    assert config.servers[0].oauth is not None and config.servers[0].oauth.scopes == ["a", "b"]
    for bad in (
        {"command": "x", "oauth": {"clientId": "c"}},
        {"url": "https://x.example", "oauth": {"clientSecret": "s"}},
        {"url": "https://x.example", "oauth": {"callbackPort": 0}},
    ):
        with pytest.raises(McpConfigError):
            config_from_dict({"mcpServers": {"r": bad}})
