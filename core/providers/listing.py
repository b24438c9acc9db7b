"""The models a provider reports, each with its context window where the server says it.

* OpenAI and every OpenAI-compatible server: ``GET /models`` through the official ``openai``
  SDK (``models.list()``), the raw items read for what servers add beside ``id``:
  ``max_model_len`` (vLLM), ``meta.n_ctx`` / ``meta.n_ctx_train`` (llama.cpp's server),
  ``context_length`` (OpenRouter, LM Studio, Together, Moonshot), ``max_context_length``
  (Mistral, LM Studio's own API), ``context_window`` (Groq), ``top_provider.context_length``
  (OpenRouter). Ollama's ``/v1/models`` lists names only (its window is the ``num_ctx`` a model
  runs with, not listed there), so its models come without one.
* Anthropic: the ``anthropic`` SDK's ``models.list()``; ``max_input_tokens`` is the window.
* The offline providers (demo, script): their profile's names, which are the whole truth.

A listing is bounded: the whole of it (connect, every page) within :data:`LISTING_SECONDS`.
When the server cannot be listed (down, slow, a refused key, no key or base URL at all) the
listing is the profile's names, **marked** (``source == "profile"`` with the ``problem``, one
line naming the URL and where it came from, as every provider error does). A listing the server
gave is kept per provider family and base URL in ``model-listings.json`` in the data directory
(a cache, not chat data: it holds no demo row and no key), used as it is for
:data:`FRESH_SECONDS`, and read, whatever its age, by :func:`listed_window` (no network), which
the request budget uses for a model's window.

Untrusted: a server's model ids and names are shown through :func:`core.display.safe` by the
presentations; an id that is not printable text, or is longer than :data:`MAX_ID`, is dropped.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from core.imports import bulk_import
from core.providers.origin import Origin, default_url, env_base_url, visible_url
from core.providers.profiles import ANTHROPIC, ProviderProfile, profile_for
from core.redaction import url_host

if TYPE_CHECKING:
    from core.config import Settings

LISTING_SECONDS = 2.0
"""The longest a listing takes, the SDK's import, connecting and every page included
(``deferchat models`` answers within 3 s with a server that never does)."""
MIN_REQUEST_SECONDS = 0.25
"""What the request itself is left at least when importing the SDK took most of the bound."""
FRESH_SECONDS = 600.0
"""A cached listing this young is used without asking the server again (the picker)."""
CACHE_NAME = "model-listings.json"
CACHE_VERSION = 1
MAX_MODELS = 2000
MAX_ID = 200
MAX_CACHED_ENDPOINTS = 50

Source = Literal["server", "cache", "profile"]


@dataclass(frozen=True)
class ListedModel:
    id: str
    context_window: int | None = None
    """Tokens, where the server lists them."""
    name: str | None = None
    """A display name the server gives (Anthropic's ``display_name``), when it differs from the id."""


@dataclass(frozen=True)
class Listing:
    """One provider's models at one base URL, and where they came from."""

    provider: str
    source: Source
    models: tuple[ListedModel, ...]
    base_url: str | None = None
    """The base URL listed, as shown (no userinfo, no query); None for an offline provider."""
    base_url_source: str = ""
    """Where it came from, in words ("base URL from --base-url", "the default base URL")."""
    listed_at: float | None = None
    problem: str | None = None
    """Why these are the profile's names and not the server's (one line), or None."""

    @property
    def from_profile(self) -> bool:
        """The profile's names stand in for the server's (it could not be listed)."""
        return self.source == "profile" and self.problem is not None

    def window_of(self, model: str) -> int | None:
        return next((m.context_window for m in self.models if m.id == model), None)

    def came_from(self) -> str:
        """Where these names came from, in words: "listed by the server", or why they are the profile's."""
        if self.source == "server":
            return "listed by the server"
        if self.source == "cache":
            return "as the server listed them"
        if self.problem:
            return f"not listed, the profile's names: {self.problem}"
        return "its own models"

    def to_json(self) -> dict[str, Any]:
        listed = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.listed_at)) if self.listed_at else None
        return {
            "provider": self.provider,
            "base_url": self.base_url,
            "base_url_source": self.base_url_source or None,
            "source": self.source,
            "listed_at": listed,
            "problem": self.problem,
            "models": [{"id": m.id, "context_window": m.context_window, "name": m.name} for m in self.models],
        }


# --- what the items say --------------------------------------------------------------------------

