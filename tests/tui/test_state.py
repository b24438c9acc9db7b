"""The TUI's plain records: history -> log items, row titles, roster marks, index blocks."""

from __future__ import annotations

from core.roster.models import Placement
from tests.helpers import production_plan
from tui.state import (
    AWAITING, CALLED, DENIED, DISCOVERED, DONE, LOADED, AssistantItem, NoteItem, ToolItem, UserItem,
    index_block, items_from_history, marks_from_events, tool_display, tool_title,
)


def test_history_folds_results_into_calls_under_the_tools_own_name() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "call the office"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Through the wrapper."},
            {"type": "tool_use", "id": "c1", "name": "tool.call",
             "input": {"name": "mcp.bland_call.start_call", "arguments": {"phone_number": "+1"}}},
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}]},
        {"role": "assistant", "content": [{"type": "server_tool_use", "id": "s", "input": {"query": "mail"}},
                                          {"type": "tool_search_tool_result", "content": {
                                              "tool_references": [{"tool_name": "mcp.gmail_work.send_message"}]}}]},
    ]
    invocations = [{"call_id": "c1", "name": "mcp.bland_call.start_call", "via": "tool.call", "status": "denied",
                    "error_code": "tool.denied.approval", "error_message": "denied by the owner",
                    "arguments": '{"phone_number": "+1"}', "side_effect": "NETWORK_WRITE", "model_result": "x"}]
    items = items_from_history(messages, invocations,
                               {"mcp.bland_call.start_call": "start_call (mcp.bland_call.start_call)"})
    kinds = [type(i) for i in items]
    assert kinds == [UserItem, AssistantItem, ToolItem, NoteItem, NoteItem]
    call = items[2]
    assert isinstance(call, ToolItem)
    assert (call.model_name, call.name, call.via, call.status, call.code) == (
        "tool.call", "mcp.bland_call.start_call", "tool.call", DENIED, "tool.denied.approval")
    assert call.arguments == {"phone_number": "+1"}
    assert "mcp.gmail_work.send_message" in items[4].text  # type: ignore[attr-defined]


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
    assert "denied tool.denied.approval" in tool_title(item)
    item.status, item.code, item.scope = DONE, None, "chat"
    assert "allowed for this chat" in tool_title(item)


def test_marks_follow_the_event_kinds() -> None:
    events = [
        {"type": "tool.requested", "name": "schedule.update"},
        {"type": "tool.discovered", "names": ["mcp.bland_call.start_call"]},
        {"type": "model.tool_search", "references": ["mcp.gmail_work.send_message"], "executor": "server"},
        # our own tool.search (no search id) is reported by tool.discovered, not as native loading
        {"type": "model.tool_search", "references": ["mcp.bland_call.start_call"], "executor": "client", "id": ""},
        # a native search the provider hands to the client to run carries its id: native loading
        {"type": "model.tool_search", "references": ["mcp.gmail_personal.send_message"], "executor": "client",
         "id": "ts_1"},
    ]
    assert marks_from_events(events) == {
        "schedule.update": {CALLED},
        "mcp.bland_call.start_call": {DISCOVERED},
        "mcp.gmail_work.send_message": {LOADED},
        "mcp.gmail_personal.send_message": {LOADED},
    }


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
