"""Call ids are bound to their tool and arguments (issue 11, item 6).

A model that reuses an earlier call's id for another tool, or for the same tool with other
arguments, gets a tool error of its own (``tool.call_id_reused``): it never overwrites the
earlier call's row and never receives the earlier call's result, chat grant or not. The same
id with the same tool and the same (canonical) arguments is the resume case and still
replays. An empty or missing id gets a generated one, carried alike by the stored history,
the tool_result and the invocation row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.engine import ChatOptions, Engine
from core.pipeline import codes
from core.pipeline.approvals import Decision, FixedApprover
from core.pipeline.pipeline import Pipeline, RunContext
from core.pipeline.policy import default_policy
from core.store import Store
from core.tools import SideEffect, ToolResult, canonical_json
from tests.helpers import configured, plan

READ = configured("time.now", SideEffect.NONE, params={"timezone": {"type": "string"}})
WRITE = configured(
    "notes.create",
    SideEffect.WORKSPACE_WRITE,
    params={"title": {"type": "string"}, "body": {"type": "string"}},
    required=("title",),
)
OTHER = configured("notes.erase", SideEffect.WORKSPACE_WRITE, params={"note_id": {"type": "string"}})


class Host:
    """Runs every tool by answering with a result no other call can have."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, str, dict[str, Any]]] = []
        self.pins: dict[str, str] = {}

    async def run(self, spec: Any, arguments: dict[str, Any], call_id: str) -> ToolResult:
        self.ran.append((call_id, spec.name, arguments))
        return ToolResult.of_json({"run": len(self.ran), "tool": spec.name, "arguments": arguments})

    def live_pin(self, name: str) -> str | None:
        return self.pins.get(name)


class Chat:
    """One chat's pipeline over a plan that defines time.now and defers the two writes."""

    def __init__(self, decision: Decision = Decision.ALLOW_ONCE):
        self.store = Store(":memory:")
        self.plan = plan([READ, WRITE, OTHER], deferred=["notes.create", "notes.erase"])
        self.chat_id = self.store.create_chat(title="t", provider="script", model="m", strategy="wrapper")
        self.events: list[Any] = []
        self.host = Host()
        self.approver = FixedApprover(decision)
        self.ctx = RunContext(
            chat_id=self.chat_id,
            turn_id="turn_1",
            store=self.store,
            plan=self.plan,
            policy=default_policy(),
            approver=self.approver,
            tools=self.host,
            emit=self.events.append,
        )
        self.host.pins = {n: spec.content_hash() for n, spec in self.ctx.specs.items()}

    async def call(
        self, name: str, arguments: Any, call_id: str, *, wrapped: bool | None = None, resuming: bool = False
    ) -> Any:
        self.events.clear()
        wrap = name != "time.now" if wrapped is None else wrapped
        block = (
            {"type": "tool_use", "id": call_id, "name": "tool.call", "input": {"name": name, "arguments": arguments}}
            if wrap
            else {"type": "tool_use", "id": call_id, "name": name, "input": arguments}
        )
        return await Pipeline(self.ctx).run(block, resuming=resuming)

    def row(self, call_id: str) -> Any:
        inv = self.store.invocation(self.chat_id, call_id)
        assert inv is not None
        return inv

    def failed_code(self) -> str | None:
        failed = [e for e in self.events if e.type in ("tool.failed", "tool.denied")]
        return failed[-1].code if failed else None


async def test_a_reused_id_for_another_tool_is_refused_and_the_first_row_stays_as_it_was():
    chat = Chat()
    first = await chat.call("time.now", {}, "c1")
    before = chat.row("c1")
    out = await chat.call("notes.create", {"title": "t", "body": "b"}, "c1")
    assert out.result_block["is_error"] and out.result_block["tool_use_id"] == "c1"
    assert codes.CALL_ID_REUSED in out.result_block["content"] and "time.now" in out.result_block["content"]
    assert chat.failed_code() == codes.CALL_ID_REUSED
    assert [name for _, name, _ in chat.host.ran] == ["time.now"]  # nothing written
    assert chat.row("c1") == before  # the audit row of time.now is untouched
    assert out.result_block["content"] != first.result_block["content"]
    assert not any(getattr(e, "replayed", False) for e in chat.events)


