"""Canonical forms of the values hardline rules look at: phone numbers, email addresses, URLs, paths.

A hardline rule, the approval and the tool must see one value, or formatting dodges the rule:
``+1 (900) 555-0100`` is ``+19005550100`` to any phone, and ``a@b.invalid.`` is ``a@b.invalid``
to any mail server. So the pipeline puts every argument a hardline rule names into canonical
form *before* matching, and the tool receives that canonical value (what was approved is what
runs). The built-in tools that take such values use these same functions, so there is one
definition of each form.

Every function is idempotent (``f(f(x)) == f(x)``) and raises :class:`CanonicalError` for a
value that has no canonical form; a call whose hardline-checked argument has none is refused
(it cannot be checked), never passed through.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote

from core.net.host import HostError, canonical_host

Kind = Literal["phone", "email", "url", "path", "text"]
KINDS: tuple[Kind, ...] = ("phone", "email", "url", "path", "text")
GLOB_CHARS = "*?["


class CanonicalError(ValueError):
    """The value has no canonical form of its kind (it is not a phone number, an address ...)."""


def _visible(value: str) -> str:
    """NFKC (full-width digits and signs to ASCII) without format characters (zero-width, bidi)."""
    text = unicodedata.normalize("NFKC", value)
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf").strip()


# --- phone numbers ----------------------------------------------------------------------------------

E164 = re.compile(r"\+[1-9][0-9]{6,14}")
_PHONE_SEPARATORS = frozenset(" ()./-\u00a0\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u30fb")


def canonical_phone(value: str) -> str:
    """E.164: ``+`` and 7 to 15 digits. Spaces, dots, dashes, slashes and parentheses go, any
    Unicode decimal digit becomes its ASCII digit, a ``00`` international prefix and a ``tel:``
    scheme become ``+``. Letters are refused rather than guessed (``x12`` may be an extension)."""
    text = _visible(value)
    if text[:4].lower() == "tel:":
        text = text[4:]
    digits: list[str] = []
    for i, ch in enumerate(text):
        if ch in _PHONE_SEPARATORS or unicodedata.category(ch) in ("Zs", "Pd"):
            continue
        if ch == "+" and not digits:
            digits.append("+")
            continue
        if unicodedata.category(ch) == "Nd":
            digits.append(str(unicodedata.decimal(ch)))
            continue
        raise CanonicalError(
            f"{value!r} is not a phone number: {ch!r} at position {i + 1} is not a digit "
            "(write it in international E.164 form, e.g. +15550100)"
        )
    number = "".join(digits)
    if number.startswith("00"):
        number = "+" + number[2:]
    if not E164.fullmatch(number):
        raise CanonicalError(
            f"{value!r} is not a phone number in international E.164 form (a + and 7 to 15 digits, e.g. +15550100)"
        )
    return number


# --- email addresses --------------------------------------------------------------------------------

_LOCAL_FORBIDDEN = frozenset(' \t\r\n<>()[],;:"\\@')


def canonical_email(value: str) -> str:
    """``local@domain``, case-folded, the domain IDNA-encoded (punycode) without trailing dots.

    A ``mailto:`` scheme is dropped. Display names (``Name <a@b>``), quoted local parts and
    more than one ``@`` are refused: a rule could not tell which address is meant.
    """
    text = _visible(value)
    if text[:7].lower() == "mailto:":
        text = unquote(text[7:]).strip()
    local, at, domain = text.rpartition("@")
    if not at or not local or not domain:
        raise CanonicalError(f"{value!r} is not an email address (expected name@example.com)")
    if any(ch in _LOCAL_FORBIDDEN or ch.isspace() or unicodedata.category(ch)[0] == "C" for ch in local):
        raise CanonicalError(
            f"{value!r} is not a plain email address (expected name@example.com, without a display name or quoting)"
        )
    if domain.startswith("[") or ":" in domain:
        raise CanonicalError(f"{value!r} has an address literal for a domain; use a domain name")
    try:
        host = canonical_host(domain)
    except HostError as exc:
        raise CanonicalError(f"{value!r} is not an email address: {exc}") from None
    if any(ch in _LOCAL_FORBIDDEN or ch.isspace() or ch == "%" for ch in host):
        raise CanonicalError(f"{value!r} is not an email address: bad domain {domain!r}")
    return f"{local.casefold()}@{host}"


# --- URLs -------------------------------------------------------------------------------------------

DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}
SPECIAL_SCHEMES = frozenset(DEFAULT_PORTS) | {"file"}
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_KEPT = _UNRESERVED | frozenset(":/?#[]@!$&'()*+,;=")
_HEXDIGITS = frozenset("0123456789abcdefABCDEF")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(.*)", re.S)
_C0_AND_SPACE = "".join(chr(i) for i in range(0x21))


def _percent(component: str, kept: frozenset[str] = _KEPT) -> str:
    """RFC 3986 6.2.2: escapes of unreserved characters decoded, other escapes upper-case, every
    other character outside ``kept`` (spaces, non-ASCII as UTF-8, a stray ``%``) escaped."""
    out: list[str] = []
    i = 0
    while i < len(component):
        ch = component[i]
        if ch == "%" and i + 2 < len(component) and component[i + 1] in _HEXDIGITS and component[i + 2] in _HEXDIGITS:
            decoded = chr(int(component[i + 1 : i + 3], 16))
            out.append(decoded if decoded in _UNRESERVED else "%" + component[i + 1 : i + 3].upper())
            i += 3
            continue
        if ch in kept and ch != "%":
            out.append(ch)
        else:
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass")))
        i += 1
    return "".join(out)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4 over ``/``-separated segments (escaped dots were decoded already)."""
    segments = path.split("/")[1:]
    out: list[str] = []
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == ".":
            if last:
                out.append("")
        elif seg == "..":
            if out:
                out.pop()
            if last:
                out.append("")
        else:
            out.append(seg)
    return "/" + "/".join(out)


