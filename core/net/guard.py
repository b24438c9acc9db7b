"""Which destinations a network tool may reach, and a request that goes where it was checked.

A tool that fetches a URL someone else chose (a model, a web page's redirect) reaches only the
public internet unless the owner named a private host on purpose:

* The host is read the way a connection reads it (:mod:`core.net.host`: ``127.1``,
  ``0x7f000001``, ``2130706433``, ``0``, ``[::ffff:127.0.0.1]``, ``localhost.`` ...).
* A host name is resolved once (``getaddrinfo``, so ``/etc/hosts`` counts) and *every* answer
  must be public; the connection then goes to the checked address (the URL's host becomes
  the address; the ``Host`` header and TLS SNI keep the name), so a second DNS answer cannot
  rebind it.
* Not public: loopback, private, link-local, CGNAT, multicast, unspecified, reserved,
  documentation and benchmarking ranges, IPv6 ULA and site-local, zone ids, and IPv6 forms
  that embed an IPv4 address which is not public (IPv4-mapped, IPv4-compatible, 6to4,
  NAT64, Teredo).
* Redirects are followed here, not by httpx, and every hop is checked the same way.

Settings (the ``[tools]`` table): ``allow_private_hosts`` names hosts (names, addresses or
networks such as ``192.168.1.0/24``) that may be private; ``allow_private_network = true``
allows every private destination (both off by default). A destination the owner configured
(``searxng_url``, ``ntfy_topic_url``) is trusted: it is passed as ``trusted_urls``, and only
hops that leave its origin (scheme, host and port) are checked. Tests inject ``resolver`` (see :data:`Resolver`).
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network
from typing import TYPE_CHECKING, Any

from core.net.host import HostError, IPAddress, canonical_host, parse_ipv4, parse_ipv6
from core.pipeline import codes

if TYPE_CHECKING:
    import httpx

    from core.net.bounded import Limits, Page

Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""``(host, port) -> addresses``: every address the name resolves to, as strings."""

MAX_REDIRECTS = 5
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})

_V4: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "is 'this network' (0.0.0.0 reaches this machine)"),
    ("10.0.0.0/8", "is a private address"),
    ("100.64.0.0/10", "is a carrier-grade NAT (shared) address"),
    ("127.0.0.0/8", "is a loopback address (this machine)"),
    ("169.254.0.0/16", "is a link-local address"),
    ("172.16.0.0/12", "is a private address"),
    ("192.0.0.0/24", "is an IETF protocol assignment"),
    ("192.0.2.0/24", "is a documentation address"),
    ("192.88.99.0/24", "is the deprecated 6to4 relay anycast range"),
    ("192.168.0.0/16", "is a private address"),
    ("198.18.0.0/15", "is a benchmarking address"),
    ("198.51.100.0/24", "is a documentation address"),
    ("203.0.113.0/24", "is a documentation address"),
    ("224.0.0.0/4", "is a multicast address"),
    ("240.0.0.0/4", "is a reserved address"),
    ("255.255.255.255/32", "is the broadcast address"),
)
_V6: tuple[tuple[str, str], ...] = (
    ("::/128", "is the unspecified address"),
    ("::1/128", "is the loopback address (this machine)"),
    ("::/96", "is an IPv4-compatible address (deprecated)"),
    ("64:ff9b:1::/48", "is a local-use NAT64 address"),
    ("100::/64", "is a discard-only address"),
    ("2001::/23", "is an IETF protocol assignment (Teredo, benchmarking, ORCHID)"),
    ("2001:db8::/32", "is a documentation address"),
    ("3fff::/20", "is a documentation address"),
    ("5f00::/16", "is a segment-routing (SRv6) address"),
    ("fc00::/7", "is a unique local (private) address"),
    ("fe80::/10", "is a link-local address"),
    ("fec0::/10", "is a site-local address (deprecated)"),
    ("ff00::/8", "is a multicast address"),
)
BLOCKED_NETWORKS: tuple[tuple[IPv4Network | IPv6Network, str], ...] = tuple(
    (ip_network(net), why) for net, why in _V4 + _V6
)