_WINDOW_PATHS: tuple[tuple[str, ...], ...] = (
    ("max_model_len",),  # vLLM: the window the server runs with
    ("meta", "n_ctx"),  # llama.cpp: the window it runs with
    ("context_length",),  # OpenRouter, LM Studio, Together, Moonshot
    ("max_context_length",),  # Mistral, LM Studio's REST API
    ("context_window",),  # Groq
    ("max_input_tokens",),  # Anthropic
    ("top_provider", "context_length"),  # OpenRouter's provider row
    ("meta", "n_ctx_train"),  # llama.cpp: the window the model was trained for
)


def window_of(item: Mapping[str, Any]) -> int | None:
    """The context window one listed item states, in tokens (the first of :data:`_WINDOW_PATHS`
    that holds a positive whole number), or None."""
    for path in _WINDOW_PATHS:
        value: Any = item
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if isinstance(value, bool):
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and 0 < value < 1 << 40:
            return value
    return None


def _usable_id(value: Any) -> str | None:
    if isinstance(value, str) and 0 < len(value.strip()) <= MAX_ID and value.isprintable():
        return value.strip()
    return None


def models_from(items: Sequence[Mapping[str, Any]], *, keep_order: bool = False) -> tuple[ListedModel, ...]:
    """The models of raw listed items: each usable id once, with its window and display name;
    sorted by id unless ``keep_order`` (Anthropic lists its newest first)."""
    seen: dict[str, ListedModel] = {}
    for item in items[:MAX_MODELS]:
        model_id = _usable_id(item.get("id"))
        if model_id is None or model_id in seen:
            continue
        name = _usable_id(item.get("display_name"))
        seen[model_id] = ListedModel(model_id, window_of(item), name if name and name != model_id else None)
    models = list(seen.values())
    return tuple(models if keep_order else sorted(models, key=lambda m: m.id))


# --- where to ask ------------------------------------------------------------------------------


def listed_url(settings: Settings, provider: str, base_url: str | None = None) -> str | None:
    """The base URL a listing of ``provider`` asks: the one given, config.toml's for its provider,
    the SDK's variable, or the default (None for an offline provider)."""
    profile = profile_for(provider)
    if profile is None or profile.offline:
        return None
    return base_url or settings.base_url_for(provider) or env_base_url(profile) or default_url(profile)


def cache_key(provider: str, url: str) -> str:
    """Listings are kept per API family (``openai`` and ``openai-chat`` list the same ``/models``)
    and base URL, without its userinfo or query (:func:`~core.providers.origin.visible_url`)."""
    family = "anthropic" if provider == ANTHROPIC.name else "openai"
    return f"{family} {visible_url(url)}"


def cache_path() -> Path:
    from core.store.paths import data_dir

    return data_dir() / CACHE_NAME


_memo: dict[str, Any] = {"key": None, "data": {}}


def read_cache(path: Path | None = None) -> dict[str, Any]:
    """The cached listings by :func:`cache_key` (an unreadable or foreign file reads as none)."""
    path = path or cache_path()
    try:
        stat = path.stat()
    except OSError:
        return {}
    memo_key = (str(path), stat.st_mtime_ns, stat.st_size)
    if _memo["key"] == memo_key:
        return dict(_memo["data"])
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    listings = data.get("listings") if isinstance(data, dict) and data.get("version") == CACHE_VERSION else None
    found = {k: v for k, v in listings.items() if isinstance(v, dict)} if isinstance(listings, dict) else {}
    _memo.update(key=memo_key, data=found)
    return dict(found)


def write_cache(key: str, listing: Listing, path: Path | None = None) -> None:
    """Keep one server listing (atomically: a reader never sees half a file); a cache that cannot
    be written is left as it is, the listing still shown."""
    path = path or cache_path()
    entries = read_cache(path)
    entries[key] = {
        "listed_at": listing.listed_at,
        "models": [{"id": m.id, "context_window": m.context_window, "name": m.name} for m in listing.models],
    }
    newest = sorted(entries.items(), key=lambda kv: float(kv[1].get("listed_at") or 0), reverse=True)
    body = json.dumps({"version": CACHE_VERSION, "listings": dict(newest[:MAX_CACHED_ENDPOINTS])}, indent=1)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".model-listings-", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(body)
        os.replace(tmp, path)
    except OSError:
        return


