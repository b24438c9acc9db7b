"""What the three SDK adapters share: keys, bounded waits, retries, error mapping, and reading
engine-shaped history.

Each adapter names its :class:`~core.providers.profiles.ProviderProfile`; its name, label, key
variable, genuine hosts and waits come from there.

Nothing here imports an SDK. SDK exceptions are recognised by class name (both official SDKs
are generated from the same template: ``APIStatusError``, ``APIConnectionError``, ...), so the
mapping is one function for all of them.

Every wait is bounded (:class:`~core.providers.profiles.Waits`): the connection by httpx's
connect timeout, the first byte of the answer and each silence inside it by
:mod:`core.providers._pacing` and :meth:`SdkAdapter._open`. A bound that runs out is a
``provider.timeout`` naming the wait and its length, and is not retried: the next attempt would
wait as long again. A stream whose events lack what the SDK or the adapter reads is
``provider.stream_malformed``, never a ``KeyError``.

Retries are the adapter's, not the SDK's (its client gets ``max_retries=0``), and follow the SDK's
own policy: the statuses and ``x-should-retry`` its ``_should_retry`` accepts, connection
failures, the delay its ``_parse_retry_after_header`` reads (``retry-after-ms``, ``retry-after``
as seconds or a date), else its exponential backoff (``INITIAL_RETRY_DELAY`` doubling up to
``MAX_RETRY_DELAY``, less up to a quarter of jitter). Two things the SDK cannot do are why: its
retry loop sleeps inside the request, where a stream cannot say "retrying in N s"
(:class:`~core.providers.base.Retrying`) and the stop key cannot be told from a hung request;
and the Anthropic SDK honours any ``retry-after`` (an hour slept is an hour), so a wait longer
than ``Waits.max_retry_after`` fails at once with the time the server named.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import math
import os
import random
import re
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, ClassVar, Literal

from core.providers.base import (
    ModelRequest,
    ProviderBase,
    ProviderError,
    ProviderEvent,
    Retrying,
    Usage,
)
from core.providers.origin import Origin, default_origin, default_url, env_base_url, visible_url
from core.providers.profiles import ProviderProfile, Waits
from core.providers.thinking import ThinkingSettings
from core.providers.wirenames import WireNames, blocks

# A key is only sent where its SDK would send it; a local server (Ollama, llama.cpp) ignores it.
PLACEHOLDER_KEY = "deferchat-no-key"

_MAX_DETAIL = 300


# --- keys ---------------------------------------------------------------------------------------


def resolve_key(explicit: str | None, env_var: str | None, env: Mapping[str, str] | None = None) -> str | None:
    """The key passed in, else the profile's environment variable. Never logged, never echoed."""
    if explicit:
        return explicit
    value = (os.environ if env is None else env).get(env_var, "") if env_var else ""
    return value or None


def credential(key: str | None, base_url: str | None, profile: ProviderProfile, label: str | None = None) -> str:
    """The key to hand the SDK. The genuine API (a host of ``profile``) needs a real one; a
    local or third-party server that wants none (Ollama, llama.cpp, a recorded replay) gets a
    placeholder."""
    if key:
        return key
    if profile.is_genuine(base_url):
        raise ProviderError(
            "provider.auth_missing",
            f"No {label or profile.label} API key: set {profile.env_var} or put the key in the deferchat config.",
        )
    return PLACEHOLDER_KEY


WaitName = Literal["connect", "first_byte", "idle"]


class Stall(Exception):
    """A wait on the provider ran past its bound: ``wait`` is which one, ``seconds`` its length."""

    def __init__(self, wait: WaitName, seconds: float):
        super().__init__(f"no answer within the {wait} bound of {seconds:g} s")
        self.wait = wait
        self.seconds = seconds


_SHAPE_ERRORS = (KeyError, AttributeError, IndexError, TypeError)
"""What reading an event the server shaped wrongly raises, in the SDK's code or the adapter's."""
_RETRIED_STATUSES = frozenset({408, 409, 429})  # and 5xx: the statuses the SDKs' _should_retry retries
_RETRY_REASONS = {408: "request timed out", 409: "conflict", 429: "rate limited", 529: "overloaded"}


