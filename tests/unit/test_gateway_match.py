"""Which declared gateway a base URL goes through (issue 23, item 10): a row of the provider
asked about, on the same parsed origin, whose path segments begin the base URL's, the most
specific first. ``dispatch.py`` took the first row whose URL prefixed the base URL, whatever its
provider, so an OpenAI row listed before an Anthropic one hid it; and text prefixes are no way
to compare URLs (``https://api.example.com.evil/``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.deferral.dispatch import Gateway, match_gateway, resolve_strategy, url_place

GW = "https://llm.corp.example/v1"


def test_a_row_of_another_provider_listed_first_does_not_hide_the_right_one() -> None:
    rows = [Gateway(url="https://llm.corp.example", provider="openai"), Gateway(url=GW, provider="anthropic")]
    assert match_gateway(GW + "/messages", rows, "anthropic") == rows[1]
    resolved = resolve_strategy("anthropic", "claude-sonnet-4-5", GW, gateways=rows, env={})
    assert resolved.strategy == "anthropic" and "declared gateway" in resolved.reason
    assert match_gateway(GW, rows, "openai") == rows[0]


def test_the_most_specific_row_answers() -> None:
    rows = [
        Gateway(url="https://llm.corp.example", provider="openai"),
        Gateway(url="https://llm.corp.example/openai/v1", provider="openai", responses_api=True),
    ]
    assert match_gateway("https://llm.corp.example/openai/v1", rows, "openai") == rows[1]
    assert match_gateway("https://llm.corp.example/other", rows, "openai") == rows[0]


LOOKALIKES = [
    "https://llm.corp.example.evil/v1",  # a longer host
    "https://llm.corp.example@evil.example/v1",  # user info, then another host
    "https://evil.example/llm.corp.example/v1",  # the host as a path
    "http://llm.corp.example/v1",  # another scheme is another origin
    "https://llm.corp.example:8443/v1",  # another port
    "https://llm.corp.example/v10",  # not the segment v1
    "https://llm.corp.example/v1x/messages",
    "https://llm.corp.example/v1/../admin",  # .. leaves the gateway's path
    "https://llm.corp.example/V1",  # paths are case-sensitive
    "https://llm.corp.example.:444/v1",
]


def test_lookalike_urls_never_match() -> None:
    rows = [Gateway(url=GW, provider="anthropic")]
    for url in LOOKALIKES:
        assert match_gateway(url, rows, "anthropic") is None, url
        assert resolve_strategy("anthropic", "claude-sonnet-4-5", url, gateways=rows, env={}).strategy == "active-tools"


SPELLINGS = [
    "https://llm.corp.example/v1",
    "https://LLM.Corp.Example/v1",
    "https://llm.corp.example./v1/",
    "https://llm.corp.example:443/v1",
    "HTTPS://llm.corp.example//v1",
    "https://llm.corp.example/./v1/messages",
    "https://llm.corp.example/x/../v1",
    "https://llm.corp.example/%76%31",
    "https://user@llm.corp.example/v1",
    "llm.corp.example/v1",
]


def test_every_spelling_of_the_gateway_matches() -> None:
    rows = [Gateway(url=GW, provider="anthropic")]
    for url in SPELLINGS:
        assert match_gateway(url, rows, "anthropic") == rows[0], (url, url_place(url))


HOSTS = ["llm.corp.example", "gw.example", "llm.corp.example.evil", "evil.example"]
PATHS = [(), ("v1",), ("v1", "messages"), ("v10",), ("openai", "v1"), ("anthropic",)]


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["https", "http"]),
            st.sampled_from(HOSTS),
            st.sampled_from(PATHS),
            st.sampled_from(["anthropic", "openai"]),
        ),
        min_size=1,
        max_size=6,
    ),
    base=st.tuples(st.sampled_from(["https", "http"]), st.sampled_from(HOSTS), st.sampled_from(PATHS)),
    provider=st.sampled_from(["anthropic", "openai"]),
)
def test_the_match_is_the_longest_same_origin_segment_prefix_of_the_right_provider(
    rows: list[tuple[str, str, tuple[str, ...], str]],
    base: tuple[str, str, tuple[str, ...]],
    provider: str,
) -> None:
    table = [Gateway(url=f"{s}://{h}/" + "/".join(p), provider=prov) for s, h, p, prov in rows]  # type: ignore[arg-type]
    scheme, host, path = base
    got = match_gateway(f"{scheme}://{host}/" + "/".join(path), table, provider)
    fitting = [
        (len(p), i)
        for i, (s, h, p, prov) in enumerate(rows)
        if prov == provider and s == scheme and h == host and path[: len(p)] == p
    ]
    if not fitting:
        assert got is None
        return
    longest = max(n for n, _ in fitting)
    first = min(i for n, i in fitting if n == longest)
    assert got == table[first]