def canonical_url(value: str) -> str:
    """An absolute URL in one spelling: scheme and host lower-case, host IDNA-encoded without
    trailing dots (IPv4 in dotted-quad form, however it was written), the scheme's default port
    dropped, percent-encoding normalised, ``.`` and ``..`` segments resolved, ``\\`` read as ``/``
    in http(s) URLs (as browsers do), and an empty http(s) path written ``/``."""
    # As browsers read a URL: no leading or trailing control characters or spaces, no tabs or
    # newlines anywhere. No Unicode normalisation outside the host: /\ufb01le is not /file.
    text = re.sub(r"[\t\n\r]", "", value.strip(_C0_AND_SPACE))
    m = _SCHEME.fullmatch(text)
    if not m:
        raise CanonicalError(f"{value!r} is not an absolute URL (expected e.g. https://example.com/page)")
    scheme, rest = m.group(1).lower(), m.group(2)
    special = scheme in SPECIAL_SCHEMES
    if special:
        rest = rest.replace("\\", "/")
    if not rest.startswith("//"):
        if special and scheme != "file":
            raise CanonicalError(f"{value!r} has no host (expected {scheme}://host/...)")
        return f"{scheme}:{_percent(rest)}"
    rest = rest[2:]
    if special:
        rest = rest.lstrip("/")  # browsers ignore extra slashes after a special scheme
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:end], rest[end:]
    path, _, fragment_part = tail.partition("#")
    has_fragment = "#" in tail
    path, has_query, query = path.partition("?")
    userinfo, at, hostport = authority.rpartition("@")
    if hostport.startswith("["):
        close = hostport.find("]")
        if close < 0:
            raise CanonicalError(f"{value!r} has an unclosed IPv6 host")
        host, port_part = hostport[: close + 1], hostport[close + 1 :]
    else:
        host, colon, port = hostport.partition(":")
        port_part = colon + port
    if port_part and not port_part.startswith(":"):
        raise CanonicalError(f"{value!r} has junk after its host: {port_part!r}")
    port_text = port_part[1:]
    if port_text and not port_text.isdigit():
        raise CanonicalError(f"{value!r} has a port that is not a number: {port_text!r}")
    if not host:
        if scheme != "file":
            raise CanonicalError(f"{value!r} has no host")
        canonical = ""
    else:
        try:
            canonical = canonical_host(host)
        except HostError as exc:
            raise CanonicalError(f"{value!r} has a bad host: {exc}") from None
        if ":" in canonical:
            canonical = f"[{canonical.replace('%', '%25')}]"
        elif any(ch in canonical for ch in " /?#@[]\\%<>^|"):
            raise CanonicalError(f"{value!r} has a bad host {host!r}")
    port_number = int(port_text) if port_text else None
    if port_number is not None and port_number > 65535:
        raise CanonicalError(f"{value!r} has a port out of range: {port_number}")
    netloc = canonical
    if port_number is not None and port_number != DEFAULT_PORTS.get(scheme):
        netloc += f":{port_number}"
    if at:
        netloc = _percent(userinfo, _UNRESERVED | frozenset("!$&'()*+,;=:")) + "@" + netloc
    path = _percent(path)
    if special:
        path = _remove_dot_segments(path or "/")
    elif path.startswith("/"):
        path = _remove_dot_segments(path)
    out = f"{scheme}://{netloc}{path}"
    if has_query:
        out += "?" + _percent(query)
    if has_fragment:
        out += "#" + _percent(fragment_part)
    return out


