"""``@`` mentions of a server's resource in a message (core/mcp/offers.py): which ``@`` starts one
(the start of a word, after a space or an opening bracket or quote), never the ``@`` inside a word
(an email address, ``user@host``, a decorator in pasted code); what the word typed so far narrows;
and which mentions a sent message names."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from core.mcp.offers import ResourceInfo, mention, mention_at, mention_matching, mentions

RESOURCES = [
    ResourceInfo(server="desk", uri="notes://welcome", name="welcome", description="The welcome note."),
    ResourceInfo(server="desk", uri="notes://{name}", name="note", description="Any note by name.", template=True),
    ResourceInfo(server="wiki", uri="wiki://home", name="home", title="Welcome page"),
]

word_chars = st.text(alphabet=string.ascii_letters + string.digits + "._-+", min_size=1, max_size=12)
domain = st.text(alphabet=string.ascii_lowercase + string.digits + ".-:/", min_size=0, max_size=20)
filler = st.text(alphabet=string.ascii_letters + " \n\t.,;!?()'\"", max_size=20)


@settings(max_examples=150)
@given(before=filler, local=word_chars, host=domain, after=filler, data=st.data())
def test_an_at_inside_a_word_is_never_a_mention(before: str, local: str, host: str, after: str, data) -> None:
    """``local@host`` (an email address and its kin) names nothing, wherever the cursor is."""
    text = f"{before}{local}@{host}{after}"
    at = len(before) + len(local)
    cursor = data.draw(st.integers(0, len(text)))
    found = mention_at(text, cursor)
    assert found is None or found.start != at
    assert mentions(text) == set()  # the text has no other @: nothing is named


@settings(max_examples=150)
@given(before=filler, query=st.text(alphabet=string.ascii_letters + ":/._-{}", max_size=16), after=filler)
def test_a_word_starting_with_at_is_a_mention_up_to_the_cursor(before: str, query: str, after: str) -> None:
    lead = before if not before or before[-1].isspace() else before + " "
    text = f"{lead}@{query} {after}"
    cursor = len(lead) + 1 + len(query)
    found = mention_at(text, cursor)
    assert found is not None
    assert (found.start, found.query, found.span(text)) == (len(lead), query, "@" + query)
    assert "@" + query in mentions(text)


def test_brackets_and_quotes_around_a_mention() -> None:
    text = 'see (@desk:notes://welcome) and "@wiki:wiki://home".'
    assert {"@desk:notes://welcome", "@wiki:wiki://home"} <= mentions(text)
    opened = mention_at("(@wel)", 5)
    assert opened is not None and opened.span("(@wel)") == "@wel"  # the closing bracket is the sentence's
    assert mention_at("x(@wel", 6) is None  # an opener inside a word starts nothing


def test_what_the_word_narrows() -> None:
    assert [r.uri for r in mention_matching(RESOURCES, "")] == [r.uri for r in RESOURCES]
    assert [r.uri for r in mention_matching(RESOURCES, "wel")] == ["notes://welcome", "wiki://home"]
    assert [r.uri for r in mention_matching(RESOURCES, "wiki")] == ["wiki://home"]  # by server
    assert [r.uri for r in mention_matching(RESOURCES, "desk:")] == ["notes://welcome", "notes://{name}"]
    assert [r.uri for r in mention_matching(RESOURCES, "desk:notes://welcome")] == ["notes://welcome"]
    assert [r.uri for r in mention_matching(RESOURCES, "page")] == ["wiki://home"]  # by title
    assert mention_matching(RESOURCES, "nothing") == []
    assert mention(RESOURCES[1], "notes://groceries") == "@desk:notes://groceries"
