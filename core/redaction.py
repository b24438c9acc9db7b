"""One redaction for every secret deferchat knows or can recognise, in every spelling it travels in.

Text shown to a person or stored (errors, statuses, events, a server's stderr, log records) passes
through :func:`redact` before it leaves the process's memory. It removes:

* **known secrets** (an API key, an expanded ``${VAR}``, a base URL's password) wherever they
  appear, as written or in any URL encoding httpx, urllib and the SDKs apply: percent-encoding
  of any character (``%2F``, ``%2f``, mixed case), ``+`` for a space, and double encoding
  (``%252F``), character by character, so a secret encoded in part is found too; each is put back
  as its placeholder (``${VAR}`` for an expanded value) or :data:`REDACTED`;
* **URL userinfo** (``http://bob:PASSWORD@host``, as gateways with basic auth take it), whatever
  the credential is;
* **query and fragment tokens** (``?token=...``, ``&api_key=...``, ``#access_token=...``), by
  the parameter's name, percent-encoded names included;
* **shapes of keys** deferchat has never been told of: ``sk-...``, ``Bearer ...``, ``Basic ...``,
  GitHub, GitLab, Slack, Hugging Face, Google and AWS key formats, JSON web tokens, ``****abcd``.

A text that is cut (a stderr tail, a detail clipped to a length) goes through :func:`clip`: it is
redacted *before* the cut, so a secret straddling the cut is found whole, and a cut that falls
inside something token-like (a fragment of a known secret, a run with digits, mixed case or key
punctuation) takes that fragment out too, so no edge shows part of a token.

:func:`without_userinfo` is a URL as it may be stored (the chat row, ``provider.switched``) and
shown; :func:`url_host` is where it points, for messages. :func:`remember_url` and
:func:`restore_url` keep a base URL's credential in this process's memory only, like a key:
what is stored is the URL without it, and the provider is built with the credential again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from urllib.parse import SplitResult, urlsplit

REDACTED = "[redacted]"
MIN_SECRET_LEN = 4  # shorter known values are not hunted for in free text (they would garble it)
MIN_FRAGMENT = 3  # a piece of a known secret this long at a cut edge is taken out

Secrets = Iterable[str | tuple[str, str] | None]
"""Known secrets: a value (shown as :data:`REDACTED`) or ``(value, placeholder)``."""

# A placeholder already in the text is never redacted again (``key=${TOKEN}`` stays readable).
_PLACEHOLDER = r"(?:\$\{[A-Za-z_][A-Za-z0-9_]*\}|\[redacted\])"

_USERINFO = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*:)?//(?P<userinfo>[^/?#@\s'\"<>\[\]]+)@(?=[^\s/?#@'\"<>]*[A-Za-z0-9\]])"
)

_SECRET_PARAM = (
    r"(?:access[_-]?token|refresh[_-]?token|id[_-]?token|auth[_-]?token|token|api[_-]?key|apikey|key|"
    r"client[_-]?secret|secret|password|passwd|pwd|pass|auth|authorization|signature|sig|"
    r"x-amz-signature|x-amz-credential|x-amz-security-token|session[_-]?id|sessionid|session|"
    r"credential|credentials|code|private[_-]?token|jwt)"
)
_QUERY_TOKEN = re.compile(
    rf"(?i)(?P<head>[?&#;](?:[A-Za-z0-9_.\-]*[_.\-])?{_SECRET_PARAM}=)(?!{_PLACEHOLDER})(?P<value>[^&#\s'\"<>]+)"
)

_KEY_SHAPES = tuple(
    re.compile(p)
    for p in (
        r"\bsk-[A-Za-z0-9_\-*.]{6,}",  # OpenAI and Anthropic keys, masked or not
        r"(?i)\bbearer\s+(?!" + _PLACEHOLDER + r")[A-Za-z0-9_\-.=+/~]{8,}",
        r"(?i)\bbasic\s+(?!" + _PLACEHOLDER + r")[A-Za-z0-9+/]{8,}={0,2}",
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{16,}",  # GitHub
        r"\bgithub_pat_[A-Za-z0-9_]{16,}",
        r"\bglpat-[A-Za-z0-9_\-]{16,}",  # GitLab
        r"\bxox[abprse]-[A-Za-z0-9\-]{10,}",  # Slack
        r"\bhf_[A-Za-z0-9]{16,}",  # Hugging Face
        r"\bAIza[0-9A-Za-z_\-]{30,}",  # Google
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key ids
        r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # a JSON web token
        r"\*{3,}[A-Za-z0-9]{2,}",  # "****abcd": a masked key's tail
    )
)

_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/=.~%*")
_MARKERS = re.compile(_PLACEHOLDER)


# --- known secrets, in every spelling ---------------------------------------------------------------


def _hex_class(digit: str) -> str:
    return f"[{digit.upper()}{digit.lower()}]" if digit.isalpha() else digit


def _encoded_byte(byte: int) -> str:
    """``%XX`` for one byte in either case, or double encoded (``%25XX``)."""
    digits = f"{byte:02X}"
    pair = _hex_class(digits[0]) + _hex_class(digits[1])
    return f"%(?:25)?{pair}"


def _char_alternatives(ch: str) -> str:
    options = [re.escape(ch), "".join(_encoded_byte(b) for b in ch.encode("utf-8"))]
    if ch == " ":
        options.append(r"\+")
    return "(?:" + "|".join(options) + ")"


@lru_cache(maxsize=256)
def _spellings(secret: str) -> re.Pattern[str]:
    """Every spelling of ``secret``: each character as itself, percent-encoded (either hex case),
    double encoded, and a space as ``+``; mixed freely, as partial encodings come."""
    return re.compile("".join(_char_alternatives(ch) for ch in secret))


def _known(secrets: Secrets) -> list[tuple[str, str]]:
    pairs: dict[str, str] = {}
    for item in secrets:
        if not item:
            continue
        if isinstance(item, str):
            value, placeholder = item, REDACTED
        else:
            value, placeholder = item
        if value and len(value) >= MIN_SECRET_LEN:
            pairs.setdefault(value, placeholder)
    return sorted(pairs.items(), key=lambda kv: (-len(kv[0]), kv[0]))  # longest first: a secret inside another


def redact(text: str, secrets: Secrets = ()) -> str:
    """``text`` with every known secret (in any spelling), URL userinfo, query token and key
    shape taken out (see the module)."""
    if not text:
        return text
    for value, placeholder in _known(secrets):
        text = _spellings(value).sub(placeholder.replace("\\", "\\\\"), text)
    text = _USERINFO.sub(_userinfo_out, text)
    text = _QUERY_TOKEN.sub(lambda m: m.group("head") + REDACTED, text)
    for pattern in _KEY_SHAPES:
        text = pattern.sub(_shape_out, text)
    return text


def _userinfo_out(m: re.Match[str]) -> str:
    if re.fullmatch(_PLACEHOLDER, m.group("userinfo")):
        return m.group(0)
    return f"{m.group('scheme') or ''}//{REDACTED}@"


def _shape_out(m: re.Match[str]) -> str:
    text = m.group(0)
    if " " in text or "\t" in text:  # keep the scheme word of "Bearer <token>"
        word = re.split(r"\s+", text, maxsplit=1)[0]
        return f"{word} {REDACTED}"
    return REDACTED


# --- cutting ----------------------------------------------------------------------------------------


def _fragment_of_known(run: str, secrets: Sequence[tuple[str, str]], *, at_start: bool) -> bool:
    """Whether ``run``, cut at its start (or its end), begins with a known secret's end (or ends
    with its beginning): the cut fell inside that secret."""
    if len(run) < MIN_FRAGMENT:
        return False
    for value, _ in secrets:
        for spelled in {value, *_url_forms(value)}:
            for k in range(MIN_FRAGMENT, min(len(run), len(spelled)) + 1):
                if (spelled.endswith(run[:k])) if at_start else spelled.startswith(run[-k:]):
                    return True
    return False


def _url_forms(value: str) -> tuple[str, ...]:
    from urllib.parse import quote, quote_plus

    return tuple(dict.fromkeys((quote(value, safe=""), quote(value), quote_plus(value))))


def token_like(run: str) -> bool:
    """A run of token characters that looks like part of a key rather than a word: digits, key
    punctuation, mixed case, or long."""
    if len(run) < MIN_FRAGMENT:
        return False
    if len(run) >= 16:
        return True
    return any(c.isdigit() or c in "_-+/=%~*" for c in run) or any(c.isupper() for c in run[1:])


def _edge_run(text: str, *, at_start: bool) -> str:
    """The run of token characters touching the start (or the end) of ``text``."""
    n = 0
    seq = text if at_start else reversed(text)
    for ch in seq:
        if ch not in _TOKEN_CHARS:
            break
        n += 1
    return text[:n] if at_start else text[len(text) - n :]


def _trim_edge(text: str, secrets: Sequence[tuple[str, str]], *, at_start: bool) -> str:
    run = _edge_run(text, at_start=at_start)
    if not run or _MARKERS.fullmatch(run):
        return text
    if token_like(run) or _fragment_of_known(run, secrets, at_start=at_start):
        return REDACTED + text[len(run) :] if at_start else text[: len(text) - len(run)] + REDACTED
    return text


def _safe_cut(text: str, at: int) -> int:
    """``at`` moved off the inside of a redaction marker (a cut never splits ``[redacted]``)."""
    for m in _MARKERS.finditer(text):
        if m.start() < at < m.end():
            return m.start()
    return at


def clip(
    text: str, limit: int, secrets: Secrets = (), *, keep: str = "head", cut_start: bool = False, cut_end: bool = False
) -> str:
    """``text`` redacted, then cut to ``limit`` characters: its head (``keep="head"``) or its tail
    (``"tail"``). A token the cut ends inside is taken out (see the module).

    ``cut_start`` / ``cut_end``: ``text`` itself was already cut there (a tail read from the end
    of a file starts inside whatever was there), so that edge is treated as a cut too.
    """
    known = _known(secrets)
    clean = redact(text, known)
    if cut_start:
        clean = _trim_edge(clean, known, at_start=True)
    if cut_end:
        clean = _trim_edge(clean, known, at_start=False)
    if len(clean) <= limit:
        return clean
    if keep == "tail":
        at = _safe_cut(clean, len(clean) - limit)
        return _trim_edge(clean[at:], known, at_start=True)
    at = _safe_cut(clean, limit)
    return _trim_edge(clean[:at], known, at_start=False)


# --- URLs -------------------------------------------------------------------------------------------


def _split(url: str) -> SplitResult | None:
    try:
        parts = urlsplit(url)
        _ = parts.port  # a bad port raises here
    except ValueError:
        return None
    return parts


def without_userinfo(url: str | None) -> str | None:
    """``url`` without ``user:password@``: what may be stored and shown. Other text is left as is."""
    if not url or "@" not in url:
        return url
    parts = _split(url)
    if parts is None or not parts.netloc or "@" not in parts.netloc:
        return url
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=host).geturl()


def userinfo_secrets(url: str | None) -> tuple[str, ...]:
    """The credential a URL carries (``user:password``, the password, the user), as known secrets."""
    if not url or "@" not in url:
        return ()
    parts = _split(url)
    if parts is None or "@" not in parts.netloc:
        return ()
    info = parts.netloc.rpartition("@")[0]
    user, _, password = info.partition(":")
    from urllib.parse import unquote

    found = [info, password, unquote(password)]
    if not password or token_like(user):  # a user with no password is often the token itself
        found += [user, unquote(user)]
    return tuple(dict.fromkeys(s for s in found if s))


def url_host(url: str | None, default: str = "its default endpoint") -> str:
    """Where ``url`` points (host and port), without its credential, for messages."""
    if not url:
        return default
    parts = _split(url if "://" in url else f"//{url}")
    if parts is None or not parts.netloc:
        return redact(url)
    return parts.netloc.rpartition("@")[2]


def origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, without its credential."""
    parts = _split(url)
    if parts is None:
        return redact(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


_REMEMBERED: dict[str, str] = {}


def remember_url(url: str | None) -> None:
    """Keep a URL's credential in memory (never stored), so a chat stored without it reconnects."""
    stripped = without_userinfo(url)
    if url and stripped != url and stripped is not None:
        _REMEMBERED[stripped] = url


def restore_url(url: str | None, candidates: Iterable[str | None] = ()) -> str | None:
    """``url`` with its credential again: one remembered in this process, else a configured URL
    (``candidates``: the settings' base URL, an SDK's variable) that is ``url`` but for its
    userinfo. A URL that has a credential, or none known, is returned as it is."""
    if not url or without_userinfo(url) != url:
        return url
    for candidate in candidates:
        if candidate and candidate != url and without_userinfo(candidate) == url:
            return candidate
    return _REMEMBERED.get(url, url)


def secrets_of(values: Mapping[str, str] | None) -> list[tuple[str, str]]:
    """``{value: placeholder}`` as the pairs :func:`redact` takes."""
    return list((values or {}).items())