# --- paths ------------------------------------------------------------------------------------------


def canonical_path(value: str, base: str | Path | None = None) -> str:
    """An absolute path with ``~`` expanded, ``.``/``..`` resolved and symlinks followed as far
    as the path exists. A relative path is taken from ``base`` when one is given; without one it
    is only normalised (``a/./b/../c`` is ``a/c``), since there is nothing to resolve it against.
    The characters of a name are kept as written: another spelling is another file."""
    text = value
    if not text:
        raise CanonicalError("the path is empty")
    if "\x00" in text:
        raise CanonicalError(f"{value!r} contains a NUL character")
    expanded = os.path.expanduser(text)
    if not os.path.isabs(expanded):
        if base is None:
            normal = os.path.normpath(expanded)
            return "./" + normal if normal.startswith("~") else normal  # a file named ~, not the home
        expanded = os.path.join(os.fspath(base), expanded)
    return os.path.realpath(expanded)


# --- paths in a folder a tool resolves them in (the workspace) --------------------------------------

MAX_SYMLINK_HOPS = 40  # as Linux's MAXSYMLINKS


@dataclass(frozen=True)
class PathBase:
    """The folder a tool resolves its relative paths in (the owner's workspace for the built-in
    ``workspace.*`` tools): its real path, and whether the file system there folds case (so
    ``Private`` is ``private``, as on macOS and Windows by default)."""

    root: str
    folds_case: bool = False

    @classmethod
    def of(cls, folder: str | Path) -> PathBase:
        root = os.path.realpath(os.path.expanduser(os.fspath(folder)))
        return cls(root=root, folds_case=_folds_case(root))

    def absolute(self, relative: str) -> str:
        """The absolute form of a canonical relative path."""
        rel = relative.rstrip("/")
        return self.root if rel in ("", ".") else os.path.join(self.root, rel)


def _same_file(path: str, st: os.stat_result) -> bool:
    try:
        other = os.lstat(path)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)


def _folds_case(root: str) -> bool:
    """Whether names differing only in case are one file where ``root`` is: the nearest
    component with letters, spelled in the other case, is looked up."""
    path = root
    while True:
        head, name = os.path.split(path)
        if name and name.swapcase() != name:
            try:
                return _same_file(os.path.join(head, name.swapcase()), os.lstat(path))
            except OSError:
                return False
        if not name or head == path:
            return False
        path = head


