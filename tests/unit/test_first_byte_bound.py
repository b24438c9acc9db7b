"""The first-byte bound is the server's time, not ours (found by the soak run, tests/bench/soak.py).

Before a request goes out, the SDK prepares it in pure Python, in proportion to the history: the
OpenAI SDK's ``async_maybe_transform`` walks every message against the params' TypedDicts
(about 0.2-0.5 ms a message on a 2-core machine: ~0.4 s for a 2,000-message Chat Completions
request, ~0.9 s for Responses), the Anthropic SDK copies the tree (``_prepare.copy_tree``). The
adapter's first-byte deadline (``core/providers/_common.py``, ``_open``) was armed before that
work started, so it counted it: a long chat with a first-byte bound below its preparation time
fails every request with ``provider.timeout`` ("sent nothing within N s of the request")
although the server answers at once, and every retry and re-send failed the same way: the chat
could not go on until the owner raised the bound. The request hook of ``core/providers/_pacing.py``
now moves the deadline to the moment the request goes out. The blocking work also makes the timeout fire
late (a 1 s bound fired after 2 s in the soak's probe).

Here the preparation is made slow on purpose, in the place both SDKs pass through before the
request is on the wire (``BaseClient._build_request``), with a blocking sleep, as the real
CPU-bound work blocks. The server answers at once; the request must succeed. And the bound must
still hold for a server that really says nothing.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import pytest

from core.providers import make_provider
from core.providers.base import ModelRequest, ProviderError, TextDelta
from core.providers.profiles import Waits
from tests.streaming_server import WIRES, serve

BOUND = 0.5
PREPARATION = 1.2  # seconds the SDK spends before the request is on the wire (well past BOUND)
LATE = 1.5  # how far past a bound a loaded 2-core machine may notice it ran out
SDK_OF = {"anthropic": "anthropic", "openai-chat": "openai", "openai": "openai"}

_clients: list[httpx2.AsyncClient] = []


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    while _clients:
        await _clients.pop().aclose()


@pytest.fixture
def slow_preparation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """The wire's SDK takes PREPARATION seconds (blocking) to build each request; the times it did."""
    base = importlib.import_module(f"{SDK_OF[request.param]}._base_client")
    original = base.BaseClient._build_request
    calls: list[float] = []

    def build(self: Any, *args: Any, **kwargs: Any) -> Any:
        time.sleep(PREPARATION)
        calls.append(time.time())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(base.BaseClient, "_build_request", build)
    yield calls


def provider(wire: str, base_url: str) -> Any:
    _clients.append(client := httpx2.AsyncClient())
    return make_provider(
        wire, "test-model", base_url=base_url, env={}, http_client=client, max_retries=0, waits=Waits(first_byte=BOUND)
    )


def request() -> ModelRequest:
    return ModelRequest(model="test-model", system="", messages=[{"role": "user", "content": "hello"}])


@pytest.mark.slow
@pytest.mark.parametrize(("wire", "slow_preparation"), [(w, w) for w in WIRES], indirect=["slow_preparation"])
async def test_a_request_the_sdk_is_slow_to_prepare_is_not_a_silent_server(
    wire: str, slow_preparation: list[float]
) -> None:
    with serve([{"parts": ["Here is the answer."]}]) as server:
        p = provider(wire, server.url_for(wire))
        texts = [e.text async for e in p.stream(request()) if isinstance(e, TextDelta)]
        [record] = server.wait_for(1, outcome=True, timeout=5)
    assert slow_preparation, "the SDK did not build its request where this test slows it down"
    assert "".join(texts) == "Here is the answer."
    assert record["outcome"] == "completed"


@pytest.mark.slow
@pytest.mark.parametrize(("wire", "slow_preparation"), [(w, w) for w in WIRES], indirect=["slow_preparation"])
async def test_after_a_slow_preparation_a_silent_server_still_fails_at_the_bound(
    wire: str, slow_preparation: list[float]
) -> None:
    with serve([{"parts": ["never"], "first_byte_delay": "forever"}]) as server:
        p = provider(wire, server.url_for(wire))
        with pytest.raises(ProviderError) as caught:
            async for _ in p.stream(request()):
                pass
        at = time.time()
    assert slow_preparation
    assert caught.value.code == "provider.timeout", caught.value.message
    assert at - slow_preparation[0] < BOUND + LATE  # bounded once the request is out
