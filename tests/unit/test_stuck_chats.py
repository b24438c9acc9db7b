"""No chat is ever stuck (issue 11, item 5).

A tool whose input schema cannot be used for validation (an unresolvable or remote ``$ref``,
invalid keywords, a reference cycle) validates leniently: the turn goes on, and no exception of
jsonschema's reaches the chat. No stored state makes reopening or resuming a chat crash: random
chats with broken tools, results and interruptions are reopened through the real engine, and
each still answers a new message (or, when its plan is gone, says so in one clear error).
"""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from core.engine import ChatOptions, Engine
from core.errors import UsageError, UserFacingError
from core.pipeline.approvals import Decision, FixedApprover
from core.pipeline.pipeline import validation_error
from core.providers.base import ModelRequest, ProviderError
from core.providers.script import ScriptProvider
from core.store import Store
from core.tools import Origin, SideEffect, ToolSpec

BROKEN_SCHEMAS: list[Any] = [
    {"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}},
    {"type": "object", "properties": {"x": {"$ref": "other.json#/x"}}},
    {"$ref": "https://schemas.example.invalid/remote.json"},
    {"type": "object", "properties": {"x": {"$ref": "http://127.0.0.1:9/remote.json#/x"}}},
    {"type": "object", "properties": {"x": {"$ref": "urn:nothing:here"}}},
    {"$ref": "#"},
    {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    {"type": "object", "properties": {"x": {"$ref": "#/properties/x"}}},
    {"type": "nonsense"},
    {"type": "object", "properties": {"x": {"type": "string", "pattern": "("}}},
    {"type": "object", "minProperties": "many", "required": "x"},
    {"type": "object", "properties": "not an object"},
    {
        "$schema": "http://example.invalid/unknown-dialect#",
        "type": "object",
        "properties": {"x": {"$ref": "#/nowhere"}},
    },
    {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "id": "::not a uri::",
        "properties": {"x": {"$ref": "#/definitions/missing"}},
    },
    {"type": "object", "$id": "relative/base", "properties": {"x": {"$ref": "#anchor-nowhere"}}},
    {"type": "object", "$dynamicRef": "#meta", "properties": {"x": {"$dynamicRef": "#missing"}}},
    {"type": "string"},
]


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A remote ``$ref`` is never fetched: every attempt to reach out is recorded and fails."""
    attempts: list[str] = []

    def refuse(what: str):
        def fail(*args: Any, **kwargs: Any) -> Any:
            attempts.append(f"{what}{args[:1]!r}")
            raise OSError(f"the test forbids {what}")

        return fail

    monkeypatch.setattr(urllib.request, "urlopen", refuse("urlopen"))
    monkeypatch.setattr(socket, "create_connection", refuse("connect"))
    monkeypatch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    yield attempts
    assert attempts == [], f"validation reached for the network: {attempts}"


def spec_with(schema: Any) -> ToolSpec:
    return ToolSpec(
        name="broken.tool",
        description="A tool with a broken schema.",
        origin=Origin.CONFIGURED,
        side_effect=SideEffect.NONE,
        input_schema=schema,
    )


@pytest.mark.parametrize("schema", BROKEN_SCHEMAS, ids=range(len(BROKEN_SCHEMAS)))
@pytest.mark.parametrize("arguments", [{}, {"x": 1}, {"x": "abc", "y": [1, {"z": None}]}])
def test_a_schema_that_cannot_validate_never_raises(schema: Any, arguments: dict[str, Any]) -> None:
    problem = validation_error(spec_with(schema), arguments)
    assert problem is None or isinstance(problem, str)


def test_an_unresolvable_ref_validates_leniently_and_what_can_be_checked_still_is() -> None:
    spec = spec_with(BROKEN_SCHEMAS[0])
    assert validation_error(spec, {"x": 1}) is None
    assert validation_error(spec, ["not", "an", "object"]) == "arguments must be a JSON object"


def test_a_good_schema_still_reports_the_first_problem() -> None:
    spec = spec_with(
        {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
            "$defs": {"i": {"type": "integer"}},
        }
    )
    assert validation_error(spec, {"n": 1}) is None
    assert "'n' is a required property" in (validation_error(spec, {}) or "")
    ref = spec_with({"type": "object", "properties": {"n": {"$ref": "#/$defs/i"}}, "$defs": {"i": {"type": "integer"}}})
    assert "is not of type 'integer'" in (validation_error(ref, {"n": "x"}) or "")


json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.text(max_size=8),
    st.sampled_from(
        [
            "#",
            "#/$defs/a",
            "#/properties/x",
            "#x",
            "http://127.0.0.1:9/s.json",
            "https://example.invalid/s.json#/a",
            "object",
            "string",
            "(",
            "a.json",
        ]
    ),
)
KEYWORDS = [
    "$ref",
    "$dynamicRef",
    "$defs",
    "definitions",
    "$id",
    "id",
    "$schema",
    "$anchor",
    "type",
    "properties",
    "items",
    "prefixItems",
    "required",
    "pattern",
    "patternProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "enum",
    "const",
    "minimum",
    "additionalProperties",
    "dependentSchemas",
    "unevaluatedProperties",
    "format",
    "x",
]
schema_like = st.recursive(
    json_leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYWORDS), inner, max_size=4)),
    max_leaves=12,
)
arguments_like = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["x", "y", "a"]), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    st.dictionaries(st.sampled_from(KEYWORDS), schema_like, max_size=5),
    st.dictionaries(st.sampled_from(["x", "y", "a"]), arguments_like, max_size=3),
)
def test_validation_is_total(schema: dict[str, Any], arguments: dict[str, Any]) -> None:
    problem = validation_error(spec_with(schema), arguments)
    assert problem is None or isinstance(problem, str)


# --- through the engine -----------------------------------------------------------------------------


def roster_with(broken: list[Any]) -> dict[str, Any]:
    return {
        "agent": {"name": "t", "version": "1", "deferred": []},
        "configured": [
            {"name": "time.now", "side_effect": "NONE"},
            {"name": "notes.create", "side_effect": "WORKSPACE_WRITE"},
            *(
                {
                    "name": f"broken.t{i}",
                    "description": f"Broken tool {i}.",
                    "side_effect": "NONE",
                    "input_schema": schema,
                }
                for i, schema in enumerate(broken)
            ),
        ],
        "servers": [],
    }


ANSWERS = [[{"type": "text", "text": f"answer {i}"}] for i in range(40)]


def write_chat_files(root: Path, broken: list[Any], first_turn: list[dict[str, Any]]) -> ChatOptions:
    (root / "roster.json").write_text(json.dumps(roster_with(broken)))
    (root / "script.json").write_text(json.dumps({"turns": [first_turn, *ANSWERS]}))
    return ChatOptions(roster=str(root / "roster.json"), script=str(root / "script.json"), start_demo_servers=False)


async def test_a_tool_with_an_unresolvable_ref_does_not_crash_the_turn_nor_the_chat(home, tmp_path):
    call = {"type": "tool_use", "id": "c1", "name": "broken.t0", "input": {"x": 1}}
    opts = write_chat_files(tmp_path, [BROKEN_SCHEMAS[0]], [call])
    db = tmp_path / "db.sqlite"
    events: list[Any] = []
    session = await Engine(Store(db)).open_chat(None, opts, subscribers=[events.append])
    result = await session.send("go")
    assert result.status == "done", result.error
    failed = [e for e in events if e.type == "tool.failed"]
    assert not any("arguments_invalid" in e.code for e in failed)  # validated leniently, then run
    chat_id = session.chat_id
    await session.close()
    again = await Engine(Store(db)).open_chat(chat_id)
    assert again.parked() is None
    assert (await again.send("and now?")).status == "done"
    await again.close()


async def test_a_chat_left_running_on_a_broken_tool_resumes(home, tmp_path):
    """The state the crash left behind: the assistant's call to the broken tool stored, its turn running."""
    call = {"type": "tool_use", "id": "c1", "name": "broken.t0", "input": {"x": 1}}
    opts = write_chat_files(tmp_path, [BROKEN_SCHEMAS[0]], [call])
    db = tmp_path / "db.sqlite"
    session = await Engine(Store(db)).open_chat(None, opts)
    chat_id = session.chat_id
    await session.close()
    store = Store(db)
    msg = store.add_message(chat_id, "user", [{"type": "text", "text": "go"}], turn_id=None, parent_id=None)
    turn = store.start_turn(chat_id, msg)
    store.add_message(chat_id, "assistant", [call], turn_id=turn, parent_id=msg)
    for attempt in range(2):  # `resume`, then `ask --chat` on the same chat
        reopened = await Engine(Store(db)).open_chat(chat_id, approver=FixedApprover(Decision.ALLOW_ONCE))
        if attempt == 0:
            assert reopened.parked() is not None
            assert (await reopened.resume()).status == "done"
        assert (await reopened.send("again")).status == "done"
        await reopened.close()


# --- the property: no stored state makes reopening or resuming crash ----------------------------------


class WellFormed(ScriptProvider):
    """The script provider, refusing what a provider's API would refuse: a request whose messages
    are not lists of content blocks each with its type's fields."""

    async def stream(self, request: ModelRequest):  # type: ignore[override]
        for m in request.messages:
            assert m["role"] in ("user", "assistant"), m
            content = m["content"]
            if isinstance(content, str):
                continue
            if not isinstance(content, list):
                raise ProviderError("test.bad_request", f"content is not a list: {content!r}")
            for b in content:
                if not _readable(b):
                    raise ProviderError("test.bad_request", f"a malformed block reached the model: {b!r}")
        async for item in super().stream(request):
            yield item


def _readable(b: Any) -> bool:
    if not isinstance(b, dict) or not isinstance(b.get("type"), str):
        return False
    if b["type"] == "text":
        return isinstance(b.get("text"), str)
    if b["type"] == "tool_use":
        return isinstance(b.get("id"), str) and isinstance(b.get("name"), str)
    if b["type"] == "tool_result":
        return isinstance(b.get("tool_use_id"), str)
    return True


def strict_factory(name: str, model: str, base_url: str | None, extra: dict[str, Any]) -> Any:
    assert name == "script"
    if not extra.get("script"):
        raise UsageError("the script provider needs --script FILE")  # as the default factory says
    return WellFormed(extra["script"])


ODD_CONTENT = [
    '"just a string"',
    '{"type": "text", "text": "a dict"}',
    '[1, "x", null]',
    "null",
    "[]",
    '[{"type": "mystery", "payload": 1}]',
    '[{"type": "tool_use"}]',
    '[{"type": "tool_use", "id": 5, "name": null, "input": "x"}]',
    '[{"type": "text", "text": 7}]',
    '[{"type": "tool_result", "content": {"a": 1}}]',
    '[{"no_type": true}]',
    '[{"type": 3}]',
    '[{"type": "tool_use", "id": "", "name": "time.now", "input": {}}]',
    '[{"type": "tool_use", "id": "c1", "name": "notes.create", "input": {"title": "z", "body": ""}}]',
]
ODD_RESULTS = ["not json", '{"content": 5}', "[1, 2]", "null", '{"content": [{"type": "image"}], "structured": 1}']
MUTATIONS = [
    "turn_running",
    "turn_parked",
    "invocation_running",
    "invocation_awaiting",
    "approval_pending",
    "odd_content",
    "odd_result",
    "no_plan",
    "odd_plan",
    "odd_sources",
    "no_last_message",
    "orphan_approval",
]

call_ids = st.sampled_from(["", "c1", "c2", "c3"])
tool_names = st.sampled_from(["time.now", "notes.create", "broken.t0", "broken.t1", "nothing.here"])
tool_args = st.one_of(
    st.just({}),
    st.just({"title": "n", "body": ""}),
    st.just({"x": 1}),
    st.dictionaries(st.sampled_from(["x", "title", "timezone"]), arguments_like, max_size=2),
)


@st.composite
def a_tool_use(draw: st.DrawFn) -> dict[str, Any]:
    name, arguments = draw(tool_names), draw(tool_args)
    if draw(st.booleans()):  # through the wrapper
        return {
            "type": "tool_use",
            "id": draw(call_ids),
            "name": "tool.call",
            "input": {"name": name, "arguments": arguments},
        }
    return {"type": "tool_use", "id": draw(call_ids), "name": name, "input": arguments}


def mutate(db: Path, chat_id: str, mutation: str, pick: int, choice: str) -> None:
    con = sqlite3.connect(db)
    try:

        def one(sql: str) -> Any:
            rows = con.execute(sql, [chat_id]).fetchall()
            return rows[pick % len(rows)][0] if rows else None

        last_turn = one("select id from turns where chat_id = ? order by started_at desc limit 1")
        if mutation in ("turn_running", "turn_parked") and last_turn:
            status = mutation.split("_")[1]
            con.execute("update turns set status = ?, ended_at = null where id = ?", [status, last_turn])
            con.execute("update chats set status = ? where id = ?", [status, chat_id])
        elif mutation in ("invocation_running", "invocation_awaiting"):
            status = "running" if mutation == "invocation_running" else "awaiting_approval"
            con.execute(
                "update invocations set status = ? where id = ?",
                [status, one("select id from invocations where chat_id = ?")],
            )
        elif mutation == "approval_pending":
            con.execute(
                "update approvals set status = 'pending', scope = null where id = ?",
                [one("select id from approvals where chat_id = ?")],
            )
        elif mutation == "orphan_approval":
            con.execute(
                "insert into approvals (id, chat_id, turn_id, call_id, tool, side_effect, arguments, status, "
                "created_at) values ('appr_orphan', ?, ?, 'c2', 'notes.create', 'WORKSPACE_WRITE', '{}', "
                "'allowed', 0)",
                [chat_id, last_turn],
            )
        elif mutation == "odd_content":
            con.execute(
                "update messages set content = ? where id = ?",
                [choice, one("select id from messages where chat_id = ? order by created_at")],
            )
        elif mutation == "odd_result":
            con.execute(
                "update invocations set result = ?, model_result = null where id = ?",
                [ODD_RESULTS[pick % len(ODD_RESULTS)], one("select id from invocations where chat_id = ?")],
            )
        elif mutation == "no_plan":
            con.execute("delete from plans")
        elif mutation == "odd_plan":
            con.execute("update plans set json = ?", ['{"builder": 7}' if pick % 2 else "not json"])
        elif mutation == "odd_sources":
            odd = [
                '{"roster": 5, "mcp_config": ["x"], "script": {"a": 1}, "start_demo_servers": false, '
                '"tool_search": "x"}',
                "[1, 2]",
                "{not json",
                '{"start_demo_servers": false, "tool_search": {"openai": "nonsense", "anthropic": 3}}',
            ]
            con.execute("update chats set sources = ? where id = ?", [odd[pick % len(odd)], chat_id])
        elif mutation == "no_last_message":
            con.execute(
                "delete from messages where id = ?",
                [one("select id from messages where chat_id = ? order by created_at desc limit 1")],
            )
        con.commit()
    finally:
        con.close()


LOSES_THE_PLAN = {"no_plan", "odd_plan"}


async def reopen_and_answer(db: Path, chat_id: str, mutations: list[str], resume_with: Decision, script: str) -> None:
    engine = Engine(Store(db), provider_factory=strict_factory)
    try:  # as `deferchat resume CHAT --script FILE` would (the stored sources may be lost)
        session = await engine.open_chat(chat_id, ChatOptions(script=script), approver=FixedApprover(resume_with))
    except UserFacingError as exc:
        assert LOSES_THE_PLAN & set(mutations), f"reopening refused without a lost plan: {exc}"
        assert "\n" not in str(exc)
        return
    try:
        if session.parked() is not None:
            resumed = await session.resume()
            assert resumed.status in ("done", "failed"), resumed
            assert session.parked() is None
        answered = await session.send("are you still there?")
        assert answered.status == "done", answered.error
        assert answered.text.startswith("answer")
    finally:
        await session.close()


@pytest.mark.parametrize("content", ODD_CONTENT)
@pytest.mark.parametrize("which", [0, 1, 2])
async def test_odd_stored_content_never_stops_a_chat(home: Path, tmp_path: Path, content: str, which: int) -> None:
    """The first user message, the model's response or the tool results replaced by odd content."""
    opts = write_chat_files(
        tmp_path, [BROKEN_SCHEMAS[0]], [{"type": "tool_use", "id": "c1", "name": "time.now", "input": {}}]
    )
    db = tmp_path / "db.sqlite"
    session = await Engine(Store(db), provider_factory=strict_factory).open_chat(None, opts)
    assert (await session.send("go")).status == "done"
    await session.close()
    mutate(db, session.chat_id, "odd_content", which, content)
    await reopen_and_answer(db, session.chat_id, ["odd_content"], Decision.ALLOW_ONCE, opts.script or "")
    mutate(db, session.chat_id, "turn_running", 0, "")  # and resumed from it
    await reopen_and_answer(db, session.chat_id, ["odd_content"], Decision.ALLOW_ONCE, opts.script or "")


@pytest.mark.parametrize("result", ODD_RESULTS)
async def test_an_unreadable_stored_result_is_still_replayed(home: Path, tmp_path: Path, result: str) -> None:
    opts = write_chat_files(
        tmp_path, [BROKEN_SCHEMAS[0]], [{"type": "tool_use", "id": "c1", "name": "time.now", "input": {}}]
    )
    db = tmp_path / "db.sqlite"
    session = await Engine(Store(db), provider_factory=strict_factory).open_chat(None, opts)
    assert (await session.send("go")).status == "done"
    await session.close()
    con = sqlite3.connect(db)
    con.execute("update invocations set result = ?", [result])
    con.execute("delete from messages where rowid in (select rowid from messages order by created_at desc limit 2)")
    con.commit()
    con.close()
    mutate(db, session.chat_id, "turn_running", 0, "")  # the turn's call answered again, from the store
    events: list[Any] = []
    reopened = await Engine(Store(db), provider_factory=strict_factory).open_chat(
        session.chat_id, opts, subscribers=[events.append]
    )
    assert (await reopened.resume()).status == "done"
    assert [e.replayed for e in events if e.type == "tool.completed"] == [True]
    await reopened.close()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_no_stored_state_makes_reopening_or_resuming_crash(home: Path, data: st.DataObject) -> None:
    broken = data.draw(st.lists(st.sampled_from(BROKEN_SCHEMAS), min_size=1, max_size=2), label="broken schemas")
    first_turn = data.draw(st.lists(a_tool_use(), min_size=1, max_size=4), label="the model's calls")
    decision = data.draw(st.sampled_from(list(Decision)), label="the first approver")
    mutations = data.draw(
        st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=3, unique=True), label="interruptions"
    )
    picks = data.draw(st.lists(st.integers(0, 20), min_size=3, max_size=3), label="rows picked")
    contents = data.draw(st.lists(st.sampled_from(ODD_CONTENT), min_size=3, max_size=3), label="odd contents")
    resume_with = data.draw(
        st.sampled_from([Decision.ALLOW_ONCE, Decision.ALLOW_CHAT, Decision.DENY]), label="the resuming approver"
    )
    for m in mutations:
        event(m)

    async def scenario(root: Path) -> None:
        opts = write_chat_files(root, broken, first_turn)
        db = root / "db.sqlite"
        session = await Engine(Store(db), provider_factory=strict_factory).open_chat(
            None, opts, approver=FixedApprover(decision)
        )
        first = await session.send("go")
        assert first.status in ("done", "parked", "failed"), first
        chat_id = session.chat_id
        await session.close()
        for mutation, pick, choice in zip(mutations, picks, contents, strict=False):
            mutate(db, chat_id, mutation, pick, choice)
        await reopen_and_answer(db, chat_id, mutations, resume_with, str(root / "script.json"))

    with tempfile.TemporaryDirectory(dir=home) as root:
        asyncio.run(scenario(Path(root)))
