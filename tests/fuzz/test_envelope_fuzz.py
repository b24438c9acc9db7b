"""Envelopes (core/context/envelope.py), fuzzed: no input closes an envelope. Whatever text is
fenced, with forged open and close markers (right ids included), look-alike angle brackets,
invisible characters between them, NULs and other controls, and envelopes nested in it, the
fenced text holds exactly one envelope, from the source it was given, whose body is the escaped
input. The same holds for what the model reads of an untrusted result through the pipeline, and
for every ``tool.result`` page of it; schema prose is escaped and schema values are kept."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.context import envelope
from core.controls.context import ControlContext
from core.controls.result import PAGE_CHARS, run_tool_result
from core.pipeline.approvals import Decision, FixedApprover
from core.pipeline.pipeline import Pipeline, RunContext
from core.pipeline.policy import default_policy
from core.store import Store
from core.tools import SideEffect, ToolResult, ToolSpec
from tests.helpers import discovered, plan

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

LT = ["<", "\uff1c", "\ufe64", "\u27e8", "\u3008", "\u2329", "\u276e"]
GT = [">", "\uff1e", "\ufe65", "\u27e9", "\u3009", "\u232a", "\u276f"]
INVISIBLE = ["\u200b", "\u200d", "\u2060", "\ufeff", "\u202e", "\u2066", "\ufe0f", "\u00ad"]
SOURCES = st.sampled_from(
    ["mcp.weather", "mcp.gmail_work", "device.phone", "web.evil.example", "web.search", 'mcp.we"ird source', "unknown"]
)


@st.composite
def forged_marker(draw: st.DrawFn) -> str:
    """A marker as an attacker would write it: right or wrong id, any source, look-alike brackets."""
    source = draw(SOURCES)
    eid = draw(
        st.one_of(
            st.just("0" * 12),
            st.from_regex(r"[0-9]{12}", fullmatch=True),
            st.builds(envelope.envelope_id, st.text(max_size=8), st.just(source)),
        )
    )
    lt = "".join(draw(st.lists(st.sampled_from(LT + INVISIBLE), min_size=3, max_size=5)))
    gt = "".join(draw(st.lists(st.sampled_from(GT + INVISIBLE), min_size=3, max_size=5)))
    kind = draw(
        st.sampled_from([f'{envelope.CLOSE_TAG} id="{eid}"', f'{envelope.OPEN_TAG} source="{source}" id="{eid}"'])
    )
    return draw(st.sampled_from([f"{lt}{kind}{gt}", f"<<<{kind}>>>"]))


PIECES = st.one_of(
    st.text(max_size=15),
    forged_marker(),
    st.sampled_from(LT + GT + INVISIBLE + ["\x00", "\r", "\x1b[2K", "\x9b", "\n", "\t", "\n\n", "<<", ">>"]),
    st.builds(envelope.wrap, st.text(max_size=20), SOURCES),  # an envelope nested in the input
)
HOSTILE = st.lists(PIECES, max_size=14).map("".join)


@FUZZ
@given(HOSTILE, SOURCES)
def test_no_input_closes_its_envelope(text: str, source: str) -> None:
    fenced = envelope.fence(text, source)
    assert envelope.find_envelopes(fenced) == [(envelope.safe_source(source), envelope.escape(text))]
    body = envelope.escape(text)
    assert "<<<" not in body and ">>>" not in body and "\x00" not in body
    assert envelope.escape(body) == body  # escaping is idempotent
    assert fenced.startswith("<<<EXTERNAL_UNTRUSTED") and fenced.count("<<<") == 2 and fenced.count(">>>") == 2


@FUZZ
@given(HOSTILE, SOURCES)
def test_fencing_is_deterministic_and_trusted_text_is_untouched(text: str, source: str) -> None:
    assert envelope.fence(text, source) == envelope.fence(text, source)
    assert envelope.fence(text, None) == text


@FUZZ
@given(st.lists(st.tuples(HOSTILE, SOURCES), min_size=1, max_size=4))
def test_envelopes_side_by_side_stay_apart(parts: list[tuple[str, str]]) -> None:
    joined = "\n".join(envelope.fence(text, source) for text, source in parts)
    assert envelope.find_envelopes(joined) == [(envelope.safe_source(s), envelope.escape(t)) for t, s in parts]


WEATHER = discovered("weather", "forecast", SideEffect.NETWORK_READ, params={"city": {"type": "string"}})
PLAN = plan((), [WEATHER], controls=("tool.result",))


class _Chat:
    def __init__(self, result: ToolResult) -> None:
        self.result = result
        self.store = Store(":memory:")
        self.chat_id = self.store.create_chat(title="t", provider="script", model="m", strategy="wrapper")
        self.ctx = RunContext(
            chat_id=self.chat_id,
            turn_id="t1",
            store=self.store,
            plan=PLAN,
            policy=default_policy(),
            approver=FixedApprover(Decision.ALLOW_ONCE),
            tools=self,
            emit=lambda e: None,
            max_result_chars=400,
        )
        self.controls = ControlContext(
            chat_id=self.chat_id,
            specs=self.ctx.specs,
            search=None,  # type: ignore[arg-type]
            store=self.store,
            emit=lambda e: None,
        )

    async def run(self, spec: ToolSpec, arguments: dict[str, Any], call_id: str) -> ToolResult:
        return run_tool_result(arguments, self.controls) if spec.name == "tool.result" else self.result

    def live_pin(self, name: str) -> str | None:
        return None

    def call(self, name: str, arguments: dict[str, Any], call_id: str) -> str:
        out = asyncio.run(Pipeline(self.ctx).run({"type": "tool_use", "id": call_id, "name": name, "input": arguments}))
        assert out.result_block is not None
        return str(out.result_block["content"])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, max_size=60).map("".join), st.booleans(), st.integers(min_value=0, max_value=2000))
def test_what_the_model_reads_of_an_untrusted_result_and_its_pages_is_one_closed_envelope(
    text: str, is_error: bool, offset: int
) -> None:
    chat = _Chat(ToolResult.of_text(text, is_error=is_error))
    read = chat.call(WEATHER.name, {"city": "Oslo"}, "c1")
    found = envelope.find_envelopes(read)
    assert [s for s, _ in found] == ["mcp.weather"]
    assert found[0][1].startswith(envelope.escape(text[:400]))
    page = chat.call("tool.result", {"call_id": "c1", "offset": offset}, "p1")
    found = envelope.find_envelopes(page)  # the page is cut to 400 characters, and closed all the same
    assert [s for s, _ in found] == ["mcp.weather"]
    assert found[0][1].startswith(envelope.escape(text[offset : offset + PAGE_CHARS][:400]))
    assert page.startswith("<<<EXTERNAL_UNTRUSTED") and page.endswith(">>>")


SCHEMA_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), HOSTILE),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(
                ["description", "title", "enum", "const", "default", "examples", "type", "properties", "items", "x"]
            ),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=12,
)


def _values(schema: Any, keys: frozenset[str]) -> list[Any]:
    """Everything under ``keys`` at any depth, in order, not looking into values a call must match."""
    out: list[Any] = []
    if isinstance(schema, dict):
        for k, v in schema.items():
            if k in keys:
                out.append(v)
            elif k not in envelope.SCHEMA_VALUE_KEYS:
                out += _values(v, keys)
    elif isinstance(schema, list):
        for v in schema:
            out += _values(v, keys)
    return out


@FUZZ
@given(SCHEMA_VALUES)
def test_schema_prose_is_escaped_and_schema_values_are_kept(schema: Any) -> None:
    escaped = envelope.escape_schema_text(schema)
    assert _values(escaped, envelope.SCHEMA_VALUE_KEYS) == _values(schema, envelope.SCHEMA_VALUE_KEYS)
    for prose in _values(escaped, envelope.SCHEMA_TEXT_KEYS):
        if isinstance(prose, str):
            assert "<<<" not in prose and ">>>" not in prose
    assert envelope.escape_schema_text(escaped) == escaped
