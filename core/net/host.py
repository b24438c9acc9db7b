"""A URL's host, read the way a connection would read it.

Browsers (the WHATWG URL standard's host parser) and the C library's ``inet_aton`` (which
``getaddrinfo`` uses for a numeric host) accept IPv4 addresses in forms that
``ipaddress.ip_address`` refuses: fewer than four parts (``127.1``), hex (``0x7f000001``,
``0x7f.1``), octal (``0177.0.0.1``) and a single decimal number (``2130706433``, ``0``).
:func:`parse_ipv4` reads all of them, so a check looks at the address a connect would reach.

:func:`canonical_host` is the one spelling of a host that the network guard and the hardline
rules both use: IDNA (UTS #46) mapping (case, full-width forms, ideographic full stops),
punycode for non-ASCII labels, no trailing dots, IPv4 in dotted-quad form, IPv6 compressed.
"""

from __future__ import annotations

import re
from ipaddress import IPv4Address, IPv6Address
from urllib.parse import unquote

import idna

IPAddress = IPv4Address | IPv6Address

_HEX = re.compile(r"[0-9a-fA-F]*")
_OCT = re.compile(r"[0-7]+")
_DEC = re.compile(r"[0-9]+")
# The WHATWG URL standard's forbidden domain code points: no connection reads a host holding one.
_FORBIDDEN_IN_DOMAIN = frozenset("\x00\t\n\r #/:<>?@[\\]^|%\x7f") | frozenset(map(chr, range(0x20)))


class HostError(ValueError):
    """The host cannot be read as an address or a domain name; nothing could connect to it."""


def _ipv4_number(part: str) -> int | None:
    """One part of an IPv4 host (WHATWG "IPv4 number parser"); None when it is not a number."""
    if part[:2] in ("0x", "0X"):
        digits = part[2:]
        if not _HEX.fullmatch(digits):
            return None
        return int(digits, 16) if digits else 0
    if len(part) > 1 and part[0] == "0":
        return int(part[1:], 8) if _OCT.fullmatch(part[1:]) else None
    return int(part) if _DEC.fullmatch(part) else None


def parse_ipv4(host: str) -> IPv4Address | None:
    """The IPv4 address a numeric host names, in any notation; None when the host is a domain name.

    Follows the WHATWG URL standard: a host whose last label is a number is an IPv4 address or
    nothing (``HostError``), never a domain name.
    """
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    last = parts[-1]
    if not last or (not _DEC.fullmatch(last) and (last[:2] not in ("0x", "0X") or _ipv4_number(last) is None)):
        return None  # does not end in a number: a domain name
    if len(parts) > 4:
        raise HostError(f"{host!r} ends in a number but has more than four parts")
    numbers = [_ipv4_number(p) if p else None for p in parts]
    if any(n is None for n in numbers):
        raise HostError(f"{host!r} ends in a number but is not an IPv4 address")
    values = [n for n in numbers if n is not None]
    if any(n > 255 for n in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        raise HostError(f"{host!r} is out of range for an IPv4 address")
    address = values[-1]
    for i, n in enumerate(values[:-1]):
        address += n * 256 ** (3 - i)
    return IPv4Address(address)


def parse_ipv6(host: str) -> IPv6Address:
    """An IPv6 host, with or without brackets, its zone id (``%25eth0`` or ``%eth0``) kept."""
    inner = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    address, sep, zone = inner.partition("%")
    if sep and zone.startswith("25") and len(zone) > 2:
        zone = zone[2:]  # the URL form of "%" is "%25"
    try:
        return IPv6Address(f"{address}%{zone}" if sep else address)
    except ValueError as exc:
        raise HostError(f"{host!r} is not an IPv6 address: {exc}") from None


def host_address(host: str) -> IPAddress | None:
    """The address a host literally names (any notation), or None for a domain name."""
    canonical = canonical_host(host)
    if ":" in canonical:
        return parse_ipv6(canonical)
    return parse_ipv4(canonical)


def canonical_host(host: str) -> str:
    """The one spelling of a host: see the module's docstring. Raises ``HostError``."""
    text = host.strip()
    if not text:
        raise HostError("the host is empty")
    if text.startswith("[") or ":" in text:
        ip6 = parse_ipv6(text)
        zone = ip6.scope_id
        plain = IPv6Address(int(ip6))
        return f"{plain.compressed}%{zone}" if zone else plain.compressed
    text = unquote(text)  # browsers percent-decode a host before they read it
    try:
        mapped = idna.uts46_remap(text, std3_rules=False, transitional=False)
    except (idna.IDNAError, ValueError) as exc:
        raise HostError(f"{host!r} is not a valid host name: {exc}") from None
    mapped = mapped.rstrip(".")
    bad = next((ch for ch in mapped if ch in _FORBIDDEN_IN_DOMAIN or ch.isspace()), None)
    if bad is not None:
        raise HostError(f"{host!r} is not a valid host name: it holds {bad!r}")
    if not mapped:
        raise HostError(f"{host!r} has no name")
    ip4 = parse_ipv4(mapped)
    if ip4 is not None:
        return str(ip4)
    labels = []
    for label in mapped.split("."):
        if not label:
            raise HostError(f"{host!r} has an empty label")
        if label.isascii():
            labels.append(label.lower())
            continue
        try:
            labels.append(idna.encode(label, uts46=False).decode("ascii"))
        except (idna.IDNAError, UnicodeError) as exc:
            raise HostError(f"{host!r} is not a valid host name: {exc}") from None
    return ".".join(labels)