def _fold(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


def _on_disk_name(folder: str, name: str, st: os.stat_result) -> str:
    """The spelling the folder keeps for the entry ``name`` found: the same unless the file
    system folds case or Unicode normalisation (``PRIVATE`` or a decomposed ``é`` finding
    ``private`` or ``é``), when the entry with that file's identity is looked up."""
    variants = {name.swapcase(), unicodedata.normalize("NFC", name), unicodedata.normalize("NFD", name)} - {name}
    if not any(_same_file(os.path.join(folder, v), st) for v in variants):
        return name  # this file system keeps one spelling per name: the name is its own
    try:
        entries = os.listdir(folder)
    except OSError:
        return name
    if name in entries:
        return name
    same = [e for e in entries if _same_file(os.path.join(folder, e), st)]
    return next((e for e in same if _fold(e) == _fold(name)), same[0] if same else name)


def _resolve_in(root: str, relative: str, value: str) -> str:
    """``relative`` resolved under ``root`` as the kernel would open it: empty and ``.``
    components dropped, ``..`` taken, every symbolic link that exists followed (chains, links
    to folders, dangling links to where they point), each existing name in the spelling its
    folder keeps; what does not exist yet is taken as written."""
    pending = list(reversed(relative.split("/")))
    current = root
    hops = 0
    while pending:
        name = pending.pop()
        if name in ("", "."):
            continue
        if name == "..":
            current = os.path.dirname(current)
            continue
        path = os.path.join(current, name)
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            current = path  # not there (yet): the rest is taken as written
            continue
        except OSError as exc:
            raise CanonicalError(f"{value!r} cannot be resolved: {exc.strerror or exc}") from None
        if stat.S_ISLNK(st.st_mode):
            hops += 1
            if hops > MAX_SYMLINK_HOPS:
                raise CanonicalError(f"{value!r} cannot be resolved: its symbolic links go round in a loop")
            try:
                target = os.readlink(path)
            except OSError as exc:
                raise CanonicalError(f"{value!r} cannot be resolved: {exc.strerror or exc}") from None
            if target.startswith("/"):
                current = "/"
            pending.extend(reversed(target.split("/")))
            continue
        current = os.path.join(current, _on_disk_name(current, name, st))
    return current


def canonical_workspace_path(value: str, base: PathBase) -> str:
    """A path a tool resolves in ``base`` (the workspace), as the file it names there: relative
    to the root, without ``.``, ``..``, empty components or symbolic links (each followed where
    it exists), in the spelling the file system keeps, surrounding white space dropped (as the
    tool's argument parsing drops it). A trailing ``/`` (a folder) is kept. Idempotent while the
    folder does not change; the tool opens exactly this path, following no link (see
    ``core.builtins.workspace``).

    Raises :class:`CanonicalError` for an absolute path or one that resolves outside the root."""
    text = value.strip()
    if not text:
        raise CanonicalError("the path is empty")
    if "\x00" in text:
        raise CanonicalError("the path contains a NUL character")
    if text.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:[\\/]", text):
        raise CanonicalError(f"Path {text!r} is absolute; give a path relative to the workspace root.")
    real = _resolve_in(base.root, text, text)
    if real != base.root and not real.startswith(base.root.rstrip("/") + "/"):
        raise CanonicalError(
            f"Path {text!r} is outside the workspace (it resolves to a place outside the workspace "
            "folder, through '..' or a symbolic link); only files inside the workspace can be used."
        )
    relative = os.path.relpath(real, base.root) if real != base.root else "."
    return relative + "/" if text.endswith("/") and relative != "." else relative


def path_match_forms(value: str, base: PathBase | None) -> list[str]:
    """The forms of a canonical path a rule's glob is matched against: NFC (a decomposed ``é``
    is the name a person reads as ``é``), case-folded where the file system folds case, and
    for a path in a workspace both relative to its root and absolute."""
    forms = [value.rstrip("/") or value]
    if base is not None:
        forms.append(base.absolute(value))
    out = [unicodedata.normalize("NFC", f) for f in forms]
    return [f.casefold() for f in out] if base is not None and base.folds_case else out


def path_glob_matches(form: str, glob: str) -> bool:
    """A path rule covers the path it names and everything below it (a rule on ``private`` or
    ``private/`` holds for ``private/a.txt``)."""
    glob = glob.rstrip("/") or glob
    return fnmatch.fnmatchcase(form, glob) or fnmatch.fnmatchcase(form, glob + "/*")


# --- the dispatch -----------------------------------------------------------------------------------


def canonical_text(value: str) -> str:
    """A comparison key for plain text (NFKC, case-folded, trimmed). Never given to a tool."""
    return _visible(value).casefold()


def canonical(kind: Kind, value: str, base: PathBase | None = None) -> str:
    """``value`` in the canonical form of ``kind`` (a path in the folder ``base`` when the tool
    resolves it there). Raises :class:`CanonicalError`."""
    if kind == "phone":
        return canonical_phone(value)
    if kind == "email":
        return canonical_email(value)
    if kind == "url":
        return canonical_url(value)
    if kind == "path":
        return canonical_workspace_path(value, base) if base is not None else canonical_path(value)
    return canonical_text(value)


def split_values(kind: Kind, value: str) -> list[str]:
    """The values one argument string holds: a comma- or semicolon-separated list of addresses
    (``"a@x.example, b@y.example"``, as some mail tools take ``to``) is one value per address."""
    if kind == "email" and ("," in value or ";" in value):
        return [part for part in re.split(r"[,;]", value) if part.strip()] or [value]
    return [value]


def canonical_argument(kind: Kind, value: str, base: PathBase | None = None) -> str:
    """One argument string in canonical form: each of its values (:func:`split_values`), a list
    of addresses joined with ``", "``."""
    return ", ".join(canonical(kind, part, base) for part in split_values(kind, value))


def match_forms(kind: Kind, value: str, base: PathBase | None = None) -> list[str]:
    """The forms of a canonical value that a rule's glob is matched against: a URL also without
    its user info, so ``https://user@bank.example/`` is still about ``bank.example``; a path as
    :func:`path_match_forms` gives it."""
    if kind == "path":
        return path_match_forms(value, base)
    if kind == "url":
        m = re.match(r"([a-z][a-z0-9+.-]*://)([^/?#]*@)(.*)", value, re.S)
        if m:
            return [value, m.group(1) + m.group(3)]
    return [value]


def rewrites(kind: Kind) -> bool:
    """Whether the canonical value replaces the argument the tool receives (text only compares)."""
    return kind != "text"


def canonical_pattern(kind: Kind, pattern: str, base: PathBase | None = None) -> str:
    """A rule's glob in the same form as the values it matches.

    Globs (``* ? [``) are kept; the rest is put in canonical form the way a value would be:
    phone patterns lose their formatting, email and URL patterns are lower-cased with literal
    host labels IDNA-encoded, path patterns have ``~`` expanded and their literal directory
    resolved (a relative one, for a tool that resolves paths in a folder, is taken relative to
    that folder: ``./private/`` is ``private``), in NFC, case-folded where the file system
    folds case.
    """
    if kind == "path":
        glob = _path_pattern(pattern.strip(), base)
        glob = unicodedata.normalize("NFC", glob)
        return glob.casefold() if base is not None and base.folds_case else glob
    text = pattern.strip() if kind in ("path", "url") else _visible(pattern)
    if kind == "phone":
        text = "".join(ch for ch in text if ch not in _PHONE_SEPARATORS and unicodedata.category(ch) != "Zs")
        text = "".join(str(unicodedata.decimal(ch)) if unicodedata.category(ch) == "Nd" else ch for ch in text)
        return "+" + text[2:] if text.startswith("00") else text
    if kind == "email":
        return _idna_tokens(text.casefold())
    if kind == "url":
        m = re.match(r"([A-Za-z][A-Za-z0-9+.*?-]*://)([^/?#]*)(.*)", text, re.S)
        if not m:
            return text
        scheme, authority, rest = m.group(1).lower(), _idna_tokens(m.group(2).casefold()), m.group(3)
        port = DEFAULT_PORTS.get(scheme[:-3])
        if port is not None and authority.endswith(f":{port}"):
            authority = authority[: -len(f":{port}")]
        return scheme + authority + rest
    return text.casefold()


def _path_pattern(text: str, base: PathBase | None) -> str:
    expanded = os.path.expanduser(text)
    if not os.path.isabs(expanded):
        if base is None:
            return expanded
        normal = posixpath.normpath(expanded)  # ./a//b/../c -> a/c, as the values are
        return normal[2:] if normal.startswith("./") else normal
    first = min((i for i in (expanded.find(c) for c in GLOB_CHARS) if i >= 0), default=len(expanded))
    literal_dir = os.path.dirname(expanded[:first]) if first < len(expanded) else expanded
    resolved = os.path.realpath(literal_dir)
    return resolved + expanded[len(literal_dir) :] if first < len(expanded) else resolved


def _idna_tokens(text: str) -> str:
    """Non-ASCII host labels (between dots, ``@``, ``:`` and globs) in their punycode form."""

    def encode(m: re.Match[str]) -> str:
        token = m.group(0)
        if token.isascii():
            return token
        try:
            return canonical_host(token)
        except HostError:
            return token

    return re.sub(r"[^.@:/*?\[\]\s]+", encode, text)
