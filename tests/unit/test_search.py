"""Tool search: behaviour of the FTS5 engine, the evaluation maths, and the recall floors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.deferral.search import (
    SearchDoc,
    SearchHit,
    SearchQuery,
    ToolSearchIndex,
    identifier_words,
    query_words,
    schema_text,
)
from core.deferral.search_eval import evaluate, load_queries, load_tools, search_batch

DATA = Path(__file__).resolve().parents[1] / "data" / "toolsearch"
REPO = Path(__file__).resolve().parents[2]


def _tool(name: str, description: str = "", **params: dict) -> SearchDoc:
    return SearchDoc(name, description, {"type": "object", "properties": params})


CATALOG = [
    _tool("mcp.gmail_work.sendMessage", "Deliver a note to a recipient.", to={"type": "string"}),
    _tool("calendar.createEvent", "Put an entry on the calendar.", title={"type": "string"}),
    _tool("fs-read_file", "Return the bytes stored at a path.", path={"type": "string"}),
    _tool("getHTTPResponse", "Fetch a URL.", url={"type": "string"}),
    _tool(
        "books.lookup",
        "Look a record up in the catalogue.",
        isbn_number={"type": "string", "description": "The identifier printed on the back cover."},
    ),
    _tool(
        "media.play",
        "Start playback.",
        genre={"type": "string", "enum": ["jazz", "reggae", "bluegrass"]},
    ),
    _tool(
        "events.find",
        "Find what is on.",
        filters={
            "type": "object",
            "properties": {"venue_capacity": {"type": "integer", "description": "Seats in the hall."}},
        },
    ),
    _tool("weather.current", "Current weather conditions for a city."),
    _tool("agenda.événement", "Crée un événement à Zürich."),
]


@pytest.fixture(scope="module")
def index() -> ToolSearchIndex:
    return ToolSearchIndex(CATALOG)


def top(index: ToolSearchIndex, query: str, k: int = 3) -> list[str]:
    return [h.name for h in index.search(query, k)]


# -- tokenization ----------------------------------------------------------------------------


def test_identifier_words_split_separators_and_camel_case() -> None:
    assert identifier_words("mcp.gmail_work.sendHTTPRequest2") == [
        "mcp",
        "gmail",
        "work",
        "send",
        "HTTP",
        "Request",
        "2",
    ]
    assert identifier_words("fs-read_file") == ["fs", "read", "file"]
    assert identifier_words("Buses_3_FindBus") == ["Buses", "3", "Find", "Bus"]
    assert identifier_words("plain words, here.") == ["plain", "words", "here"]


def test_query_words_drop_stop_words_numbers_and_repeats() -> None:
    assert query_words("Can you please help me send THE message to 3 people, send it!") == [
        "send",
        "message",
        "people",
    ]


def test_schema_text_reads_nested_properties_descriptions_and_enums() -> None:
    names, text = schema_text(
        {
            "type": "object",
            "properties": {
                "orderId": {"type": "string", "description": "The order."},
                "items": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"skuCode": {"enum": ["A1", "B2"]}}},
                },
            },
        }
    )
    assert names.split() == ["order", "Id", "items", "sku", "Code"]
    assert "The order" in text and "A 1" in text and "B 2" in text


# -- ranking behaviour -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("send a message", "mcp.gmail_work.sendMessage"),
        ("sendMessage", "mcp.gmail_work.sendMessage"),
        ("gmail", "mcp.gmail_work.sendMessage"),
        ("create an event", "calendar.createEvent"),
        ("read the file", "fs-read_file"),
        ("http response", "getHTTPResponse"),
    ],
)
def test_names_split_on_dots_underscores_dashes_and_camel_case(index, query, expected) -> None:
    assert top(index, query, 1) == [expected]


def test_parameter_names_descriptions_and_enum_values_are_searched(index) -> None:
    assert top(index, "isbn", 1) == ["books.lookup"]  # parameter name only
    assert top(index, "back cover", 1) == ["books.lookup"]  # parameter description only
    assert top(index, "reggae", 1) == ["media.play"]  # enum value only
    assert top(index, "venue capacity", 1) == ["events.find"]  # nested property name
    assert top(index, "seats in the hall", 1) == ["events.find"]  # nested property description


def test_stemming_matches_other_forms_of_a_word(index) -> None:
    assert top(index, "sending messages", 1) == ["mcp.gmail_work.sendMessage"]
    assert top(index, "reading files", 1) == ["fs-read_file"]


def test_unicode_and_diacritics(index) -> None:
    assert top(index, "evenement zurich", 1) == ["agenda.événement"]
    assert top(index, "Événement", 1) == ["agenda.événement"]
    assert index.search("北京后天的天气如何？", 5) == []


def test_k_is_respected_and_rankings_are_prefixes(index) -> None:
    assert index.search("send", 0) == []
    assert len(index.search("send message file event weather http", 2)) == 2
    many = index.search("send message file event weather http record", 50)
    assert len(many) <= len(CATALOG)
    for k in range(1, len(many) + 1):
        assert index.search("send message file event weather http record", k) == many[:k]
    scores = [h.score for h in many]
    assert scores == sorted(scores, reverse=True)


def test_tools_that_match_nothing_are_not_returned(index) -> None:
    assert top(index, "weather", 10) == ["weather.current"]
    assert index.search("zzzqqq", 5) == []


def test_the_fallback_tier_comes_after_every_plain_match(index) -> None:
    # "calender" is in no tool: the fallback finds "calendar" one edit away; "help" is chat
    # filler, dropped from the plain query, put back when that runs out.
    assert top(index, "calender", 3) == ["calendar.createEvent"]
    ix = ToolSearchIndex([_tool("dartfx_help", "Shows documentation."), _tool("docs.read", "Read docs.")])
    assert top(ix, "help me with the documentation", 5) == ["dartfx_help"]  # plain match only
    assert top(ix, "I need help", 5) == ["dartfx_help"]  # only the fallback matches
    # A typo ranks below every tool the correctly spelt words match, and prefixes do too.
    hits = index.search("weather calender", 10)
    assert [h.name for h in hits] == ["weather.current", "calendar.createEvent"]
    assert hits[0].score > hits[1].score


HOSTILE = [
    "",
    "   ",
    '"AND OR (',
    "NEAR",
    "NEAR(send message, 2)",
    "AND",
    "OR OR OR",
    "NOT send",
    '"',
    "'''",
    '""""',
    "send*",
    "^send",
    "name:send",
    "{name description}: send",
    "send + message - file",
    ")))(((",
    "\x00\x01\x02",
    "send\x00message",
    "🙂🚀 send 🙂",
    "x" * 50_000,
    " ".join(f"word{i}" for i in range(5_000)),
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(index, query) -> None:
    hits = index.search(query, 5)
    assert isinstance(hits, list) and len(hits) <= 5
    assert all(isinstance(h, SearchHit) for h in hits)


