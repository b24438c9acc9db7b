"""How the demo reads times of day the way people say them (core.demo.when): a bare hour after
"at" or after a verb that moves something in time, the afternoon for a bare 1 to 7, and a
number that is not a time left alone. Spans stay where the words are in the request."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.demo.text import normalise
from core.demo.when import moments, time_of_day

NOW = dt.datetime(2026, 12, 2, 9, 0)  # a Wednesday


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("move my standup to 10", "10:00"),
        ("push lunch with Marco to 1", "13:00"),
        ("reschedule the dentist to friday at 3", "15:00"),
        ("remind me to call mom at 6 today", "18:00"),
        ("remind me to call mom at 6pm today", "18:00"),
        ("wake me at 6am", "06:00"),
        ("meet at 9", "09:00"),
        ("meet at 11", "11:00"),
        ("set the count to 10", None),  # no verb that moves a thing in time: a number
        ("add 2 to my list", None),
        ("room 4", None),
    ],
)
def test_times_of_day_as_people_say_them(text: str, expected: str | None) -> None:
    assert time_of_day(moments(text, NOW)) == expected


@given(
    verb=st.sampled_from(["move", "push", "shift", "reschedule", "bump"]),
    thing=st.sampled_from(["my standup", "the dentist", "lunch", "the review"]),
    hour=st.integers(1, 12),
    joins=st.lists(st.sampled_from(["and then", "for the team", "please", "thanks"]), max_size=2),
)
def test_a_moved_thing_gets_its_hour_and_every_span_is_the_requests_own_words(
    verb: str, thing: str, hour: int, joins: list[str]
) -> None:
    text = " ".join([verb, thing, "to", str(hour), *joins])
    found = moments(text, NOW)
    said = normalise(text)
    for m in found:
        assert said[m.start : m.end] == m.text  # the spans are the words, whatever was added to read them
    first = found[0]
    assert first.text == f"to {hour}" and first.has_time
    assert first.when.hour == (hour + 12 if 1 <= hour <= 7 else hour)
