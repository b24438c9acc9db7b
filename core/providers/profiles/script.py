"""The script provider (``core.providers.script``): replays a file of model turns exactly.

Offline and keyless; ``auto`` gives it the wrapper strategy (its turns call ``tool.call``).
"""

from __future__ import annotations

from core.providers.profiles.base import ModelWindow, ProviderProfile

SCRIPT = ProviderProfile(
    name="script",
    label="the script provider",
    default_model="script",
    adapter="core.providers.script:ScriptProvider",
    offline=True,
    # a script's turns are replayed as written: its history is never summarised unless config.toml
    # gives it a window ([models."script:<model>"])
    windows=(("*", ModelWindow(tokens=10_000_000)),),
)
