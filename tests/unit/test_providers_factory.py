"""make_provider, and the promise that importing providers loads no SDK."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.providers import make_provider
from core.providers.anthropic import AnthropicProvider
from core.providers.base import ModelRequest, Provider
from core.providers.openai_chat import OpenAIChatProvider
from core.providers.openai_responses import OpenAIResponsesProvider
from tests.provider_replay import FIXTURES, Replay, collect, json_response

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "name,cls",
    [("anthropic", AnthropicProvider), ("openai", OpenAIResponsesProvider), ("openai-chat", OpenAIChatProvider)],
)
def test_make_provider(name, cls):
    p = make_provider(name, "some-model", base_url="http://127.0.0.1:1/v1", api_key="k", max_retries=5)
    assert isinstance(p, cls) and isinstance(p, Provider)
    assert (p.name, p.model, p.base_url) == (name, "some-model", "http://127.0.0.1:1/v1")


def test_unknown_provider():
    with pytest.raises(ValueError, match="anthropic, openai, openai-chat"):
        make_provider("demo-ish", "m")


def test_importing_providers_and_dispatch_loads_no_sdk():
    code = (
        "import sys, core.providers, core.providers.anthropic, core.providers.openai_responses, "
        "core.providers.openai_chat, core.providers.wirenames, core.deferral.dispatch\n"
        "from core.providers import make_provider\n"
        "make_provider('anthropic', 'm', api_key='k'); make_provider('openai', 'm', api_key='k')\n"
        "print(__import__('json').dumps(sorted(m for m in ('anthropic', 'openai', 'httpx2', 'textual', 'mcp') "
        "if m in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


async def test_a_loopback_base_url_needs_no_key_and_gets_the_request():
    """What `deferchat ask --provider anthropic --base-url http://127.0.0.1:PORT` relies on."""
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    replay = Replay([json_response(message)])
    p = make_provider(
        "anthropic",
        "claude-sonnet-4-6",
        base_url="http://127.0.0.1:8123",
        http_client=replay.client(),
        env={},
        streaming=False,
    )
    events = await collect(
        p, ModelRequest(model="claude-sonnet-4-6", system="", messages=[{"role": "user", "content": "hi"}])
    )
    assert str(replay.requests[0].url) == "http://127.0.0.1:8123/v1/messages"
    headers = replay.requests[0].headers  # this SDK sends the key as a bearer token; older ones as x-api-key
    assert "deferchat-no-key" in (headers.get("x-api-key", "") + headers.get("authorization", ""))
    assert events[-1].content == [{"type": "text", "text": "hi"}]


def test_every_recorded_fixture_is_replayed_by_a_provider_test():
    sources = "".join(p.read_text() for p in Path(__file__).parent.glob("test_providers_*.py"))
    fixtures = sorted(p.name for p in FIXTURES.glob("*/*") if p.name != "SOURCE.md")
    assert len(fixtures) == 19
    assert [name for name in fixtures if f'"{name}"' not in sources] == []
    source = (FIXTURES / "SOURCE.md").read_text()  # provenance and licences travel with the copies
    assert "(Apache-2.0, Copyright Vercel, Inc.)" in source and "(MIT, Copyright Pydantic Services Inc.)" in source