_MAPPED = IPv6Network("::ffff:0:0/96")
_COMPATIBLE = IPv6Network("::/96")
_NAT64 = IPv6Network("64:ff9b::/96")
_6TO4 = IPv6Network("2002::/16")
_TEREDO = IPv6Network("2001::/32")


class GuardError(Exception):
    """A request the guard will not make; ``code`` is the tool error code it becomes."""

    code = codes.EXECUTION_FAILED


class PrivateAddress(GuardError):
    """The destination is not on the public internet and the owner did not allow it."""

    code = codes.DENIED_PRIVATE_ADDRESS


class BadDestination(GuardError):
    """The host cannot be read or resolved, or a redirect leads nowhere a request can go."""


def embedded_ipv4(address: IPv6Address) -> list[IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (mapped, compatible, NAT64, 6to4, Teredo)."""
    value = int(address)
    if address in _MAPPED or address in _NAT64 or (address in _COMPATIBLE and value > 1):
        return [IPv4Address(value & 0xFFFFFFFF)]
    if address in _6TO4:
        return [IPv4Address((value >> 80) & 0xFFFFFFFF)]
    if address in _TEREDO and address.teredo is not None:
        return list(address.teredo)
    return []


def address_problem(address: IPAddress) -> str | None:
    """Why ``address`` is not a public destination, or None when it is."""
    if isinstance(address, IPv6Address):
        if address.scope_id:
            return f"has a zone id (%{address.scope_id}), which names a local network interface"
        address = IPv6Address(int(address))
        for inner in embedded_ipv4(address):
            why = address_problem(inner)
            if why:
                return f"embeds {inner}, which {why}"
        if address in _MAPPED or address in _NAT64 or address in _6TO4:
            return None  # it reaches the public IPv4 address it embeds
    for net, why in BLOCKED_NETWORKS:
        if address.version == net.version and address in net:
            return why
    if address.is_multicast:
        return "is a multicast address"
    if not address.is_global:
        return "is not a public address"
    return None


async def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``getaddrinfo`` gives for ``host`` (``/etc/hosts`` included)."""
    import asyncio

    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _allow_entry(entry: str) -> str | IPv4Network | IPv6Network:
    text = entry.strip()
    try:
        return ip_network(text, strict=False)
    except ValueError:
        pass
    try:
        address = ip_address(text.strip("[]")) if ":" in text else parse_ipv4(text)
    except (ValueError, HostError):
        address = None
    if address is not None:
        return ip_network(address)
    return canonical_host(text)


@dataclass(frozen=True)
class NetPolicy:
    """What one tool call may reach. Build it with :meth:`from_settings`."""

    allow_all_private: bool = False
    allowed_hosts: frozenset[str] = frozenset()
    allowed_networks: tuple[IPv4Network | IPv6Network, ...] = ()
    trusted_origins: frozenset[tuple[str, str, int]] = frozenset()  # (scheme, canonical host, port)
    resolver: Resolver = system_resolver
    max_redirects: int = MAX_REDIRECTS
    resolve_timeout: float = 10.0  # seconds; a name that takes longer is not reached

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], *, trusted_urls: Iterable[str] = ()) -> NetPolicy:
        names: set[str] = set()
        nets: list[IPv4Network | IPv6Network] = []
        raw = settings.get("allow_private_hosts") or []
        for entry in [raw] if isinstance(raw, str) else raw:
            try:
                parsed = _allow_entry(str(entry))
            except HostError:
                continue  # a typo in the allow list allows nothing
            if isinstance(parsed, str):
                names.add(parsed)
            else:
                nets.append(parsed)
        trusted: set[tuple[str, str, int]] = set()
        for url in trusted_urls:
            origin = _origin(url)
            if origin:
                trusted.add(origin)
        timeout = float(settings.get("http_timeout", 20.0))
        return cls(
            allow_all_private=bool(settings.get("allow_private_network", False)),
            allowed_hosts=frozenset(names),
            allowed_networks=tuple(nets),
            trusted_origins=frozenset(trusted),
            resolver=settings.get("resolver") or system_resolver,
            resolve_timeout=min(timeout, 10.0),
        )

    def allows(self, host: str, address: IPAddress) -> bool:
        """Whether a private ``address`` (reached through ``host``) was allowed on purpose."""
        if self.allow_all_private or host in self.allowed_hosts:
            return True
        plain = IPv6Address(int(address)) if isinstance(address, IPv6Address) else address
        return any(plain.version == net.version and plain in net for net in self.allowed_networks)


