"""What the bounds on hostile input cost, and what they hold. Prints JSON figures.

    python tests/bench/bench_bounds.py [--rounds N]

* ``bomb``: a gibibyte of zeros gzipped twice (``Content-Encoding: gzip, gzip``) read through
  ``core.net.bounded.read_body`` with ``fetch_max_bytes`` 2 MB: bytes kept, peak Python memory
  (tracemalloc), seconds. Before the bound the same read held 2.2 GB.
* ``page``: an ordinary 500 KB gzipped page read the same way, against httpx decoding it whole.
* ``validation``: arguments of a schema with two patterns checked in the pipeline's way (a worker
  thread, bounded patterns) against jsonschema inline with ``re``: milliseconds per check.
* ``stdio``: MCP messages of 2 KB read from bytes (``LineSplitter`` and ``wire.parse``) against
  the SDK's own line parser: messages per second.
* ``redaction``: ``redact`` and ``clip`` of a 600-character stderr tail with three known secrets.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import statistics
import sys
import time
import tracemalloc
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import httpx

from core.net.bounded import read_body


def zeros_gzip(size: int) -> bytes:
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    return b"".join(comp.compress(block) for _ in range(size >> 20)) + comp.flush()


def streamed(data: bytes, encoding: str, chunk: int = 16384) -> httpx.Response:
    class Body(httpx.AsyncByteStream):
        async def __aiter__(self):
            for i in range(0, len(data), chunk):
                yield data[i : i + chunk]

    return httpx.Response(200, headers={"content-encoding": encoding}, stream=Body())


def bomb() -> dict:
    data = gzip.compress(zeros_gzip(1 << 30))
    tracemalloc.start()
    began = time.perf_counter()
    body = asyncio.run(read_body(streamed(data, "gzip, gzip"), 2_000_000))
    seconds = time.perf_counter() - began
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {
        "wire_bytes": len(data),
        "decoded_would_be": 1 << 30,
        "kept_bytes": len(body.data),
        "cut": body.cut,
        "peak_mb": round(peak / 1e6, 1),
        "seconds": round(seconds, 3),
    }


def page(rounds: int) -> dict:
    text = b"".join(b"<p>line %d of an ordinary page, with words in it</p>\n" % i for i in range(10000))[:500_000]
    data = gzip.compress(text)

    async def ours() -> float:
        began = time.perf_counter()
        body = await read_body(streamed(data, "gzip"), 2_000_000)
        assert body.data == text
        return time.perf_counter() - began

    async def httpx_whole() -> float:
        began = time.perf_counter()
        response = streamed(data, "gzip")
        got = b"".join([piece async for piece in response.aiter_bytes()])
        assert got == text
        return time.perf_counter() - began

    mine = [asyncio.run(ours()) for _ in range(rounds)]
    theirs = [asyncio.run(httpx_whole()) for _ in range(rounds)]
    return {
        "page_bytes": len(text),
        "wire_bytes": len(data),
        "bounded_ms_median": round(statistics.median(mine) * 1000, 2),
        "httpx_ms_median": round(statistics.median(theirs) * 1000, 2),
    }


def validation(rounds: int) -> dict:
    import jsonschema

    from core.pipeline.validation import _validator, check_arguments
    from core.tools import Origin, SideEffect, ToolSpec

    schema = {
        "type": "object",
        "properties": {
            "to": {"type": "string", "pattern": r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$"},
            "when": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
            "body": {"type": "string", "maxLength": 5000},
        },
        "required": ["to", "body"],
    }
    args = {"to": "ann@example.com", "when": "2026-03-14", "body": "hello " * 100}
    spec = ToolSpec(
        name="mcp.m.send",
        description="d",
        input_schema=schema,
        side_effect=SideEffect.NETWORK_WRITE,
        origin=Origin.DISCOVERED,
        server="m",
    )
    _validator.cache_clear()

    async def ours() -> list[float]:
        await check_arguments(spec, args)  # warm: the validator is built once per schema
        out = []
        for _ in range(rounds * 50):
            began = time.perf_counter()
            assert await check_arguments(spec, args) is None
            out.append(time.perf_counter() - began)
        return out

    plain = jsonschema.Draft202012Validator(schema)
    inline = []
    for _ in range(rounds * 50):
        began = time.perf_counter()
        assert plain.is_valid(args)
        inline.append(time.perf_counter() - began)
    mine = asyncio.run(ours())
    return {
        "bounded_in_a_thread_ms_median": round(statistics.median(mine) * 1000, 3),
        "jsonschema_inline_re_ms_median": round(statistics.median(inline) * 1000, 3),
    }


def stdio(rounds: int) -> dict:
    from mcp.client import stdio as sdk

    from core.mcp import wire
    from core.mcp.stdio import LineSplitter

    message = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "x" * 2000}]}}
    line = json.dumps(message).encode() + b"\n"
    data = line * 2000
    mine, theirs = [], []
    for _ in range(rounds):
        began = time.perf_counter()
        splitter = LineSplitter()
        items = [
            wire.parse(x)
            for chunk in (data[i : i + 65536] for i in range(0, len(data), 65536))
            for x in splitter.feed(chunk)
        ]
        mine.append(len(items) / (time.perf_counter() - began))
        began = time.perf_counter()
        got = [sdk._parse_line(x) for x in data.decode().split("\n")[:-1]]
        theirs.append(len(got) / (time.perf_counter() - began))
    return {
        "message_bytes": len(line),
        "bounded_messages_per_s": int(statistics.median(mine)),
        "sdk_messages_per_s": int(statistics.median(theirs)),
    }


def redaction(rounds: int) -> dict:
    from core.redaction import clip, redact

    secrets = [("planted-s3cr3t-9f2c71", "${A}"), ("sk-ant-planted-key-0123456789", "${B}"), ("hunter2hunter2", "${C}")]
    text = ("the server said: failed to authenticate with token planted-s3cr3t-9f2c71 at https://h/x?key=abc " * 8)[
        :600
    ]
    times_redact, times_clip = [], []
    for _ in range(rounds * 200):
        began = time.perf_counter()
        redact(text, secrets)
        times_redact.append(time.perf_counter() - began)
        began = time.perf_counter()
        clip(text * 4, 600, secrets, keep="tail", cut_start=True)
        times_clip.append(time.perf_counter() - began)
    return {
        "redact_600_chars_us_median": round(statistics.median(times_redact) * 1e6, 1),
        "clip_2400_to_600_chars_us_median": round(statistics.median(times_clip) * 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    print(
        json.dumps(
            {
                "bomb": bomb(),
                "page": page(rounds),
                "validation": validation(rounds),
                "stdio": stdio(rounds),
                "redaction": redaction(rounds),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
