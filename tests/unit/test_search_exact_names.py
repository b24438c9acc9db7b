"""Issue 14, item 2: a search that names a deferred tool returns it first, whatever form the name
takes as the model writes it (internal dotted, wire, server plus tool in any separator or case,
bare, ``select:`` or quoted), through ``ToolSearchIndex``, ``tool.search``, the client-executed
native search and ``deferchat search``."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core.cli import main
from core.controls.search import DeferredSearch, run_tool_search
from core.deferral.search import SearchDoc, ToolSearchIndex, name_forms, name_key
from core.deferral.strategies import make_strategy
from core.providers.wirenames import WireNames, encode, is_legal, readable
from tests.helpers import production_plan

# -- the production roster ---------------------------------------------------------------------

PLAN = production_plan(strategy="active-tools")
SPECS = {n: PLAN.spec_of(n) for n in PLAN.pinned_names()}
DEFERRED = list(PLAN.deferred_tool_names)
INDEX = ToolSearchIndex([SPECS[n] for n in DEFERRED])  # what DeferredSearch builds
WIRE = WireNames(DEFERRED)  # the table every provider adapter builds from the names it sends


def top(index: ToolSearchIndex, query: str, k: int = 5) -> list[str]:
    return [h.name for h in index.search(query, k)]


def bare(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def sharing_bare(names: list[str], tool: str) -> list[str]:
    """Every tool whose bare name is the same as ``tool``'s, in the stable (name) order."""
    return sorted(n for n in names if name_key(bare(n)) == name_key(bare(tool)))


def server_tool_spellings(name: str) -> list[str]:
    """``mcp.gmail_work.send_message`` -> ``gmail_work.send_message``, ``gmail_work/send_message``,
    ``gmail_work:send_message``, ``gmail_work__send_message``, ``gmail-work send_message``, in
    several cases, camelCase too; ``schedule.pause`` -> the same spellings of the whole name."""
    parts = name.split(".")
    server, tool = (parts[1], parts[2]) if parts[0] == "mcp" else (parts[0], parts[1])
    camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), f"{server}.{tool}")
    spellings = [f"{server}{sep}{tool}" for sep in (".", "/", ":", "__", " ")]
    spellings += [f"{server.replace('_', '-')} {tool}", f"{server.replace('_', '-')}/{tool}", camel]
    spellings += [s.upper() for s in spellings[:3]] + [s.title() for s in spellings[:2]]
    if parts[0] == "mcp":
        spellings += [f"mcp/{server}/{tool}", f"MCP:{server}:{tool}"]
    return spellings


def wrapped(form: str) -> list[str]:
    """A name as a query: as is, ``select:``, quoted three ways, with trailing punctuation."""
    return [form, f"select:{form}", f'"{form}"', f"'{form}'", f"`{form}`", f"  {form}?  "]


def in_a_sentence(form: str) -> list[str]:
    return [f"please use {form} for this", f"call `{form}` with the draft", f"Can you run '{form}' now?"]


def test_production_roster_has_the_cases_this_file_is_about() -> None:
    # A bare name two servers share, and MCP and built-in deferred tools.
    assert sharing_bare(DEFERRED, "mcp.gmail_work.send_message") == [
        "mcp.gmail_personal.send_message",
        "mcp.gmail_work.send_message",
    ]
    assert "schedule.pause" in DEFERRED and "mcp.bland_call.start_call" in DEFERRED
    assert all(is_legal(WIRE.wire(n)) for n in DEFERRED)


@pytest.mark.parametrize("name", DEFERRED)
def test_internal_and_wire_names_come_first(name: str) -> None:
    wire = WIRE.wire(name)
    assert wire == encode(name) == readable(name)  # these names keep the readable form
    for form in {name, wire, name.upper(), wire.lower()}:
        for query in wrapped(form):
            assert top(INDEX, query, 1) == [name], query


@pytest.mark.parametrize("name", DEFERRED)
def test_server_plus_tool_in_any_separator_and_case(name: str) -> None:
    for form in server_tool_spellings(name):
        for query in wrapped(form):
            assert top(INDEX, query, 1) == [name], query


