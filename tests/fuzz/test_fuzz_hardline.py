"""Hardline canonicalisation (core/pipeline/canonical.py and the rules in core/pipeline/policy.py),
fuzzed: formatted variants of forbidden values never get past a rule, through the policy or the
whole pipeline, and every canonical form is idempotent."""

from __future__ import annotations

import asyncio
import os
import string
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core.net.host import HostError, canonical_host
from core.pipeline import codes
from core.pipeline.approvals import Decision, FixedApprover
from core.pipeline.canonical import (
    CanonicalError,
    canonical_email,
    canonical_path,
    canonical_phone,
    canonical_text,
    canonical_url,
)
from core.pipeline.pipeline import Pipeline, RunContext
from core.pipeline.policy import default_policy, parse_policy
from core.store import Store
from core.tools import SideEffect, ToolResult
from tests.helpers import discovered, plan

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

START_CALL = discovered(
    "bland_call", "start_call", SideEffect.NETWORK_WRITE, params={"phone_number": {"type": "string"}}
)
SEND = discovered(
    "gmail_work",
    "send_message",
    SideEffect.COMMUNICATION,
    params={"to": {"type": "array", "items": {"type": "string"}}, "cc": {"type": "array", "items": {"type": "string"}}},
)
OPEN = discovered("browser", "open", SideEffect.NETWORK_WRITE, params={"url": {"type": "string"}})
POLICY = default_policy()
URL_POLICY = parse_policy(
    '[[hardline]]\ntool = "mcp.browser.open"\nargs = { url = "https://bank.example/transfer*" }\n'
    'reason = "no transfers"\n',
    "fuzz",
)


# --- phone numbers --------------------------------------------------------------------------------------

DIGIT_FORMS = [
    lambda d: d,
    lambda d: chr(0xFF10 + int(d)),
    lambda d: chr(0x0660 + int(d)),
    lambda d: chr(0x06F0 + int(d)),
    lambda d: chr(0x0966 + int(d)),
]
SEPARATORS = ["", "", "", " ", "-", ".", "/", "\u00a0", "\u2011", "\u2013", "\u2212", "\u200b", "\u2060", "  "]


@st.composite
def formatted_number(draw: st.DrawFn, country: str, national: str) -> str:
    """``+{country}{national}`` written as people and models write numbers."""
    digit_form = draw(st.sampled_from(DIGIT_FORMS)) if draw(st.booleans()) else DIGIT_FORMS[0]

    def write(digits: str) -> str:
        return "".join(digit_form(d) + draw(st.sampled_from(SEPARATORS)) for d in digits).rstrip()

    prefix = draw(st.sampled_from(["+", "+", "00", "\uff0b", "tel:+", "TEL:00", "\ufe62"]))
    area, rest = national[:3], national[3:]
    area_text = write(area)
    if draw(st.booleans()):
        area_text = f"({area_text})"
    text = (
        prefix
        + write(country)
        + draw(st.sampled_from(SEPARATORS))
        + area_text
        + draw(st.sampled_from(SEPARATORS))
        + write(rest)
    )
    return draw(st.sampled_from(["", " ", "\t"])) + text + draw(st.sampled_from(["", " ", "\n"]))


premium = st.from_regex(r"900[0-9]{7}", fullmatch=True)


@FUZZ
@given(st.data())
def test_no_formatting_of_a_premium_number_gets_past_the_rule(data: st.DataObject) -> None:
    national = data.draw(premium)
    number = data.draw(formatted_number("1", national))
    assert canonical_phone(number) == "+1" + national
    args = POLICY.canonical_arguments(START_CALL, {"phone_number": number})
    assert args == {"phone_number": "+1" + national}
    assert POLICY.hardline_for(START_CALL, args) is not None
    assert POLICY.hardline_for(START_CALL, {"phone_number": number}) is not None  # even without the rewrite


