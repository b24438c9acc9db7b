"""Every wait on a provider is bounded (issue 11, item 1): the connection, the first byte of the
answer (in all: a trickle cannot stretch it), the silence inside it (counted on the bytes, so
keep-alive pings and SSE comments are life); a stall is ``provider.timeout`` naming the wait and
its length. The bounds come from the profile, ``[timeouts]`` in config.toml, and the flags of
``deferchat ask``, which runs here as a real process against a loopback server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from core.config import Settings
from core.errors import UsageError, parse_toml_model
from core.events import ProviderRetrying, parse_event
from core.providers import make_provider
from core.providers.base import ModelRequest, ProviderError, ResponseDone, Retrying, TextDelta
from core.providers.factory import default_provider_factory
from core.providers.profiles import ANTHROPIC, DEFAULT_WAITS, OPENAI, OPENAI_CHAT, Waits
from tests.helpers import ROOT, subprocess_env
from tests.provider_replay import Replay, collect, sse_response
from tests.streaming_server import WIRES, serve

SENTENCE = "The quick brown fox jumps over the lazy dog and keeps on running past the old red barn"
BOUND = 1.0
LATE = 1.5  # how far past a bound a loaded 2-core machine may notice it ran out


def request(text: str = "hello") -> ModelRequest:
    return ModelRequest(model="test-model", system="", messages=[{"role": "user", "content": text}])


_clients: list[httpx2.AsyncClient] = []


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    while _clients:
        await _clients.pop().aclose()


def provider(wire: str, base_url: str, **options: Any) -> Any:
    options.setdefault("max_retries", 0)
    _clients.append(client := httpx2.AsyncClient())
    return make_provider(wire, "test-model", base_url=base_url, env={}, http_client=client, **options)


async def failure(p: Any, req: ModelRequest | None = None) -> tuple[ProviderError, list[Any], float]:
    """The ProviderError that ends the stream, the events before it, and when it came (time.time())."""
    events: list[Any] = []
    with pytest.raises(ProviderError) as caught:
        async for event in p.stream(req or request()):
            events.append(event)
    return caught.value, events, time.time()


# --- the waits themselves ---------------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
async def test_a_stall_before_the_headers_fails_when_the_first_byte_is_due(wire: str) -> None:
    with serve([{"parts": ["never"], "first_byte_delay": "forever"}]) as server:
        p = provider(wire, server.url_for(wire), waits=Waits(first_byte=BOUND))
        started = time.time()
        error, events, at = await failure(p)
        [record] = server.wait_for(1, outcome=True, timeout=5)
    assert (error.code, error.retryable, events) == ("provider.timeout", True, [])
    assert "sent nothing within 1 s of the request (first-byte timeout" in error.message, error.message
    assert "--first-byte-timeout" in error.message and "[timeouts]" in error.message
    assert at - started >= BOUND  # the deadline starts before the request goes out
    assert BOUND - 0.5 <= at - record["received"] < BOUND + LATE
    assert record["outcome"] == "client_closed" and "first_byte" not in record  # we hung up, it never answered


@pytest.mark.parametrize("wire", WIRES)
async def test_a_stall_in_the_middle_fails_after_the_idle_bound(wire: str) -> None:
    with serve([{"parts": [SENTENCE], "stall_after_chunks": 3, "stall_seconds": "forever"}]) as server:
        p = provider(wire, server.url_for(wire), waits=Waits(idle=BOUND))
        error, events, at = await failure(p)
        [record] = server.wait_for(1, outcome=True, timeout=5)
    assert (error.code, error.retryable) == ("provider.timeout", True)
    assert "went silent for 1 s in the middle of its answer (idle timeout" in error.message, error.message
    assert "--idle-timeout" in error.message
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "The quick brown"
    assert BOUND - 0.05 <= at - record["stalled"] < BOUND + LATE
    assert record["outcome"] == "client_closed" and record["chunks"] == 3


async def test_a_slow_stream_that_never_goes_quiet_for_long_is_no_stall() -> None:
    """The idle bound is per gap: 18 pieces 0.15 s apart take longer than the bound, and pass."""
    with serve([{"parts": [SENTENCE], "chunk_delay": 0.15, "first_byte_delay": 0.4}]) as server:
        p = provider("openai-chat", server.url_for("openai-chat"), waits=Waits(first_byte=BOUND, idle=0.6))
        events = await collect(p, request())
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == SENTENCE
    assert server.requests[0]["last_chunk"] - server.requests[0]["first_chunk"] > BOUND


async def test_a_slow_reader_is_not_a_silent_server() -> None:
    """The idle wait starts when the reader asks for more: its own pauses are not the server's."""
    with serve([{"parts": ["one two three four five six"], "chunk_tokens": 1}]) as server:
        p = provider("anthropic", server.url_for("anthropic"), waits=Waits(idle=0.3))
        texts = []
        async for event in p.stream(request()):
            if isinstance(event, TextDelta):
                texts.append(event.text)
                await asyncio.sleep(0.4)  # longer than the idle bound, between every piece
    assert "".join(texts) == "one two three four five six"