@pytest.mark.parametrize("name", DEFERRED)
def test_bare_names_bring_every_tool_of_that_name_first_in_a_stable_order(name: str) -> None:
    expected = sharing_bare(DEFERRED, name)
    for form in (bare(name), bare(name).upper(), bare(name).replace("_", "-"), bare(name).replace("_", " ")):
        for query in wrapped(form):
            assert top(INDEX, query, len(expected)) == expected, query
    # the same order whichever order the tools were indexed in
    reverse = ToolSearchIndex([SPECS[n] for n in reversed(DEFERRED)])
    assert top(reverse, bare(name), len(expected)) == expected


@pytest.mark.parametrize("name", DEFERRED)
def test_names_mentioned_in_running_text(name: str) -> None:
    for form in (name, WIRE.wire(name), server_tool_spellings(name)[0], server_tool_spellings(name)[1]):
        for query in in_a_sentence(form):
            assert top(INDEX, query, 1) == [name], query
    # a bare name in running text: every tool of that name, first
    expected = sharing_bare(DEFERRED, name)
    if "_" in bare(name):  # shaped like an identifier; a plain word in a sentence is just a word
        for query in in_a_sentence(bare(name)):
            assert top(INDEX, query, len(expected)) == expected, query


def test_server_plus_tool_picks_that_server_only() -> None:
    assert top(INDEX, "gmail-work send_message", 2)[0] == "mcp.gmail_work.send_message"
    assert INDEX.exact("gmail-work send_message") == ["mcp.gmail_work.send_message"]
    assert INDEX.exact("gmail_personal/send_message") == ["mcp.gmail_personal.send_message"]
    assert INDEX.exact("send_message") == ["mcp.gmail_personal.send_message", "mcp.gmail_work.send_message"]


def test_select_lists_keep_the_order_they_were_written_in() -> None:
    query = "select:mcp__gmail_work__trash_thread, schedule.pause,bland_call/start_call"
    assert top(INDEX, query, 3) == ["mcp.gmail_work.trash_thread", "schedule.pause", "mcp.bland_call.start_call"]
    assert top(INDEX, "SELECT: Schedule.Resume", 1) == ["schedule.resume"]
    # a select of something that is not there names nothing, and the words still search
    assert INDEX.exact("select:no_such_tool") == []


def test_exact_hits_do_not_disturb_the_rest_of_the_ranking() -> None:
    query = "mcp.gmail_work.send_message"
    hits = INDEX.search(query, 10)
    names = [h.name for h in hits]
    assert names[0] == query and len(set(names)) == len(names)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    for k in range(1, 11):
        assert INDEX.search(query, k) == hits[:k]  # still a prefix
    assert INDEX.exact("send an email to my boss") == []  # plain words name nothing
    assert INDEX.exact("") == [] and INDEX.exact("send") == []


# -- names the wire form hashes ----------------------------------------------------------------

LONG = [
    "mcp.acme_enterprise_resource_planning_connector.synchronise_purchase_order_line_items",
    "mcp.acme_enterprise_resource_planning_connector.synchronise_purchase_order_headers",
    "mcp.legacy__bridge.fetch__record",  # a native "__": the readable form would not decode back
    "mcp.files.read file",  # a character no provider accepts
    "mcp.observability_platform_with_a_very_long_name.query_metrics_over_a_time_window",
]
LONG_INDEX = ToolSearchIndex(
    [
        SearchDoc(n, f"Tool number {i} of the long-name roster: purchase orders, records and metrics.")
        for i, n in enumerate(LONG)
    ]
    + [SearchDoc("mcp.other.synchronise_purchase_order_line_items", "Another server's tool of the same name.")]
)


