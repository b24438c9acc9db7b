"""No request to a private address without the owner's say-so (issue 10, item 1).

A loopback "internal service" (a real HTTP server on 127.0.0.1) must not be reached by web.fetch
through any spelling of a private address, through a name that resolves to one, through a
redirect, or through a second DNS answer. Everything here stays on loopback: host names are
answered by a patched ``socket.getaddrinfo`` (what the default resolver and httpx both use) or
by a resolver passed in the settings.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import ip_address
from typing import Any

import httpx
import pytest

from core.builtins import ToolContext, get_builtin
from core.net.guard import (
    BadDestination,
    NetPolicy,
    PrivateAddress,
    address_problem,
    check_url,
    embedded_ipv4,
    guarded_request,
)
from core.net.host import HostError, canonical_host, parse_ipv4
from core.pipeline import codes
from core.tools import ToolResult

# --- loopback servers ----------------------------------------------------------------------------------


class Service:
    """A tiny HTTP server on one loopback address: counts its hits; answers a body or a redirect."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        body: str = "internal secret",
        redirect: str | None = None,
        content_type: str = "text/plain",
    ) -> None:
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                service.hits.append((self.path, self.headers.get("Host")))
                if service.redirect:
                    self.send_response(302)
                    self.send_header("Location", service.redirect)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = service.body.encode()
                self.send_response(200)
                self.send_header("Content-Type", service.content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # ntfy: read the body, answer like GET
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.do_GET()

            def log_message(self, *args: Any) -> None:
                pass

        self.hits: list[tuple[str, str | None]] = []
        self.body, self.redirect, self.content_type = body, redirect, content_type
        self.server = ThreadingHTTPServer((host, port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def internal() -> Iterator[Service]:
    s = Service()
    yield s
    s.close()


@pytest.fixture
def names(monkeypatch) -> dict[str, list[list[str]]]:
    """Host name -> the answers ``socket.getaddrinfo`` gives, one list per call (the last repeats).

    Also records each lookup in ``names["_calls"]``. Numeric hosts are read by the C library as
    usual; other names fail as unknown (no DNS in tests).
    """
    table: dict[str, list[list[str]]] = {"_calls": []}
    real = socket.getaddrinfo

    def fake(host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0):
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name in table:
            table["_calls"].append([name])
            answers = table[name]
            seen = sum(1 for c in table["_calls"] if c == [name])
            chosen = answers[min(seen, len(answers)) - 1]
            port_n = int(port or 0)
            out = []
            for a in chosen:
                if ":" in a:
                    out.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (a, port_n, 0, 0)))
                else:
                    out.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port_n)))
            return out
        if name.rstrip(".") == "localhost":
            return real(host, port, family, type, proto, flags)  # /etc/hosts
        # any numeric form the C library reads (127.1, 0x7f000001 ...), and no DNS for anything else
        return real(host, port, family, type, proto, flags | socket.AI_NUMERICHOST)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    return table


def tool_ctx(**settings: Any) -> ToolContext:
    return ToolContext(
        db=None,
        chat_id="chat_net",
        call_id="call_1",
        workspace=None,  # type: ignore[arg-type]
        settings={"http_timeout": 5, **settings},
    )


async def fetch(url: str, **settings: Any) -> ToolResult:
    fn = get_builtin("web.fetch")
    assert fn is not None
    return await fn({"url": url}, tool_ctx(**settings))


# --- the hole: web.fetch reached loopback services ------------------------------------------------------

SPELLINGS = [
    "http://127.1:{p}/admin",
    "http://0x7f000001:{p}/admin",
    "http://2130706433:{p}/admin",
    "http://0:{p}/admin",
    "http://[::ffff:127.0.0.1]:{p}/admin",
    "http://[::ffff:7f00:1]:{p}/admin",
    "http://localhost.:{p}/admin",
    "http://LOCALHOST:{p}/admin",
    "http://0x7f.1:{p}/admin",
    "http://0177.0.0.1:{p}/admin",
    "http://127.0.0.1.:{p}/admin",
    "http://%31%32%37.0.0.1:{p}/admin",
    "http://internal.corp:{p}/admin",
    "http://intranet.corp:{p}/admin",
]


@pytest.mark.parametrize("template", SPELLINGS)
async def test_no_spelling_of_loopback_reaches_the_internal_service(template, internal, names):
    names["internal.corp"] = [["127.0.0.1"]]
    names["intranet.corp"] = [["93.184.215.14", "127.0.0.1"]]  # one private answer is enough to refuse
    result = await fetch(template.format(p=internal.port))
    assert result.is_error and result.error_code == codes.DENIED_PRIVATE_ADDRESS, result.text()
    assert "internal secret" not in result.text()
    assert internal.hits == []


async def test_a_redirect_to_the_internal_service_is_refused(internal, names):
    # the first hop is a home server the owner allowed on purpose; where it points is checked again
    hop = Service(redirect=f"http://127.1:{internal.port}/admin")
    try:
        names["hop.home"] = [["127.0.0.1"]]
        result = await fetch(f"http://hop.home:{hop.port}/start", allow_private_hosts=["hop.home"])
        assert hop.hits == [("/start", f"hop.home:{hop.port}")]
        assert result.error_code == codes.DENIED_PRIVATE_ADDRESS and "127.0.0.1" in result.text()
        assert internal.hits == []
    finally:
        hop.close()


