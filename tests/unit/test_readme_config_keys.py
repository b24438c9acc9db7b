"""README's *Every key of config.toml* lists exactly the keys the loader accepts (core.config and
the models it validates with), so the list stays true: a key added to the settings without a
line in the README, or a line for a key that is gone, fails here. And every key it lists loads."""

from __future__ import annotations

import re
import typing
from typing import Any

import pytest
from pydantic import BaseModel

from core.config import Settings, TimeoutSettings, WaitSettings, load_settings
from core.deferral.dispatch import Gateway
from core.errors import UsageError
from core.providers.profiles import ModelSupportRule
from tests.helpers import ROOT

SECTION = "### Every key of `config.toml`"

ROWS_OF = {"anthropic_gateways": Gateway, "model_support": ModelSupportRule}
"""Lists of tables the settings hold loosely typed, and the model each row is validated with."""


def readme_keys() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split(SECTION, 1)[1]
    section = re.split(r"\n#{2,3} ", section, maxsplit=1)[0]
    return re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)


def _table(model: type[BaseModel], prefix: str) -> set[str]:
    keys: set[str] = set()
    for name, info in model.model_fields.items():
        if model is TimeoutSettings and name == "providers":  # [timeouts.<provider>] tables
            keys |= _table(WaitSettings, f"{prefix}<provider>.")
            continue
        keys |= _key(info.annotation, f"{prefix}{name}", name)
    return keys


def _key(annotation: Any, key: str, name: str) -> set[str]:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _table(annotation, f"{key}.")
    if origin is dict:
        value = args[1]
        if isinstance(value, type) and issubclass(value, BaseModel):  # [prices."provider:model"]
            return _table(value, f'{key}."<provider:model>".')
        return {f"{key}.<binding id>"}  # [keymap]: binding id -> keys
    if name in ROWS_OF:
        return {key} | _table(ROWS_OF[name], f"{key}[].")
    return {key}


def test_the_readme_lists_every_key_the_loader_accepts_and_no_other():
    listed = readme_keys()
    assert len(listed) == len(set(listed)), "a key is listed twice"
    assert set(listed) == _table(Settings, "")


def test_every_listed_example_loads(home):
    """A config.toml that sets the keys the README shows as examples loads, and an unknown key
    (a misspelling) is refused with its name."""
    (home / "config.toml").write_text(
        "\n".join(
            [
                'provider = "openai-chat"',
                'base_url = "http://localhost:8000/v1"',
                'model = "Qwen/Qwen2.5-7B-Instruct"',
                "max_steps = 20",
                'fallback = ["anthropic:claude-sonnet-4-6"]',
                '[[anthropic_gateways]]\nurl = "https://gw.example/anthropic"\nname = "gw"',
                '[[model_support]]\nprovider = "anthropic"\nmodel = "*haiku-5*"\nnative = true',
                '[keys]\nopenai = "sk-local"',
                '[keymap]\nnew_chat = "ctrl+shift+n"',
                "[tools]\nhttp_timeout = 5\nfetch_max_bytes = 1000\nallow_private_network = false",
                "[timeouts]\nconnect = 5\n[timeouts.openai-chat]\nfirst_byte = 600",
                '[thinking]\nopenai_effort = "low"',
                '[prices."openai-chat:Qwen/Qwen2.5-7B-Instruct"]\ninput = 0\noutput = 0',
            ]
        )
        + "\n"
    )
    settings = load_settings()
    assert settings.timeouts.waits_for("openai-chat").first_byte == 600
    assert settings.tools.http_timeout == 5 and settings.keys.openai is not None
    (home / "config.toml").write_text('[tools]\nsearx_url = "http://127.0.0.1:8888"\n')
    with pytest.raises(UsageError, match="searx_url"):
        load_settings()