def test_fts_keywords_are_plain_words(index) -> None:
    # "NOT send" must not exclude matches for "send": every word is a quoted string.
    assert "mcp.gmail_work.sendMessage" in top(index, "NOT send", 5)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_a_valid_query(query: str) -> None:
    hits = _SHARED.search(query, 3)
    assert len(hits) <= 3


_SHARED = ToolSearchIndex(CATALOG)


# -- building ------------------------------------------------------------------------------------


def test_accepts_toolspecs_mappings_and_docs() -> None:
    from core.tools import Origin, ToolSpec

    spec = ToolSpec(
        name="mcp.crm.findCustomer",
        description="Locate a customer record.",
        input_schema={"type": "object", "properties": {"email": {"type": "string"}}},
        origin=Origin.DISCOVERED,
    )
    mapping = {"name": "crm.deleteCustomer", "description": "Remove one.", "inputSchema": {}}
    ix = ToolSearchIndex([spec, mapping, SearchDoc("noop")])
    assert len(ix) == 3 and "noop" in ix
    assert top(ix, "find customer", 1) == ["mcp.crm.findCustomer"]
    assert top(ix, "delete customer", 1) == ["crm.deleteCustomer"]
    with pytest.raises(ValueError):
        ToolSearchIndex([{"description": "no name"}])


def test_add_is_incremental_and_replaces_by_name() -> None:
    ix = ToolSearchIndex([_tool("a.alpha", "Shovels snow.")])
    assert top(ix, "snow") == ["a.alpha"]
    ix.add([_tool("b.beta", "Waters plants.")])
    assert top(ix, "plants") == ["b.beta"] and len(ix) == 2
    ix.add([_tool("a.alpha", "Polishes brass.")])
    assert len(ix) == 2
    assert top(ix, "snow") == []
    assert top(ix, "brass") == ["a.alpha"]
    assert ix.names() == ["a.alpha", "b.beta"]


def test_empty_index() -> None:
    ix = ToolSearchIndex()
    assert len(ix) == 0 and ix.search("anything", 5) == []
    assert evaluate(ix, [SearchQuery("q", "anything", ("x",))])["overall"]["recall@5"] == 0.0