@dataclass
class Prepared:
    """One request's body: ``params`` as the SDK method's keyword arguments (the history under
    ``history_key`` as a list), and what makes its bytes without walking that list again:
    ``history``, the list's JSON text joined from each item's kept text."""

    params: dict[str, Any]
    names: WireNames
    history_key: str
    history: bytes
    headers: dict[str, str] = field(default_factory=dict)  # the method's extra_headers

    @property
    def body_params(self) -> dict[str, Any]:
        """``params`` as the body holds them (no ``extra_headers``: those are headers)."""
        return {k: v for k, v in self.params.items() if k != "extra_headers"}


class SdkAdapter(ProviderBase):
    """What the three SDK adapters share: the key (never shown), the SDK client's settings, bounded
    waits, retries, and mapping failures (see the module). Subclasses name their ``profile`` and
    ``sdk`` (the SDK's package), build their SDK client in ``_new_client`` and their request in
    ``build_params``, send one attempt in ``_send`` and read what it returned in ``_read``;
    ``name``, ``label`` and ``env_var`` are the profile's."""

    profile: ClassVar[ProviderProfile]
    sdk: ClassVar[str]
    path: ClassVar[str] = ""
    """The request's path under the base URL (``chat/completions``), for errors that have no request."""
    name: str
    label: str
    env_var: str

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: Any = None,
        max_retries: int = 2,
        waits: Waits | None = None,
        streaming: bool = True,
        thinking: ThinkingSettings | None = None,
        env: Mapping[str, str] | None = None,
        origin: Origin | None = None,
        raw_bodies: bool = True,
    ):
        self.name = self.profile.name
        # send the body joined from kept JSON through the SDK's post (core.providers.raw), not
        # through its method (which walks the whole history again): False for the comparison test
        self.raw_bodies = raw_bodies
        self.thinking = thinking or ThinkingSettings()  # [thinking]: what each adapter reads of it is its own
        self.label = self.profile.label
        self.env_var = self.profile.env_var or ""
        self.model = model
        self.base_url = base_url
        self.streaming = streaming
        self.waits = waits or self.profile.waits
        self.max_retries = max_retries
        self._api_key = resolve_key(api_key, self.profile.env_var, env)
        self._env = env
        self.origin = origin or default_origin(self.profile, base_url, bool(api_key), env)
        self._http_client = http_client
        self._client: Any = None

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}(model={self.model!r}, base_url={shown_url(self.base_url)!r})"

    def _client_options(self, **credentials: Any) -> dict[str, Any]:
        from core.providers._pacing import sdk_timeout

        return {
            **credentials,
            "base_url": self.base_url,
            "max_retries": 0,
            "timeout": sdk_timeout(self.waits),
            "http_client": self._http_client,
        }

    def _key(self) -> str:
        return credential(self._api_key, self.base_url, self.profile, self.label)

    def _new_client(self) -> Any:
        raise NotImplementedError

    def _sdk(self) -> Any:
        if self._client is None:
            from core.providers import _origin
            from core.providers._pacing import install

            client = self._new_client()
            install(client._client)  # the SDK's HTTP client: the one passed in, or its own
            _origin.install(client._client)  # never a redirect to another origin
            self._client = client
        return self._client

    def _secrets(self) -> tuple[str | None, ...]:
        """What no message may show: the key, and the credential a base URL carries."""
        from core.redaction import userinfo_secrets

        return (self._api_key, *userinfo_secrets(self.base_url))

    # -- one response ---------------------------------------------------------------------------

    def prepare(self, request: ModelRequest) -> Prepared:
        """The request's body for this wire (:class:`Prepared`)."""
        raise NotImplementedError

    def build_params(self, request: ModelRequest) -> tuple[dict[str, Any], WireNames]:
        """The body for one request as the SDK method's keyword arguments, and the name table it
        was built with."""
        prepared = self.prepare(request)
        return prepared.params, prepared.names

    async def _send(self, client: Any, prepared: Prepared) -> Any:
        """One attempt: send the request; return the open stream (or, not streaming, the answer)."""
        raise NotImplementedError

    def _raw(self, route: Any, prepared: Prepared) -> bytes | None:
        """The body to ``post`` on ``route`` (:mod:`core.providers.raw`), or None to send through
        the SDK's method (raw bodies off, or a key the route cannot place)."""
        if not self.raw_bodies:
            return None
        from core.providers import raw

        try:
            return raw.body(route, prepared.body_params, prepared.history)
        except raw.UnplacedKey:
            return None

    def _read(self, opened: Any, names: WireNames) -> AsyncGenerator[ProviderEvent, None]:
        """The events of what ``_send`` returned; closes a stream however it ends."""
        raise NotImplementedError

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        """Stream one response (see :class:`~core.providers.base.Provider`): retried while
        nothing has been read, a :class:`~core.providers.base.Retrying` before each retry."""
        prepared = self.prepare(request)
        names = prepared.names
        try:
            client = self._sdk()
            attempt = 0
            while True:
                try:
                    opened = await self._open(lambda: self._send(client, prepared))
                    await self._check_answer(opened)
                    break
                except Exception as exc:
                    delay = self._retry_delay(client, exc, attempt)
                    if delay is None:
                        raise
                    attempt += 1
                    yield Retrying(
                        seconds=round(delay, 3), attempt=attempt, reason=self._retry_reason(exc), status=_status_of(exc)
                    )
                    await asyncio.sleep(delay)
            try:
                async with contextlib.aclosing(self._read(opened, names)) as events:  # a stop closes it now
                    async for event in events:
                        yield event
            except _SHAPE_ERRORS as exc:  # only here: the same errors elsewhere are no sign of the server's
                raise malformed(self.label, clipped(unreadable(exc), self._secrets(), _MAX_DETAIL)) from None
        except Exception as exc:
            raise self._failure(exc) from None

    async def _open(self, send: Callable[[], Awaitable[Any]]) -> Any:
        """Run one attempt of ``send`` with its first byte due ``waits.first_byte`` after the request
        goes out (the request hook moves the deadline there, so the SDK's preparation of a long
        history is not counted): it covers the request until the SDK returns (headers, or an answer);
        :data:`~core.providers._pacing.PACE` carries it to the body's bytes."""
        from core.providers._pacing import PACE, Pace

        scope = asyncio.timeout(self.waits.first_byte)
        token = PACE.set(Pace(self.waits, asyncio.get_running_loop().time(), scope))
        try:
            async with scope:
                return await send()
        except TimeoutError:
            if scope.expired():
                raise Stall("first_byte", self.waits.first_byte) from None
            raise
        finally:
            PACE.reset(token)

    async def _check_answer(self, opened: Any) -> None:
        """An answer that is a web page, not the API's stream or JSON (a base URL that names a
        server's web interface, a proxy's login page): ``provider.not_an_api``, naming the page."""
        response = getattr(opened, "response", None)
        kind = str(getattr(response, "headers", {}).get("content-type", "")).lower()
        if response is None or not kind.startswith(("text/html", "application/xhtml")):
            return
        title = await page_title(response)
        raise not_an_api(self._at(getattr(response, "request", None)), int(response.status_code), title, self._hint())

    def _retry_delay(self, client: Any, exc: BaseException, attempt: int) -> float | None:
        """Seconds to wait before retrying a failed attempt, or None to fail it now. Raises the
        ProviderError for a ``retry-after`` past ``waits.max_retry_after``."""
        if _find(exc, Stall) is not None or _named(exc, "APITimeoutError") is not None:
            return None  # each bound is its own; waiting as long again helps nobody
        if _tls_error(exc) is not None:
            return None  # a certificate or a plain-HTTP server: the next attempt fails alike
        if _named(exc, "CrossOriginRedirect") is not None:
            return None  # the server will redirect again
        status_error = _named(exc, "APIStatusError")
        if status_error is not None:
            response = status_error.response
            status = int(response.status_code)
            after = client._parse_retry_after_header(response.headers)
            if (
                after is not None
                and after > self.waits.max_retry_after
                and _retried_status(status)
                and response.headers.get("x-should-retry") != "false"
            ):
                _, detail = _server_detail(getattr(status_error, "body", None))
                raise retry_after_too_long(
                    self._at(getattr(response, "request", None)),
                    status,
                    after,
                    self.waits.max_retry_after,
                    self.env_var,
                    clipped(detail, self._secrets(), _MAX_DETAIL),
                )
            if attempt >= self.max_retries or not client._should_retry(response):
                return None
            return float(after) if after is not None and after > 0 else self._backoff(attempt)
        if _named(exc, "APIConnectionError") is not None and attempt < self.max_retries:
            return self._backoff(attempt)
        return None

    def _backoff(self, attempt: int) -> float:
        """The SDK's own delay before retry ``attempt + 1`` when the server named none."""
        constants = importlib.import_module(f"{self.sdk}._constants")
        delay = min(constants.INITIAL_RETRY_DELAY * 2.0**attempt, constants.MAX_RETRY_DELAY)
        return float(delay * (1 - 0.25 * random.random()))

    def _retry_reason(self, exc: BaseException) -> str:
        status_error = _named(exc, "APIStatusError")
        if status_error is not None:
            status = int(status_error.response.status_code)
            return f"{_RETRY_REASONS.get(status, 'server error')} (HTTP {status})"
        cause = exc.__cause__ or exc.__context__ or exc
        return f"connection failed: {clipped(str(cause), self._secrets(), 120)}"

    def _failure(self, exc: BaseException) -> ProviderError:
        if isinstance(exc, ProviderError):
            return exc
        stall = _find(exc, Stall)
        if stall is not None:
            return self._stalled(stall.wait, stall.seconds)
        if _named(exc, "ConnectTimeout") is not None:
            return self._stalled("connect", self.waits.connect, _request_of(exc))
        return provider_error(
            exc,
            label=self.label,
            env_var=self.env_var,
            base_url=self.base_url,
            secrets=self._secrets(),
            at=self._at(_request_of(exc)),
            key=self.origin.key_phrase(self.profile),
            hint=self._hint(),
        )

    def _stalled(self, wait: WaitName, seconds: float, request: Any = None) -> ProviderError:
        return stalled(self._at(request), wait, seconds)

    # -- where a request went, for errors -------------------------------------------------------

    def used_url(self) -> str:
        """The base URL the SDK sends to: its client's, else the one given, its variable's, or the default."""
        if self._client is not None:
            return str(self._client.base_url)
        return self.base_url or env_base_url(self.profile, self._env) or default_url(self.profile)

    def _at(self, request: Any = None) -> str:
        """ "LABEL (POST URL, base URL from SOURCE)": who was asked, at which URL, and where that
        URL came from (no userinfo, no query: :func:`~core.providers.origin.visible_url`)."""
        if request is not None:
            method, url = str(request.method), str(request.url)
        else:
            method, url = "POST", f"{self.used_url().rstrip('/')}/{self.path}" if self.path else self.used_url()
        return asked_at(self.label, method, url, self.origin)

    def _hint(self) -> str:
        """What to try when the server does not speak this API at all (the Responses adapter's)."""
        return ""


