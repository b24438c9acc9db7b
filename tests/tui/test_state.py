"""The TUI's plain records: history -> log items, row titles, roster marks, index blocks."""

from __future__ import annotations

import json

from core import events as ev
from core.roster.models import Placement
from core.store import InvocationRow, MessageRow, TurnRow
from core.tools import SideEffect
from tests.helpers import production_plan
from tui.state import (
    AWAITING,
    CALLED,
    DENIED,
    DISCOVERED,
    DONE,
    LOADED,
    MARK_EVENT_TYPES,
    SIDE_EFFECT_BADGE,
    SIDE_EFFECT_MEANING,
    STOPPED_NOTE,
    AssistantItem,
    NoteItem,
    ToolItem,
    UserItem,
    index_block,
    is_read,
    items_from_history,
    marks_for,
    marks_from_events,
    stopped_turns,
    tool_display,
    tool_title,
)
from tui.widgets.roster import badge_style


def test_history_folds_results_into_calls_under_the_tools_own_name() -> None:
    messages = [
        MessageRow(id="m1", role="user", content=[{"type": "text", "text": "call the office"}]),
        MessageRow(
            id="m2",
            role="assistant",
            content=[
                {"type": "text", "text": "Through the wrapper."},
                {
                    "type": "tool_use",
                    "id": "c1",
                    "name": "tool.call",
                    "input": {"name": "mcp.bland_call.start_call", "arguments": {"phone_number": "+1"}},
                },
            ],
        ),
        MessageRow(id="m3", role="user", content=[{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}]),
        MessageRow(
            id="m4",
            role="assistant",
            content=[
                {"type": "server_tool_use", "id": "s", "input": {"query": "mail"}},
                {
                    "type": "tool_search_tool_result",
                    "content": {"tool_references": [{"tool_name": "mcp.gmail_work.send_message"}]},
                },
            ],
        ),
    ]
    invocations = [
        InvocationRow(
            id="inv1",
            call_id="c1",
            name="mcp.bland_call.start_call",
            via="tool.call",
            status="denied",
            error_code="tool.denied.approval",
            error_message="denied by the owner",
            arguments='{"phone_number": "+1"}',
            side_effect="NETWORK_WRITE",
            model_result="x",
        )
    ]
    items = items_from_history(
        messages, invocations, {"mcp.bland_call.start_call": "start_call (mcp.bland_call.start_call)"}
    )
    kinds = [type(i) for i in items]
    assert kinds == [UserItem, AssistantItem, ToolItem, NoteItem, NoteItem]
    call = items[2]
    assert isinstance(call, ToolItem)
    assert (call.model_name, call.name, call.via, call.status, call.code) == (
        "tool.call",
        "mcp.bland_call.start_call",
        "tool.call",
        DENIED,
        "tool.denied.approval",
    )
    assert call.arguments == {"phone_number": "+1"}
    assert "mcp.gmail_work.send_message" in items[4].text  # type: ignore[attr-defined]


def test_a_stopped_turn_ends_with_the_note_the_log_showed_when_it_stopped() -> None:
    def text(mid: str, turn: str, role: str, words: str) -> MessageRow:
        return MessageRow(id=mid, turn_id=turn, role=role, content=[{"type": "text", "text": words}])

    messages = [
        text("m1", "t1", "user", "write a long answer"),
        text("m2", "t1", "assistant", "The first half"),
        MessageRow(id="m3", turn_id="t1", role="user", content=[{"type": "tool_result", "tool_use_id": "c"}]),
        text("m4", "t2", "user", "and then?"),
        text("m5", "t2", "assistant", "Done."),
        text("m6", "t3", "user", "cut off when its process died, closed as stopped by the next message"),
        text("m7", "t4", "user", "the next message"),
    ]
    turns = [
        TurnRow(id="t1", status="stopped", error="stopped by the owner"),
        TurnRow(id="t2", status="done"),
        TurnRow(id="t3", status="stopped"),
        TurnRow(id="t4", status="running"),
    ]
    items = items_from_history(messages, [], stopped=stopped_turns(turns))
    read = [i.text if not isinstance(i, NoteItem) else f"[{i.level}] {i.text}" for i in items]
    assert read == [
        "write a long answer",
        "The first half",
        f"[warning] {STOPPED_NOTE}",  # after the turn's last message, its answered tool uses included
        "and then?",
        "Done.",
        "cut off when its process died, closed as stopped by the next message",
        f"[warning] {STOPPED_NOTE}",
        "the next message",
    ]
    assert all(not isinstance(i, NoteItem) for i in items_from_history(messages, []))  # none asked, none shown


