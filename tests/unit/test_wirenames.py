"""Wire names: legal, collision-free over a set, exactly reversible, stable per name."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from core.providers.wirenames import (
    HASH_LEN,
    MAX_WIRE_LEN,
    WireNames,
    decode_wire,
    encode,
    function_tool_names,
    history_tool_names,
    is_legal,
)

# Names the way they come: dotted internal names, MCP tool names with odd characters, anything.
segment = st.text(alphabet=string.ascii_letters + string.digits + "_-", min_size=1, max_size=30)
dotted = st.lists(segment, min_size=1, max_size=5).map(".".join)
wild = st.text(min_size=1, max_size=200)
names = st.one_of(dotted, wild, st.sampled_from(["a__b", "a.b", "a_.b", "a._b", ".", "__", "_", "x" * 64, "x" * 65]))


def test_readable_forms():
    assert encode("tool.call") == "tool__call"
    assert encode("mcp.gmail_work.send_message") == "mcp__gmail_work__send_message"
    assert encode("get_weather") == "get_weather"
    assert encode("mcp.my-server.get-thing") == "mcp__my-server__get-thing"


def test_hashed_forms_keep_a_readable_stem():
    native_double = encode("a__b")  # would decode to "a.b": hashed to stay reversible
    assert native_double.startswith("a__b_") and len(native_double) == len("a__b_") + HASH_LEN
    long = "mcp." + "very_long_server_name." * 3 + "send_message"
    wire = encode(long)
    assert len(wire) == MAX_WIRE_LEN and is_legal(wire)
    assert wire.startswith("mcp__very_long_serve") and "send_message_" in wire  # head and tail survive
    assert is_legal(encode("mcp.wëird server.tööl/x"))


def test_an_engineered_collision_is_resolved():
    # "a.b_<hash>" is readable and encodes exactly to what "a__b" hashes to.
    twin = decode_wire(encode("a__b"))
    assert encode(twin) == encode("a__b")
    table = WireNames(["a__b", twin])
    assert table.wire(twin) == encode(twin)  # the readable name keeps its form
    assert table.wire("a__b") != table.wire(twin) and is_legal(table.wire("a__b"))
    assert table.internal(table.wire("a__b")) == "a__b" and table.internal(table.wire(twin)) == twin


@settings(max_examples=150, deadline=None)
@given(st.lists(names, min_size=1, max_size=40))
def test_round_trip_legal_and_collision_free(batch):
    table = WireNames(batch)
    wires = [table.wire(n) for n in set(batch)]
    assert len(set(wires)) == len(wires)
    for name in set(batch):
        wire = table.wire(name)
        assert is_legal(wire) and len(wire) <= MAX_WIRE_LEN
        assert table.internal(wire) == name
        assert table.resolve(wire) == (name, None)


@settings(max_examples=100, deadline=None)
@given(st.lists(names, min_size=1, max_size=30), st.randoms())
def test_order_independent_and_stable_per_name(batch, rnd):
    shuffled = list(batch)
    rnd.shuffle(shuffled)
    assert dict(WireNames(batch).items()) == dict(WireNames(shuffled).items())
    # Without an engineered collision, a name's wire form does not depend on its neighbours,
    # so the tools array stays byte-identical as history grows.
    table = WireNames(batch)
    assert all(table.wire(n) == encode(n) for n in batch)


@given(dotted)
def test_dotted_names_are_readable_unless_ambiguous(name):
    # "__" would decode to a dot, and "_." encodes to "___", which decodes to "._": both get hashed.
    readable = "__" not in name and "_." not in name and len(name.replace(".", "__")) <= MAX_WIRE_LEN
    assert (encode(name) == name.replace(".", "__")) == readable
    if readable:
        assert decode_wire(encode(name)) == name


@given(st.text(alphabet=string.ascii_letters + string.digits + "_-", min_size=1, max_size=64))
def test_unknown_wire_names_decode_to_a_name_that_encodes_back(wire):
    table = WireNames(["tool.call"])
    name, raw = table.resolve(wire)
    if wire != "tool__call":
        assert raw == wire
        assert encode(name) == wire  # an invented name stays as the model wrote it in history


def test_names_a_request_mentions():
    tools = [
        {"name": "tool.call"},
        {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
        {"type": "namespace", "name": "mail", "tools": [{"type": "function", "name": "mcp.mail.send"}]},
        {"type": "tool_search"},
    ]
    assert list(function_tool_names(tools)) == ["tool.call", "mcp.mail.send"]
    messages = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "1", "name": "mcp.old.tool", "input": {}},
                {
                    "type": "tool_search_tool_result",
                    "tool_use_id": "s",
                    "content": {
                        "type": "tool_search_tool_search_result",
                        "tool_references": [{"type": "tool_reference", "tool_name": "a.b"}],
                    },
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "1",
                    "content": [{"type": "tool_reference", "tool_name": "c.d"}, {"type": "text", "text": "x"}],
                }
            ],
        },
    ]
    assert list(history_tool_names(messages)) == ["mcp.old.tool", "a.b", "c.d"]
    table = WireNames.for_request(tools, messages)
    assert "mcp.old.tool" in table and len(table) == 5