async def test_a_second_dns_answer_cannot_rebind_a_checked_name(names):
    """The name answers 127.0.0.2 (allowed on purpose) the first time and 127.0.0.1 after: the
    connection goes to 127.0.0.2, the address that was checked, and DNS is asked once."""
    try:
        decoy = Service("127.0.0.2", body="checked server")
    except OSError:
        pytest.skip("127.0.0.2 is not a loopback address here")
    try:
        secret = Service("127.0.0.1", decoy.port)
    except OSError:
        decoy.close()
        pytest.skip("port taken on 127.0.0.1")
    try:
        names["rebind.test"] = [["127.0.0.2"], ["127.0.0.1"]]
        result = await fetch(f"http://rebind.test:{decoy.port}/", allow_private_hosts=["127.0.0.2"])
        assert not result.is_error, result.text()
        assert "checked server" in result.text() and secret.hits == []
        assert decoy.hits == [("/", f"rebind.test:{decoy.port}")]  # the name kept in the Host header
        assert names["_calls"] == [["rebind.test"]]
    finally:
        decoy.close()
        secret.close()


async def test_private_hosts_are_reached_only_when_named(internal, names):
    names["nas.home"] = [["127.0.0.1"]]
    url = f"http://nas.home:{internal.port}/admin"
    assert (await fetch(url)).error_code == codes.DENIED_PRIVATE_ADDRESS
    allowed = await fetch(url, allow_private_hosts=["NAS.home."])
    assert not allowed.is_error and "internal secret" in allowed.text()
    assert (await fetch(f"http://127.1:{internal.port}/", allow_private_hosts=["127.0.0.0/8"])).is_error is False
    assert (await fetch(f"http://127.1:{internal.port}/", allow_private_hosts=["10.0.0.0/8"])).is_error is True
    assert (await fetch(f"http://127.1:{internal.port}/", allow_private_network=True)).is_error is False
    assert len(internal.hits) == 3


async def test_the_configured_search_backend_may_be_private_but_not_its_redirects(internal, names):
    payload = '{"results": [{"title": "t", "url": "https://r.example/", "content": "c"}]}'
    search = Service(body=payload, content_type="application/json")
    try:
        fn = get_builtin("web.search")
        assert fn is not None
        ok = await fn({"query": "q"}, tool_ctx(searxng_url=f"http://127.0.0.1:{search.port}"))
        assert not ok.is_error and ok.structured["count"] == 1
        search.redirect = f"http://0x7f000001:{internal.port}/admin"
        search.body = ""
        refused = await fn({"query": "q"}, tool_ctx(searxng_url=f"http://localhost:{search.port}"))
        assert refused.error_code == codes.DENIED_PRIVATE_ADDRESS and internal.hits == []
    finally:
        search.close()


async def test_the_configured_ntfy_server_may_be_private_but_not_its_redirects(internal, names):
    from core.store import open_db

    ntfy = Service(body='{"id": "n1"}', content_type="application/json")
    try:
        fn = get_builtin("notify.owner")
        assert fn is not None
        ctx = tool_ctx(ntfy_topic_url=f"http://127.0.0.1:{ntfy.port}/topic")
        ctx.db = open_db(":memory:")
        delivered = await fn({"message": "hi"}, ctx)
        assert delivered.structured["delivered"] is True and ntfy.hits == [("/topic", f"127.0.0.1:{ntfy.port}")]
        ntfy.redirect = f"http://2130706433:{internal.port}/admin"
        refused = await fn({"message": "hi"}, ctx)
        assert refused.structured["delivered"] is False and codes.DENIED_PRIVATE_ADDRESS in refused.structured["error"]
        assert internal.hits == []
    finally:
        ntfy.close()


# --- the connection goes where the check looked (MockTransport) ------------------------------------------


async def test_the_request_is_pinned_to_the_checked_address():
    answers = iter([["93.184.215.14"], ["127.0.0.1"]])
    asked: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return next(answers)

    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, text="ok")

    policy = NetPolicy.from_settings({"resolver": resolver})
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        fetched = await guarded_request(client, "GET", "https://Shop.Example:8443/p?q=1", policy)
    assert asked == ["shop.example"]
    (request,) = seen
    assert str(request.url) == "https://93.184.215.14:8443/p?q=1"
    assert request.headers["host"] == "shop.example:8443"
    assert request.extensions["sni_hostname"] == "shop.example"
    assert str(fetched.url) == "https://shop.example:8443/p?q=1"