def _origin(url: str) -> tuple[str, str, int] | None:
    import httpx

    try:
        parsed = httpx.URL(url)
        raw = parsed.raw_host.decode("ascii")
        return (parsed.scheme, canonical_host(raw), _port(parsed)) if raw else None
    except (httpx.InvalidURL, ValueError):
        return None


@dataclass(frozen=True)
class Destination:
    """A checked hop: the URL as written, its canonical host, and the address to connect to.

    ``addresses`` are every checked answer, in the resolver's order; a connection tries them in
    turn. They are empty for a trusted (configured) host, which is connected to as usual.
    """

    url: httpx.URL
    host: str
    addresses: tuple[IPAddress, ...]
    port: int
    allowed_private: bool = False

    @property
    def address(self) -> IPAddress | None:
        return self.addresses[0] if self.addresses else None


def _port(url: httpx.URL) -> int:
    return url.port or (443 if url.scheme == "https" else 80)


async def check_url(url: httpx.URL, policy: NetPolicy) -> Destination:
    """Check one hop. Raises :class:`PrivateAddress` or :class:`BadDestination`."""
    if url.scheme not in ("http", "https"):
        raise BadDestination(f"{url} is not an http:// or https:// URL")
    raw = url.raw_host.decode("ascii", "replace")
    if not raw:
        raise BadDestination(f"{url} has no host")
    try:
        host = canonical_host(raw)
    except HostError as exc:
        raise BadDestination(str(exc)) from None
    port = _port(url)
    if (url.scheme, host, port) in policy.trusted_origins:
        return Destination(url, host, (), port)
    literal: IPAddress | None
    try:
        literal = parse_ipv6(host) if ":" in host else parse_ipv4(host)
    except HostError as exc:
        raise BadDestination(str(exc)) from None
    if literal is not None:
        answers: list[IPAddress] = [literal]
    else:
        loopback_name = host == "localhost" or host.endswith(".localhost")
        if loopback_name and not policy.allows(host, IPv4Address("127.0.0.1")):
            raise PrivateAddress(f"{host} is this machine (a loopback name)")
        import asyncio

        try:
            found = await asyncio.wait_for(policy.resolver(host, port), policy.resolve_timeout)
        except TimeoutError:
            raise BadDestination(f"{host} could not be resolved within {policy.resolve_timeout:g} s") from None
        except (OSError, UnicodeError) as exc:
            raise BadDestination(f"{host} could not be resolved: {exc}") from None
        answers = []
        for text in found:
            try:
                answers.append(ip_address(text))
            except ValueError:
                raise BadDestination(f"{host} resolved to {text!r}, which is not an address") from None
        if not answers:
            raise BadDestination(f"{host} could not be resolved: no addresses")
    private = False
    for address in answers:
        why = address_problem(address)
        if why is None:
            continue
        if not policy.allows(host, address):
            shown = f"{host} ({address})" if literal is None else host
            raise PrivateAddress(f"{shown} {why}")
        private = True
    return Destination(url, host, tuple(answers), port, allowed_private=private)


def pinned_request(
    client: httpx.AsyncClient,
    method: str,
    url: httpx.URL,
    address: IPAddress | None,
    *,
    headers: Mapping[str, str] | None = None,
    content: bytes | None = None,
) -> httpx.Request:
    """A request for ``url`` that connects to ``address`` and nowhere else (None: to the URL's host).

    The URL's host is replaced by the checked address; ``Host`` keeps the name (and port), and
    TLS uses the name for SNI and certificate checks (httpx's ``sni_hostname`` extension).
    """
    extra = dict(headers or {})
    extensions: dict[str, Any] = {}
    target = url
    if address is not None:
        extra["Host"] = url.netloc.decode("ascii")
        if url.scheme == "https":
            extensions["sni_hostname"] = url.raw_host.decode("ascii")
        plain = IPv6Address(int(address)) if isinstance(address, IPv6Address) else address
        target = url.copy_with(host=str(plain))
    return client.build_request(method, target, headers=extra, content=content, extensions=extensions)


