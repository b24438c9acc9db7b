"""The URL guard (core/net/guard.py), fuzzed: no notation of a non-public address gets through, no
host name with a non-public answer gets through, the connection goes to the checked address, and
every redirect hop is checked. Everything runs on httpx.MockTransport or stub resolvers: no network.
"""

from __future__ import annotations

import asyncio
import socket
from ipaddress import IPv4Address, IPv6Address, ip_address

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.net.guard import BLOCKED_NETWORKS, NetPolicy, PrivateAddress, address_problem, check_url, guarded_request
from core.net.host import HostError, canonical_host, parse_ipv4

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

V4_NETS = [n for n, _ in BLOCKED_NETWORKS if n.version == 4]
V6_NETS = [n for n, _ in BLOCKED_NETWORKS if n.version == 6 and n.prefixlen < 96]  # not the ::/96 embeddings


@st.composite
def blocked_v4(draw: st.DrawFn) -> IPv4Address:
    net = draw(st.sampled_from(V4_NETS))
    return net[draw(st.integers(0, net.num_addresses - 1))]  # type: ignore[return-value]


@st.composite
def blocked_v6(draw: st.DrawFn) -> IPv6Address:
    net = draw(st.sampled_from(V6_NETS))
    return net[draw(st.integers(0, net.num_addresses - 1))]  # type: ignore[return-value]


public_v4 = st.ip_addresses(v=4).filter(lambda a: address_problem(a) is None)
public_v6 = st.ip_addresses(v=6).filter(lambda a: address_problem(a) is None)
public_address = st.one_of(public_v4, public_v6)
blocked_address = st.one_of(blocked_v4(), blocked_v6())


def _number(draw: st.DrawFn, n: int) -> str:
    style = draw(st.sampled_from(["dec", "hex", "HEX", "oct"]))
    if style == "dec":
        return str(n)
    if style == "oct":
        return "0" + "0" * draw(st.integers(0, 2)) + format(n, "o")
    digits = format(n, "x" if style == "hex" else "X")
    return ("0x" if style == "hex" else "0X") + "0" * draw(st.integers(0, 2)) + digits


@st.composite
def v4_notation(draw: st.DrawFn, address: IPv4Address) -> str:
    """One of the spellings inet_aton and browsers read as ``address``: 1-4 parts, each in decimal,
    octal or hex, the last holding the remaining bytes."""
    raw = int(address).to_bytes(4, "big")
    parts = draw(st.integers(1, 4))
    head = [_number(draw, b) for b in raw[: parts - 1]]
    text = ".".join([*head, _number(draw, int.from_bytes(raw[parts - 1 :], "big"))])
    return text + ("." if draw(st.booleans()) else "")


@st.composite
def v6_embedding(draw: st.DrawFn, address: IPv4Address) -> str:
    """An IPv6 host that carries ``address``: mapped (dotted or hex), compatible, NAT64 or 6to4."""
    value = int(address)
    hi, lo = value >> 16, value & 0xFFFF
    form = draw(st.sampled_from(["mapped", "mapped-hex", "mapped-long", "compat", "nat64", "6to4"]))
    text = {
        "mapped": f"::ffff:{address}",
        "mapped-hex": f"::ffff:{hi:x}:{lo:x}",
        "mapped-long": f"0:0:0:0:0:ffff:{hi:04x}:{lo:04x}",
        "compat": f"::{address}",
        "nat64": f"64:ff9b::{hi:x}:{lo:x}",
        "6to4": f"2002:{hi:x}:{lo:x}::{draw(st.integers(0, 0xFFFF)):x}",
    }[form]
    if form == "compat" and value <= 1:
        text = f"::ffff:{address}"  # ::0 and ::1 are not embeddings
    return "[" + (text.upper() if draw(st.booleans()) else text) + "]"


def _no_dns(host: str, port: int) -> list[str]:
    raise AssertionError(f"a numeric host was sent to DNS: {host}")


async def _never(host: str, port: int) -> list[str]:
    return _no_dns(host, port)


def run(coro):
    return asyncio.run(coro)


@FUZZ
@given(st.data())
def test_every_ipv4_notation_of_a_blocked_address_is_refused(data: st.DataObject) -> None:
    address = data.draw(blocked_v4())
    host = data.draw(v4_notation(address))
    assert parse_ipv4(host) == address and canonical_host(host) == str(address)
    port = data.draw(st.sampled_from(["", ":80", ":8080"]))
    try:  # as httpx reads the URL when it can; else as web.fetch hands it over (canonical)
        url = httpx.URL(f"http://{host}{port}/")
    except httpx.InvalidURL:
        url = httpx.URL(f"http://{canonical_host(host)}{port}/")
    with pytest.raises(PrivateAddress):
        run(check_url(url, NetPolicy(resolver=_never)))


