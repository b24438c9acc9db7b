"""workspace.search runs the model's pattern (which a page the model read may have chosen) with a
time bound and off the GIL: a pattern that backtracks ends the search with what it found, and the
event loop runs on meanwhile."""

from __future__ import annotations

import asyncio
import json

import sqlite_utils
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.builtins import ToolContext, get_builtin, workspace
from tests.helpers import LoopTicks


def _ctx(root) -> ToolContext:
    return ToolContext(db=sqlite_utils.Database(memory=True), chat_id="c", call_id="k", workspace=root)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    atom=st.sampled_from(["a", "x", "ab"]),
    shape=st.sampled_from(["^({a}|{a})+$", "^(?:{a}|{a}{a})+$", "^({a}|{a})*$"]),
)
def test_a_backtracking_search_pattern_is_bounded(tmp_path, monkeypatch, atom, shape):
    monkeypatch.setattr(workspace, "SEARCH_PATTERN_SECONDS", 0.3)
    (tmp_path / "notes.txt").write_text((atom * 40 + "#\n") * 3 + "plain line\n")
    (tmp_path / "other.txt").write_text("nothing here\n")
    search = get_builtin("workspace.search")
    assert search is not None

    async def go():
        async with LoopTicks() as loop:
            result = await search({"pattern": shape.format(a=atom)}, _ctx(tmp_path))
        return result, loop

    result, loop = asyncio.run(go())
    assert not result.is_error
    found = json.loads(result.text())
    assert loop.elapsed < 2.0
    assert found["truncated"] and "took longer than 0.3 s" in found["stopped"]
    assert loop.kept_running, (loop.ticks, loop.elapsed)


def test_an_ordinary_search_still_finds_its_lines(tmp_path):
    (tmp_path / "a.txt").write_text("ferry at 06:10\nbus at 07:00\n")
    search = get_builtin("workspace.search")
    assert search is not None
    result = asyncio.run(search({"pattern": r"\d\d:\d\d"}, _ctx(tmp_path)))
    found = json.loads(result.text())
    assert [m["line"] for m in found["matches"][0]["lines"]] == [1, 2] and "stopped" not in found