async def _send(
    client: httpx.AsyncClient, method: str, dest: Destination, headers: Mapping[str, str], content: bytes | None
) -> tuple[httpx.Request, httpx.Response]:
    """Connect to the checked addresses in turn (the next only when one cannot be reached)."""
    import httpx

    failure: httpx.ConnectError | None = None
    for address in dest.addresses or (None,):
        request = pinned_request(client, method, dest.url, address, headers=headers, content=content)
        try:
            return request, await client.send(request, stream=True, follow_redirects=False)
        except httpx.ConnectError as exc:
            failure = exc
    assert failure is not None
    raise failure


@dataclass
class Fetched:
    """A response and the URL it answers (as written, not the address connected to)."""

    response: httpx.Response
    url: httpx.URL
    hops: list[Destination]


def _next_method(method: str, status: int) -> str:
    if status == 303 and method != "HEAD":
        return "GET"
    if status in (301, 302) and method == "POST":
        return "GET"
    return method


@asynccontextmanager
async def guarded_stream(
    client: httpx.AsyncClient,
    method: str,
    url: httpx.URL | str,
    policy: NetPolicy,
    *,
    headers: Mapping[str, str] | None = None,
    content: bytes | None = None,
) -> AsyncIterator[Fetched]:
    """Send a request hop by hop, checking each, and yield the final response (streamed).

    ``client`` must not follow redirects itself. Raises :class:`GuardError`, and
    ``httpx.TooManyRedirects`` past ``policy.max_redirects``.
    """
    import httpx

    current = httpx.URL(url) if isinstance(url, str) else url
    hops: list[Destination] = []
    sent_headers = dict(headers or {})
    first_origin = (current.scheme, current.raw_host, current.port)
    while True:
        dest = await check_url(current, policy)
        hops.append(dest)
        request, response = await _send(client, method, dest, sent_headers, content)
        location = response.headers.get("location")
        if response.status_code not in REDIRECT_STATUSES or location is None:
            break
        await response.aclose()
        if len(hops) > policy.max_redirects:
            raise httpx.TooManyRedirects(f"more than {policy.max_redirects} redirects", request=request)
        try:
            target = current.join(location)
        except (httpx.InvalidURL, ValueError) as exc:
            raise BadDestination(f"{current} redirected to an unreadable location {location!r}: {exc}") from None
        if target.scheme not in ("http", "https"):
            raise BadDestination(f"{current} redirected to {target}, which is not an http:// or https:// URL")
        new_method = _next_method(method, response.status_code)
        if new_method != method:
            method, content = new_method, None
            sent_headers = {
                k: v
                for k, v in sent_headers.items()
                if k.lower() not in ("content-type", "content-length", "transfer-encoding")
            }
        if (target.scheme, target.raw_host, target.port) != first_origin:
            sent_headers = {k: v for k, v in sent_headers.items() if k.lower() not in ("authorization", "cookie")}
        current = target
    try:
        yield Fetched(response, current, hops)
    finally:
        await response.aclose()


async def guarded_request(
    client: httpx.AsyncClient,
    method: str,
    url: httpx.URL | str,
    policy: NetPolicy,
    *,
    headers: Mapping[str, str] | None = None,
    content: bytes | None = None,
    limits: Limits | None = None,
) -> Page:
    """:func:`guarded_stream` with the body read, bounded in bytes (on the wire and decoded) and
    in time: :func:`core.net.bounded.bounded_fetch`."""
    from core.net.bounded import Limits, bounded_fetch

    return await bounded_fetch(client, method, url, policy, limits or Limits(), headers=headers, content=content)
