"""Hardline rules match what the tool will actually use (issue 10, item 2).

A value is put into canonical form (core/pipeline/canonical.py) before a rule's glob is matched,
and the tool receives that canonical value, so formatting cannot dodge a rule: not a phone
number's spaces, dots, dashes or parentheses, not an address's case or trailing dot.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from core.pipeline import codes
from core.pipeline.approvals import ApprovalRequest, Decision
from core.pipeline.canonical import (
    CanonicalError,
    canonical_email,
    canonical_path,
    canonical_pattern,
    canonical_phone,
    canonical_url,
)
from core.pipeline.pipeline import Pipeline, RunContext
from core.pipeline.policy import default_policy, infer_kind, parse_policy
from core.store import Store
from core.tools import SideEffect, ToolResult
from tests.helpers import discovered, plan

W = SideEffect.NETWORK_WRITE

TOOLS = [
    discovered("bland_call", "start_call", W, params={"phone_number": {"type": "string"}, "task": {"type": "string"}}),
    discovered(
        "gmail_personal",
        "send_message",
        SideEffect.COMMUNICATION,
        params={
            "to": {"type": "array", "items": {"type": "string"}},
            "cc": {"type": "array", "items": {"type": "string"}},
            "subject": {"type": "string"},
            "body": {"type": "string"},
        },
    ),
    discovered("loose", "start_call", W, params={}),  # a server whose schema says nothing about types
    discovered("mailer", "send_message", SideEffect.COMMUNICATION, params={"to": {"type": "string"}}),
    discovered("browser", "open", W, params={"url": {"type": "string"}}),
    discovered("files", "write", W, params={"path": {"type": "string"}, "text": {"type": "string"}}),
]


class Recorder:
    """Approves every call once and remembers what each approval showed and each tool received."""

    def __init__(self) -> None:
        self.approvals: list[ApprovalRequest] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.approvals.append(request)
        return Decision.ALLOW_ONCE

    async def run(self, spec, arguments, call_id) -> ToolResult:
        self.calls.append((spec.name, arguments))
        return ToolResult.of_json({"ok": True})

    def live_pin(self, name: str) -> str | None:
        return None


class Harness:
    def __init__(self, policy=None) -> None:
        self.store = Store(":memory:")
        self.chat_id = self.store.create_chat(title="t", provider="script", model="m", strategy="wrapper")
        self.events: list[Any] = []
        self.rec = Recorder()
        self.ctx = RunContext(
            chat_id=self.chat_id,
            turn_id="turn_1",
            store=self.store,
            plan=plan((), TOOLS),
            policy=policy or default_policy(),
            approver=self.rec,
            tools=self.rec,
            emit=self.events.append,
        )
        self.n = 0

    async def call(self, name: str, **arguments: Any):
        self.n += 1
        self.events.clear()
        return await Pipeline(self.ctx).run({"type": "tool_use", "id": f"c{self.n}", "name": name, "input": arguments})

    def denied_code(self) -> str | None:
        codes_ = [e.code for e in self.events if e.type in ("tool.denied", "tool.failed")]
        return codes_[-1] if codes_ else None


# --- the holes: formatted forbidden values used to pass -------------------------------------------------

PREMIUM = [
    "+1 900 555 0100",
    "+1 (900) 555-0100",
    "+1-900-555-0100",
    "+1.900.555.0100",
    "001 900 555 0100",
    "+1 900\u00a0555\u00a00100",
    "\uff0b\uff11\uff19\uff10\uff10\uff15\uff15\uff15\uff10\uff11\uff10\uff10",
    "tel:+1-900-555-0100",
    " +19005550100 ",
    "+1\u200b9005550100",
    "+1\u2013900\u2013555\u20130100",
]


@pytest.mark.parametrize("number", PREMIUM)
async def test_formatted_premium_numbers_are_denied(number):
    h = Harness()
    await h.call("mcp.bland_call.start_call", phone_number=number, task="hi")
    assert h.denied_code() == codes.DENIED_HARDLINE, number
    assert h.rec.calls == []


@pytest.mark.parametrize(
    "address",
    [
        "a@b.invalid.",
        "A@B.INVALID",
        "a@B.Invalid..",
        "a@b.\uff49nvalid",
        "a@b.invalid\u3002",
        "mailto:a@b.invalid",
        " a@b.invalid ",
    ],
)
async def test_invalid_domain_variants_are_denied_in_to_and_cc(address):
    h = Harness()
    await h.call("mcp.gmail_personal.send_message", to=[address], subject="s", body="b")
    assert h.denied_code() == codes.DENIED_HARDLINE, address
    await h.call("mcp.gmail_personal.send_message", to=["ok@example.com"], cc=[address], subject="s", body="b")
    assert h.denied_code() == codes.DENIED_HARDLINE, address
    assert h.rec.calls == []


async def test_a_list_of_addresses_in_one_string_is_checked_address_by_address():
    h = Harness()
    await h.call("mcp.mailer.send_message", to="ok@example.com; Boss@B.Invalid.")
    assert h.denied_code() == codes.DENIED_HARDLINE and h.rec.calls == []
    await h.call("mcp.mailer.send_message", to="A@X.example,b@y.EXAMPLE")
    assert h.rec.calls == [("mcp.mailer.send_message", {"to": "a@x.example, b@y.example"})]


async def test_a_number_typed_as_a_number_is_still_a_phone_number():
    h = Harness()
    await h.call("mcp.loose.start_call", phone_number=19005550100)
    assert h.denied_code() == codes.ARGUMENTS_INVALID  # no +: not an international number, not run
    await h.call("mcp.loose.start_call", phone_number={"number": "+19005550100"})
    assert h.denied_code() == codes.ARGUMENTS_INVALID
    assert h.rec.calls == []


# --- what was approved is what runs -------------------------------------------------------------------


async def test_the_approval_and_the_tool_see_the_canonical_value():
    h = Harness()
    out = await h.call("mcp.bland_call.start_call", phone_number="+44 (20) 7946-0958", task="Book a table")
    assert out.status == "completed"
    assert h.rec.approvals[-1].arguments == {"phone_number": "+442079460958", "task": "Book a table"}
    assert h.rec.calls == [("mcp.bland_call.start_call", {"phone_number": "+442079460958", "task": "Book a table"})]
    row = h.store.invocation(h.chat_id, "c1")
    assert row is not None and json.loads(row.arguments or "{}")["phone_number"] == "+442079460958"
    await h.call(
        "mcp.gmail_personal.send_message",
        to=["Friend@Example.COM."],
        cc=["X@M\u00fcnchen.DE"],
        subject="Hi There",
        body="Keep My Case",
    )
    assert h.rec.calls[-1][1] == {
        "to": ["friend@example.com"],
        "cc": ["x@xn--mnchen-3ya.de"],
        "subject": "Hi There",
        "body": "Keep My Case",
    }


async def test_a_value_with_no_canonical_form_is_refused_not_passed_through():
    h = Harness()
    out = await h.call("mcp.bland_call.start_call", phone_number="+1 900 CALL NOW", task="x")
    assert h.denied_code() == codes.ARGUMENTS_INVALID and h.rec.calls == []
    assert "phone_number" in out.result_block["content"] and "E.164" in out.result_block["content"]
    await h.call("mcp.gmail_personal.send_message", to=["Boss <boss@b.invalid>"], subject="s", body="b")
    assert h.denied_code() == codes.ARGUMENTS_INVALID and h.rec.calls == []


async def test_arguments_no_rule_looks_at_are_left_alone():
    h = Harness()
    await h.call("mcp.files.write", path="  ~/notes/../x.txt ", text="  As Is  ")
    assert h.rec.calls == [("mcp.files.write", {"path": "  ~/notes/../x.txt ", "text": "  As Is  "})]


# --- url and path rules ------------------------------------------------------------------------------


URL_RULE = """
[[hardline]]
tool = "mcp.browser.open"
args = { url = "https://bank.example/transfer*" }
reason = "no transfers"
"""


@pytest.mark.parametrize(
    "url",
    [
        "https://bank.example/transfer",
        "HTTPS://BANK.EXAMPLE/transfer?to=1",
        "https://bank.example:443/transfer",
        "https://bank.example./transfer",
        "https://bank.example/x/../transfer",
        "https://bank.example/./transfer",
        "https://bank.example/%74ransfer",
        "https:\\\\bank.example\\transfer",
        "https://user@bank.example/transfer",
        " https://bank.example/trans\tfer",
        "https://bank.%65xample/transfer",
    ],
)
async def test_url_variants_are_denied(url):
    h = Harness(parse_policy(URL_RULE, "t"))
    await h.call("mcp.browser.open", url=url)
    assert h.denied_code() == codes.DENIED_HARDLINE, url
    assert h.rec.calls == []


async def test_url_rule_does_not_overreach():
    h = Harness(parse_policy(URL_RULE, "t"))
    out = await h.call("mcp.browser.open", url="HTTPS://Bank.Example/Balance")
    assert out.status == "completed" and h.rec.calls[-1][1] == {"url": "https://bank.example/Balance"}


async def test_path_variants_are_denied(tmp_path, monkeypatch):
    secret = tmp_path / "secret"
    secret.mkdir()
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "link").symlink_to(secret)
    monkeypatch.setenv("HOME", str(tmp_path))
    rule = f'[[hardline]]\ntool = "mcp.files.write"\nargs = {{ path = "{secret}/*" }}\nreason = "no"\n'
    h = Harness(parse_policy(rule, "t"))
    for path in (
        f"{secret}/a.txt",
        f"{tmp_path}/work/../secret/a.txt",
        f"{tmp_path}/work/link/a.txt",
        "~/secret/a.txt",
        "~/work/link/../secret/b",
        f"{tmp_path}//secret/./c",
    ):
        await h.call("mcp.files.write", path=path, text="x")
        assert h.denied_code() == codes.DENIED_HARDLINE, path
    assert h.rec.calls == []
    resolved = str((tmp_path / "work").resolve() / "ok.txt")
    await h.call("mcp.files.write", path="~/work/ok.txt", text="x")
    assert h.rec.calls == [("mcp.files.write", {"path": resolved, "text": "x"})]


async def test_a_path_rule_written_through_a_symlink_still_matches(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    rule = f'[[hardline]]\ntool = "mcp.files.write"\nargs = {{ path = "{tmp_path}/alias/*" }}\nreason = "no"\n'
    h = Harness(parse_policy(rule, "t"))
    await h.call("mcp.files.write", path=f"{real}/x", text="x")
    assert h.denied_code() == codes.DENIED_HARDLINE


# --- the canonical forms themselves --------------------------------------------------------------------


def test_canonical_forms():
    assert canonical_phone("0044 20 7946 0958") == "+442079460958"
    assert canonical_phone("+\u0661\u0669\u0660\u0660\u0665\u0665\u0665\u0660\u0661\u0660\u0660") == "+19005550100"
    for bad in ("555-0100", "+0 555 0100", "+1 900 555 0100 x12", "+1+900", "", "+123"):
        with pytest.raises(CanonicalError):
            canonical_phone(bad)
    assert canonical_email("Sam.Rivera@Northwind.Example.") == "sam.rivera@northwind.example"
    assert canonical_email("a@m\u00fcnchen.de") == "a@xn--mnchen-3ya.de"
    for bad in ("no-at-sign", "a@", "@b.c", "a b@c.d", '"a@b"@c.d', "a@[127.0.0.1]"):
        with pytest.raises(CanonicalError):
            canonical_email(bad)
    assert canonical_url("HTTP://Example.COM:80/a/./b/../c?q=%7e%41#F") == "http://example.com/a/c?q=~A#F"
    assert canonical_url("http://0x7f.1:8080") == "http://127.0.0.1:8080/"
    assert canonical_url("http://[::FFFF:127.0.0.1]/") == "http://[::ffff:7f00:1]/"
    assert canonical_url("https://m\u00fcnchen.de/\u00e4 b") == "https://xn--mnchen-3ya.de/%C3%A4%20b"
    assert canonical_url("http://a.com\\@evil.com/") == "http://a.com/@evil.com/"  # as a browser reads it
    for bad in ("/relative", "example.com/x", "http://", "http://h:port/", "http://h:99999/"):
        with pytest.raises(CanonicalError):
            canonical_url(bad)
    assert canonical_path("a/./b/../c") == "a/c"
    assert canonical_path("x", base="/srv") == os.path.realpath("/srv/x")


def test_patterns_are_canonical_too_and_kinds_are_inferred():
    assert canonical_pattern("phone", "+1 (900) *") == "+1900*"
    assert canonical_pattern("phone", "00 1 900*") == "+1900*"
    assert canonical_pattern("email", "*@*.INVALID") == "*@*.invalid"
    assert canonical_pattern("email", "*@M\u00fcnchen.de") == "*@xn--mnchen-3ya.de"
    assert canonical_pattern("url", "HTTPS://Bank.Example:443/Transfer*") == "https://bank.example/Transfer*"
    assert [infer_kind(p) for p in ("+1900*", "00 44*", "*@*.invalid", "https://x/*", "/etc/*", "~/x", "*drop*")] == [
        "phone",
        "phone",
        "email",
        "url",
        "path",
        "path",
        "text",
    ]
    pol = parse_policy(
        '[[hardline]]\ntool = "*"\nargs = { target = "*.invalid" }\nkinds = { target = "email" }\nreason = "r"\n', "t"
    )
    assert pol.hardline[0].kind_of("target") == "email"


def test_unknown_kind_is_a_usage_error():
    from core.errors import UsageError

    with pytest.raises(UsageError):
        parse_policy('[[hardline]]\nargs = { a = "x" }\nkinds = { a = "colour" }\nreason = "r"\n', "t")


# --- one definition: the built-in and demo tools use the same functions ----------------------------------


def test_demo_services_store_the_canonical_values(tmp_path):
    from core.demo.db import connect
    from core.demo.servers import implementations

    conn = connect(tmp_path / "demo.sqlite")
    start_call = implementations("bland_call", conn, call_seconds=30.0)["start_call"]
    out = start_call(phone_number="0044 (20) 7946-0958", task="Book a table")
    assert out["phone_number"] == "+442079460958"
    with pytest.raises(ValueError, match=r"E\.164"):
        start_call(phone_number="+1 900 CALL NOW", task="x")
    send = implementations("gmail_work", conn, call_seconds=30.0)["send_message"]
    sent = send(to=["Dana@Globex.Example."], subject="s", body="b", cc=["Lee@M\u00fcnchen.example"])
    row = conn.execute("SELECT recipients, cc FROM gmail_messages WHERE id = ?", (sent["message_id"],)).fetchone()
    assert tuple(row) == ('["dana@globex.example"]', '["lee@xn--mnchen-3ya.example"]')
