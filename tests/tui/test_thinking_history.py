"""A reopened chat shows the model's stored thinking, folded, where it came in the answer."""

from __future__ import annotations

from core.store import MessageRow
from tui.state import AssistantItem, UserItem, items_from_history
from tui.widgets.thinking import ThinkingItem


def _assistant(*blocks: dict) -> MessageRow:
    return MessageRow(id="m2", role="assistant", content=list(blocks))


def test_every_kind_of_stored_thinking_comes_back_folded_before_its_answer() -> None:
    messages = [
        MessageRow(id="m1", role="user", content=[{"type": "text", "text": "plan my day"}]),
        _assistant(
            {"type": "thinking", "thinking": "The owner wants a plan.", "signature": "sig"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Here is your day."},
        ),
        _assistant({"type": "reasoning_content", "text": "Check the calendar first."}, {"type": "text", "text": "ok"}),
        _assistant(
            {
                "type": "provider_item",
                "provider": "openai",
                "item": {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Summarised."}]},
            },
            {"type": "text", "text": "done"},
        ),
    ]
    items = items_from_history(messages, [])
    kinds = [type(i).__name__ for i in items]
    assert kinds == [
        "UserItem",
        "ThinkingItem",
        "ThinkingItem",
        "AssistantItem",
        "ThinkingItem",
        "AssistantItem",
        "ThinkingItem",
        "AssistantItem",
    ]
    thoughts = [i for i in items if isinstance(i, ThinkingItem)]
    assert [t.text for t in thoughts] == ["The owner wants a plan.", "", "Check the calendar first.", "Summarised."]
    assert [t.redacted for t in thoughts] == [False, True, False, False]
    assert not any(t.expanded or t.streaming for t in thoughts)
    assert isinstance(items[0], UserItem) and isinstance(items[3], AssistantItem)


def test_reasoning_without_text_shows_nothing() -> None:
    messages = [
        _assistant(
            {"type": "reasoning_content", "text": ""},
            {"type": "provider_item", "provider": "openai", "item": {"type": "reasoning", "summary": []}},
            {"type": "provider_item", "provider": "openai", "item": {"type": "tool_search_call"}},
            {"type": "text", "text": "answer"},
        )
    ]
    assert [type(i).__name__ for i in items_from_history(messages, [])] == ["AssistantItem"]