@pytest.mark.parametrize("name", LONG)
def test_hashed_wire_names_come_first(name: str) -> None:
    wire = WireNames([*LONG, "mcp.other.synchronise_purchase_order_line_items"]).wire(name)
    assert wire != readable(name) and is_legal(wire)  # hashed: the case this test is about
    assert wire == encode(name)
    for query in (*wrapped(wire), *in_a_sentence(wire)):
        assert top(LONG_INDEX, query, 1) == [name], query
    for query in wrapped(name):
        assert top(LONG_INDEX, query, 1) == [name], query
    server, tool = name.split(".", 2)[1:]
    for form in (f"{server}.{tool}", f"{server}/{tool}", f"{server.replace('_', '-')} {tool}"):
        assert top(LONG_INDEX, form, 1) == [name], form


def test_a_long_bare_name_two_servers_share() -> None:
    expected = [
        "mcp.acme_enterprise_resource_planning_connector.synchronise_purchase_order_line_items",
        "mcp.other.synchronise_purchase_order_line_items",
    ]
    assert top(LONG_INDEX, "synchronise_purchase_order_line_items", 2) == expected
    assert top(LONG_INDEX, "other:synchronise_purchase_order_line_items", 1) == [expected[1]]


def test_name_forms_are_the_documented_ones() -> None:
    assert name_forms("mcp.gmail_work.send_message") == [
        (0, "mcp.gmail_work.send_message"),
        (0, "mcp__gmail_work__send_message"),
        (1, "gmail_work.send_message"),
        (2, "send_message"),
    ]
    assert name_key("Gmail-Work/sendMessage") == name_key("gmail_work.send_message") == "gmailworksendmessage"


def test_spelling_decides_between_names_that_differ_only_in_separators() -> None:
    ix = ToolSearchIndex(
        [
            SearchDoc("calculateFinalVelocity"),
            SearchDoc("calculate_final_velocity"),
            SearchDoc("mcp.physics.calculate_final_velocity"),
        ]
    )
    assert top(ix, "calculate_final_velocity", 3) == [
        "calculate_final_velocity",
        "mcp.physics.calculate_final_velocity",
        "calculateFinalVelocity",
    ]
    assert top(ix, "calculateFinalVelocity", 1) == ["calculateFinalVelocity"]


# -- through tool.search, the client-executed native search and deferchat search ---------------


def _deferred_search() -> tuple[DeferredSearch, list[object]]:
    emitted: list[object] = []
    strategy = make_strategy("active-tools", PLAN, "BASE", SPECS)
    return DeferredSearch(PLAN, SPECS, strategy, emitted.append), emitted


@pytest.mark.parametrize(
    "query",
    [
        "gmail-work send_message",
        "mcp__gmail_work__send_message",
        "select:mcp.gmail_work.send_message",
        "GMAIL_WORK:SEND_MESSAGE",
    ],
)
def test_tool_search_loads_the_named_tool_first(query: str) -> None:
    search, _ = _deferred_search()
    result = run_tool_search({"query": query, "limit": 3}, SimpleNamespace(search=search, specs=SPECS))
    assert result.structured["loaded"][0] == "mcp.gmail_work.send_message"


def test_client_executed_native_search_answers_the_named_tool_first() -> None:
    search, _ = _deferred_search()
    answer = search.answer_client_search("ts_1", {"query": "bland_call/start_call"})
    assert answer["content"][0] == {"type": "tool_reference", "tool_name": "mcp.bland_call.start_call"}
    # several queries: DeferredSearch.rank takes each query's first, then each one's second...
    answer = search.answer_client_search("ts_2", {"queries": ["schedule__pause", "send_draft"]})
    refs = [c["tool_name"] for c in answer["content"]]
    assert refs[:2] == ["schedule.pause", "mcp.gmail_personal.send_draft"]
    assert refs[3] == "mcp.gmail_work.send_draft"  # the second query's second: its other exact hit


