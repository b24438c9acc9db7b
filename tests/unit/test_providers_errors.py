"""Every failure of every SDK adapter becomes a ProviderError(code, message, retryable, status) whose
text a person can act on and which never carries the API key."""

from __future__ import annotations

import json

import httpx2
import pytest

from core.providers.anthropic import AnthropicProvider
from core.providers.base import ModelRequest, ProviderError
from core.providers.openai_chat import OpenAIChatProvider
from core.providers.openai_responses import OpenAIResponsesProvider
from tests.provider_replay import Replay, chunk_lines, collect, done, json_response, split_sessions, sse, sse_response

KEY = "sk-test-SECRETSECRETSECRET1234"
ANTHROPIC_OK = split_sessions(chunk_lines("anthropic-tool-search-bm25.1.chunks.txt"), "message_stop")[0]
OPENAI_OK = chunk_lines("openai-tool-search.1.chunks.txt")


def _chat_chunk(delta: dict, finish: str | None = None) -> str:
    return json.dumps(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )


CHAT_OK = [
    _chat_chunk({"role": "assistant", "content": "Hel"}),
    _chat_chunk({"content": "lo"}),
    _chat_chunk({}, "stop"),
]


def chat_sse(lines: list[str], done_marker: bool = True) -> bytes:
    return "".join(f"data: {line}\n\n" for line in lines).encode() + (b"data: [DONE]\n\n" if done_marker else b"")


CASES = {
    "anthropic": dict(
        make=lambda **kw: AnthropicProvider("claude-sonnet-4-6", **kw),
        env="ANTHROPIC_API_KEY",
        ok=lambda: sse(ANTHROPIC_OK),
        cut=lambda: sse(ANTHROPIC_OK[:12]),
        malformed=b"event: message_start\ndata: {nope\n\n",
        body=lambda msg: {"type": "error", "error": {"type": "invalid_request_error", "message": msg}},
        stream_error=(
            sse(ANTHROPIC_OK[:3]) + b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
            b'"message":"Overloaded"}}\n\n',
            "provider.overloaded",
        ),
    ),
    "openai": dict(
        make=lambda **kw: OpenAIResponsesProvider("gpt-5.4", **kw),
        env="OPENAI_API_KEY",
        ok=lambda: sse(OPENAI_OK),
        cut=lambda: sse(OPENAI_OK[:-1]),
        malformed=b"event: response.created\ndata: {nope\n\n",
        body=lambda msg: {"error": {"message": msg, "type": "invalid_request_error", "param": None, "code": None}},
        stream_error=(
            sse(
                [
                    *OPENAI_OK[:3],
                    json.dumps(
                        {
                            "type": "response.failed",
                            "sequence_number": 4,
                            "response": {
                                **json.loads(OPENAI_OK[0])["response"],
                                "status": "failed",
                                "error": {"code": "server_error", "message": "The server had an error"},
                            },
                        }
                    ),
                ]
            ),
            "provider.server_error",
        ),
    ),
    "openai-chat": dict(
        make=lambda **kw: OpenAIChatProvider("gpt-5.4-mini", **kw),
        env="OPENAI_API_KEY",
        ok=lambda: chat_sse(CHAT_OK),
        cut=lambda: chat_sse(CHAT_OK[:2], done_marker=False),
        malformed=b"data: {nope\n\n",
        body=lambda msg: {"error": {"message": msg, "type": "invalid_request_error", "param": None, "code": None}},
        stream_error=(
            chat_sse(CHAT_OK[:1]).replace(b"data: [DONE]\n\n", b"")
            + b'data: {"error": {"message": "boom", "type": "server_error"}}\n\n',
            "provider.server_error",
        ),
    ),
}
PROVIDERS = list(CASES)
REQUEST = ModelRequest(
    model="",
    system="",
    messages=[{"role": "user", "content": "hi"}],
    tools=[{"name": "get_weather", "input_schema": {"type": "object"}}],
)


def make(name: str, replay: Replay, **kw):
    kw.setdefault("api_key", KEY)
    kw.setdefault("max_retries", 0)
    return CASES[name]["make"](http_client=replay.client(), **kw)


async def failure(name: str, responses, **kw) -> tuple[ProviderError, Replay]:
    replay = Replay(responses)
    with pytest.raises(ProviderError) as err:
        await collect(make(name, replay, **kw), REQUEST)
    assert KEY not in err.value.message and "SECRET" not in str(err.value)
    return err.value, replay


