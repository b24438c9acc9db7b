"""A hostile server costs what it sends, never more.

Real processes: a raw stdio script that writes what a broken or hostile server writes
(``tests/mcp_servers/hostile.py``: bytes that are not UTF-8, a schema nested a thousand levels,
a line longer than deferchat reads, a result nested deeper than it reads, a pattern that
backtracks), and servers built with the SDK. One bad tool costs that tool (skipped with its
reason), one bad line costs that line (dropped, noted in the server's log), nothing prints a
traceback, and no server's regular expression runs unbounded or on the event loop.
"""

from __future__ import annotations

import json
import logging
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.limits import MAX_JSON_DEPTH, MESSAGE_DEPTH, json_depth, loads_bounded, loads_capped
from core.mcp import wire
from core.mcp.client import McpManager
from core.mcp.config import config_from_dict
from core.mcp.stdio import LineSplitter
from core.pipeline import patterns
from core.pipeline.validation import check_arguments, schema_problem
from tests.helpers import LoopTicks
from tests.mcp.conftest import REPO, Events

BACKTRACKS = r"^(a|a)+$"  # Python's re (and the regex package) backtrack on it without end
VICTIM = "a" * 40 + "!"


def hostile(*faults: str, timeout: float = 15) -> dict:
    return {
        "command": sys.executable,
        "args": ["-m", "tests.mcp_servers.hostile", *faults],
        "cwd": str(REPO),
        "env": {"PYTHONPATH": str(REPO)},
        "timeout": timeout,
    }


async def started(tmp_path, **servers):
    config = config_from_dict({"mcpServers": servers}, source="hostile.json")
    events = Events()
    manager = McpManager(config, on_event=events, log_dir=tmp_path / "logs")
    await manager.start()
    return manager, {r.name: r for r in manager.servers()}


@pytest.mark.slow
async def test_a_schema_nested_a_thousand_levels_costs_that_tool_only(tmp_path, capfd):
    began = time.monotonic()
    manager, reports = await started(tmp_path, h=hostile("deep=1000"))
    try:
        report = reports["h"]
        assert report.status == "ready", report.message
        assert time.monotonic() - began < 10  # not the 30 s start timeout
        assert sorted(report.tool_names) == ["mcp.h.add", "mcp.h.echo"]
        [skipped] = report.skipped
        assert skipped.name == "mcp.h.deep" and f"deeper than {MAX_JSON_DEPTH} levels" in skipped.reason
        assert (await manager.call("mcp.h.echo", {"text": "hi"})).text() == 'echo {"text": "hi"}'
    finally:
        await manager.close()
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.slow
async def test_lines_that_are_not_utf8_or_too_long_cost_that_line_only(tmp_path, capfd, monkeypatch):
    monkeypatch.setattr(wire, "MAX_MESSAGE_BYTES", 4096)
    manager, reports = await started(tmp_path, h=hostile("garbage", "overlong=100000"))
    try:
        assert reports["h"].status == "ready", reports["h"].message
        assert len(reports["h"].tool_names) == 2
        for _ in range(3):  # every answer comes after a line of garbage
            assert (await manager.call("mcp.h.add", {"a": 1, "b": 2})).text() == 'add {"a": 1, "b": 2}'
        log = (tmp_path / "logs" / "h.stderr.log").read_text()
        assert "dropped a line that is not UTF-8" in log
        assert "dropped a line of 100000 bytes, over the 4096 deferchat reads" in log
    finally:
        await manager.close()
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.slow
async def test_an_answer_too_big_or_too_deep_fails_its_call_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(wire, "MAX_MESSAGE_BYTES", 30000)
    manager, _ = await started(tmp_path, h=hostile("answer_overlong=50000", "deep_result=2000"))
    try:
        began = time.monotonic()
        big = await manager.call("mcp.h.big", {})
        assert big.is_error and "over the 30000 deferchat reads" in big.text()
        deep = await manager.call("mcp.h.nest", {})
        assert deep.is_error and f"deeper than {MESSAGE_DEPTH} levels" in deep.text()
        assert time.monotonic() - began < 5  # neither waited out the call timeout
        assert not (await manager.call("mcp.h.echo", {"text": "still here"})).is_error
    finally:
        await manager.close()


