"""Elicitation against a real MCP server built with the SDK (``tests.mcp_servers.desk``, run in
this process over the SDK's in-memory transport and, once, as a process on stdio): the person
accepts, declines or cancels; no answer in time is a cancel; a hostile schema is refused whole
and a hostile text is shown inert; the headless CLI asks on a terminal and declines without one."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.display import is_control
from core.mcp.client import McpManager
from core.mcp.config import config_from_dict
from core.mcp.elicitation import (
    MAX_FIELDS,
    DecliningElicitor,
    ElicitationAnswer,
    ElicitationRequest,
    QueueElicitor,
    UnusableForm,
    check_answer,
    parse_form,
)
from tests.mcp.conftest import Events
from tests.mcp_servers.desk import BOOKING, ESC, build, entry

CONFIG = config_from_dict({"mcpServers": {"desk": {"command": "unused-in-process"}}})


def manager(elicitor: Any, events: Events | None = None, timeout: float = 30) -> McpManager:
    return McpManager(
        CONFIG, in_process={"desk": build}, elicitor=elicitor, on_event=events, elicitation_timeout=timeout
    )


def body(result: Any) -> Any:
    return json.loads(result.text())


class Answers:
    """A person who answers each request with the next of ``answers``."""

    def __init__(self, *answers: ElicitationAnswer):
        self.answers = list(answers)
        self.asked: list[ElicitationRequest] = []

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        self.asked.append(request)
        return self.answers.pop(0)


async def test_accept_sends_the_checked_values_and_events_record_no_values() -> None:
    person = Answers(
        ElicitationAnswer(
            action="accept", content={"date": "2026-12-24", "guests": 4, "seating": "outside", "notes": ""}
        )
    )
    events = Events()
    async with manager(person, events) as m:
        result = await m.call("mcp.desk.book_table", {})
    assert body(result) == {
        "action": "accept",
        "content": {"date": "2026-12-24", "guests": 4, "seating": "outside"},  # the empty optional left out
    }
    [request] = person.asked
    assert request.server == "desk" and request.message.startswith("Book a table")
    assert [f.name for f in request.fields] == ["date", "guests", "seating", "high_chair", "notes"]
    seating = request.fields[2]
    assert seating.kind == "choice" and [o.value for o in seating.options] == ["inside", "outside"]
    asked = [e for e in events.seen if e.type == "mcp.elicitation"]
    answered = [e for e in events.seen if e.type == "mcp.elicitation.answered"]
    assert asked[0].fields[0] == {"name": "date", "title": "Date", "kind": "string", "required": True}
    assert answered[0].action == "accept" and answered[0].answered == ["date", "guests", "seating"]
    assert "2026-12-24" not in answered[0].to_json()  # the person's values go to the server only


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_reach_the_server(action: str) -> None:
    async with manager(Answers(ElicitationAnswer(action=action, content={"guests": 3}))) as m:  # type: ignore[arg-type]
        result = await m.call("mcp.desk.book_table", {})
    assert body(result) == {"action": action, "content": None}


async def test_no_answer_in_time_is_a_cancel() -> None:
    events = Events()
    queue = QueueElicitor()
    async with manager(queue, events, timeout=0.3) as m:
        result = await m.call("mcp.desk.book_table", {})
    assert body(result) == {"action": "cancel", "content": None}
    [answered] = [e for e in events.seen if e.type == "mcp.elicitation.answered"]
    assert answered.reason == "no answer within 0.3 s"
    assert queue.pending() == []


async def test_an_answer_that_does_not_fit_the_form_is_not_sent() -> None:
    bad = ElicitationAnswer(action="accept", content={"date": "2026-12-24", "guests": 40, "seating": "outside"})
    events = Events()
    async with manager(Answers(bad), events) as m:
        result = await m.call("mcp.desk.book_table", {})
    assert body(result) == {"action": "cancel", "content": None}
    [answered] = [e for e in events.seen if e.type == "mcp.elicitation.answered"]
    assert "Guests" in answered.reason and "12" in answered.reason


@pytest.mark.parametrize("kind", ["nested", "ref", "many", "huge_enum"])
async def test_a_hostile_schema_is_refused_whole(kind: str) -> None:
    person = Answers()
    events = Events()
    async with manager(person, events) as m:
        result = await m.call("mcp.desk.ask_raw", {"kind": kind})
    assert person.asked == []  # nobody was shown half a form
    assert "deferchat cannot show this request" in result.text()  # the server hears why (as its call's error)
    [answered] = [e for e in events.seen if e.type == "mcp.elicitation.answered"]
    assert answered.action == "decline" and answered.reason.startswith("its request cannot be shown")


async def test_hostile_text_is_kept_for_safe_display_and_clipped() -> None:
    person = Answers(ElicitationAnswer(action="decline"))
    async with manager(person) as m:
        await m.call("mcp.desk.ask_raw", {"kind": "escapes"})
    [request] = person.asked
    from core.display import safe

    [pin] = request.fields
    assert ESC in pin.title and len(pin.description) <= 2_003  # clipped for display
    for text in (request.message, pin.title, pin.description):
        assert not any(is_control(c) for c in safe(text))


async def test_url_mode_is_consent_to_open_a_page() -> None:
    person = Answers(ElicitationAnswer(action="accept"))
    async with manager(person) as m:
        result = await m.call("mcp.desk.open_link", {})
    assert body(result) == {"action": "accept"}
    assert person.asked[0].mode == "url" and person.asked[0].url == "https://calendar.example/connect?x=1"


async def test_without_an_elicitor_elicitation_is_not_declared() -> None:
    async with McpManager(CONFIG, in_process={"desk": build}) as m:
        result = await m.call("mcp.desk.book_table", {})
    assert result.is_error or "not supported" in result.text().lower()


def test_the_cli_declines_without_a_terminal_and_asks_on_one(tmp_path: Any) -> None:
    """``deferchat ask`` on a real stdio server: no terminal declines (and says so), a terminal's
    answers go to the server; the model fills nothing in."""
    import subprocess

    from tests.helpers import ROOT, subprocess_env

    home = tmp_path / "home"
    home.mkdir()
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"desk": entry()}}))
    roster = tmp_path / "roster.json"
    roster.write_text(json.dumps({"agent": {"name": "a", "version": "1", "deferred": []}, "configured": []}))
    script = tmp_path / "s.json"
    script.write_text(
        json.dumps(
            {
                "turns": [
                    [{"type": "tool_use", "id": "c1", "name": "mcp.desk.book_table", "input": {}}],
                    [{"type": "text", "text": "ok"}],
                ]
            }
        )
    )
    base = ["ask", "book", "--mcp-config", str(config), "--roster", str(roster), "--script", str(script)]
    env = subprocess_env(home)
    run = subprocess.run(
        [sys.executable, "-m", "core.cli", *base, "--approve", "yes", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(ROOT),
        stdin=subprocess.DEVNULL,
        timeout=90,
    )
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines()]
    [asked] = [e for e in events if e["type"] == "mcp.elicitation"]
    assert asked["server"] == "desk" and asked["fields"][1]["name"] == "guests"
    [answered] = [e for e in events if e["type"] == "mcp.elicitation.answered"]
    assert answered["action"] == "decline" and "no terminal" in answered["reason"]
    [done] = [e for e in events if e["type"] == "tool.completed"]
    assert '"action": "decline"' in json.dumps(done["result"]).replace('\\"', '"')


async def test_the_terminal_elicitor_asks_field_by_field(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    import io

    from core.cli.elicitor import TtyElicitor

    typed = "x\na\n2026-12-24\nlots\n5\n2\n\nwindow seat please\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(typed))
    request = ElicitationRequest(id="e1", server=f"desk{ESC}", message=f"Book{ESC}", fields=parse_form(BOOKING))
    answer = await TtyElicitor().elicit(request)
    assert answer.action == "accept"
    assert answer.content == {
        "date": "2026-12-24",
        "guests": 5,
        "seating": "outside",
        "high_chair": False,  # its default, taken with Enter
        "notes": "window seat please",
    }
    shown = capsys.readouterr().err
    assert "MCP server desk\\x1b[2K\\x0d\\u202e (not deferchat" in shown
    assert "\x1b" not in shown and "\u202e" not in shown
    assert "Guests: a whole number" in shown  # "lots" was asked again


def test_the_terminal_elicitor_cancels_when_the_terminal_closes(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from core.cli.elicitor import TtyElicitor

    monkeypatch.setattr(sys, "stdin", io.StringIO("a\n"))
    request = ElicitationRequest(id="e1", server="desk", fields=parse_form(BOOKING))
    answer = asyncio.run(TtyElicitor().elicit(request))
    assert answer.action == "cancel" and answer.reason == "the terminal closed"


async def test_a_declining_elicitor_says_why() -> None:
    answer = await DecliningElicitor("nobody here").elicit(ElicitationRequest(id="1", server="s"))
    assert (answer.action, answer.reason) == ("decline", "nobody here")


# -- the schema reader under generated hostile input ---------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(st.text(max_size=70), json_values, max_size=MAX_FIELDS + 3),
    st.lists(st.text(max_size=8), max_size=3) | json_values,
)
def test_any_schema_is_a_form_or_refused_with_a_reason(props: dict[str, Any], required: Any) -> None:
    schema = {"type": "object", "properties": props, "required": required}
    try:
        fields = parse_form(schema)
    except UnusableForm as exc:
        assert str(exc)
        return
    assert len(fields) <= MAX_FIELDS
    for f in fields:
        assert len(f.title) <= 2_003 and len(f.description) <= 2_003
        assert len(f.options) <= 100
    # an answer of the defaults either passes or is refused with a message, never crashes
    try:
        check_answer(fields, {f.name: f.default for f in fields})
    except ValueError as exc:
        assert str(exc)
