"""What the three SDK adapters share: keys, error mapping, and reading engine-shaped history.

Each adapter names its :class:`~core.providers.profiles.ProviderProfile`; its name, label, key
variable and genuine hosts come from there.

Nothing here imports an SDK. SDK exceptions are recognised by class name (both official SDKs
are generated from the same template: ``APIStatusError``, ``APIConnectionError``, ...), so the
mapping is one function for all of them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar
from urllib.parse import urlsplit

from core.providers.base import ProviderBase, ProviderError, Usage
from core.providers.profiles import ProviderProfile

# A key is only sent where its SDK would send it; a local server (Ollama, llama.cpp) ignores it.
PLACEHOLDER_KEY = "deferchat-no-key"

_SECRET_PATTERNS = (
    re.compile(r"sk-[A-Za-z0-9_\-*.]{6,}"),  # OpenAI and Anthropic key shapes, masked or not
    re.compile(r"(?i)bearer\s+[A-Za-z0-9_\-.=]{8,}"),
    re.compile(r"\*{3,}[A-Za-z0-9]{2,}"),  # "****abcd": a masked key's tail
)
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
        raise ProviderError("provider.auth_missing",
                            f"No {label or profile.label} API key: set {profile.env_var} or put the key in the "
                            "deferchat config.")
    return PLACEHOLDER_KEY


class SdkAdapter(ProviderBase):
    """What the three SDK adapters share: the key (never shown), the SDK client's settings, and
    mapping failures. Subclasses name their ``profile`` and build their SDK client in
    ``_new_client``; ``name``, ``label`` and ``env_var`` are the profile's."""

    profile: ClassVar[ProviderProfile]
    name: str
    label: str
    env_var: str

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 http_client: Any = None, max_retries: int = 2, timeout: float | None = None,
                 streaming: bool = True, env: Mapping[str, str] | None = None):
        self.name = self.profile.name
        self.label = self.profile.label
        self.env_var = self.profile.env_var or ""
        self.model = model
        self.base_url = base_url
        self.streaming = streaming
        self._api_key = resolve_key(api_key, self.profile.env_var, env)
        self._http_client = http_client
        self._max_retries = max_retries
        self._timeout = timeout
        self._client: Any = None

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def _client_options(self, **credentials: Any) -> dict[str, Any]:
        options = {**credentials, "base_url": self.base_url, "max_retries": self._max_retries,
                   "http_client": self._http_client}
        if self._timeout is not None:
            options["timeout"] = self._timeout
        return options

    def _key(self) -> str:
        return credential(self._api_key, self.base_url, self.profile, self.label)

    def _new_client(self) -> Any:
        raise NotImplementedError

    def _sdk(self) -> Any:
        if self._client is None:
            self._client = self._new_client()
        return self._client

    def _secrets(self) -> tuple[str | None, ...]:
        return (self._api_key,)

    def _failure(self, exc: BaseException) -> ProviderError:
        return provider_error(exc, label=self.label, env_var=self.env_var, base_url=self.base_url,
                              secrets=self._secrets())


# --- errors -------------------------------------------------------------------------------------


def redact(text: str, secrets: Sequence[str | None] = ()) -> str:
    """Remove every known secret and anything shaped like a key from a message."""
    for secret in secrets:
        if secret and secret != PLACEHOLDER_KEY:
            text = text.replace(secret, "[redacted]")
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub("[redacted]", text)
    return text


def _class_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _server_detail(body: Any) -> tuple[str, str]:
    """(error type, message) from an API error body, whichever provider wrote it."""
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping):
            return str(err.get("type") or err.get("code") or ""), str(err.get("message") or "")
        if isinstance(err, str):
            return "", err
    return "", ""


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
    401: ("provider.auth", "{label} rejected the API key (HTTP 401). Check {env_var} or the key in the deferchat "
          "config.", False),
    403: ("provider.permission", "{label} refused the request (HTTP 403): the key has no access to this model or "
          "feature.", False),
    404: ("provider.not_found", "{label} has no such model or endpoint (HTTP 404). Check --model and --base-url.",
          False),
    413: ("provider.request_too_large", "The request is too large for {label} (HTTP 413).", False),
    429: ("provider.rate_limited", "{label} is rate limiting requests (HTTP 429), still after the SDK's retries. "
          "Wait a little and try again.", True),
    529: ("provider.overloaded", "{label} is overloaded (HTTP 529). Try again shortly.", True),
}
_SERVER_ERROR = ("provider.server_error", "{label} had a server error (HTTP {status}). Try again shortly.", True)
_CLIENT_ERROR = ("provider.bad_request", "{label} rejected the request (HTTP {status}).", False)
_OTHER_STATUS = ("provider.http_error", "{label} answered with HTTP {status}.", False)