@pytest.mark.parametrize("wire", WIRES)
async def test_closing_the_stream_hangs_up_at_once(wire: str) -> None:
    """What stopping a turn relies on: closing the provider's stream closes its connection."""
    with serve([{"parts": [SENTENCE], "chunk_delay": 0.05}]) as server:
        p = provider(wire, server.url_for(wire))
        stream = p.stream(request())
        async for event in stream:
            if isinstance(event, TextDelta):
                break
        await stream.aclose()  # type: ignore[attr-defined]
        closed = time.time()
        [record] = server.wait_for(1, outcome=True, timeout=5)
    assert record["outcome"] == "client_closed" and record["chunks"] < 18
    assert record["finished"] - closed < 1.0


async def test_a_non_streamed_answer_is_due_within_the_first_byte_bound() -> None:
    with serve([{"parts": [SENTENCE], "stall_after_chunks": 0}]) as server:  # headers, then nothing
        p = provider("anthropic", server.url_for("anthropic"), streaming=False, waits=Waits(first_byte=BOUND))
        error, _, at = await failure(p)
        [record] = server.wait_for(1, outcome=True, timeout=5)
    assert error.code == "provider.timeout" and "first-byte timeout" in error.message
    assert BOUND - 0.5 <= at - record["received"] < BOUND + LATE


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a full accept queue drops SYNs on Linux")
async def test_a_connection_that_is_never_accepted_fails_after_the_connect_bound() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)):  # fills the queue: the next SYN is dropped
            p = provider(
                "openai-chat", f"http://127.0.0.1:{port}/v1", max_retries=2, waits=Waits(connect=0.5, first_byte=30)
            )
            started = time.time()
            error, events, at = await failure(p)
    assert (error.code, error.retryable) == ("provider.timeout", True)
    assert error.message.startswith("Could not connect to ") and "within 0.5 s (connect timeout)" in error.message
    assert not any(isinstance(e, Retrying) for e in events)  # a bound is not retried: it would wait as long again
    assert 0.45 <= at - started < 0.5 + LATE


# --- the first byte is a total, the idle gap counts any byte ----------------------------------------------


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def raw_server(handler: Handler) -> AsyncIterator[str]:
    """A loopback HTTP server that writes what ``handler`` writes, byte by byte if it likes."""

    async def serve_one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            await reader.readexactly(length)
            await handler(reader, writer)
        writer.close()

    server = await asyncio.start_server(serve_one, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


async def test_headers_that_trickle_in_cannot_stretch_the_first_byte() -> None:
    """A byte every 0.2 s satisfies any read timeout; the first byte is due in all."""

    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\n")
        for _ in range(100):
            writer.write(b"x")
            await writer.drain()
            await asyncio.sleep(0.2)

    async with raw_server(trickle) as url:
        p = provider("openai-chat", f"{url}/v1", waits=Waits(first_byte=BOUND, idle=BOUND))
        started = time.time()
        error, _, at = await failure(p)
    assert error.code == "provider.timeout" and "first-byte timeout" in error.message, error.message
    assert BOUND <= at - started < BOUND + LATE


def _chat_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


_ANTHROPIC_TAIL = [
    {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 1},
        },
    },
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "awake"}},
    {"type": "content_block_stop", "index": 0},
    {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 2},
    },
    {"type": "message_stop"},
]


