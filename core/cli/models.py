"""``deferchat models [--provider P] [--base-url URL] [--json]``: the models each provider reports.

Asks each server now (``GET /models``, Anthropic's models list: :mod:`core.providers.listing`),
every provider at once, each within the listing's bound, and keeps what it lists for the picker
and the request budget. Without ``--provider``: every provider usable now (the demo, and each
with a key or a base URL). A server that cannot be listed shows the profile's names, marked, with
the one line saying why; the exit code is then 1 (0 when every listing is the server's own).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from core.cli.exits import EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:
    from core.config import Settings
    from core.providers.listing import Listing


def add_options(p: argparse.ArgumentParser) -> None:
    from core.providers.profiles import OPENAI

    p.add_argument("--provider", default=None, help="list this provider only: anthropic | openai | openai-chat | demo")
    p.add_argument(
        "--base-url",
        default=None,
        help="the server to list (with --provider, or for config.toml's provider; default: config.toml's "
        f"base_url, the SDK's variable such as {OPENAI.base_url_env}, or the provider's own)",
    )
    p.add_argument("--json", action="store_true", help="one JSON object: {providers: [...]}")


def providers_to_list(settings: Settings, provider: str | None, base_url: str | None) -> list[str]:
    """``--provider``; for a ``--base-url`` alone, config.toml's provider; else every usable one."""
    from core.chat.switch import usable_providers
    from core.errors import UsageError
    from core.providers.naming import check_known, choices

    if provider:
        check_known(provider)
        return [provider]
    if base_url:
        configured = settings.configured_provider()
        if configured is None:
            raise UsageError(f"--base-url needs the API its server speaks: {choices('flags')}")
        return [configured]
    return usable_providers(settings)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from core.config import load_settings
    from core.providers.listing import list_providers

    settings = load_settings()
    providers = providers_to_list(settings, args.provider, args.base_url)
    listings = asyncio.run(
        list_providers(settings, providers, base_url=args.base_url, refresh=True, flag_base_url=args.base_url)
    )
    if args.json:
        sys.stdout.write(json.dumps({"providers": [listing.to_json() for listing in listings]}) + "\n")
    else:
        sys.stdout.write(render(listings))
    return EXIT_FAILED if any(listing.from_profile for listing in listings) else EXIT_OK


def heading(listing: Listing) -> str:
    """One listing's first line: the provider, where it was asked, and where the names came from."""
    from core.display import safe

    where = f" \u00b7 {listing.base_url} ({listing.base_url_source})" if listing.base_url else ""
    return f"{listing.provider}{safe(where)} \u00b7 {safe(listing.came_from())}"


def render(listings: list[Listing]) -> str:
    from core.display import safe

    lines: list[str] = []
    for listing in listings:
        lines.append(heading(listing))
        if not listing.models:
            lines.append("  (no models listed)")
        width = max((len(m.id) for m in listing.models), default=0)
        for m in listing.models:
            notes = []
            if m.context_window:
                notes.append(f"{m.context_window:,}-token window")
            if m.name:
                notes.append(safe(m.name))
            if listing.from_profile:
                notes.append("(profile)")
            lines.append(f"  {safe(m.id).ljust(width)}  {'  '.join(notes)}".rstrip())
    return "\n".join(lines) + "\n"