def error_for_status(label: str, status: int, env_var: str, detail: str = "") -> ProviderError:
    """One HTTP failure as a ProviderError with a message a person can act on."""
    fallback = _SERVER_ERROR if status >= 500 else _CLIENT_ERROR if status >= 400 else _OTHER_STATUS
    code, template, retryable = _BY_STATUS.get(status, fallback)
    message = template.format(label=label, env_var=env_var, status=status)
    if detail:
        message = f"{message} Server message: {detail}"
    return ProviderError(code, message, retryable=retryable, status=status)


def provider_error(exc: BaseException, *, label: str, env_var: str, base_url: str | None,
                   secrets: Sequence[str | None] = ()) -> ProviderError:
    """Map any failure of an SDK call or stream to a ProviderError whose text holds no secret."""
    if isinstance(exc, ProviderError):
        return exc
    names = _class_names(exc)
    err_type, detail = _server_detail(getattr(exc, "body", None))
    detail = redact(detail, secrets)[:_MAX_DETAIL]
    where = urlsplit(base_url).netloc if base_url else "its default endpoint"
    if "APITimeoutError" in names or "TimeoutException" in names:
        return ProviderError("provider.timeout", f"{label} did not answer in time ({where}). Try again.",
                             retryable=True)
    if "APIConnectionError" in names or "TransportError" in names:
        cause = exc.__cause__ or exc.__context__
        why = redact(str(cause or exc), secrets)[:_MAX_DETAIL]
        return ProviderError("provider.connection", f"Could not reach {label} at {where}: {why}", retryable=True)
    if "APIStatusError" in names:
        status = int(getattr(exc, "status_code", 0) or 0)
        if status < 400 and err_type in ERROR_TYPES:  # an error event inside a 200 stream
            status = ERROR_TYPES[err_type]
        return error_for_status(label, status, env_var, detail)
    if "APIError" in names and err_type in ERROR_TYPES:  # OpenAI's error inside a stream
        return error_for_status(label, ERROR_TYPES[err_type], env_var, detail)
    if "APIResponseValidationError" in names or isinstance(exc, ValueError):
        why = redact(str(exc), secrets)[:_MAX_DETAIL]
        return ProviderError("provider.stream_malformed", f"{label} sent a response deferchat could not read: {why}",
                             retryable=True)
    why = redact(f"{type(exc).__name__}: {exc}", secrets)[:_MAX_DETAIL]
    return ProviderError("provider.failed", f"{label} request failed: {why}", retryable=False)


def incomplete_stream(label: str) -> ProviderError:
    return ProviderError("provider.stream_incomplete",
                         f"{label} ended the response stream before it finished. Try again.", retryable=True)


# --- engine-shaped history ----------------------------------------------------------------------


def blocks(content: Any) -> list[dict[str, Any]]:
    """A message's content as a list of blocks (a bare string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [b for b in (content or []) if isinstance(b, dict)]


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


def usage_from(input_tokens: int | None, output_tokens: int | None, cached: int | None = 0,
               cache_write: int | None = 0, *, input_includes_cache: bool) -> Usage:
    """Usage in Anthropic's terms: ``input_tokens`` counts only uncached, unwritten input.

    OpenAI counts cached tokens inside ``input_tokens``/``prompt_tokens``; Anthropic does not.
    Normalising lets input + cache read + cache write be the whole prompt everywhere.
    """
    inp, cached, cache_write = input_tokens or 0, cached or 0, cache_write or 0
    if input_includes_cache:
        inp = max(0, inp - cached - cache_write)
    return Usage(input_tokens=inp, output_tokens=output_tokens or 0,
                 cache_read_input_tokens=cached, cache_creation_input_tokens=cache_write)