@pytest.mark.parametrize(
    "wire, alive",
    [
        ("openai-chat", b": keep-alive\n\n"),  # an SSE comment: the SDK's parser drops it
        ("anthropic", b'event: ping\ndata: {"type": "ping"}\n\n'),  # the SDK drops pings too
    ],
)
async def test_keep_alives_are_life_though_the_sdk_never_shows_them(wire: str, alive: bytes) -> None:
    """1.5 s of nothing but keep-alives, with a 0.6 s idle bound: the provider is thinking, not stalled."""

    def events(*items: dict[str, Any]) -> bytes:
        return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in items)

    async def thinking(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
        if wire == "anthropic":
            writer.write(events(*_ANTHROPIC_TAIL[:2]))
        for _ in range(6):
            writer.write(alive)
            await writer.drain()
            await asyncio.sleep(0.25)
        if wire == "anthropic":
            writer.write(events(*_ANTHROPIC_TAIL[2:]))
        else:
            writer.write(
                _chat_chunk({"role": "assistant", "content": "awake"}) + _chat_chunk({}, "stop") + b"data: [DONE]\n\n"
            )
        await writer.drain()

    async with raw_server(thinking) as url:
        p = provider(wire, url if wire == "anthropic" else f"{url}/v1", waits=Waits(first_byte=BOUND, idle=0.6))
        events = await collect(p, request())
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "awake"
    assert isinstance(events[-1], ResponseDone) and events[-1].stop_reason == "end_turn"


# --- the SDK is configured, and retries are ours ------------------------------------------------------


@pytest.mark.parametrize("wire", WIRES)
async def test_the_sdk_gets_the_bounds_and_no_retries_of_its_own(wire: str) -> None:
    replay = Replay([sse_response(b"")])  # an empty stream: what it was sent with is what counts
    p = make_provider(
        wire,
        "m",
        base_url="http://127.0.0.1:9/v1",
        api_key="k",
        http_client=replay.client(),
        max_retries=4,
        waits=Waits(connect=3, first_byte=40, idle=20),
    )
    with contextlib.suppress(ProviderError):
        await collect(p, request())
    timeout = replay.requests[0].extensions["timeout"]
    assert timeout["connect"] == 3 and timeout["pool"] == 3
    assert timeout["read"] > 40  # only a backstop behind the byte-level bounds
    assert p._sdk().max_retries == 0 and p.max_retries == 4


def test_each_provider_has_waits_and_the_defaults_are_sane() -> None:
    assert Waits(connect=10, first_byte=60, idle=60, max_retry_after=60) == DEFAULT_WAITS
    assert ANTHROPIC.waits == OPENAI.waits == DEFAULT_WAITS
    assert OPENAI_CHAT.waits.first_byte == 300  # silent reasoning, local servers loading a model
    with pytest.raises(ValueError, match="idle"):
        Waits(idle=0)


# --- [timeouts] in config.toml, and the factory -----------------------------------------------------


def test_timeouts_in_the_config_file_layer_over_the_profiles() -> None:
    settings = parse_toml_model(
        "[timeouts]\nidle = 30\nmax_retry_after = 5\n[timeouts.openai-chat]\nfirst_byte = 900\nidle = 90\n",
        Settings,
        "config.toml",
    )
    t = settings.timeouts
    assert t.waits_for("anthropic") == Waits(connect=10, first_byte=60, idle=30, max_retry_after=5)
    assert t.waits_for("openai-chat") == Waits(connect=10, first_byte=900, idle=90, max_retry_after=5)
    flags = t.overridden(first_byte=2.0, idle=None, connect=None)  # what `ask --first-byte-timeout 2` does
    assert flags.waits_for("openai-chat") == Waits(connect=10, first_byte=2, idle=90, max_retry_after=5)
    assert flags.waits_for("anthropic").first_byte == 2
    assert Settings().timeouts.waits_for("openai-chat") == OPENAI_CHAT.waits


@pytest.mark.parametrize(
    "text, where",
    [
        ("[timeouts]\nidle = 0\n", "timeouts.idle"),
        ("[timeouts]\nidel = 3\n", "timeouts.idel"),
        ("[timeouts.nobody]\nidle = 3\n", "timeouts.nobody"),
        ("[timeouts.anthropic]\nconnect = -1\n", "anthropic.connect"),
        ('[timeouts]\nfirst_byte = "soon"\n', "timeouts.first_byte"),
    ],
)
def test_a_bad_timeout_is_a_usage_error_naming_it(text: str, where: str) -> None:
    with pytest.raises(UsageError, match=where.replace(".", r"\.")):
        parse_toml_model(text, Settings, "config.toml")


def test_the_factory_builds_each_adapter_with_its_waits() -> None:
    settings = parse_toml_model("[timeouts]\nconnect = 4\n[timeouts.anthropic]\nidle = 7\n", Settings, "config.toml")
    make = default_provider_factory(settings)
    anthropic = make("anthropic", "m", "http://127.0.0.1:9", {})
    chat = make("openai-chat", "m", "http://127.0.0.1:9/v1", {})
    assert anthropic.waits == Waits(connect=4, first_byte=60, idle=7)  # type: ignore[attr-defined]
    assert chat.waits == Waits(connect=4, first_byte=300, idle=60)  # type: ignore[attr-defined]


def test_provider_retrying_is_an_engine_event() -> None:
    event = parse_event(
        {"type": "provider.retrying", "seconds": 1.5, "attempt": 1, "reason": "rate limited (HTTP 429)"}
    )
    assert isinstance(event, ProviderRetrying) and event.seconds == 1.5
    from core.cli.printer import transcript_line

    assert transcript_line(event) == "[retrying in 1.5 s: rate limited (HTTP 429)]"


# --- deferchat ask, a real process ----------------------------------------------------------------------


def ask(home: Path, base_url: str, *flags: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    roster = home / "roster.json"
    roster.write_text(json.dumps({"agent": {"name": "t", "version": "1"}}))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "core.cli",
            "ask",
            "What is the weather in Oslo?",
            "--roster",
            str(roster),
            "--provider",
            "openai-chat",
            "--model",
            "test-model",
            "--base-url",
            base_url,
            "--json",
            *flags,
        ],
        capture_output=True,
        text=True,
        env=subprocess_env(home),
        cwd=ROOT,
        timeout=timeout,
    )


