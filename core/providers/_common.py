"""What the three SDK adapters share: keys, error mapping, and reading engine-shaped history.

Nothing here imports an SDK. SDK exceptions are recognised by class name (both official SDKs
are generated from the same template: ``APIStatusError``, ``APIConnectionError``, ...), so the
mapping is one function for all of them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from core.providers.base import ProviderError, Usage

# A key is only sent where its SDK would send it; a local server (Ollama, llama.cpp) ignores it.
PLACEHOLDER_KEY = "deferchat-no-key"

_SECRET_PATTERNS = (
    re.compile(r"sk-[A-Za-z0-9_\-*.]{6,}"),  # OpenAI and Anthropic key shapes, masked or not
    re.compile(r"(?i)bearer\s+[A-Za-z0-9_\-.=]{8,}"),
    re.compile(r"\*{3,}[A-Za-z0-9]{2,}"),  # "****abcd": a masked key's tail
)
_MAX_DETAIL = 300


# --- keys ---------------------------------------------------------------------------------------


def resolve_key(explicit: str | None, env_var: str, env: Mapping[str, str] | None = None) -> str | None:
    """The key passed in, else the usual environment variable. Never logged, never echoed."""
    if explicit:
        return explicit
    value = (os.environ if env is None else env).get(env_var, "")
    return value or None


def is_host(base_url: str | None, host: str) -> bool:
    """True for an unset base URL or one on ``host`` (the genuine first-party API)."""
    if not base_url:
        return True
    return (urlsplit(base_url if "://" in base_url else f"https://{base_url}").hostname or "").lower() == host


def missing_key(label: str, env_var: str) -> ProviderError:
    return ProviderError("provider.auth_missing",
                         f"No {label} API key: set {env_var} or put the key in the deferchat config.")


def credential(key: str | None, base_url: str | None, genuine_host: str, label: str, env_var: str) -> str:
    """The key to hand the SDK. The genuine API needs a real one; a local or third-party server
    that wants none (Ollama, llama.cpp, a recorded replay) gets a placeholder."""
    if key:
        return key
    if is_host(base_url, genuine_host):
        raise missing_key(label, env_var)
    return PLACEHOLDER_KEY


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


def error_for_status(label: str, status: int, env_var: str, detail: str = "") -> ProviderError:
    """One HTTP failure as a ProviderError with a message a person can act on."""
    if status == 401:
        code, msg, retry = "provider.auth", f"{label} rejected the API key (HTTP 401). Check {env_var} or the key in the deferchat config.", False
    elif status == 403:
        code, msg, retry = "provider.permission", f"{label} refused the request (HTTP 403): the key has no access to this model or feature.", False
    elif status == 404:
        code, msg, retry = "provider.not_found", f"{label} has no such model or endpoint (HTTP 404). Check --model and --base-url.", False
    elif status == 413:
        code, msg, retry = "provider.request_too_large", f"The request is too large for {label} (HTTP 413).", False
    elif status == 429:
        code, msg, retry = "provider.rate_limited", f"{label} is rate limiting requests (HTTP 429), still after the SDK's retries. Wait a little and try again.", True
    elif status == 529:
        code, msg, retry = "provider.overloaded", f"{label} is overloaded (HTTP 529). Try again shortly.", True
    elif status >= 500:
        code, msg, retry = "provider.server_error", f"{label} had a server error (HTTP {status}). Try again shortly.", True
    elif 400 <= status < 500:
        code, msg, retry = "provider.bad_request", f"{label} rejected the request (HTTP {status}).", False
    else:
        code, msg, retry = "provider.http_error", f"{label} answered with HTTP {status}.", False
    if detail:
        msg = f"{msg} Server message: {detail}"
    return ProviderError(code, msg, retryable=retry, status=status)


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
        return ProviderError("provider.timeout", f"{label} did not answer in time ({where}). Try again.", retryable=True)
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


def iter_function_tools(tools: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Function tools (internal form), including those inside a namespace."""
    for tool in tools:
        kind = tool.get("type")
        if kind == "namespace":
            yield from iter_function_tools(tool.get("tools") or [])
        elif kind in (None, "function", "custom"):
            yield tool


def parse_arguments(raw: str | None) -> Any:
    """Tool-call arguments as JSON, or the raw string when the model wrote invalid JSON
    (the pipeline then fails the call with tool.arguments_invalid)."""
    if raw is None or raw.strip() == "":
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def arguments_json(tool_input: Any) -> str:
    """Tool-call input as the argument string OpenAI's wires carry (a raw string stays as it was)."""
    return tool_input if isinstance(tool_input, str) else compact_json({} if tool_input is None else tool_input)


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