def test_import_is_light() -> None:
    code = (
        "import sys, core.deferral.search\n"
        "heavy = {'textual', 'anthropic', 'openai', 'mcp', 'sqlite_utils', 'pydantic'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- evaluation maths ---------------------------------------------------------------------------


class _FixedIndex:
    """Returns a fixed ranking per query, to check the metric arithmetic by hand."""

    def __init__(self, rankings: dict[str, list[str]]) -> None:
        self.rankings = rankings

    def __len__(self) -> int:
        return 100

    def search(self, query: str, k: int = 5) -> list[SearchHit]:
        return [SearchHit(n, 1.0) for n in self.rankings[query][:k]]


def test_evaluate_recall_and_mrr_by_hand() -> None:
    ix = _FixedIndex(
        {
            "q1": ["a", "b", "c"],  # relevant a at rank 1
            "q2": ["x", "y", "b", "z", "w", "v"],  # relevant b at 3, v at 6
            "q3": ["x"],  # relevant never ranked
        }
    )
    queries = [
        SearchQuery("1", "q1", ("a",), "simple"),
        SearchQuery("2", "q2", ("b", "v"), "live_multiple"),
        SearchQuery("3", "q3", ("c",), "live_simple"),
        SearchQuery("4", "q1", (), "simple"),  # no labels: skipped
    ]
    r = evaluate(ix, queries, ks=(1, 5))
    assert r["skipped"] == 1
    # overall: recall@1 (1 + 0 + 0) / 3; recall@5 (1 + 1/2 + 0) / 3; MRR (1 + 1/3 + 0) / 3;
    # unranked: q3 alone has no relevant tool anywhere in its ranking
    assert r["overall"] == {
        "queries": 3,
        "recall@1": round(1 / 3, 4),
        "recall@5": 0.5,
        "mrr": round(4 / 9, 4),
        "unranked": round(1 / 3, 4),
    }
    # live: q2 and q3 only
    assert r["live"] == {
        "queries": 2,
        "recall@1": 0.0,
        "recall@5": 0.25,
        "mrr": round(1 / 6, 4),
        "unranked": 0.5,
    }
    assert r["synthetic"] == {
        "queries": 1,
        "recall@1": 1.0,
        "recall@5": 1.0,
        "mrr": 1.0,
        "unranked": 0.0,
    }


def test_search_batch_lines(index) -> None:
    lines = search_batch(index, [SearchQuery("q1", "read a file"), SearchQuery("q2", "")], k=2)
    assert lines[0]["id"] == "q1" and lines[0]["ranked"][0] == "fs-read_file"
    assert lines[1] == {"id": "q2", "ranked": []}
    json.dumps(lines)


# -- loaders -------------------------------------------------------------------------------------


def test_loaders_validate_lines(tmp_path: Path) -> None:
    good = tmp_path / "q.jsonl"
    good.write_text('{"id": "a", "query": "x", "relevant": ["t"], "candidates": [], "extra": 1}\n\n')
    assert load_queries(good) == [SearchQuery("a", "x", ("t",), "")]
    bad = tmp_path / "t.jsonl"
    bad.write_text('{"name": "ok", "description": "", "input_schema": {}}\n{"description": "no name"}\n')
    with pytest.raises(ValueError, match=r"t\.jsonl:2"):
        load_tools(bad)
    bad.write_text("{not json\n")
    with pytest.raises(ValueError, match=r"t\.jsonl:1"):
        load_tools(bad)


# -- quality gate on the bundled development data ------------------------------------------------


@pytest.fixture(scope="module")
def dev_figures() -> dict:
    tools = load_tools(DATA / "tools.jsonl")
    queries = load_queries(DATA / "queries_dev.jsonl")
    assert len(tools) == 1853 and len(queries) == 1178
    return evaluate(ToolSearchIndex(tools), queries, ks=(1, 5, 10))  # whole catalog: unranked too


def test_recall_floors_on_dev_data(dev_figures) -> None:
    # Issue 4 targets; plain BM25 over names, descriptions and parameters gets 0.79 / 0.72.
    assert dev_figures["overall"]["recall@5"] >= 0.85, dev_figures
    assert dev_figures["live"]["recall@5"] >= 0.78, dev_figures
    assert dev_figures["live"]["queries"] + dev_figures["synthetic"]["queries"] == 1178


def test_unranked_share_on_dev_data(dev_figures) -> None:
    # Issue 14: no relevant tool anywhere in the whole-catalog ranking was 26 of 1,178 queries
    # (2.2%) before the fallback tier; most that are left are in scripts no tool is written in.
    assert dev_figures["overall"]["unranked"] <= 0.021, dev_figures
    assert dev_figures["overall"]["recall@5"] >= 0.875, dev_figures  # no worse than before


# -- everyday requests over the production roster --------------------------------------------


@pytest.fixture(scope="module")
def production() -> ToolSearchIndex:
    from core.deferral.search_eval import roster_tools

    return ToolSearchIndex(roster_tools("production"))


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("send email", "send_message"),
        ("send an email to my sister", "send_message"),
        ("reply to a mail", "send_message"),
        ("list my files", "workspace.search"),
        ("what time is it in Tokyo?", "time.now"),
        ("what time is it in London right now", "time.now"),
        ("unsubscribe me from a newsletter", "email.unsubscribe"),
        ("what's on my to-do list", "tasks.list"),
    ],
)
def test_the_obvious_tool_ranks_first_for_everyday_requests(production, query, first) -> None:
    best = production.search(query, 1)[0].name
    assert best == first or best.endswith("." + first), production.search(query, 5)


def test_everyday_floor(production) -> None:
    figures = evaluate(production, load_queries(DATA / "queries_everyday.jsonl"), ks=(1, 3))["overall"]
    # Before the lead column, the own-name coverage and the vocabulary: MRR 0.654, 35 of 62 first.
    assert figures["mrr"] >= 0.72, figures
    assert figures["recall@3"] >= 0.78, figures
