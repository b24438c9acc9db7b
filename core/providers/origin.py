"""Where a provider's endpoint and key came from, and a URL as it may be shown.

A connection or protocol error names the URL deferchat actually used and where its base URL came
from (a flag, an environment variable, ``config.toml``, the chat's own, the SDK's default), and a
refused key names where the key came from — never a value. :class:`Origin` carries those two
sources from whoever built the provider (:func:`core.providers.factory.origin_for`) to the
adapter that reports the failure (:mod:`core.providers._common`).

:func:`visible_url` is how a request's URL goes into a message: without its userinfo (a base URL
may carry ``user:password@``; :func:`core.redaction.without_userinfo` drops it) and without its
query (``?key=...`` is how some gateways take a key).
Importing this module imports no SDK.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from core.providers.profiles import ProviderProfile

DEFAULT_SOURCE = "default"
FLAG_SOURCE = "--base-url"
CHAT_SOURCE = "the chat's own base URL"


def visible_url(url: str) -> str:
    """``url`` as a message may show it, the whole of it but its secrets: without ``user:password@``
    (:func:`core.redaction.without_userinfo`, the one helper for that) and without its query or
    fragment (``?…`` marks that one was there), no trailing slash. :func:`core.redaction.url_host`
    is its host alone, for labels."""
    from core.redaction import redact, without_userinfo

    bare = without_userinfo(url.strip()) or ""
    try:
        parts = urlsplit(bare)
    except ValueError:  # an unparseable port or bracket: show what cannot hold a secret
        return redact(bare.split("?")[0])
    if "@" in parts.netloc:  # not a URL without_userinfo could read: show none of it
        return "(a URL with a credential)"
    shown = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
    return shown + ("?…" if parts.query or parts.fragment else "")


def default_url(profile: ProviderProfile) -> str:
    """The base URL the profile's SDK uses when it is given none."""
    return profile.default_base_url or "(no base URL)"


def env_base_url(profile: ProviderProfile, env: Mapping[str, str] | None = None) -> str | None:
    """The base URL the profile's SDK reads from its own environment variable, if one is set."""
    values = os.environ if env is None else env
    return (values.get(profile.base_url_env) or None) if profile.base_url_env else None


@dataclass(frozen=True)
class Origin:
    """Where a provider's base URL and key came from (names, never values).

    ``base_url``: ``--base-url``, an environment variable (``OPENAI_BASE_URL``), ``base_url in
    <config.toml>``, the chat's own, or ``default``. ``key``: an environment variable
    (``ANTHROPIC_API_KEY``), ``[keys] openai in <config.toml>``, ``the key given``, or None when no
    key is sent (a local server that needs none)."""

    base_url: str = DEFAULT_SOURCE
    key: str | None = None

    def base_url_phrase(self) -> str:
        """ "from --base-url", "from OPENAI_BASE_URL", "the default", ... (for "URL (…)")."""
        if self.base_url == DEFAULT_SOURCE:
            return "the default base URL"
        if self.base_url.startswith("the "):  # "the chat's own base URL", "the base URL given"
            return self.base_url
        return f"base URL from {self.base_url}"

    def key_phrase(self, profile: ProviderProfile) -> str:
        """Which key was sent, by its source: "the key from OPENAI_API_KEY", or that none was."""
        if self.key:
            return f"the key from {self.key}" if self.key != "the key given" else self.key
        where = " or ".join(x for x in (profile.env_var, f"[keys] {profile.key_name}" if profile.key_name else "") if x)
        return f"no key (none is set: {where})"


def default_origin(
    profile: ProviderProfile, base_url: str | None, key_given: bool, env: Mapping[str, str] | None = None
) -> Origin:
    """The origin of a provider built without one (``make_provider`` called directly): a base URL
    passed in is "given", else the SDK's variable or the default; a key likewise."""
    values = os.environ if env is None else env
    if base_url:
        source = "the base URL given"
    elif env_base_url(profile, values):
        source = profile.base_url_env or DEFAULT_SOURCE
    else:
        source = DEFAULT_SOURCE
    if key_given:
        key: str | None = "the key given"
    elif profile.env_var and values.get(profile.env_var):
        key = profile.env_var
    elif profile.auth_token_env and values.get(profile.auth_token_env):
        key = profile.auth_token_env
    else:
        key = None
    return Origin(base_url=source, key=key)


__all__ = [
    "CHAT_SOURCE",
    "DEFAULT_SOURCE",
    "FLAG_SOURCE",
    "Origin",
    "default_origin",
    "default_url",
    "env_base_url",
    "visible_url",
]