def cached(provider: str, url: str, entry: Mapping[str, Any], origin_phrase: str) -> Listing | None:
    items = entry.get("models")
    if not isinstance(items, list):
        return None
    listed_at = entry.get("listed_at")
    return Listing(
        provider=provider,
        source="cache",
        models=models_from([i for i in items if isinstance(i, dict)], keep_order=True),
        base_url=visible_url(url),
        base_url_source=origin_phrase,
        listed_at=float(listed_at) if isinstance(listed_at, int | float) else None,
    )


def listed_window(settings: Settings, provider: str, model: str, base_url: str | None) -> int | None:
    """The context window the server listed for ``model`` when ``provider`` at ``base_url`` (None:
    config.toml's, the SDK's variable, or the default) was last listed; None when it was never
    listed or listed no window. Reads only the cache, whatever its age: no network."""
    url = listed_url(settings, provider, base_url)
    if url is None:
        return None
    entry = read_cache().get(cache_key(provider, url))
    listing = cached(provider, url, entry, "") if entry else None
    return listing.window_of(model) if listing else None


# --- asking the server ---------------------------------------------------------------------------


def _label(profile: ProviderProfile, url: str) -> str:
    if profile.is_genuine(url):
        return profile.label
    return f"{'Anthropic' if profile is ANTHROPIC else 'OpenAI'}-compatible server {url_host(url)}"


def profile_listing(provider: str, problem: str | None, url: str | None = None, phrase: str = "") -> Listing:
    """The profile's names (its default first), standing in for the server's when ``problem`` says why."""
    from core.chat.switch import models_of

    return Listing(
        provider=provider,
        source="profile",
        models=tuple(ListedModel(m) for m in models_of(provider)),
        base_url=visible_url(url) if url else None,
        base_url_source=phrase,
        problem=problem,
    )


def _sdk_client(profile: ProviderProfile, url: str, key: str | None, auth_token: str | None, **options: Any) -> Any:
    """The official SDK's client for ``profile`` (imported here, before the listing's time starts)."""
    if profile is ANTHROPIC:
        with bulk_import():
            import anthropic

        credentials = {"auth_token": auth_token} if auth_token and not key else {"api_key": key}
        return anthropic.AsyncAnthropic(base_url=url, **credentials, **options)
    with bulk_import():
        import openai

    return openai.AsyncOpenAI(base_url=url, api_key=key, **options)


class _Page(Exception):
    """The listing's answer was a web page (raised by the response hook; the SDK wraps it)."""

    def __init__(self, status: int, title: str):
        super().__init__(f"an HTML page, HTTP {status}")
        self.status, self.title = status, title


async def _refuse_pages(response: Any) -> None:
    """A response hook: a web page where the listing's JSON belongs stops the listing, with its title."""
    from core.providers._common import page_title

    if str(response.headers.get("content-type", "")).lower().startswith(("text/html", "application/xhtml")):
        raise _Page(int(response.status_code), await page_title(response))


def _page_in(exc: BaseException) -> _Page | None:
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None or isinstance(seen, _Page):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


async def _fetch(profile: ProviderProfile, sdk: Any) -> list[dict[str, Any]]:
    """Every item the server lists, raw (``to_dict()``: the fields the SDK's model leaves out kept)."""
    sdk._client.event_hooks["response"].append(_refuse_pages)
    pages = sdk.models.list(limit=1000) if profile is ANTHROPIC else sdk.models.list()
    items: list[dict[str, Any]] = []
    try:
        async for item in pages:
            items.append(item.to_dict() if hasattr(item, "to_dict") else dict(item))
            if len(items) >= MAX_MODELS:
                break
    finally:
        await sdk.close()
    return items