@FUZZ
@given(st.data())
def test_ordinary_numbers_keep_their_digits(data: st.DataObject) -> None:
    country = data.draw(st.sampled_from(["1", "44", "49", "33", "81"]))
    national = data.draw(st.from_regex(r"[2-8][0-9]{6,9}", fullmatch=True))
    assume(not (country == "1" and national.startswith("900")))
    number = data.draw(formatted_number(country, national))
    assert canonical_phone(number) == f"+{country}{national}"
    assert POLICY.hardline_for(START_CALL, {"phone_number": number}) is None


# --- email addresses ------------------------------------------------------------------------------------

DOTS = [".", ".", ".", "\u3002", "\uff0e", "\uff61"]
local_part = st.from_regex(r"[a-z0-9][a-z0-9._+-]{0,10}", fullmatch=True)
label = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True).filter(lambda s: s[2:4] != "--")


def _shape(draw: st.DrawFn, text: str) -> str:
    """Random case and full-width forms, letter by letter."""
    out = []
    for ch in text:
        form = draw(st.sampled_from(["same", "upper", "wide"])) if ch.isalnum() else "same"
        out.append(ch.upper() if form == "upper" else chr(ord(ch) - 0x21 + 0xFF01) if form == "wide" else ch)
    return "".join(out)


@st.composite
def invalid_address(draw: st.DrawFn) -> tuple[str, str]:
    local = draw(local_part)
    labels = draw(st.lists(label, min_size=1, max_size=3))
    expected = f"{local}@{'.'.join(labels)}.invalid"
    domain = "".join(_shape(draw, lab) + draw(st.sampled_from(DOTS)) for lab in labels) + _shape(draw, "invalid")
    domain += draw(st.sampled_from(["", ".", "..", "\u3002"]))
    text = _shape(draw, local) + "@" + domain
    if draw(st.booleans()):
        text = draw(st.sampled_from(["mailto:", "MAILTO:"])) + text
    return draw(st.sampled_from(["", " "])) + text + draw(st.sampled_from(["", " "])), expected


@FUZZ
@given(invalid_address(), st.sampled_from(["to", "cc"]))
def test_no_spelling_of_an_invalid_domain_gets_past_the_rule(case: tuple[str, str], field: str) -> None:
    address, expected = case
    assert canonical_email(address) == expected
    arguments: dict[str, Any] = {"to": ["ok@example.com"], field: ["friend@example.com", address]}
    args = POLICY.canonical_arguments(SEND, arguments)
    assert args[field][-1] == expected
    assert POLICY.hardline_for(SEND, args) is not None
    assert POLICY.hardline_for(SEND, arguments) is not None
    joined = {"to": f"friend@example.com{'; ' if field == 'cc' else ','}{address}"}  # one string, a list
    assert POLICY.hardline_for(SEND, POLICY.canonical_arguments(SEND, joined)) is not None


# --- URLs -----------------------------------------------------------------------------------------------

UNRESERVED = string.ascii_letters + string.digits + "-._~"


@st.composite
def transfer_url(draw: st.DrawFn) -> str:
    """https://bank.example/transfer..., spelt differently."""
    scheme = draw(st.sampled_from(["https", "HTTPS", "Https"]))
    host = "".join(ch.upper() if draw(st.booleans()) else ch for ch in "bank.example")
    if draw(st.booleans()):
        host = host.replace("e", "%65", 1)
    host += draw(st.sampled_from(["", ".", ":443", ".:443", ":0443"]))
    user = draw(st.sampled_from(["", "", "user@", "a:b@"]))
    slash = draw(st.sampled_from(["/", "/", "\\"]))
    path = ""
    for seg in draw(st.lists(st.sampled_from([".", "x/..", "./.", "%2e", "a/%2E%2e"]), max_size=3)):
        path += seg + slash
    word = "".join(
        f"%{ord(ch):02{draw(st.sampled_from(['x', 'X']))}}" if draw(st.booleans()) else ch for ch in "transfer"
    )
    tail = draw(st.sampled_from(["", "?to=1", "/now", "#top", "?a=%7e"]))
    url = f"{scheme}:{slash}{slash}{user}{host}{slash}{path}{word}{tail}"
    if draw(st.booleans()):
        at = draw(st.integers(0, len(url)))
        url = url[:at] + draw(st.sampled_from(["\t", "\n"])) + url[at:]
    return draw(st.sampled_from(["", " ", "\x01"])) + url