@FUZZ
@given(st.data())
def test_every_ipv6_embedding_of_a_blocked_ipv4_is_refused(data: st.DataObject) -> None:
    inner = data.draw(blocked_v4())
    host = data.draw(v6_embedding(inner))
    with pytest.raises(PrivateAddress):
        run(check_url(httpx.URL(f"http://{host}/"), NetPolicy(resolver=_never)))


@FUZZ
@given(blocked_v6())
def test_blocked_ipv6_ranges_are_refused(address: IPv6Address) -> None:
    with pytest.raises(PrivateAddress):
        run(check_url(httpx.URL(f"https://[{address}]/"), NetPolicy(resolver=_never)))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789abcdefxX.", min_size=1, max_size=16))
def test_we_read_a_numeric_host_as_the_c_library_does(host: str) -> None:
    try:
        libc = socket.getaddrinfo(host.encode(), 80, socket.AF_INET, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)[0][
            4
        ][0]
    except (socket.gaierror, UnicodeError):
        return  # the C library does not read it as an address (then it would be a name to resolve)
    try:
        ours = parse_ipv4(host)
    except HostError:
        ours = None
    assert ours == ip_address(libc), host


@FUZZ
@given(
    st.lists(public_address, min_size=0, max_size=3),
    blocked_address,
    st.lists(public_address, max_size=3),
    st.from_regex(r"[a-z][a-z0-9-]{0,10}\.(com|net|example)", fullmatch=True),
)
def test_a_name_with_any_blocked_answer_is_refused(before, bad, after, name) -> None:
    answers = [str(a) for a in [*before, bad, *after]]

    async def resolver(host: str, port: int) -> list[str]:
        assert host == name
        return answers

    with pytest.raises(PrivateAddress):
        run(check_url(httpx.URL(f"https://{name}/x"), NetPolicy(resolver=resolver)))
    allowed = run(
        check_url(httpx.URL(f"https://{name}/x"), NetPolicy(resolver=resolver, allowed_hosts=frozenset({name})))
    )
    assert [str(a) for a in allowed.addresses] == answers and allowed.allowed_private


@FUZZ
@given(
    st.lists(public_address, min_size=1, max_size=4),
    st.from_regex(r"[a-z][a-z0-9-]{0,10}\.(com|net|example)", fullmatch=True),
    st.sampled_from(["http", "https"]),
    st.one_of(st.none(), st.integers(1, 65535)),
)
def test_the_request_goes_to_the_first_checked_address(answers, name, scheme, port) -> None:
    asked: list[str] = []

    async def resolver(host: str, p: int) -> list[str]:
        asked.append(host)
        return [str(a) for a in answers]

    seen: list[httpx.Request] = []

    async def go() -> httpx.URL:
        def handler(request: httpx.Request) -> httpx.Response:
            seen.append(request)
            return httpx.Response(200, text="ok")

        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            fetched = await guarded_request(
                client, "GET", f"{scheme}://{name}{f':{port}' if port else ''}/p", NetPolicy(resolver=resolver)
            )
            return fetched.url

    final = run(go())
    (request,) = seen
    assert asked == [name]
    assert ip_address(request.url.host) == answers[0]
    default = 443 if scheme == "https" else 80
    assert request.headers["host"] == (name if port in (None, default) else f"{name}:{port}")
    assert request.extensions.get("sni_hostname") == (name if scheme == "https" else None)
    assert final.host == name


@FUZZ
@given(st.lists(st.booleans(), min_size=1, max_size=5))
def test_every_redirect_hop_is_checked(private_hops: list[bool]) -> None:
    """A chain of redirects hop0 -> hop1 -> ...; a hop marked True resolves to a private address.
    Nothing at or after the first private hop is requested."""
    table = {f"hop{i}.example": ("10.0.0.7" if private else "93.184.215.14") for i, private in enumerate(private_hops)}

    async def resolver(host: str, port: int) -> list[str]:
        return [table[host]]

    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        host = request.headers["host"]
        seen.append(host)
        i = int(host[3:].split(".")[0])
        if i + 1 < len(private_hops):
            return httpx.Response(302, headers={"location": f"http://hop{i + 1}.example/"})
        return httpx.Response(200, text="end")

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            await guarded_request(client, "GET", "http://hop0.example/", NetPolicy(resolver=resolver))

    first_private = next((i for i, p in enumerate(private_hops) if p), None)
    if first_private is None:
        run(go())
        assert seen == list(table)
    else:
        with pytest.raises(PrivateAddress):
            run(go())
        assert seen == list(table)[:first_private]