async def test_a_chat_grant_does_not_turn_a_reused_id_into_a_replay():
    chat = Chat(Decision.ALLOW_CHAT)
    await chat.call("notes.create", {"title": "granted", "body": ""}, "w0")  # grants notes.create for the chat
    assert chat.store.granted(chat.chat_id, "notes.create")
    first = await chat.call("time.now", {}, "c1")
    before = chat.row("c1")
    out = await chat.call("notes.create", {"title": "t", "body": "b"}, "c1")
    assert out.status != "replayed" and out.result_block["is_error"]
    assert chat.failed_code() == codes.CALL_ID_REUSED
    assert out.result_block["content"] != first.result_block["content"]
    assert [name for _, name, _ in chat.host.ran] == ["notes.create", "time.now"]
    assert chat.row("c1") == before


async def test_the_same_tool_with_other_arguments_is_refused_too():
    chat = Chat()
    await chat.call("notes.create", {"title": "one", "body": ""}, "w1")
    before = chat.row("w1")
    out = await chat.call("notes.create", {"title": "two", "body": ""}, "w1")
    assert chat.failed_code() == codes.CALL_ID_REUSED and out.result_block["is_error"]
    assert len(chat.host.ran) == 1 and chat.row("w1") == before


async def test_the_same_call_again_is_still_a_replay():
    chat = Chat()
    first = await chat.call("notes.create", {"title": "one", "body": "x"}, "w1")
    # the same call, its arguments in another key order: canonically the same
    again = await chat.call("notes.create", {"body": "x", "title": "one"}, "w1", resuming=True)
    assert again.status == "replayed" and again.result_block == first.result_block
    assert len(chat.host.ran) == 1


async def test_a_malformed_wrapper_that_reuses_an_id_overwrites_nothing():
    chat = Chat()
    await chat.call("time.now", {}, "c1")
    before = chat.row("c1")
    await chat.call("notes.create", "not an object", "c1")
    assert chat.row("c1") == before
    out = await Pipeline(chat.ctx).run({"type": "tool_use", "id": "c1", "name": "tool.call", "input": ["junk"]})
    assert out.result_block["is_error"] and chat.row("c1") == before


async def test_a_reused_id_of_a_parked_call_leaves_the_parked_call_and_its_approval_alone():
    chat = Chat(Decision.PARK)
    parked = await chat.call("notes.create", {"title": "later", "body": ""}, "w1")
    assert parked.parked
    row, approval = chat.row("w1"), chat.store.approval_for_call(chat.chat_id, "w1")
    chat.ctx.approver = FixedApprover(Decision.ALLOW_ONCE)
    out = await chat.call("notes.erase", {"note_id": "n1"}, "w1")
    assert chat.failed_code() == codes.CALL_ID_REUSED and out.result_block["is_error"]
    assert chat.row("w1") == row and chat.store.approval_for_call(chat.chat_id, "w1") == approval
    assert chat.host.ran == []
    resumed = await chat.call("notes.create", {"title": "later", "body": ""}, "w1", resuming=True)
    assert resumed.status == "completed" and chat.host.ran[0][1] == "notes.create"


async def test_an_approval_stored_for_another_tool_never_allows_this_one():
    chat = Chat(Decision.DENY)
    chat.store.create_approval(
        chat_id=chat.chat_id,
        turn_id="t0",
        call_id="w9",
        tool="notes.create",
        side_effect="WORKSPACE_WRITE",
        arguments={"title": "x"},
        status="allowed",
    )
    out = await chat.call("notes.erase", {"note_id": "n1"}, "w9")
    assert chat.host.ran == [] and out.result_block["is_error"]
    assert chat.failed_code() == codes.DENIED_APPROVAL


async def test_empty_ids_reach_the_pipeline_as_separate_calls():
    chat = Chat()
    a = await chat.call("notes.create", {"title": "a", "body": ""}, "")
    b = await chat.call("notes.create", {"title": "b", "body": ""}, "")
    assert [args["title"] for _, _, args in chat.host.ran] == ["a", "b"]
    ids = {a.result_block["tool_use_id"], b.result_block["tool_use_id"]}
    assert len(ids) == 2 and "" not in ids
    assert {r.call_id for r in chat.store.invocations(chat.chat_id)} == ids


# --- the property ------------------------------------------------------------------------------------