def stored(home: Path) -> tuple[list[tuple[str, str | None]], list[tuple[str, str]], list[str]]:
    """(turns: status and error, messages: role and content, chats' status), from the database."""
    with contextlib.closing(sqlite3.connect(home / "deferchat.db")) as db:
        turns = db.execute("select status, error from turns").fetchall()
        messages = db.execute("select role, content from messages order by rowid").fetchall()
        chats = [row[0] for row in db.execute("select status from chats")]
    return turns, messages, chats


@pytest.mark.slow
def test_ask_against_a_stalling_server_fails_within_the_bound_and_keeps_the_message(home: Path) -> None:
    with serve([{"parts": [SENTENCE], "stall_after_chunks": 2, "stall_seconds": "forever"}]) as server:
        done = ask(home, server.url_for("openai-chat"), "--idle-timeout", "1", "--first-byte-timeout", "5")
        finished = time.time()
        [record] = server.wait_for(1, outcome=True, timeout=5)
    assert done.returncode == 1, done.stderr
    assert 1.0 - 0.05 <= finished - record["stalled"] < 1.0 + 3.0  # the process also has to exit
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [error] = [e for e in events if e["type"] == "error"]
    assert error["code"] == "provider.timeout" and "idle timeout" in error["message"] and "1 s" in error["message"]
    assert events[-1]["type"] == "turn.completed" and events[-1]["status"] == "failed"
    assert "Traceback" not in done.stderr
    turns, messages, chats = stored(home)
    assert [status for status, _ in turns] == ["failed"] and "idle timeout" in (turns[0][1] or "")
    assert "running" not in chats
    assert messages[0][0] == "user" and "What is the weather in Oslo?" in messages[0][1]


@pytest.mark.slow
def test_ask_against_a_server_that_never_answers_fails_at_its_first_byte(home: Path) -> None:
    with serve([{"parts": ["never"], "first_byte_delay": "forever"}]) as server:
        started = time.time()
        done = ask(home, server.url_for("openai-chat"), "--first-byte-timeout", "1.5")
        finished = time.time()
        [record] = server.wait_for(1, outcome=True, timeout=5)
    assert done.returncode == 1, done.stderr
    assert 1.0 <= finished - record["received"] < 1.5 + 3.0 and finished - started < 30
    assert any(json.loads(line).get("code") == "provider.timeout" for line in done.stdout.splitlines())
    turns, messages, _ = stored(home)
    assert [status for status, _ in turns] == ["failed"] and messages[0][0] == "user"


@pytest.mark.slow
def test_ask_waits_out_a_short_retry_after_and_says_so(home: Path) -> None:
    with serve([{"status": 429, "retry_after": 1}, {"parts": ["Sunny."]}]) as server:
        done = ask(home, server.url_for("openai-chat"))
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [retrying] = [e for e in events if e["type"] == "provider.retrying"]
    assert (retrying["seconds"], retrying["attempt"], retrying["reason"]) == (1.0, 1, "rate limited (HTTP 429)")
    assert [e["type"] for e in events].index("provider.retrying") < [e["type"] for e in events].index("model.text")
    first, second = server.requests
    assert second["received"] - first["received"] >= 0.95


@pytest.mark.slow
def test_ask_fails_at_once_on_a_retry_after_past_the_cap(home: Path) -> None:
    with serve([{"status": 429, "retry_after": 3600}] * 3) as server:
        started = time.time()
        done = ask(home, server.url_for("openai-chat"))
        elapsed = time.time() - started
    assert done.returncode == 1 and elapsed < 20
    [error] = [e for e in map(json.loads, done.stdout.splitlines()) if e["type"] == "error"]
    assert error["code"] == "provider.rate_limited" and "rate limited until" in error["message"]
    assert "(retry-after 3600 s)" in error["message"] and len(server.requests) == 1


@pytest.mark.parametrize("flag", ["--connect-timeout", "--first-byte-timeout", "--idle-timeout"])
@pytest.mark.parametrize("value", ["0", "-1", "soon", "inf", "nan"])
def test_a_timeout_flag_must_be_seconds(flag: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    from core.cli.parser import build_parser

    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["ask", "hi", f"{flag}={value}"])
    assert exited.value.code == 2 and "expected seconds > 0" in capsys.readouterr().err
    args = build_parser().parse_args(["ask", "hi", f"{flag}=2.5"])
    assert vars(args)[flag[2:].replace("-", "_")] == 2.5