# --- errors -------------------------------------------------------------------------------------


def asked_at(label: str, method: str, url: str, origin: Origin) -> str:
    """ "LABEL (METHOD URL, base URL from SOURCE)": who was asked, at which URL (shown without
    userinfo or query), and where its base URL came from. How every error names a request."""
    return f"{label} ({method} {visible_url(url)}, {origin.base_url_phrase()})"


def redact(text: str, secrets: Sequence[str | None] = ()) -> str:
    """Remove every known secret (in any URL spelling), URL userinfo, query tokens and anything
    shaped like a key from a message (:func:`core.redaction.redact`)."""
    from core.redaction import redact as redact_all

    return redact_all(text, [s for s in secrets if s and s != PLACEHOLDER_KEY])


def clipped(text: str, secrets: Sequence[str | None] = (), limit: int = 300) -> str:
    """``text`` redacted, then cut to ``limit`` characters; a token the cut ends inside is taken
    out too (:func:`core.redaction.clip`). Every message that quotes a server or an exception."""
    from core.redaction import clip

    return clip(text, limit, [s for s in secrets if s and s != PLACEHOLDER_KEY])


def shown_url(url: str | None) -> str:
    """Where a base URL points (host and port), never its credential: every message naming one."""
    from core.redaction import url_host

    return url_host(url)


