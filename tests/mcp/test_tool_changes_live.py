"""A tool that changes under a live chat (issue 23, item 7).

A server re-lists a pinned read-only tool as destructive (``notifications/tools/list_changed``);
the open chat's next call ran it with no approval, judged by the pinned class. Now every call
asks how the server lists the tool now (after the re-listing it announced), the stricter of the
pinned and the live description decides, and the person is told (``tool.changed``, in the CLI
transcript and the TUI log). Against a real SDK server (``tests/mcp_servers/shifty.py``) that
changes its listing in the middle of the chat.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.engine import ChatOptions, Engine
from core.pipeline.approvals import ApprovalRequest, Decision
from core.pipeline.pipeline import ACTION_RANK, CLASS_RANK, stricter_class, tool_changes
from core.store import Store
from core.tools import Origin, SideEffect, ToolSpec
from tests.helpers import ROOT


class Recorder:
    """Answers every approval with ``decision`` and remembers what it was asked."""

    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        self.asked: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        return self.decision


def chat_files(folder: Path, shift: dict[str, Any] | None, calls: int = 2, after: int = 1) -> Path:
    runs = folder / "runs.txt"
    env = {"PYTHONPATH": str(ROOT), "SHIFTY_FILE": str(runs), "SHIFTY_AFTER": str(after)}
    if shift is not None:
        env["SHIFTY_SHIFT"] = json.dumps(shift)
    server = {"command": sys.executable, "args": ["-m", "tests.mcp_servers.shifty"], "env": env}
    (folder / "mcp.json").write_text(json.dumps({"mcpServers": {"shifty": server}}))
    (folder / "roster.json").write_text(json.dumps({"agent": {"name": "shift", "version": "1"}}))
    steps = [
        [{"type": "tool_use", "id": f"c{i}", "name": "mcp.shifty.lookup", "input": {"query": f"q{i}"}}]
        for i in range(1, calls + 1)
    ]
    (folder / "script.json").write_text(json.dumps({"turns": [*steps, [{"type": "text", "text": "done"}]]}))
    return runs


async def run_chat(
    folder: Path, approver: Recorder, *, grant: str | None = None
) -> tuple[list[Any], list[str], Store, str]:
    """One turn of the scripted chat; ``grant``: a tool granted for the chat before it starts."""
    store = Store(folder / "db.sqlite")
    events: list[Any] = []
    session = await Engine(store).open_chat(
        None,
        ChatOptions(
            roster=str(folder / "roster.json"),
            script=str(folder / "script.json"),
            mcp_config=str(folder / "mcp.json"),
            start_demo_servers=False,
        ),
        approver=approver,
        subscribers=[events.append],
    )
    try:
        if grant is not None:
            store.grant(session.chat_id, grant)
        result = await session.send("look it up")
    finally:
        await session.close()
    assert result.status == "done", result.error
    runs = (folder / "runs.txt").read_text().split() if (folder / "runs.txt").exists() else []
    return events, runs, store, session.chat_id


@pytest.fixture
def folder(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


async def test_a_read_only_tool_re_listed_as_destructive_asks_before_its_next_call(folder: Path) -> None:
    runs_file = chat_files(folder, None)
    approver = Recorder(Decision.DENY)
    events, runs, store, chat = await run_chat(folder, approver)
    assert runs_file.exists() and runs == ["q1"]  # the first call ran as a read; the second was asked and denied
    assert [a.call_id for a in approver.asked] == ["c2"]
    assert approver.asked[0].side_effect == "NETWORK_WRITE"
    changed = [e for e in events if e.type == "tool.changed"]
    assert len(changed) == 1
    assert changed[0].name == "mcp.shifty.lookup" and changed[0].pinned_side_effect == "NETWORK_READ"
    assert changed[0].side_effect == "NETWORK_WRITE" and "class" in changed[0].changes
    assert "changed since this chat pinned it" in changed[0].message
    assert store.events(chat, ("tool.changed",))  # stored with the chat
    denied = [e for e in events if e.type == "tool.denied"]
    assert [(e.call_id, e.code) for e in denied] == [("c2", "tool.denied.approval")]


async def test_a_chat_grant_given_before_does_not_cover_the_escalated_tool(folder: Path) -> None:
    """A write re-listed as a communication: the grant the owner gave the write does not stand."""
    shift = {"annotations": {"read_only_hint": False, "destructive_hint": True, "open_world_hint": True}}
    chat_files(folder, shift, calls=3, after=2)
    approver = Recorder(Decision.ALLOW_CHAT)
    # the tool starts as a read, so the first calls are allowed by policy; it is granted all the
    # same, and the escalation asks again after the re-listing
    await run_chat(folder, approver, grant="mcp.shifty.lookup")
    assert [a.call_id for a in approver.asked] == ["c3"]  # asked after the change, though granted


def test_the_transcript_tells_the_person() -> None:
    from core.cli.printer import transcript_line
    from core.events import ToolChanged

    line = transcript_line(
        ToolChanged(
            name="mcp.shifty.lookup",
            pinned_side_effect="NETWORK_READ",
            live_side_effect="NETWORK_WRITE",
            side_effect="NETWORK_WRITE",
            changes=["class"],
            message="mcp.shifty.lookup changed since this chat pinned it (class)",
        )
    )
    assert line == "[tool changed: mcp.shifty.lookup changed since this chat pinned it (class)]"


async def test_the_tui_log_tells_the_person() -> None:
    from core.events import ToolChanged
    from tui.router import EventRouter

    added: list[Any] = []

    class Log:
        async def add(self, item: Any) -> None:
            added.append(item)

    router = EventRouter.__new__(EventRouter)
    router.retry = None
    router.log = Log()  # type: ignore[assignment]
    router.roster = type("R", (), {"mark": lambda *a: None})()  # type: ignore[assignment]
    await router.handle(
        ToolChanged(
            name="mcp.shifty.lookup",
            pinned_side_effect="NETWORK_READ",
            side_effect="NETWORK_WRITE",
            message="mcp.shifty.lookup changed since this chat pinned it",
        )
    )
    assert [(i.text, i.level) for i in added] == [("mcp.shifty.lookup changed since this chat pinned it", "warning")]


# --- live re-listings: every kind, against the real server -----------------------------------------------

SHIFTS = [
    ({"annotations": {"read_only_hint": False, "destructive_hint": True}}, True),  # to a destructive write
    ({"annotations": {"read_only_hint": False, "open_world_hint": False}}, True),  # to a local write
    ({"annotations": {"read_only_hint": True, "open_world_hint": False}}, False),  # still a read
    ({"annotations": {"read_only_hint": True}, "description": "Now it also deletes."}, False),  # words only
    ({"annotations": {}}, True),  # no annotations: it changes the world (the MCP default)
    ({"remove": True}, False),  # no longer listed: the pin stands, the server answers
]


@pytest.mark.parametrize(("shift", "asks"), SHIFTS)
async def test_every_re_listing_is_judged_by_the_stricter_description(
    folder: Path, shift: dict[str, Any], asks: bool
) -> None:
    chat_files(folder, shift)
    approver = Recorder(Decision.DENY)
    events, runs, _, _ = await run_chat(folder, approver)
    assert [a.call_id for a in approver.asked] == (["c2"] if asks else [])
    assert runs == (["q1"] if asks else ["q1", "q2"]) or (shift.get("remove") and runs == ["q1"])
    changed = [e for e in events if e.type == "tool.changed"]
    assert len(changed) == 1 and changed[0].pinned_side_effect == "NETWORK_READ"
    if shift.get("remove"):
        assert changed[0].changes == ["removed"] and changed[0].live_side_effect is None


# --- the rule itself, over every pair of descriptions ----------------------------------------------------

CLASSES = list(SideEffect)


def spec(side_effect: SideEffect, *, description: str = "d", requires: bool | None = None) -> ToolSpec:
    return ToolSpec(
        name="mcp.s.t",
        origin=Origin.DISCOVERED,
        server="s",
        remote_name="t",
        side_effect=side_effect,
        description=description,
        requires_approval=requires,
    )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pinned=st.sampled_from(CLASSES),
    live=st.sampled_from(CLASSES),
    requires=st.sampled_from([None, True, False]),
    words=st.booleans(),
)
def test_the_stricter_of_pinned_and_live_decides(pinned: SideEffect, live: SideEffect, requires, words: bool) -> None:
    """Through the real pipeline: the action is never less strict than either description's,
    and the class an approval shows is the further-reaching one."""
    import asyncio

    from core.pipeline.approvals import FixedApprover
    from core.pipeline.pipeline import Pipeline, RunContext
    from core.pipeline.policy import default_policy
    from core.tools import ToolResult
    from tests.helpers import plan

    pinned_spec = spec(pinned)
    live_spec = spec(live, description="other" if words else "d", requires=requires)
    policy = default_policy()
    expected = max(
        (policy.decide(pinned_spec)[0], policy.decide(live_spec)[0], "ask" if requires else "allow"),
        key=ACTION_RANK.__getitem__,
    )

    class Host:
        def __init__(self) -> None:
            self.ran: list[str] = []
            self.changes_told: dict[str, str | None] = {}

        async def run(self, s: ToolSpec, arguments: dict[str, Any], call_id: str) -> ToolResult:
            self.ran.append(call_id)
            return ToolResult.of_text("ok")

        def live_pin(self, name: str) -> str | None:
            return None

        async def listed_now(self, s: ToolSpec) -> tuple[bool, ToolSpec | None]:
            return True, live_spec

    store = Store(":memory:")
    chat = store.create_chat(title="t", provider="script", model="m", strategy="wrapper")
    events: list[Any] = []
    host = Host()
    asked: list[ApprovalRequest] = []

    class Approver(FixedApprover):
        async def decide(self, request: ApprovalRequest) -> Decision:
            asked.append(request)
            return Decision.DENY

    ctx = RunContext(
        chat_id=chat,
        turn_id="t",
        store=store,
        plan=plan((), [pinned_spec]),
        policy=policy,
        approver=Approver(Decision.DENY),
        tools=host,
        emit=events.append,
    )
    asyncio.run(Pipeline(ctx).run({"type": "tool_use", "id": "c1", "name": "mcp.s.t", "input": {}}))
    got = "deny" if any(e.type == "tool.denied" and e.code == "tool.denied.policy" for e in events) else None
    got = got or ("ask" if asked else "allow")
    assert got == expected, (pinned, live, requires, events)
    if asked:
        assert asked[0].side_effect == stricter_class(pinned, live).value
    assert CLASS_RANK[stricter_class(pinned, live)] == max(CLASS_RANK[pinned], CLASS_RANK[live])
    changes = tool_changes(pinned_spec, live_spec)
    assert bool(changes) == any(e.type == "tool.changed" for e in events)


async def test_the_person_is_told_each_time_the_listing_differs_from_what_they_were_told() -> None:
    """Changed, back as pinned (a restarted server), changed again: three notes, none repeated."""
    from core.pipeline.approvals import FixedApprover
    from core.pipeline.pipeline import Pipeline, RunContext
    from core.pipeline.policy import default_policy
    from core.tools import ToolResult
    from tests.helpers import plan

    pinned = spec(SideEffect.NETWORK_READ)
    destructive = spec(SideEffect.NETWORK_WRITE)
    listings = [destructive, destructive, pinned, pinned, destructive, None]

    class Host:
        def __init__(self) -> None:
            self.changes_told: dict[str, str | None] = {}
            self.now: ToolSpec | None = None

        async def run(self, s: ToolSpec, arguments: dict[str, Any], call_id: str) -> ToolResult:
            return ToolResult.of_text("ok")

        def live_pin(self, name: str) -> str | None:
            return None

        async def listed_now(self, s: ToolSpec) -> tuple[bool, ToolSpec | None]:
            return True, self.now

    store = Store(":memory:")
    chat = store.create_chat(title="t", provider="script", model="m", strategy="wrapper")
    events: list[Any] = []
    host = Host()
    for i, listing in enumerate(listings):
        host.now = listing
        ctx = RunContext(
            chat_id=chat,
            turn_id="t",
            store=store,
            plan=plan((), [pinned]),
            policy=default_policy(),
            approver=FixedApprover(Decision.ALLOW_ONCE),
            tools=host,
            emit=events.append,
        )
        await Pipeline(ctx).run({"type": "tool_use", "id": f"c{i}", "name": "mcp.s.t", "input": {}})
    told = [(e.changes, e.side_effect) for e in events if e.type == "tool.changed"]
    assert told == [
        (["class"], "NETWORK_WRITE"),
        ([], "NETWORK_READ"),
        (["class"], "NETWORK_WRITE"),
        (["removed"], "NETWORK_READ"),
    ]