@pytest.mark.usefixtures("home")
@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("gmail-work send_message", "mcp.gmail_work.send_message"),
        ("send_message", "mcp.gmail_personal.send_message"),
        ("mcp__bland_call__start_call", "mcp.bland_call.start_call"),
    ],
)
def test_deferchat_search_shows_the_same(capsys, query: str, first: str) -> None:
    assert main(["search", query, "--json", "-k", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [h["name"] for h in out["hits"]] == top(INDEX, query, 3)
    assert out["hits"][0]["name"] == first


# -- the property ------------------------------------------------------------------------------

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=7)
_PART = st.lists(_WORD, min_size=1, max_size=3)  # a server or tool name, as words
_VOCAB = ["send", "message", "draft", "mail", "work", "read", "file", "list", "search", "create"]


@st.composite
def rosters(draw: st.DrawFn) -> list[SearchDoc]:
    """Up to 12 tools ``mcp.<server>.<tool>`` (some servers share tool names), descriptions
    that repeat other tools' name words, so BM25 alone would often put another tool first."""
    servers = draw(st.lists(_PART, min_size=1, max_size=4, unique_by=tuple))
    tools = draw(st.lists(_PART, min_size=1, max_size=5, unique_by=tuple))
    pairs = draw(
        st.lists(
            st.tuples(st.sampled_from(servers), st.sampled_from(tools)),
            min_size=1,
            max_size=12,
            unique_by=lambda p: (tuple(p[0]), tuple(p[1])),
        )
    )
    words = sorted({w for s, t in pairs for w in (*s, *t)} | set(_VOCAB))
    docs = []
    for server, tool in pairs:
        description = " ".join(draw(st.lists(st.sampled_from(words), max_size=12)))
        docs.append(SearchDoc(f"mcp.{'_'.join(server)}.{'_'.join(tool)}", description))
    return docs


def _join(words: list[str], sep: str) -> str:
    if sep == "camel":
        return words[0] + "".join(w.title() for w in words[1:])
    return sep.join(words)


def _case(text: str, how: str) -> str:
    return {"lower": text.lower(), "upper": text.upper(), "title": text.title(), "as is": text}[how]


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


@st.composite
def a_tool_and_a_form(draw: st.DrawFn) -> tuple[list[SearchDoc], str, str, str]:
    docs = draw(rosters())
    doc = draw(st.sampled_from(docs))
    _, server, tool = doc.name.split(".")
    kind = draw(st.sampled_from(["internal", "wire", "server+tool", "bare"]))
    inner = draw(st.sampled_from(["_", "-", "camel"]))  # between the words of the server or the tool
    outer = draw(st.sampled_from([".", "/", ":", "__", " ", "_"]))  # between server and tool
    s_words, t_words = server.split("_"), tool.split("_")
    form = {
        "internal": doc.name,
        "wire": encode(doc.name),
        "server+tool": f"{_join(s_words, inner)}{outer}{_join(t_words, inner)}",
        "bare": _join(t_words, inner),
    }[kind]
    form = _case(form, draw(st.sampled_from(["lower", "upper", "title", "as is"])))
    wrap = draw(st.sampled_from(["{}", "select:{}", '"{}"', "`{}`", "'{}'", "{} "]))
    return docs, doc.name, kind, wrap.format(form)


def _every_form(name: str) -> list[str]:
    _, server, tool = name.split(".")
    return [name, encode(name), f"{server}.{tool}", tool]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a_tool_and_a_form())
def test_any_name_form_of_any_deferred_tool_is_the_top_hit(case: tuple[list[SearchDoc], str, str, str]) -> None:
    docs, name, kind, query = case
    key = _squash(query.removeprefix("select:").removeprefix("SELECT:"))
    assume(key)
    # The tools the query spells, by this test's own reading of the name forms: usually the tool
    # alone; several when names differ only in separators or a bare name is shared.
    named = sorted(d.name for d in docs if any(_squash(f) == key for f in _every_form(d.name)))
    assert name in named
    ix = ToolSearchIndex(docs)
    hits = top(ix, query, len(named))
    assert sorted(hits) == named, (kind, query, hits)
    if len(named) == 1:
        assert hits == [name]
    assert top(ToolSearchIndex(list(reversed(docs))), query, len(named)) == hits  # a stable order
