"""The HTTP every remote MCP server is spoken to over (``core.mcp.oauth.http.GuardedTransport``):
a sign-in that leads anywhere but the configured server must reach the public internet, in any
spelling of an address and by any name's answer; the configured server itself is reached as the
owner wrote it; a sign-in answer is bounded. Generated members of each class, no network (the
inner transport is httpx2's MockTransport, the resolver a function)."""

from __future__ import annotations

import ipaddress

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.mcp.oauth.http import GuardedTransport, ResponseTooLarge, net_policy
from core.mcp.oauth.tokens import TOKEN_PLACEHOLDER, redact_tokens, remember_secret
from core.net.guard import NetPolicy, PrivateAddress

ENDPOINT = "http://127.0.0.1:8123/mcp"

PRIVATE_NETS = ["127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10"]


def spellings(address: ipaddress.IPv4Address) -> list[str]:
    """Ways a URL's host can name one IPv4 address."""
    n = int(address)
    a, b, c, d = address.packed
    return [
        str(address),
        str(n),
        hex(n),
        f"0{a:o}.{b}.{c}.{d}",
        f"{a}.{(b << 16) | (c << 8) | d}",
        f"[::ffff:{address}]",
        f"[::ffff:{(a << 8) | b:x}:{(c << 8) | d:x}]",
    ]


private_address = st.sampled_from(PRIVATE_NETS).flatmap(
    lambda net: st.integers(0, ipaddress.ip_network(net).num_addresses - 1).map(
        lambda i, net=net: ipaddress.ip_network(net)[i]
    )
)


def transport(policy: NetPolicy, sent: list[httpx2.Request], body: bytes = b"{}") -> GuardedTransport:
    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(
            httpx2.Request(request.method, request.url, headers=request.headers, extensions=dict(request.extensions))
        )
        return httpx2.Response(200, content=body, headers={"content-type": "application/json"})

    return GuardedTransport(ENDPOINT, policy, inner=httpx2.MockTransport(answer))


@settings(max_examples=120, deadline=None)
@given(
    private_address,
    st.integers(0, 6),
    st.sampled_from(["http", "https"]),
    st.sampled_from(["", "/token", "/.well-known/oauth-authorization-server"]),
)
async def test_a_sign_in_request_to_any_spelling_of_a_private_address_is_never_sent(
    address: ipaddress.IPv4Address, which: int, scheme: str, path: str
) -> None:
    host = spellings(address)[which]  # on another port than the configured server's: another origin
    sent: list[httpx2.Request] = []
    guarded = transport(net_policy(ENDPOINT, {}), sent)
    url = f"{scheme}://{host}:9{which}00{path}"
    try:
        request = httpx2.Request("GET", url)
    except httpx2.InvalidURL:
        return  # httpx2 refuses the spelling (octal): no request can even be made of it
    with pytest.raises(PrivateAddress):
        await guarded.handle_async_request(request)
    assert sent == []


@settings(max_examples=60, deadline=None)
@given(private_address, st.sampled_from(["auth.example", "login.example.com", "idp.example.org"]))
async def test_a_public_looking_name_that_resolves_privately_is_never_reached(
    address: ipaddress.IPv4Address, name: str
) -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["93.184.216.34", str(address)] if host == name else []

    sent: list[httpx2.Request] = []
    policy = NetPolicy.from_settings({"resolver": resolver}, trusted_urls=[ENDPOINT])
    with pytest.raises(PrivateAddress):
        await transport(policy, sent).handle_async_request(httpx2.Request("POST", f"https://{name}/token"))
    assert sent == []


async def test_the_configured_server_and_its_own_metadata_are_reached_as_written() -> None:
    sent: list[httpx2.Request] = []
    guarded = transport(net_policy(ENDPOINT, {}), sent)
    for url in (ENDPOINT, "http://127.0.0.1:8123/.well-known/oauth-protected-resource/mcp"):
        response = await guarded.handle_async_request(httpx2.Request("GET", url))
        assert response.status_code == 200
    assert [str(r.url) for r in sent] == [ENDPOINT, "http://127.0.0.1:8123/.well-known/oauth-protected-resource/mcp"]


async def test_a_public_host_is_connected_to_at_the_checked_address() -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["93.184.216.34"]

    sent: list[httpx2.Request] = []
    policy = NetPolicy.from_settings({"resolver": resolver}, trusted_urls=[ENDPOINT])
    await transport(policy, sent).handle_async_request(httpx2.Request("POST", "https://auth.example/token"))
    [request] = sent
    assert request.url.host == "93.184.216.34" and request.headers["Host"] == "auth.example"
    assert request.extensions["sni_hostname"] == "auth.example"


async def test_a_private_host_the_owner_allowed_is_reached() -> None:
    sent: list[httpx2.Request] = []
    guarded = transport(net_policy(ENDPOINT, {"allow_private_hosts": ["192.168.1.0/24"]}), sent)
    await guarded.handle_async_request(httpx2.Request("GET", "http://192.168.1.7/.well-known/openid-configuration"))
    assert len(sent) == 1


async def test_a_sign_in_answer_is_bounded() -> None:
    sent: list[httpx2.Request] = []

    async def resolver(host: str, port: int) -> list[str]:
        return ["93.184.216.34"]

    policy = NetPolicy.from_settings({"resolver": resolver}, trusted_urls=[ENDPOINT])
    guarded = GuardedTransport(
        ENDPOINT,
        policy,
        inner=httpx2.MockTransport(lambda r: httpx2.Response(200, content=b"x" * 2_000)),
        max_auth_bytes=1_000,
    )
    with pytest.raises(ResponseTooLarge):
        await guarded.handle_async_request(httpx2.Request("GET", "https://auth.example/.well-known/x"))
    ok = await transport(policy, sent, b'{"a": 1}').handle_async_request(
        httpx2.Request("GET", "https://auth.example/x")
    )
    assert await ok.aread() == b'{"a": 1}'


@settings(max_examples=80, deadline=None)
@given(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789-_.~+/=", min_size=12, max_size=60),
    st.text(max_size=30),
    st.text(max_size=30),
)
def test_a_token_seen_is_redacted_wherever_a_message_quotes_it(token: str, before: str, after: str) -> None:
    from urllib.parse import quote, quote_plus

    remember_secret(token)
    for form in (token, quote(token, safe=""), quote_plus(token)):
        shown = redact_tokens(f"{before}{form}{after}")
        assert token not in shown and form not in shown and TOKEN_PLACEHOLDER in shown
