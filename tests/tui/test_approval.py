"""Inline approvals: the bar sits above the input, rings the bell, ignores keys for the grace
period, answers by y / n (in the bar, reached with Tab; the chat-wide grant is ``!`` and a
confirmation, tests/tui/test_approval_typing.py) or by mouse, and a reopened chat shows its
parked ones."""

from __future__ import annotations

import asyncio

import pytest

from core.pipeline.approvals import ApprovalRequest, Decision, FixedApprover, QueueApprover
from tests.tui.conftest import make_app, opened, send, settled, until
from tui.controllers.approvals import ParkedAnswer
from tui.state import AWAITING, DENIED, FAILED, ToolItem

CALL = "start a call to +1 555 0100 about the invoice"


async def approval_ready(pilot) -> None:
    """The bar is mounted and the owner moved to it with Tab (its grace period starts at mount)."""
    app = pilot.app
    await until(pilot, lambda: app.approval_bar is not None)
    await until(pilot, lambda: not any(w.group == "session" and not w.is_finished for w in app.workers))
    await pilot.press("tab")
    await until(pilot, lambda: app.approval_bar.has_focus)


def the_call(app) -> ToolItem:
    return next(i for i in app.log_view.items if isinstance(i, ToolItem))


async def test_bar_sits_above_the_input_rings_and_ignores_keys_for_half_a_second(engine, clock) -> None:
    app = make_app(engine)
    bells: list[int] = []
    app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await approval_ready(pilot)
        bar = app.approval_bar
        assert bar is not None and bar.has_focus
        assert app.composer.display  # the input stays, with what was typed in it
        assert bells == [1]
        assert the_call(app).status == AWAITING
        assert app.approvals.approver.pending() == [bar.view.approval_id]

        clock.t += 0.49  # still inside the grace period: typing cannot approve
        await pilot.press("y", "exclamation_mark", "n")
        assert bar.ignored == 3 and bar.decided is None
        assert app.approvals.approver.pending() == [bar.view.approval_id]

        clock.t += 0.02  # past 0.5 s
        await pilot.press("n")
        await settled(pilot)
        assert app.approval_bar is None and app.composer.display
        call = the_call(app)
        assert call.status == DENIED and call.code == "tool.denied.approval"
        assert engine.store.approval(bar.view.approval_id).status == "denied"


@pytest.mark.parametrize(
    ("keys", "decision", "scope"), [(("y",), "allowed", "once"), (("exclamation_mark", "enter"), "allowed", "chat")]
)
async def test_allow_keys(engine, clock, keys: tuple[str, ...], decision: str, scope: str) -> None:
    app = make_app(engine)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await approval_ready(pilot)
        approval_id = app.approval_bar.view.approval_id
        clock.t += 0.5
        for key in keys:
            await pilot.press(key)
            clock.t += 0.5  # the chat-wide grant's confirmation has a grace period of its own
        await settled(pilot)
        row = engine.store.approval(approval_id)
        assert (row.status, row.scope) == (decision, scope)
        assert engine.store.granted(app.session.chat_id, "mcp.bland_call.start_call") is (scope == "chat")
        # no demo servers run in this test, so the allowed call fails as unavailable, under its own name
        call = the_call(app)
        assert call.status == FAILED and call.scope == scope and call.name == "mcp.bland_call.start_call"


async def test_mouse_after_the_grace_period(engine, clock) -> None:
    app = make_app(engine)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await approval_ready(pilot)
        bar = app.approval_bar
        await pilot.click("#deny")  # inside the grace period: ignored
        assert bar.decided is None
        assert bar.ignored == 1
        clock.t += 0.5
        await until(pilot, lambda: not bar.query_one("#deny").has_class("-active"))  # the button's press effect
        await pilot.click("#deny")
        await settled(pilot)
        assert bar.decided is Decision.DENY
        await until(pilot, lambda: the_call(app).status == DENIED)


async def test_a_reopened_chat_shows_its_parked_approval_and_answering_resumes(engine, clock) -> None:
    session = await engine.open_chat(None, make_app(engine).options, approver=FixedApprover(Decision.PARK))
    result = await session.send(CALL)
    assert result.status == "parked"
    chat_id = session.chat_id
    await session.close()

    app = make_app(engine, open_chat=chat_id)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await approval_ready(pilot)
        bar = app.approval_bar
        assert bar.view.parked and bar.view.tool == "mcp.bland_call.start_call" and bar.view.via == "tool.call"
        assert "pinned" in str(app.roster.title.render())
        assert the_call(app).status == AWAITING
        clock.t += 0.5
        await pilot.press("n")
        await until(pilot, lambda: app.session.parked() is None)
        await settled(pilot)
        assert the_call(app).status == DENIED
        assert engine.store.pending_approvals(chat_id) == []


async def test_a_later_approval_in_a_resumed_turn_is_asked_again(engine, clock) -> None:
    """Answering a parked approval must not answer the next one the resumed turn raises."""
    queue = QueueApprover()
    answer = ParkedAnswer("appr_1", Decision.ALLOW_ONCE, queue)
    req = dict(chat_id="c", call_id="x", tool="t", side_effect="NETWORK_WRITE")
    assert await answer.decide(ApprovalRequest(approval_id="appr_1", **req)) is Decision.ALLOW_ONCE
    later = asyncio.ensure_future(answer.decide(ApprovalRequest(approval_id="appr_2", **req)))
    assert (await queue.next_request()).approval_id == "appr_2"
    queue.answer("appr_2", Decision.DENY)
    assert await later is Decision.DENY


async def test_an_app_that_ends_with_an_open_approval_leaves_it_for_the_reopened_chat(engine, clock) -> None:
    """The app ends without a stop (as a crash or a kill would end it: a quit stops the turn,
    tests/tui/test_quits.py): the approval stays pending, and the reopened chat asks it again."""
    app = make_app(engine)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await approval_ready(pilot)
        chat_id = app.session.chat_id
        approval_id = app.approval_bar.view.approval_id
    assert [a.id for a in engine.store.pending_approvals(chat_id)] == [approval_id]

    app = make_app(engine, open_chat=chat_id)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await approval_ready(pilot)
        assert app.approval_bar.view.approval_id == approval_id and app.approval_bar.view.parked
        clock.t += 0.5
        await pilot.press("y")
        await until(pilot, lambda: app.session.parked() is None)
        await settled(pilot)
        assert engine.store.approval(approval_id).status == "allowed"
        # no demo servers here: the allowed call fails as unavailable, and the turn finishes
        assert the_call(app).status == FAILED and the_call(app).code == "tool.unavailable"


async def test_an_interrupted_turn_is_offered_and_resumed(engine) -> None:
    session = await engine.open_chat(None, make_app(engine).options)
    store = engine.store
    msg = store.add_message(
        session.chat_id, "user", [{"type": "text", "text": "what time is it?"}], turn_id=None, parent_id=None
    )
    store.start_turn(session.chat_id, msg)  # the process died before the model answered
    await session.close()

    app = make_app(engine, open_chat=session.chat_id)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await until(pilot, lambda: any("unfinished turn" in getattr(i, "text", "") for i in app.log_view.items))
        assert app.approval_bar is None
        await app.run_action("resume")
        await until(pilot, lambda: app.session.parked() is None)
        await settled(pilot)
        kinds = [type(i).__name__ for i in app.log_view.items]
        assert "AssistantItem" in kinds[kinds.index("NoteItem") :]