def test_row_title_names_the_deferred_tool_and_the_wrapper() -> None:
    item = ToolItem(call_id="c", model_name="tool.call")
    assert "tool.call" in tool_title(item) and "via" not in tool_title(item)
    item.name, item.via = "mcp.bland_call.start_call", "tool.call"
    item.display = tool_display(item.name, "start_call", "bland_call")
    item.status = AWAITING
    title = tool_title(item)
    assert "start_call (mcp.bland_call.start_call)" in title
    assert "via tool.call" in title and "awaiting approval" in title
    item.status, item.code = DENIED, "tool.denied.approval"
    assert "denied: you did not approve it" in tool_title(item) and "tool.denied" not in tool_title(item)
    item.status, item.code, item.scope = DONE, None, "chat"
    assert "allowed for this chat" in tool_title(item)


def stored(*events: ev.Event) -> list[dict]:
    """Events as the store hands them back: each one's JSON, loaded."""
    return [json.loads(e.to_json()) for e in events]


def test_marks_follow_the_event_kinds() -> None:
    events = stored(
        ev.ToolRequested(call_id="c1", name="schedule.update"),
        ev.ToolDiscovered(names=["mcp.bland_call.start_call"]),
        ev.ModelToolSearch(references=["mcp.gmail_work.send_message"], executor="server"),
        # our own tool.search (no search id) is reported by tool.discovered, not as native loading
        ev.ModelToolSearch(references=["mcp.bland_call.start_call"], executor="client", id=""),
        # a native search the provider hands to the client to run carries its id: native loading
        ev.ModelToolSearch(references=["mcp.gmail_personal.send_message"], executor="client", id="ts_1"),
        # events that set no mark
        ev.ToolCompleted(call_id="c1", name="time.now"),
        ev.ModelText(text="done"),
    )
    assert marks_from_events(events) == {
        "schedule.update": {CALLED},
        "mcp.bland_call.start_call": {DISCOVERED},
        "mcp.gmail_work.send_message": {LOADED},
        "mcp.gmail_personal.send_message": {LOADED},
    }
    # the live handler gets the event itself, not its JSON
    assert marks_for(ev.ToolDiscovered(names=["a", "b"], source="history")) == [("a", DISCOVERED), ("b", DISCOVERED)]
    assert marks_for(ev.ToolRequested(call_id="c3", name="")) == []


def test_a_stored_row_that_is_no_event_sets_no_mark() -> None:
    rows = [
        {"type": "tool.requested", "name": "schedule.update"},  # no call_id: not a valid event
        *stored(ev.ToolRequested(call_id="c2", name="time.now")),
    ]
    assert marks_from_events(rows) == {"time.now": {CALLED}}


def test_the_store_is_asked_for_exactly_the_events_that_mark() -> None:
    assert set(MARK_EVENT_TYPES) == {"tool.requested", "tool.discovered", "model.tool_search"}
    for kind in MARK_EVENT_TYPES:
        assert kind in ev.EVENT_ADAPTER.json_schema()["discriminator"]["mapping"]


def test_side_effect_words_cover_every_class_and_reads_are_cores() -> None:
    for side_effect in SideEffect:
        assert SIDE_EFFECT_BADGE[side_effect.value] and SIDE_EFFECT_MEANING[side_effect.value]
        assert is_read(side_effect.value) is side_effect.is_read
    assert [s.value for s in SideEffect if is_read(s.value)] == ["NONE", "WORKSPACE_READ", "NETWORK_READ"]
    assert not is_read("TELEPORT") and not is_read(None)
    assert badge_style("NETWORK_READ") == "green" and badge_style("COMMUNICATION") == "bold magenta"
    assert badge_style("WORKSPACE_WRITE") == "yellow"


def test_index_block_is_the_text_as_sent() -> None:
    plan = production_plan()
    trusted = plan.placement_of("schedule.update")
    assert trusted is not None and trusted.placement is Placement.DEFERRED
    assert index_block(plan.index_text, trusted.index_entry) == trusted.index_entry
    untrusted = plan.placement_of("mcp.bland_call.start_call")
    assert untrusted is not None
    block = index_block(plan.index_text, untrusted.index_entry)
    assert block is not None
    lines = block.splitlines()
    assert lines[0].startswith('<<<EXTERNAL_UNTRUSTED source="mcp.bland_call"')
    assert untrusted.index_entry in lines and lines[-1].startswith("<<<END_EXTERNAL_UNTRUSTED")
    assert block in plan.index_text  # verbatim
    defined = plan.placement_of("time.now")
    assert defined is not None and index_block(plan.index_text, defined.index_entry) is None