TOOLS = {
    "time.now": [{}, {"timezone": "UTC"}],
    "notes.create": [{"title": "a", "body": ""}, {"title": "b", "body": ""}],
    "notes.erase": [{"note_id": "n1"}],
}
a_call = st.tuples(st.sampled_from(["", "c1", "c2", "c3"]), st.sampled_from(sorted(TOOLS)), st.integers(0, 1))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(a_call, min_size=1, max_size=8), st.sampled_from([Decision.ALLOW_ONCE, Decision.ALLOW_CHAT]))
def test_colliding_ids_never_overwrite_a_row_nor_answer_with_another_calls_result(calls, decision):
    import asyncio

    async def scenario() -> None:
        chat = Chat(decision)
        first: dict[str, tuple[str, str, str]] = {}  # call id -> (tool, canonical arguments, answer)
        rows: dict[str, dict[str, Any]] = {}
        for call_id, name, which in calls:
            arguments = TOOLS[name][which % len(TOOLS[name])]
            ran_before = len(chat.host.ran)
            out = await chat.call(name, arguments, call_id)
            used = out.result_block["tool_use_id"]
            content = out.result_block["content"]
            if call_id == "":
                assert used != "" and used not in first  # a fresh id of its own
            else:
                assert used == call_id
            if used in first:
                tool, args, answer = first[used]
                if (tool, args) == (name, canonical_json(arguments)):
                    assert out.status == "replayed" and content == answer
                else:
                    assert codes.CALL_ID_REUSED in content and out.result_block.get("is_error")
                assert len(chat.host.ran) == ran_before  # nothing ran again
            else:
                assert len(chat.host.ran) == ran_before + 1
                ran_id, ran_name, ran_args = chat.host.ran[-1]
                assert (ran_id, ran_name, ran_args) == (used, name, arguments)
                assert f'"run":{len(chat.host.ran)}' in content.replace(" ", "")  # its own result
                first[used] = (name, canonical_json(arguments), content)
            for cid, row in rows.items():  # no earlier row ever changes
                assert chat.row(cid) == row
            rows[used] = chat.row(used)

    asyncio.run(scenario())


# --- through the engine ---------------------------------------------------------------------------------

ROSTER = {
    "agent": {"name": "t", "version": "1", "deferred": []},
    "configured": [
        {"name": "time.now", "side_effect": "NONE"},
        {"name": "notes.create", "side_effect": "WORKSPACE_WRITE"},
    ],
    "servers": [],
}


async def run_script(tmp_path: Path, turns: list[list[dict[str, Any]]], decision: Decision) -> tuple[Store, str, list]:
    (tmp_path / "roster.json").write_text(json.dumps(ROSTER))
    (tmp_path / "s.json").write_text(json.dumps({"turns": turns}))
    store = Store(tmp_path / "db.sqlite")
    events: list[Any] = []
    session = await Engine(store).open_chat(
        None,
        ChatOptions(roster=str(tmp_path / "roster.json"), script=str(tmp_path / "s.json"), start_demo_servers=False),
        approver=FixedApprover(decision),
        subscribers=[events.append],
    )
    result = await session.send("go")
    await session.close()
    assert result.status == "done", result.error
    return store, session.chat_id, events


def notes(store: Store) -> list[str]:
    if "notes" not in store.db.table_names():
        return []
    return [r["title"] for r in store.db["notes"].rows]


async def test_a_model_reusing_a_time_now_id_for_a_write_writes_nothing_and_keeps_the_row(home, tmp_path):
    reuse = [
        [{"type": "tool_use", "id": "c1", "name": "time.now", "input": {}}],
        [{"type": "tool_use", "id": "c1", "name": "notes.create", "input": {"title": "t", "body": "b"}}],
        [{"type": "text", "text": "ok"}],
    ]
    grant = [[{"type": "tool_use", "id": "w0", "name": "notes.create", "input": {"title": "w0", "body": ""}}]]
    for decision, turns in ((Decision.ALLOW_ONCE, reuse), (Decision.ALLOW_CHAT, grant + reuse)):
        (tmp_path / decision.value).mkdir()
        store, chat_id, events = await run_script(tmp_path / decision.value, turns, decision)
        granted = decision is Decision.ALLOW_CHAT
        assert store.granted(chat_id, "notes.create") is granted
        assert notes(store) == (["w0"] if granted else [])
        rows = [(r.call_id, r.name, r.status) for r in store.invocations(chat_id)]
        assert rows == [*([("w0", "notes.create", "completed")] if granted else []), ("c1", "time.now", "completed")]
        assert "time" in json.loads(store.invocation(chat_id, "c1").result or "{}")["structured"]
        failed = [e for e in events if e.type == "tool.failed"]
        assert [e.code for e in failed] == [codes.CALL_ID_REUSED]
        assert not any(e.type == "tool.completed" and e.replayed for e in events)