async def list_models(
    settings: Settings,
    provider: str,
    base_url: str | None = None,
    *,
    refresh: bool = False,
    timeout: float = LISTING_SECONDS,
    flag_base_url: str | None = None,
    http_client: Any = None,
) -> Listing:
    """What ``provider`` at ``base_url`` (see :func:`listed_url`) lists: from the cache when it is
    fresh (unless ``refresh``), else from the server within ``timeout`` seconds (then cached), else
    the profile's names marked with the problem. Never raises for the server's faults."""
    from core.providers._common import asked_at, credential, not_an_api, provider_error
    from core.providers.base import ProviderError
    from core.providers.factory import can_build, origin_for

    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout  # the whole listing: the SDK's import and client included
    profile = profile_for(provider)
    if profile is None:
        return profile_listing(provider, f"unknown provider {provider!r}")
    url = listed_url(settings, provider, base_url)
    if profile.offline or url is None:
        return profile_listing(provider, None)
    given = base_url or settings.base_url_for(provider)
    origin: Origin = origin_for(settings, provider, given, flag_base_url)
    phrase = origin.base_url_phrase()
    key = cache_key(provider, url)
    if not refresh and (entry := read_cache().get(key)):
        hit = cached(provider, url, entry, phrase)
        if hit is not None and hit.listed_at is not None and time.time() - hit.listed_at < FRESH_SECONDS:
            return hit
    label = _label(profile, url)
    at = asked_at(label, "GET", f"{url.rstrip('/')}/models" if profile is not ANTHROPIC else f"{url}/v1/models", origin)
    if not can_build(settings, provider, given):
        return profile_listing(
            provider, f"no key for {label}: set {profile.env_var} or [keys] {profile.key_name}", url, phrase
        )
    api_key = settings.api_key(provider)
    token = os.environ.get(profile.auth_token_env) if profile.auth_token_env and not api_key else None
    from core.redaction import restore_url

    # a chat's stored URL has lost its credential: this process's memory, the settings or the
    # SDK's variable give it back, as the provider factory does
    url = restore_url(url, (settings.base_url_for(provider), settings.base_url, env_base_url(profile))) or url
    try:
        import httpx2

        sent = None if token else credential(api_key, url, profile, label)  # a keyless local server: a placeholder
        options = {"max_retries": 0, "timeout": httpx2.Timeout(timeout), "http_client": http_client}
        sdk = _sdk_client(profile, url, sent, token, **options)
        async with asyncio.timeout_at(max(deadline, loop.time() + MIN_REQUEST_SECONDS)):
            items = await _fetch(profile, sdk)
    except TimeoutError:
        return profile_listing(provider, f"{at} did not list its models within {timeout:g} s", url, phrase)
    except ProviderError as exc:
        return profile_listing(provider, exc.message, url, phrase)
    except Exception as exc:
        if (page := _page_in(exc)) is not None:
            return profile_listing(provider, not_an_api(at, page.status, page.title).message, url, phrase)
        error = provider_error(
            exc,
            label=label,
            env_var=profile.env_var or "",
            base_url=url,
            secrets=(api_key, token),
            at=at,
            key=origin.key_phrase(profile),
        )
        return profile_listing(provider, error.message, url, phrase)
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        return profile_listing(provider, f"{at} answered with something that is not a list of models", url, phrase)
    listing = Listing(
        provider=provider,
        source="server",
        models=models_from(items, keep_order=profile is ANTHROPIC),
        base_url=visible_url(url),
        base_url_source=phrase,
        listed_at=time.time(),
    )
    write_cache(key, listing)
    return listing


def fresh_listing(settings: Settings, provider: str, base_url: str | None = None) -> Listing | None:
    """What is known now without asking anyone: an offline provider's own models, or a fresh
    cached listing; None when the server must be asked (:func:`list_now`)."""
    profile = profile_for(provider)
    if profile is None:
        return None
    if profile.offline:
        return profile_listing(provider, None)
    url = listed_url(settings, provider, base_url)
    entry = read_cache().get(cache_key(provider, url)) if url else None
    hit = cached(provider, url, entry, "") if url and entry else None
    if hit is not None and hit.listed_at is not None and time.time() - hit.listed_at < FRESH_SECONDS:
        return hit
    return None


def list_now(settings: Settings, provider: str, base_url: str | None = None, *, refresh: bool = False) -> Listing:
    """:func:`list_models` for a thread of its own (the TUI's worker): the SDK's import and the
    request both happen off the caller's event loop."""
    return asyncio.run(list_models(settings, provider, base_url, refresh=refresh))


async def list_providers(
    settings: Settings,
    providers: Sequence[str],
    *,
    base_url: str | None = None,
    refresh: bool = False,
    timeout: float = LISTING_SECONDS,
    flag_base_url: str | None = None,
) -> list[Listing]:
    """:func:`list_models` for each of ``providers`` at once (``base_url`` for every one of them),
    so the whole is bounded by one ``timeout``, in the order given."""
    return list(
        await asyncio.gather(
            *(
                list_models(settings, p, base_url, refresh=refresh, timeout=timeout, flag_base_url=flag_base_url)
                for p in providers
            )
        )
    )


__all__ = [
    "CACHE_NAME",
    "FRESH_SECONDS",
    "LISTING_SECONDS",
    "ListedModel",
    "Listing",
    "cache_key",
    "fresh_listing",
    "list_models",
    "list_now",
    "list_providers",
    "listed_url",
    "listed_window",
    "models_from",
    "profile_listing",
    "read_cache",
    "window_of",
]