@pytest.mark.slow
async def test_a_backtracking_pattern_never_freezes_the_loop(tmp_path, monkeypatch):
    """The server's pattern is in the tool's input schema (the pipeline checks it) and in its
    output schema (the SDK would check that one in the event loop): both run bounded, off the loop."""
    monkeypatch.setattr(patterns, "PATTERN_SECONDS", 0.3)
    manager, _ = await started(tmp_path, h=hostile(f"pattern={BACKTRACKS}"))
    try:
        spec = manager.tool("mcp.h.match")
        async with LoopTicks() as loop:
            problem = await check_arguments(spec, {"s": VICTIM})
            result = await manager.call(spec, {"s": VICTIM})  # the server answers; its output schema is checked
        assert problem is not None and "took longer than 0.3 s" in problem
        assert result.is_error and "output schema" in result.text() and "took longer than 0.3 s" in result.text()
        assert loop.elapsed < 3
        assert loop.kept_running, (loop.ticks, loop.elapsed)
        ok = await manager.call(spec, {"s": "aaa"})
        assert not ok.is_error and ok.structured == {"s": "aaa"}
    finally:
        await manager.close()


@pytest.mark.slow
async def test_a_real_sdk_server_with_a_backtracking_pattern(tmp_path, monkeypatch):
    """A server built with the SDK whose tool declares the pattern: refused in bounded time."""
    monkeypatch.setattr(patterns, "PATTERN_SECONDS", 0.3)
    entry = {
        "command": sys.executable,
        "args": ["-m", "tests.mcp_servers.patterned"],
        "cwd": str(REPO),
        "env": {"PYTHONPATH": str(REPO), "PATTERNED_REGEX": BACKTRACKS},
        "timeout": 20,
    }
    manager, reports = await started(tmp_path, p=entry)
    try:
        assert reports["p"].status == "ready", reports["p"].message
        spec = manager.tool("mcp.p.matches")
        began = time.monotonic()
        problem = await check_arguments(spec, {"s": VICTIM})
        assert problem is not None and "backtracks" in problem and time.monotonic() - began < 2
        assert await check_arguments(spec, {"s": "aa"}) is None
    finally:
        await manager.close()


@pytest.mark.slow
@pytest.mark.parametrize("inside", [1, 6, 17, 28, 33])
async def test_a_token_the_stderr_tail_cuts_is_not_shown_in_part(tmp_path, monkeypatch, inside):
    """The server prints its token (an expanded ${VAR}) and dies; the 600-character tail quoted
    in its failure starts ``inside`` characters into the token: none of it is shown or stored."""
    token = "tok_Q7x9Lm2PQ7x9Lm2PQ7x9Lm2PQ7x9Lm"  # 34 characters
    monkeypatch.setenv("PLANTED_TOKEN", token)
    after = 600 - (len(token) - inside)  # characters after the token, so the cut falls ``inside`` it
    script = f"import sys; sys.stderr.write('x ' * 500 + 'using ' + sys.argv[1] + ' ' + 'y' * {after - 1}); sys.exit(3)"
    entry = {"command": sys.executable, "args": ["-c", script, "${PLANTED_TOKEN}"], "timeout": 10}
    manager, reports = await started(tmp_path, noisy=entry)
    try:
        message = reports["noisy"].message
        assert reports["noisy"].status == "failed" and "its stderr ends: ..." in message
        for i in range(len(token) - 3):
            assert token[i : i + 4] not in message, (token[i : i + 4], message[:120])
    finally:
        await manager.close()


# --- properties ---------------------------------------------------------------------------------


def _deep_text(depth: int, kind: str) -> str:
    return ('{"a":' * depth + "1" + "}" * depth) if kind == "object" else ("[" * depth + "1" + "]" * depth)


@settings(max_examples=40, deadline=None)
@given(depth=st.integers(min_value=1, max_value=5000), kind=st.sampled_from(["object", "array"]))
def test_json_of_any_depth_is_read_without_recursion(depth, kind):
    value = loads_bounded(_deep_text(depth, kind), MESSAGE_DEPTH)
    assert json_depth(value) == min(depth, MESSAGE_DEPTH + 1)
    if depth <= MESSAGE_DEPTH:
        assert value == json.loads(_deep_text(depth, kind))