async def test_calls_without_ids_get_one_id_everywhere(home, tmp_path):
    turns = [
        [
            {"type": "tool_use", "id": "", "name": "time.now", "input": {}},
            {"type": "tool_use", "id": "", "name": "notes.create", "input": {"title": "t", "body": "b"}},
        ],
        [{"type": "tool_use", "id": "", "name": "notes.create", "input": {"title": "u", "body": "b"}}],
        [{"type": "text", "text": "ok"}],
    ]
    store, chat_id, events = await run_script(tmp_path, turns, Decision.ALLOW_ONCE)
    assert sorted(notes(store)) == ["t", "u"]
    messages = store.messages(chat_id)
    used = [b["id"] for m in messages if m.role == "assistant" for b in m.blocks if b["type"] == "tool_use"]
    answered = [
        b["tool_use_id"] for m in messages if m.role == "user" for b in m.blocks if b.get("type") == "tool_result"
    ]
    assert len(used) == 3 and len(set(used)) == 3 and "" not in used
    assert answered == used
    assert [r.call_id for r in store.invocations(chat_id)] == used
    assert [e.id for e in events if e.type == "model.tool_use"] == used
    assert [e.call_id for e in events if e.type == "tool.requested"] == used


async def test_a_stopped_turn_never_settles_a_reused_id_with_the_earlier_calls_row():
    """Stopping a turn answers its unanswered tool uses from their rows: not from another call's."""
    from core.chat.stopping import settle_unanswered

    for status in ("completed", "running", "awaiting_approval"):
        chat = Chat()
        first = await chat.call("time.now", {}, "c1")
        if status != "completed":
            chat.store.update_invocation(chat.row("c1").id, status=status)
        before = chat.row("c1")
        events: list[Any] = []
        block = {
            "type": "tool_use",
            "id": "c1",
            "name": "tool.call",
            "input": {"name": "notes.create", "arguments": {"title": "t", "body": "b"}},
        }
        settled = settle_unanswered(
            block,
            store=chat.store,
            chat_id=chat.chat_id,
            turn_id="turn_2",
            specs=chat.ctx.specs,
            policy=chat.ctx.policy,
            emit=events.append,
        )
        assert settled["tool_use_id"] == "c1" and settled["is_error"]
        assert settled["content"] != first.result_block["content"] and "notes.create" in settled["content"]
        assert chat.row("c1") == before
        assert [(e.type, e.name) for e in events] == [("tool.failed", "notes.create")]
        # the same call, stopped: its own row is what settles it
        own = {"type": "tool_use", "id": "c1", "name": "time.now", "input": {}}
        again = settle_unanswered(
            own,
            store=chat.store,
            chat_id=chat.chat_id,
            turn_id="turn_2",
            specs=chat.ctx.specs,
            policy=chat.ctx.policy,
            emit=events.append,
        )
        if status == "completed":
            assert again["content"] == first.result_block["content"]


# --- one invocation, however often the wire repeats it (issue 23, item 10) -----------------------------


async def test_a_tool_use_repeated_in_one_response_runs_once(home, tmp_path):
    """Two tool uses with the same id, tool and arguments in one response are one invocation: one
    note, one row, one tool_use in the stored response and one tool_result."""
    twice = {"type": "tool_use", "id": "d1", "name": "notes.create", "input": {"title": "t", "body": "b"}}
    turns = [[twice, dict(twice, input={"body": "b", "title": "t"})], [{"type": "text", "text": "ok"}]]
    store, chat_id, events = await run_script(tmp_path, turns, Decision.ALLOW_ONCE)
    assert notes(store) == ["t"]
    assert [(r.call_id, r.status) for r in store.invocations(chat_id)] == [("d1", "completed")]
    messages = store.messages(chat_id)
    used = [b["id"] for m in messages if m.role == "assistant" for b in m.blocks if b["type"] == "tool_use"]
    answered = [
        b["tool_use_id"] for m in messages if m.role == "user" for b in m.blocks if b.get("type") == "tool_result"
    ]
    assert used == answered == ["d1"]
    assert [e.id for e in events if e.type == "model.tool_use"] == ["d1"]