def _class_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes (``raise ... from``, else what it was raised while handling)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return seen


def _find(exc: BaseException, kind: type[Stall]) -> Stall | None:
    return next((e for e in _chain(exc) if isinstance(e, kind)), None)


def _status_of(exc: BaseException) -> int | None:
    """The HTTP status a provider answered with, if ``exc`` carries one (the cost meter counts such
    an attempt as a request the provider received and refused)."""
    status_error = _named(exc, "APIStatusError")
    return int(status_error.response.status_code) if status_error is not None else None


def _named(exc: BaseException, class_name: str) -> Any:
    """The first exception in ``exc``'s chain that is (a subclass of) the SDK class ``class_name``."""
    return next((e for e in _chain(exc) if class_name in _class_names(e)), None)


def _retried_status(status: int) -> bool:
    return status in _RETRIED_STATUSES or status >= 500


def _server_detail(body: Any) -> tuple[str, str]:
    """(error type, message) from an API error body, whichever server wrote it: the APIs'
    ``{"error": {"type", "message"}}``, FastAPI's ``{"detail": ...}`` (vLLM), a bare
    ``{"message"}``, or a body that is not JSON (the SDKs keep its text): a page's title, else its
    first line."""
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping):
            message = err.get("message") or err.get("detail") or ""
            return str(err.get("type") or err.get("code") or ""), message if isinstance(message, str) else json.dumps(
                message
            )
        if isinstance(err, str):
            return "", err
    if isinstance(body, str) and body.strip():
        if looks_like_html(body):
            title = html_title(body)
            return "", f"an HTML page{f' ({title!r})' if title else ''}"
        return "", body.strip().splitlines()[0]
    return "", ""