@settings(max_examples=60, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=20,
    )
)
def test_the_iterative_reader_reads_what_json_reads(value):
    text = json.dumps(value)
    assert loads_capped(text, 1000) == json.loads(text)


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(min_value=MAX_JSON_DEPTH - 3, max_value=1500), good=st.integers(min_value=0, max_value=4))
def test_a_listing_loses_only_its_deep_tools(depth, good):
    """Any depth, any number of good neighbours: exactly the deep tool is skipped."""
    from core.mcp.sieve import ListingSieve

    tools = [json.dumps({"name": f"ok{i}", "inputSchema": {"type": "object"}}) for i in range(good)]
    deep = '{"type":"object","properties":{"a":' * depth + '{"type":"string"}' + "}}" * depth
    tools.insert(good // 2, '{"name":"deep","inputSchema":' + deep + "}")
    line = '{"jsonrpc":"2.0","id":7,"result":{"tools":[' + ",".join(tools) + "]}}"
    item = wire.parse(line.encode())
    assert not isinstance(item, wire.Dropped)
    sieve = ListingSieve()
    sieve._pending[7] = None
    out = sieve.received(item)
    kept = [t["name"] for t in out.message.result["tools"]]
    page = sieve.take(None)
    problems = {t["name"]: p for t, p in page.entries}
    assert kept == [f"ok{i}" for i in range(good)] + (["deep"] if 2 * depth + 2 <= MAX_JSON_DEPTH else [])
    assert (problems["deep"] is None) == (2 * depth + 2 <= MAX_JSON_DEPTH)


@settings(max_examples=30, deadline=None)
@given(
    chunks=st.lists(st.binary(max_size=300), max_size=12),
    limit=st.integers(min_value=16, max_value=200),
)
def test_lines_are_split_whole_and_bounded(chunks, limit):
    data = b"".join(chunks)
    splitter = LineSplitter(limit)
    out = [x for c in chunks for x in splitter.feed(c)]
    expected = data.split(b"\n")[:-1]
    assert len(out) == len(expected)
    for got, want in zip(out, expected, strict=True):
        if len(want) > limit:
            assert isinstance(got, wire.Dropped) and f"a line of {len(want)} bytes" in got.reason
        else:
            assert got == want.rstrip(b"\r")


@settings(max_examples=40, deadline=None)
@given(garbage=st.binary(min_size=1, max_size=64))
def test_any_bytes_on_stdout_are_a_message_or_a_reason(garbage):
    item = wire.parse(garbage)
    assert isinstance(item, wire.Dropped) or item.message is not None
    if isinstance(item, wire.Dropped):
        assert item.reason


KEYWORDS = {
    "pattern": lambda p, v: ({"type": "object", "properties": {"s": {"type": "string", "pattern": p}}}, {"s": v}),
    "patternProperties": lambda p, v: ({"type": "object", "patternProperties": {p: {"type": "string"}}}, {v: 1}),
    "propertyNames": lambda p, v: ({"type": "object", "propertyNames": {"pattern": p}}, {v: 1}),
    "additionalProperties": lambda p, v: (
        {"type": "object", "patternProperties": {p: {}}, "additionalProperties": False},
        {v: 1},
    ),
    "unevaluatedProperties": lambda p, v: (
        {"type": "object", "patternProperties": {p: {}}, "unevaluatedProperties": False},
        {v: 1},
    ),
}


@settings(max_examples=25, deadline=None)
@given(
    atom=st.sampled_from(["a", "b", "x", "0", "ab"]),
    shape=st.sampled_from(["^({a}|{a})+$", "^({a}|{a}{a})+$", "^(?:{a}|{a})*$", "({a}|{a})+!?$"]),
    n=st.integers(min_value=36, max_value=60),
    where=st.sampled_from(sorted(KEYWORDS)),
)
def test_every_keyword_that_runs_a_pattern_is_bounded(atom, shape, n, where):
    """Patterns that backtrack exponentially, in every keyword that runs one: the check ends within
    its bound (Python's re would take minutes to years) and says why the call was refused."""
    pattern = shape.format(a=atom)
    victim = atom * n + "#"
    schema, value = KEYWORDS[where](pattern, victim)
    before = patterns.PATTERN_SECONDS
    patterns.PATTERN_SECONDS = 0.1
    try:
        began = time.monotonic()
        problem = schema_problem(schema, value)
        elapsed = time.monotonic() - began
    finally:
        patterns.PATTERN_SECONDS = before
    assert elapsed < 1.0
    assert problem is not None and "took longer than 0.1 s" in problem and "backtracks" in problem


@settings(max_examples=40, deadline=None)
@given(
    text=st.text(alphabet="ab:09\n\r\u2028", max_size=12),
    pattern=st.sampled_from([r"^[a-b]+$", r"^\d\d:\d\d$", r"^a*$", r"^(ab)+$", r"[$]"]),
)
def test_patterns_read_dollar_as_json_schema_does(text, pattern):
    """ECMA-262's $ is the end of the text: a final newline never slips past it."""
    import re

    problem = schema_problem({"type": "string", "pattern": pattern}, text)
    expected = re.search(patterns.ecma(pattern), text) is not None
    assert (problem is None) == expected
    if pattern.endswith("$") and text.endswith("\n"):
        assert problem is not None


def test_no_traceback_reaches_the_terminal_from_the_sdk_loggers(capfd):
    from core.mcp.logs import guard_loggers

    guard_loggers()
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("mcp.client.stdio").exception("Failed to parse JSONRPC message from server")
    assert "Traceback" not in capfd.readouterr().err