async def test_every_redirect_hop_is_checked_and_bounded():
    async def resolver(host: str, port: int) -> list[str]:
        return {"a.example": ["93.184.215.14"], "b.example": ["2606:4700::1111"]}.get(host, ["10.1.2.3"])

    def handler(request: httpx.Request) -> httpx.Response:
        host = request.headers["host"]
        if host == "a.example":
            return httpx.Response(301, headers={"location": "https://b.example/two"})
        if host == "b.example":
            return httpx.Response(302, headers={"location": "http://c.example/three"})
        return httpx.Response(200, text="internal")

    policy = NetPolicy.from_settings({"resolver": resolver})
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        with pytest.raises(PrivateAddress, match=r"c.example \(10.1.2.3\) is a private address"):
            await guarded_request(client, "GET", "http://a.example/one", policy)

    def loop(request: httpx.Request) -> httpx.Response:
        return httpx.Response(302, headers={"location": "/again"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(loop)) as client:
        with pytest.raises(httpx.TooManyRedirects):
            await guarded_request(client, "GET", "http://a.example/", policy)

    def elsewhere(request: httpx.Request) -> httpx.Response:
        return httpx.Response(302, headers={"location": "file:///etc/passwd"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(elsewhere)) as client:
        with pytest.raises(BadDestination, match="not an http"):
            await guarded_request(client, "GET", "http://a.example/", policy)


async def test_an_unresolvable_name_is_a_plain_error():
    async def resolver(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    with pytest.raises(BadDestination, match="could not be resolved"):
        await check_url(httpx.URL("https://nowhere.example/"), NetPolicy(resolver=resolver))

    async def hangs(host: str, port: int) -> list[str]:
        await asyncio.sleep(30)
        return ["93.184.215.14"]

    with pytest.raises(BadDestination, match=r"within 0\.05 s"):
        await check_url(httpx.URL("https://slow.example/"), NetPolicy(resolver=hangs, resolve_timeout=0.05))


# --- the address rules ----------------------------------------------------------------------------------

BLOCKED = [
    "127.0.0.1",
    "127.255.255.254",
    "0.0.0.0",
    "0.1.2.3",
    "10.0.0.1",
    "172.16.5.4",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "100.127.255.254",
    "224.0.0.251",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "192.0.2.1",
    "198.51.100.7",
    "203.0.113.9",
    "198.18.0.1",
    "192.0.0.8",
    "192.88.99.1",
    "::",
    "::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::127.0.0.1",
    "fe80::1",
    "fe80::1%eth0",
    "fc00::1",
    "fd12:3456::1",
    "fec0::1",
    "ff02::1",
    "2001:db8::1",
    "3fff::1",
    "2002:7f00:1::",
    "2002:c0a8:101::1",
    "64:ff9b::7f00:1",
    "64:ff9b::a00:1",
    "64:ff9b:1::1",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    "100::1",
    "5f00::1",
]
PUBLIC = [
    "93.184.215.14",
    "8.8.8.8",
    "1.1.1.1",
    "2606:4700::1111",
    "2a00:1450:4001:80b::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
]


@pytest.mark.parametrize("address", BLOCKED)
def test_not_public(address):
    assert address_problem(ip_address(address)) is not None


@pytest.mark.parametrize("address", PUBLIC)
def test_public(address):
    assert address_problem(ip_address(address)) is None


def test_embedded_ipv4():
    assert embedded_ipv4(ip_address("::ffff:7f00:1")) == [ip_address("127.0.0.1")]
    assert embedded_ipv4(ip_address("2002:c0a8:101::1")) == [ip_address("192.168.1.1")]
    assert embedded_ipv4(ip_address("64:ff9b::a00:1")) == [ip_address("10.0.0.1")]
    assert embedded_ipv4(ip_address("2606:4700::1111")) == []


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0x7F.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0177.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("017700000001", "127.0.0.1"),
        ("127.0.0.1.", "127.0.0.1"),
        ("0x7f.0.0.0x1", "127.0.0.1"),
        ("3232235777", "192.168.1.1"),
        ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
        ("1.2.3.4", "1.2.3.4"),
    ],
)
def test_ipv4_notations(host, address):
    assert parse_ipv4(host) == ip_address(address)
    assert canonical_host(host) == address


def test_hosts_that_are_names_or_nothing():
    assert parse_ipv4("example.com") is None and parse_ipv4("1.2.3.example") is None
    for bad in ("1.2.3.256", "4294967296", "1.2.3.4.5", "09.1", "1..2"):
        with pytest.raises(HostError):
            canonical_host(bad)
    assert canonical_host("[::FFFF:127.0.0.1]") == "::ffff:7f00:1"
    assert canonical_host("fe80::1%25eth0") == "fe80::1%eth0"
    assert canonical_host("\uff2c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54") == "localhost"
    assert canonical_host("M\u00fcnchen.DE.") == "xn--mnchen-3ya.de"


async def test_check_url_refuses_zone_ids_and_loopback_names_without_asking_dns():
    async def resolver(host: str, port: int) -> list[str]:
        raise AssertionError("not asked")

    policy = NetPolicy(resolver=resolver)
    for url in ("http://[fe80::1%25eth0]/", "http://localhost/", "http://a.b.localhost/", "http://[::1]:8080/"):
        with pytest.raises(PrivateAddress):
            await check_url(httpx.URL(url), policy)