async def test_uses_that_share_an_id_but_differ_stay_distinct(home, tmp_path):
    first = {"type": "tool_use", "id": "d1", "name": "notes.create", "input": {"title": "t", "body": "b"}}
    turns = [[first, dict(first, input={"title": "u", "body": "b"})], [{"type": "text", "text": "ok"}]]
    store, chat_id, _ = await run_script(tmp_path, turns, Decision.ALLOW_ONCE)
    assert sorted(notes(store)) == ["t", "u"]
    ids = [r.call_id for r in store.invocations(chat_id)]
    assert ids[0] == "d1" and len(set(ids)) == 2


USE_POOL = [
    ("a", "notes.create", {"title": "t"}),
    ("a", "notes.create", {"title": "u"}),
    ("a", "time.now", {}),
    ("b", "notes.create", {"title": "t"}),
    ("", "notes.create", {"title": "t"}),
    (None, "time.now", {}),
]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(range(len(USE_POOL))), min_size=1, max_size=8), st.booleans())
def test_call_ids_make_each_distinct_call_one_use(picks: list[int], streamed: bool) -> None:
    """Whatever the wire repeats: one use per distinct (stated id, tool, arguments), every id-less
    use its own, every kept use a distinct id; streamed (for_use, then content) or read back from
    the store (content alone) alike."""
    from core.pipeline.call_ids import CallIds

    blocks = []
    for i in picks:
        call_id, name, tool_input = USE_POOL[i]
        block: dict[str, Any] = {"type": "tool_use", "name": name, "input": tool_input}
        if call_id is not None:
            block["id"] = call_id
        blocks.append(block)
    ids = CallIds()
    streamed_ids = [ids.for_use(b.get("id"), b["name"], b["input"]) for b in blocks] if streamed else []
    kept = (ids if streamed else CallIds()).content(blocks)
    distinct = {(USE_POOL[i][0], USE_POOL[i][1], canonical_json(USE_POOL[i][2])) for i in picks if USE_POOL[i][0]}
    idless = sum(1 for i in picks if not USE_POOL[i][0])
    assert len(kept) == len(distinct) + idless
    assert len({b["id"] for b in kept}) == len(kept) and all(b["id"] for b in kept)
    if streamed:
        assert [i for i in streamed_ids if i is not None] == [b["id"] for b in kept]


@pytest.mark.parametrize("wire", ["anthropic", "openai-chat", "openai"])
async def test_a_use_the_wire_streams_twice_runs_once(home, tmp_path, monkeypatch, wire):
    """The same, as real traffic brings it: the loopback server streams one call twice (same id,
    same tool, same arguments) through each provider's SDK."""
    from core.providers import make_provider
    from tests.streaming_server import StreamingServer

    monkeypatch.chdir(tmp_path)
    call = {"tool": "notes__create", "id": "call_dup1", "input": {"title": "once", "body": "b"}}
    script = [{"parts": [call, dict(call)]}, {"parts": [{"text": "Saved."}]}]
    with StreamingServer(script) as server:

        def make(name: str, model: str, base_url: str | None, extra: dict[str, Any]) -> Any:
            return make_provider(name, model, base_url=server.url_for(name), api_key="test-key", max_retries=0)

        store = Store(tmp_path / "db.sqlite")
        session = await Engine(store, provider_factory=make).open_chat(
            None,
            ChatOptions(provider=wire, model="m", strategy="active-tools", start_demo_servers=False),
            approver=FixedApprover(Decision.ALLOW_ONCE),
        )
        try:
            result = await session.send("note this")
        finally:
            await session.close()
        second = server.requests[1]["body"]
    assert result.status == "done", result.error
    assert notes(store) == ["once"]
    assert [r.status for r in store.invocations(session.chat_id)] == ["completed"]
    assert json.dumps(second).count("call_dup1") == 2  # one use and its one result went back