def looks_like_html(text: str) -> bool:
    head = text.lstrip()[:200].lower()
    return head.startswith(("<!doctype html", "<html", "<head", "<body")) or "<html" in head


def html_title(text: str) -> str:
    """The ``<title>`` of an HTML page, as plain words (at most 80 characters), or ""."""
    import html

    found = re.search(r"<title[^>]*>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
    return " ".join(html.unescape(found.group(1)).split())[:80] if found else ""


_PAGE_BYTES = 64 * 1024


async def page_title(response: Any) -> str:
    """The title of the HTML page ``response`` carries (its first 64 KiB read); the response is closed."""
    data = b""
    try:
        async for piece in response.aiter_bytes():
            data += piece
            if len(data) >= _PAGE_BYTES:
                break
    except Exception:  # a page cut short still has its head
        pass
    finally:
        with contextlib.suppress(Exception):
            await response.aclose()
    return html_title(data.decode("utf-8", "replace"))


def _request_of(exc: BaseException) -> Any:
    """The HTTP request a failure was about (the SDKs' and httpx's errors carry it), or None."""
    for e in _chain(exc):
        for holder in (e, getattr(e, "response", None)):
            try:
                request = getattr(holder, "request", None)  # httpx raises when an error has none
            except RuntimeError:
                request = None
            if request is not None and hasattr(request, "url") and hasattr(request, "method"):
                return request
    return None


def _causes(exc: BaseException) -> list[BaseException]:
    """Everything behind ``exc``: causes and contexts (suppressed or not), exceptions carried as
    arguments (httpcore's ``ConnectError(SSLError(...))``) and the members of exception groups
    (anyio's connect errors)."""
    out: list[BaseException] = []
    todo = [exc]
    while todo:
        e = todo.pop(0)
        if any(e is seen for seen in out):
            continue
        out.append(e)
        todo += [x for x in (e.__cause__, e.__context__, *e.args) if isinstance(x, BaseException)]
        if isinstance(e, BaseExceptionGroup):
            todo.extend(e.exceptions)
    return out


def _tls_error(exc: BaseException) -> BaseException | None:
    return next((e for e in _causes(exc) if "SSLError" in _class_names(e)), None)


_PLAIN_HTTP = (  # what OpenSSL says when the other end answered a handshake in plain HTTP
    "WRONG_VERSION_NUMBER",
    "RECORD_LAYER_FAILURE",
    "HTTP_REQUEST",
    "PACKET_LENGTH_TOO_LONG",
    "UNEXPECTED_EOF",
)


def connection_failure(exc: BaseException, at: str, hint: str, secrets: Sequence[str | None] = ()) -> ProviderError:
    """A request that got no HTTP answer, as one line that says what happened at ``at``: refused,
    a name that does not resolve, TLS that failed (an untrusted certificate, or a plain-HTTP
    server behind an ``https://`` URL), a connection closed before or during the answer."""
    causes = _causes(exc)
    tls = _tls_error(exc)
    closed = next((e for e in causes if "RemoteProtocolError" in _class_names(e)), None)
    if tls is not None:
        reason = str(getattr(tls, "reason", "") or "")
        verify = str(getattr(tls, "verify_message", "") or "")
        if verify or "CERTIFICATE_VERIFY_FAILED" in reason:
            why = (
                f"its certificate is not trusted ({verify or reason}); trust it with SSL_CERT_FILE, or use the "
                "server's proper name or an http:// URL for a server on this machine"
            )
        elif any(mark in reason.upper() for mark in _PLAIN_HTTP):
            why = f"the server did not answer in TLS ({reason or tls}); if it speaks plain HTTP, use an http:// URL"
        else:
            why = str(reason or tls)
        message = f"TLS failed with {at}: {why}"
    elif any(isinstance(e, ConnectionRefusedError) for e in causes):
        message = f"Could not connect to {at}: connection refused (is the server running, on that port?)"
    elif (dns := next((e for e in causes if "gaierror" in _class_names(e)), None)) is not None:
        message = f"Could not connect to {at}: the host name does not resolve ({getattr(dns, 'strerror', dns)})"
    elif closed is not None and "without sending a response" in str(closed).lower():
        message = f"{at} closed the connection without answering.{f' {hint}' if hint else ''}"
    elif closed is not None:
        message = f"{at} closed the connection in the middle of its answer ({closed})"
    else:
        cause = exc.__cause__ or exc.__context__
        message = f"Could not reach {at}: {cause or exc}"
    return ProviderError("provider.connection", clipped(message, secrets, _MAX_DETAIL * 2), retryable=True)


def not_an_api(at: str, status: int, title: str, hint: str = "") -> ProviderError:
    """The server answered with a web page, not the API's JSON or stream."""
    page = f"an HTML page{f' ({title!r})' if title else ''}"
    message = (
        f"{at} answered with {page}, HTTP {status}, not the API's JSON: check the base URL "
        "(an OpenAI-compatible server's usually ends in /v1)."
    )
    return ProviderError("provider.not_an_api", f"{message}{f' {hint}' if hint else ''}", status=status)


ERROR_TYPES = {  # error types that arrive inside a 200 stream (Anthropic's `event: error`, OpenAI's response.failed)
    "overloaded_error": 529,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "api_error": 500,
    "server_error": 500,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "invalid_request_error": 400,
    "request_too_large": 413,
}


_BY_STATUS: dict[int, tuple[str, str, bool]] = {  # status -> (code, message template, retryable)
    401: (
        "provider.auth",
        "{label} rejected the API key (HTTP 401). Check {env_var} or the key in the deferchat config.",
        False,
    ),
    403: (
        "provider.permission",
        "{label} refused the request (HTTP 403): the key has no access to this model or feature.",
        False,
    ),
    404: (
        "provider.not_found",
        "{label} has no such model or endpoint (HTTP 404). Check --model and --base-url.",
        False,
    ),
    413: ("provider.request_too_large", "The request is too large for {label} (HTTP 413).", False),
    429: (
        "provider.rate_limited",
        "{label} is rate limiting requests (HTTP 429), still after retrying. Wait a little and try again.",
        True,
    ),
    529: ("provider.overloaded", "{label} is overloaded (HTTP 529). Try again shortly.", True),
}
_SERVER_ERROR = ("provider.server_error", "{label} had a server error (HTTP {status}). Try again shortly.", True)
_CLIENT_ERROR = ("provider.bad_request", "{label} rejected the request (HTTP {status}).", False)
_OTHER_STATUS = ("provider.http_error", "{label} answered with HTTP {status}.", False)


UNSUPPORTED_API = frozenset({404, 405})
"""Statuses a server answers a request of an API it does not speak with (no such route, or not POST)."""


def error_for_status(
    label: str, status: int, env_var: str, detail: str = "", *, key: str = "", hint: str = ""
) -> ProviderError:
    """One HTTP failure as a ProviderError with a message a person can act on. ``label`` may be
    "LABEL (POST URL, base URL from SOURCE)"; ``key`` says which key was sent (its source, for a
    401); ``hint`` is what to try when the server may not speak the API at all (for 404 and 405)."""
    fallback = _SERVER_ERROR if status >= 500 else _CLIENT_ERROR if status >= 400 else _OTHER_STATUS
    code, template, retryable = _BY_STATUS.get(status, fallback)
    message = template.format(label=label, env_var=env_var, status=status)
    if status == 401 and key:  # which key, by its source, before what to check
        head, _, advice = message.partition(" Check ")
        message = f"{head} deferchat sent {key}." + (f" Check {advice}" if advice else "")
    if detail:
        message = f"{message} Server message: {detail}"
        message += "" if message.endswith((".", "!", "?")) else "."
    if status in UNSUPPORTED_API and hint:
        message = f"{message} {hint}"
    return ProviderError(code, message, retryable=retryable, status=status)


def provider_error(
    exc: BaseException,
    *,
    label: str,
    env_var: str,
    base_url: str | None,
    secrets: Sequence[str | None] = (),
    at: str | None = None,
    key: str = "",
    hint: str = "",
) -> ProviderError:
    """Map any failure of an SDK call or stream to a ProviderError whose text holds no secret.
    ``at`` names who was asked, at which URL, from which source (``SdkAdapter._at``); without it,
    the label and the base URL's host. ``key`` and ``hint``: see :func:`error_for_status`."""
    if isinstance(exc, ProviderError):
        return exc
    names = _class_names(exc)
    err_type, detail = _server_detail(getattr(exc, "body", None))
    detail = clipped(detail, secrets, _MAX_DETAIL)
    if at is None:
        at = f"{label} ({shown_url(base_url)})"
    redirect = _named(exc, "CrossOriginRedirect")
    if redirect is not None:  # refused in the HTTP client (core.providers._origin): never retried
        why = clipped(str(redirect), secrets, _MAX_DETAIL)
        return ProviderError("provider.connection", f"Could not reach {at}: {why}", retryable=False)
    if "APITimeoutError" in names or "TimeoutException" in names:
        return ProviderError("provider.timeout", f"{at} did not answer in time. Try again.", retryable=True)
    if "APIConnectionError" in names or "TransportError" in names:
        return connection_failure(exc, at, hint, secrets)
    if "APIStatusError" in names:
        status = int(getattr(exc, "status_code", 0) or 0)
        if status < 400 and err_type in ERROR_TYPES:  # an error event inside a 200 stream
            status = ERROR_TYPES[err_type]
        return error_for_status(at, status, env_var, detail, key=key, hint=hint)
    if "APIError" in names and err_type in ERROR_TYPES:  # OpenAI's error inside a stream
        return error_for_status(at, ERROR_TYPES[err_type], env_var, detail, key=key)
    if "APIResponseValidationError" in names or isinstance(exc, ValueError):
        return malformed(label, clipped(unreadable(exc), secrets, _MAX_DETAIL))
    why = clipped(f"{type(exc).__name__}: {exc}", secrets, _MAX_DETAIL)
    return ProviderError("provider.failed", f"{label} request failed: {why}", retryable=False)


_STALLS: dict[str, tuple[str, str, str]] = {  # wait -> (what ran out, its flag, its [timeouts] key)
    "connect": (
        "could not connect to {at} within {seconds} s (connect timeout)",
        "--connect-timeout",
        "connect",
    ),
    "first_byte": (
        "{at} sent nothing within {seconds} s of the request (first-byte timeout)",
        "--first-byte-timeout",
        "first_byte",
    ),
    "idle": (
        "{at} went silent for {seconds} s in the middle of its answer (idle timeout)",
        "--idle-timeout",
        "idle",
    ),
}


def stalled(at: str, wait: WaitName, seconds: float) -> ProviderError:
    """A bound that ran out: which wait, and how long it was. ``at``: who was asked, where (``SdkAdapter._at``)."""
    what, flag, key = _STALLS[wait]
    text = what.format(at=at, seconds=f"{seconds:g}")
    return ProviderError(
        "provider.timeout",
        f"{text[0].upper()}{text[1:]}. Try again, or allow more with {flag} or {key} under [timeouts] in config.toml.",
        retryable=True,
    )


def retry_after_too_long(
    label: str, status: int, after: float, cap: float, env_var: str, detail: str = ""
) -> ProviderError:
    """A server asked to wait longer than deferchat waits before a retry: fail now, saying until when."""
    if math.isfinite(after):
        until = (datetime.now().astimezone() + timedelta(seconds=after)).strftime("%Y-%m-%d %H:%M:%S %Z").strip()
        wait = f"until {until} (retry-after {after:g} s)"
    else:
        wait = "for ever (retry-after without end)"
    beyond = (
        f"longer than the {cap:g} s deferchat waits before a retry (max_retry_after under [timeouts] in config.toml)."
    )
    if status == 429:
        message = f"{label} is rate limiting requests: rate limited {wait}, {beyond} Try again then."
        code, retryable = "provider.rate_limited", True
    else:
        base = error_for_status(label, status, env_var)
        message = f"{base.message} It asks to wait {wait}, {beyond}"
        code, retryable = base.code, base.retryable
    if detail:
        message = f"{message} Server message: {detail}"
    return ProviderError(code, message, retryable=retryable, status=status)


def unreadable(exc: BaseException) -> str:
    """What was wrong with what the server sent, from what reading it raised."""
    if isinstance(exc, json.JSONDecodeError):
        return f"a chunk that is not JSON ({exc})"
    if isinstance(exc, _SHAPE_ERRORS):
        return f"an event without a field it must have ({type(exc).__name__}: {exc})"
    errors = getattr(exc, "errors", None)  # pydantic: an event's field had no value or the wrong type
    if callable(errors) and "ValidationError" in _class_names(exc):
        first = errors()[0]
        field = ".".join(str(part) for part in first.get("loc", ())) or "?"
        return f"an event whose {field!r} is missing or of the wrong type ({first.get('msg', '')})"
    return str(exc)


def malformed(label: str, why: str) -> ProviderError:
    """The server sent an event (or a body) that is not what its API sends."""
    return ProviderError(
        "provider.stream_malformed", f"{label} sent a response deferchat could not read: {why}", retryable=True
    )


def incomplete_stream(label: str) -> ProviderError:
    return ProviderError(
        "provider.stream_incomplete",
        f"{label} ended the response stream before it finished. Try again.",
        retryable=True,
    )


# --- engine-shaped history ----------------------------------------------------------------------


def render_result_block(block: dict[str, Any]) -> str:
    """Plain text for one tool-result content block (the ToolResult block vocabulary)."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_reference":
        return f"[tool loaded: {block.get('tool_name')}]"
    if kind == "image":
        return f"[image {block.get('mime_type', '?')}, {block.get('bytes', '?')} bytes]"
    if kind == "resource_link":
        return f"[resource link {block.get('name') or block.get('uri')}: {block.get('uri')}]"
    if kind == "resource":
        return str(block.get("text") or f"[resource {block.get('uri')}]")
    return f"[{kind}]"


def result_text(block: dict[str, Any]) -> str:
    """A tool_result block's content as one string (what Chat/Responses function outputs carry)."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(render_result_block(b) for b in blocks(content))


def parse_arguments(raw: str | None) -> Any:
    """Tool-call arguments as JSON, or the raw string when the model wrote invalid JSON
    (the pipeline then fails the call with tool.arguments_invalid)."""
    if raw is None or raw.strip() == "":
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def arguments_json(tool_input: Any) -> str:
    """Tool-call input as the argument string OpenAI's wires carry (a raw string stays as it was)."""
    if isinstance(tool_input, str):
        return tool_input
    return json.dumps({} if tool_input is None else tool_input, separators=(",", ":"), ensure_ascii=False)


def usage_from(
    input_tokens: int | None,
    output_tokens: int | None,
    cached: int | None = 0,
    cache_write: int | None = 0,
    *,
    input_includes_cache: bool,
) -> Usage:
    """Usage in Anthropic's terms: ``input_tokens`` counts only uncached, unwritten input.

    OpenAI counts cached tokens inside ``input_tokens``/``prompt_tokens``; Anthropic does not.
    Normalising lets input + cache read + cache write be the whole prompt everywhere.
    """
    inp, cached, cache_write = input_tokens or 0, cached or 0, cache_write or 0
    if input_includes_cache:
        inp = max(0, inp - cached - cache_write)
    return Usage(
        input_tokens=inp,
        output_tokens=output_tokens or 0,
        cache_read_input_tokens=cached,
        cache_creation_input_tokens=cache_write,
    )
