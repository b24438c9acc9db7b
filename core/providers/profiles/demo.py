"""The offline demo model (``core.demo.model``): deterministic, no key, no network.

It reads the ADR-0123 index like a small agent, so ``auto`` gives it the wrapper strategy.
"""

from __future__ import annotations

from core.providers.profiles.base import ModelWindow, ProviderProfile

DEMO = ProviderProfile(
    name="demo",
    label="the demo model",
    default_model="demo-1",
    adapter="core.demo.model:DemoProvider",
    offline=True,
    models=("demo-1",),
    # the demo model's own window: small enough that a long demo chat shows its history summarised
    windows=(("*", ModelWindow(tokens=32_000)),),
)
