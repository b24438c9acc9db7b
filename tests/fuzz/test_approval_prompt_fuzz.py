"""The approval shows what decides where an action goes, first and whole, whatever the model
writes (issue 23, item 3): the CLI prompt clipped the arguments to 300 characters in the model's
order, so a mail whose long body came first never showed its recipient.

Generated here: the order the model writes the arguments in, the order the server's schema lists
them in, the length of every value, recipients, URLs, paths and phone numbers with invisible
characters in them. Each call runs through the real pipeline (unwrap, validation, canonical
values, policy, the approval and its preview) and the terminal prompt it produces is read.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.cli.approver import approval_prompt
from core.display import safe
from core.pipeline import codes
from core.pipeline.approvals import ApprovalRequest, Decision
from core.pipeline.pipeline import Pipeline, RunContext
from core.pipeline.policy import default_policy
from core.store import Store
from core.tools import SideEffect, ToolResult
from tests.helpers import discovered, plan

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Arguments that decide where the action goes, by what their names say, and the others.
DECISIVE = ("to", "cc", "callback_url", "attachment_path", "phone_number", "thread_id")
OTHERS = ("subject", "body", "footer", "priority")
STRING = {"type": "string"}
LIST = {"type": "array", "items": {"type": "string"}}
SCHEMA_OF = {"to": LIST, "cc": LIST, **{k: STRING for k in DECISIVE[2:] + OTHERS}}

INVISIBLE = st.sampled_from(["\ufe0f", "\u034f", "\u3164", "\u2800", "\u200b", "\U000e0100", "\u2061", "\u00ad"])
LOCAL = st.lists(st.one_of(st.sampled_from("abcdefghijklmnop0123456789._"), INVISIBLE), min_size=1, max_size=12).map(
    "".join
)
ADDRESS = st.builds(lambda local, domain: f"{local}@{domain}", LOCAL, st.sampled_from(["x.example", "company.example"]))
LONG = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=0, max_size=4000)
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "to": st.lists(ADDRESS, min_size=1, max_size=3),
    "cc": st.lists(ADDRESS, max_size=2),
    "callback_url": st.builds(lambda p, ch: f"https://hooks.example/{p}{ch}", st.text("abc/", max_size=200), INVISIBLE),
    "attachment_path": st.builds(lambda p, ch: f"/home/sam/{p}{ch}.pdf", st.text("abc/ ", max_size=200), INVISIBLE),
    "phone_number": st.sampled_from(["+15550100", "+44 20 7946 0958"]),
    "thread_id": st.text("abcdef0123456789", min_size=1, max_size=64),
    **{k: LONG for k in OTHERS},
}


class Recorder:
    def __init__(self) -> None:
        self.approvals: list[ApprovalRequest] = []

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.approvals.append(request)
        return Decision.DENY

    async def run(self, spec: Any, arguments: dict[str, Any], call_id: str) -> ToolResult:
        return ToolResult.of_json({"ok": True})

    def live_pin(self, name: str) -> str | None:
        return None


@st.composite
def a_call(draw: st.DrawFn) -> tuple[list[str], dict[str, Any]]:
    """A schema order and arguments in the model's own order (a dict keeps its insertion order)."""
    keys = draw(st.lists(st.sampled_from(DECISIVE + OTHERS), unique=True, min_size=1))
    if "to" not in keys:
        keys.append("to")
    schema_order = draw(st.permutations(keys))
    model_order = draw(st.permutations(keys))
    return list(schema_order), {k: draw(VALUES[k]) for k in model_order}


async def ask(schema_order: list[str], arguments: dict[str, Any]) -> ApprovalRequest | None:
    """The approval the call asks for; None when the pipeline refused it before asking (an address
    with no canonical form, e.g. one whose local part is only invisible characters)."""
    tool = discovered(
        "mailer", "send_message", SideEffect.COMMUNICATION, params={k: SCHEMA_OF[k] for k in schema_order}
    )
    store = Store(":memory:")
    rec = Recorder()
    events: list[Any] = []
    ctx = RunContext(
        chat_id=store.create_chat(title="t", provider="script", model="m", strategy="wrapper"),
        turn_id="turn_1",
        store=store,
        plan=plan((), [tool]),
        policy=default_policy(),
        approver=rec,
        tools=rec,
        emit=events.append,
    )
    await Pipeline(ctx).run({"type": "tool_use", "id": "c1", "name": tool.name, "input": arguments})
    if not rec.approvals:
        assert [e.code for e in events if e.type == "tool.failed"] == [codes.ARGUMENTS_INVALID]
        return None
    return rec.approvals[0]


async def test_a_long_body_written_first_no_longer_hides_the_recipient() -> None:
    """The case as it was found: 300 characters of the model's order showed none of ``to``."""
    arguments = {"body": "x" * 5000, "subject": "hi", "to": ["ceo\ufe0f@company.example"]}
    request = await ask(["body", "subject", "to"], arguments)
    assert request is not None
    prompt = approval_prompt(request)
    to = next(line for line in prompt.split("\n") if line.strip().startswith("to:"))
    assert to.split()[-1] == "ceo\\ufe0f@company.example"
    assert prompt.index("to:") < prompt.index("body:") < prompt.index("x" * 100)
    assert "x" * 200 not in prompt  # the body folded


@FUZZ
@given(a_call())
async def test_every_decisive_argument_is_shown_whole_before_any_other(call: tuple[list[str], dict[str, Any]]) -> None:
    schema_order, arguments = call
    request = await ask(schema_order, arguments)
    if request is None:
        return
    assert request.preview is not None
    prompt = approval_prompt(request)
    lines = prompt.split("\n")

    def line_of(key: str) -> int:
        return next(i for i, line in enumerate(lines) if line.strip().startswith(f"{key}:"))

    decisive = [k for k in request.arguments if k in DECISIVE]
    others = [k for k in request.arguments if k in OTHERS]
    for key in decisive:
        value = request.arguments[key]  # the canonical value the tool will receive
        text = ", ".join(value) if isinstance(value, list) else value
        if not text:
            continue
        assert safe(text, identifier=True) in lines[line_of(key)], (key, text)  # whole, on its line
    if decisive and others:
        assert max(line_of(k) for k in decisive) < min(line_of(k) for k in others)
    for key in others:  # a long value is folded to a readable length, never to nothing
        assert len(lines[line_of(key)]) < 220
    # No character a terminal would hide or obey, and nothing of the model's order decides.
    assert "\ufe0f" not in prompt and "\u034f" not in prompt and "\u3164" not in prompt and "\x1b" not in prompt


@FUZZ
@given(a_call())
async def test_the_expanded_prompt_holds_every_value_whole(call: tuple[list[str], dict[str, Any]]) -> None:
    schema_order, arguments = call
    request = await ask(schema_order, arguments)
    if request is None:
        return
    prompt = approval_prompt(request, expanded=True)
    raw = json.dumps(request.arguments, ensure_ascii=False, indent=2, sort_keys=True)
    assert safe(raw, multiline=True).split("\n")[1].strip() in prompt  # the canonical JSON for developers
    for key in OTHERS:
        if request.arguments.get(key):
            first_line = safe(request.arguments[key], multiline=True).split("\n")[0]
            assert first_line in prompt