@FUZZ
@given(transfer_url())
def test_no_spelling_of_a_forbidden_url_gets_past_the_rule(url: str) -> None:
    canonical = canonical_url(url)
    assert "bank.example/transfer" in canonical, (url, canonical)
    assert URL_POLICY.hardline_for(OPEN, URL_POLICY.canonical_arguments(OPEN, {"url": url})) is not None


# --- through the whole pipeline ----------------------------------------------------------------------


class _Host:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def run(self, spec, arguments, call_id) -> ToolResult:
        self.calls.append(arguments)
        return ToolResult.of_json({"ok": True})

    def live_pin(self, name: str) -> str | None:
        return None


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_pipeline_denies_every_variant_even_when_approved(data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(["phone", "email"]))
    if kind == "phone":
        name, arguments = START_CALL.name, {"phone_number": data.draw(formatted_number("1", data.draw(premium)))}
    else:
        name, arguments = SEND.name, {"to": [data.draw(invalid_address())[0]]}
    store = Store(":memory:")
    chat = store.create_chat(title="t", provider="script", model="m", strategy="wrapper")
    host = _Host()
    events: list[Any] = []
    ctx = RunContext(
        chat_id=chat,
        turn_id="t1",
        store=store,
        plan=plan((), [START_CALL, SEND]),
        policy=POLICY,
        approver=FixedApprover(Decision.ALLOW_CHAT),
        tools=host,
        emit=events.append,
    )
    asyncio.run(Pipeline(ctx).run({"type": "tool_use", "id": "c1", "name": name, "input": arguments}))
    assert host.calls == []
    assert [e.code for e in events if e.type == "tool.denied"] == [codes.DENIED_HARDLINE]


# --- idempotency ----------------------------------------------------------------------------------------

URL_PIECES = [*"aZ09-._~%/\\?#[]@!$&'()*+,;=: \u00e9\u3002\uff21\t", "%2e", "%41", "%7a", "%zz", "..", "xn--"]
url_text = st.builds(
    lambda scheme, rest: scheme + rest,
    st.sampled_from(["http://", "https://", "HTTP://", "ftp://", "mailto:", "x-y:", "https:\\\\"]),
    st.lists(st.sampled_from(URL_PIECES), max_size=30).map("".join),
)


def _idempotent(fn, value: str) -> None:
    try:
        once = fn(value)
    except (CanonicalError, HostError):
        return
    assert fn(once) == once, (value, once)


@settings(max_examples=300, deadline=None)
@given(url_text)
def test_canonical_url_is_idempotent(value: str) -> None:
    _idempotent(canonical_url, value)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=30), st.text(alphabet="+0123456789 ()-.\u0660\u0661\uff11x", max_size=20)))
def test_canonical_phone_and_text_are_idempotent(value: str) -> None:
    _idempotent(canonical_phone, value)
    _idempotent(canonical_text, value)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(max_size=30),
        st.builds(
            lambda a, b: f"{a}@{b}",
            st.text(max_size=10),
            st.text(alphabet="abcXYZ09-.\u3002\uff41\u00fc_", max_size=15),
        ),
    )
)
def test_canonical_email_and_host_are_idempotent(value: str) -> None:
    _idempotent(canonical_email, value)
    _idempotent(canonical_host, value)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "/", ".", "..", "~", " ", "\u00e9"]), max_size=20).map("".join))
def test_canonical_path_is_idempotent(value: str) -> None:
    _idempotent(canonical_path, value)
    _idempotent(lambda v: canonical_path(v, base=os.sep + "srv"), value)