@pytest.mark.parametrize("name", PROVIDERS)
async def test_the_success_path_these_errors_are_measured_against(name):
    events = await collect(make(name, Replay([sse_response(CASES[name]["ok"]())])), REQUEST)
    assert done(events).kind == "done"


@pytest.mark.parametrize(
    "status,code,retryable",
    [
        (400, "provider.bad_request", False),
        (401, "provider.auth", False),
        (403, "provider.permission", False),
        (404, "provider.not_found", False),
        (413, "provider.request_too_large", False),
        (429, "provider.rate_limited", True),
        (500, "provider.server_error", True),
        (503, "provider.server_error", True),
        (529, "provider.overloaded", True),
    ],
)
@pytest.mark.parametrize("name", PROVIDERS)
async def test_http_errors(name, status, code, retryable):
    body = CASES[name]["body"](f"Incorrect API key provided: {KEY} (masked sk-test-****1234)")
    err, replay = await failure(name, [json_response(body, status)])
    assert (err.code, err.retryable, err.status) == (code, retryable, status)
    assert "Incorrect API key provided: [redacted]" in err.message and "****1234" not in err.message
    assert err.__cause__ is None and err.__suppress_context__
    if status == 401:
        assert CASES[name]["env"] in err.message
    assert len(replay.requests) == 1


@pytest.mark.parametrize("name", PROVIDERS)
async def test_the_sdk_retries_before_giving_up(name):
    fast = {"retry-after-ms": "1"}
    responses = [
        json_response(CASES[name]["body"]("busy"), 500, fast),
        json_response(CASES[name]["body"]("slow down"), 429, fast),
        sse_response(CASES[name]["ok"]()),
    ]
    replay = Replay(responses)
    events = await collect(make(name, replay, max_retries=2), REQUEST)
    assert done(events).kind == "done" and len(replay.requests) == 3
    err, replay = await failure(name, [json_response(CASES[name]["body"]("busy"), 500, fast)] * 2, max_retries=1)
    assert err.code == "provider.server_error" and len(replay.requests) == 2


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_stream_that_stops_early(name):
    err, _ = await failure(name, [sse_response(CASES[name]["cut"]())])
    assert (err.code, err.retryable) == ("provider.stream_incomplete", True)
    assert "ended the response stream before it finished" in err.message


class Dropped(httpx2.AsyncByteStream):
    """Half a response, then the peer goes away."""

    def __init__(self, data: bytes):
        self.data = data

    async def __aiter__(self):
        yield self.data[: len(self.data) // 2]
        raise httpx2.RemoteProtocolError("peer closed connection without sending complete message body")

    async def aclose(self) -> None:
        pass


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_connection_dropped_mid_stream(name):
    dropped = httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=Dropped(CASES[name]["ok"]()))
    err, _ = await failure(name, [dropped])
    assert (err.code, err.retryable) == ("provider.connection", True)
    assert "peer closed connection" in err.message


@pytest.mark.parametrize("name", PROVIDERS)
async def test_malformed_stream_data(name):
    err, _ = await failure(name, [sse_response(CASES[name]["malformed"])])
    assert (err.code, err.retryable) == ("provider.stream_malformed", True)


@pytest.mark.parametrize("name", PROVIDERS)
async def test_an_error_event_inside_the_stream(name):
    body, code = CASES[name]["stream_error"]
    err, _ = await failure(name, [sse_response(body)])
    assert err.code == code and err.retryable


@pytest.mark.parametrize("name", PROVIDERS)
async def test_unreachable_and_slow_endpoints(name):
    def refuse(request):
        raise httpx2.ConnectError("connection refused")

    def stall(request):
        raise httpx2.ReadTimeout("timed out")

    err, _ = await failure(name, [refuse], base_url="http://127.0.0.1:9/v1")
    assert (err.code, err.retryable) == ("provider.connection", True) and "127.0.0.1:9" in err.message
    err, _ = await failure(name, [stall])
    assert (err.code, err.retryable) == ("provider.timeout", True)


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_missing_key_fails_before_any_request(name):
    replay = Replay([])
    with pytest.raises(ProviderError) as err:
        await collect(make(name, replay, api_key=None, env={}), REQUEST)
    assert err.value.code == "provider.auth_missing" and CASES[name]["env"] in err.value.message
    assert replay.requests == []


@pytest.mark.parametrize("name", PROVIDERS)
def test_the_key_never_shows_in_repr(name):
    p = make(name, Replay([]))
    assert KEY not in repr(p) and KEY not in str(vars(p).get("model"))
