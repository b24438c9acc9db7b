"""Approvals that typing cannot grant (issue 12, item 3).

The owner types while an approval waits: every key goes to the message box, nothing is
answered, nothing is granted. Answering takes a deliberate move to the bar (Tab), and the
chat-wide grant a non-letter key plus a confirmation. The screen, the terminal's title and a
desktop notification say an approval waits; the bell rings as before.
"""

from __future__ import annotations

import pytest

from tests.tui.conftest import make_app, opened, send, settled, until
from tui import terminal
from tui.widgets.approval import ApprovalBar

CALL = "start a call to +1 555 0100 about the invoice"
TOOL = "mcp.bland_call.start_call"
SENTENCE = "what about tomorrow? yes and no"


async def waiting(pilot) -> None:
    app = pilot.app
    await until(pilot, lambda: app.approval_bar is not None and app.approvals.approver.pending())


async def to_the_bar(pilot, clock=None) -> None:
    """Tab to the bar; with ``clock``, then past the guard Tab starts (a key in the same burst as
    Tab answers nothing: test_tab_then_y_in_one_burst_answers_nothing_and_types_nothing)."""
    app = pilot.app
    # a chat being opened gives the focus to the message box when it is ready: after that
    await until(pilot, lambda: not any(w.group == "session" and not w.is_finished for w in app.workers))
    await pilot.press("tab")
    await until(pilot, lambda: app.approval_bar.has_focus)
    if clock is not None:
        clock.t += ApprovalBar.GRACE


def hint(app) -> str:
    return str(app.approval_bar.query_one("#approval-hint").render())


def notice(app) -> str:
    return str(app.approval_bar.query_one("#approval-notice").render())


async def test_typing_a_sentence_with_a_y_and_n_grants_nothing_and_keeps_the_text(engine, clock) -> None:
    app = make_app(engine)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await waiting(pilot)
        bar = app.approval_bar
        approval_id = bar.view.approval_id
        assert app.composer.has_focus and not bar.has_focus  # the bar does not take the focus
        await pilot.press(*SENTENCE[:8])
        clock.t += 5  # long past the grace period: typing still answers nothing
        await pilot.press(*SENTENCE[8:], "!", "a", "y", "n", "1", "space")
        await pilot.pause(0.1)
        expected = SENTENCE + "!ayn1 "
        assert app.composer.text == expected
        assert app.composer.cursor_location == (0, len(expected))
        assert app.approval_bar is bar and bar.decided is None and bar.ignored == 0
        assert app.approvals.approver.pending() == [approval_id]
        row = engine.store.approval(approval_id)
        assert row.status == "pending" and row.scope is None
        assert not engine.store.granted(app.session.chat_id, TOOL)

        # the deliberate way: Tab to the bar, y allows once; the typed text is still there
        assert "Tab: answer" in hint(app)
        await to_the_bar(pilot, clock)
        assert "y allow once" in hint(app) and "! allow for this chat" in hint(app)
        await pilot.press("y")
        await settled(pilot)
        row = engine.store.approval(approval_id)
        assert (row.status, row.scope) == ("allowed", "once")
        assert not engine.store.granted(app.session.chat_id, TOOL)
        assert app.composer.text == expected and app.composer.has_focus


async def test_the_chat_wide_grant_takes_a_non_letter_key_and_a_confirmation(engine, clock) -> None:
    app = make_app(engine)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await waiting(pilot)
        clock.t += 1
        await to_the_bar(pilot, clock)
        bar = app.approval_bar
        approval_id = bar.view.approval_id
        await pilot.press("exclamation_mark")
        assert bar.confirming and bar.decided is None
        await pilot.press("enter")  # "!" and Enter in one burst: the confirmation's own grace period
        assert bar.decided is None and bar.ignored == 1
        assert "ignored 1 key" in notice(app) and "confirmation" in notice(app)
        assert engine.store.approval(approval_id).status == "pending"
        await pilot.press("y", "n")  # letters do not act while the confirmation is open
        assert bar.decided is None and bar.confirming
        clock.t += 0.6
        await pilot.press("enter")
        await settled(pilot)
        row = engine.store.approval(approval_id)
        assert (row.status, row.scope) == ("allowed", "chat")
        assert engine.store.granted(app.session.chat_id, TOOL)


async def test_the_confirmation_can_be_backed_out_of(engine, clock) -> None:
    app = make_app(engine)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await waiting(pilot)
        clock.t += 1
        await to_the_bar(pilot, clock)
        bar = app.approval_bar
        await pilot.press("right", "enter")  # the second button: "Allow for this chat…" asks first
        assert bar.confirming
        clock.t += 1
        await pilot.press("right", "enter")  # "Back"
        assert not bar.confirming and bar.decided is None
        await pilot.press("tab")  # away from the bar, and the confirmation would close too
        assert app.composer.has_focus
        assert engine.store.approval(bar.view.approval_id).status == "pending"
        assert not engine.store.granted(app.session.chat_id, TOOL)


async def test_keys_in_the_grace_period_are_shown_as_ignored(engine, clock) -> None:
    app = make_app(engine)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await waiting(pilot)
        await to_the_bar(pilot)
        bar = app.approval_bar
        assert not app.approval_bar.query_one("#approval-notice").display
        await pilot.press("y", "n")
        assert bar.decided is None and bar.ignored == 2
        assert app.approval_bar.query_one("#approval-notice").display
        assert "ignored 2 keys" in notice(app)
        clock.t += 0.5
        await pilot.press("n")
        await settled(pilot)
        assert engine.store.approval(bar.view.approval_id).status == "denied"


async def test_a_click_on_the_chat_wide_button_only_asks(engine, clock) -> None:
    app = make_app(engine)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await waiting(pilot)
        clock.t += 1
        bar = app.approval_bar
        await pilot.click("#allow_chat")
        assert bar.confirming and bar.decided is None
        clock.t += 1
        await pilot.click("#confirm_chat")
        await settled(pilot)
        assert engine.store.granted(app.session.chat_id, TOOL)


async def test_the_screen_says_waiting_for_your_approval_and_the_terminal_is_told(engine, clock, monkeypatch) -> None:
    monkeypatch.setenv("DEFERCHAT_NOTIFY", "both")
    app = make_app(engine)
    bells: list[int] = []
    app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await waiting(pilot)
        status = str(app.status_line.render())
        assert "waiting for your approval" in status and "Working" not in status
        assert "start_call" in status
        assert bells == [1]
        sent = app.terminal.sent
        assert terminal.title_sequence("deferchat \u2014 waiting for your approval") in sent
        assert any(s.startswith("\x1b]9;deferchat: waiting for your approval: ") for s in sent)
        assert any(s.startswith("\x1b]777;notify;deferchat: waiting for your approval;") for s in sent)
        clock.t += 1
        await to_the_bar(pilot, clock)
        await pilot.press("n")
        await settled(pilot)
        assert "waiting for your approval" not in str(app.status_line.render())
        assert app.terminal.sent[-1] == terminal.title_sequence("deferchat")
    assert app.terminal.sent[-1] == terminal.POP_TITLE  # the owner's title back on exit


async def test_a_parked_approval_is_answered_the_same_way_and_escape_leaves_the_bar(engine, clock) -> None:
    from core.pipeline.approvals import Decision, FixedApprover

    session = await engine.open_chat(None, make_app(engine).options, approver=FixedApprover(Decision.PARK))
    assert (await session.send(CALL)).status == "parked"
    chat_id = session.chat_id
    await session.close()
    app = make_app(engine, open_chat=chat_id)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await until(pilot, lambda: app.approval_bar is not None)
        assert app.composer.has_focus
        await pilot.press(*"any news?")
        clock.t += 1
        assert app.composer.text == "any news?" and engine.store.pending_approvals(chat_id)
        await to_the_bar(pilot, clock)
        await pilot.press("escape")
        assert app.composer.has_focus and app.approval_bar is not None
        await to_the_bar(pilot, clock)
        await pilot.press("n")
        await until(pilot, lambda: app.session.parked() is None)
        await settled(pilot)
        assert engine.store.pending_approvals(chat_id) == []
        assert app.composer.text == "any news?"


def test_text_in_a_terminal_sequence_cannot_end_it() -> None:
    evil = "start_call\x07\x1b]0;owned\x1b\\\x9c\nnext"
    cleaned = terminal.clean(evil)
    assert not any(ch in cleaned for ch in "\x07\x1b\x9c\n")
    seqs = terminal.notification_sequences("deferchat; x", evil, ("osc9", "osc777"))
    for seq in seqs:
        body = seq[2:-1]  # between ESC ] and BEL
        assert "\x07" not in body and "\x1b" not in body
    assert seqs[1].count(";") == 3  # notify;title;body: a ';' in the text cannot add a field
    assert terminal.title_sequence(evil).count("\x07") == 1


@pytest.mark.parametrize(
    ("env", "channels"),
    [
        ({"TERM_PROGRAM": "iTerm.app"}, ("osc9",)),
        ({"TERM": "xterm-kitty"}, ("osc9",)),
        ({"TERM_PROGRAM": "WezTerm"}, ("osc9", "osc777")),
        ({"VTE_VERSION": "7600", "TERM": "xterm-256color"}, ("osc777",)),
        ({"TERM": "xterm-256color"}, ()),
        ({"TERM": "screen", "TMUX": "/tmp/x"}, ()),
        ({"TERM_PROGRAM": "iTerm.app", "DEFERCHAT_NOTIFY": "off"}, ()),
        ({"DEFERCHAT_NOTIFY": "osc777"}, ("osc777",)),
    ],
)
def test_notifications_only_where_the_terminal_shows_them(env: dict[str, str], channels: tuple[str, ...]) -> None:
    assert terminal.notification_channels(env) == channels


async def test_tab_then_y_in_one_burst_answers_nothing_and_types_nothing(engine, clock) -> None:
    """Tab moves to the bar at once (the y after it never lands in the box), and starts the bar's
    guard again (the y answers nothing, and the bar says it ignored it)."""
    app = make_app(engine)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await waiting(pilot)
        await until(pilot, lambda: not any(w.group == "session" and not w.is_finished for w in app.workers))
        clock.t += 5  # long after the bar appeared
        app.composer.text = "draft"
        bar = app.approval_bar
        await pilot.press("tab", "y")  # one burst
        assert bar.has_focus and app.composer.text == "draft"
        assert bar.decided is None and bar.ignored == 1 and "ignored 1 key" in notice(app)
        assert engine.store.approval(bar.view.approval_id).status == "pending"
        clock.t += ApprovalBar.GRACE
        await pilot.press("y")  # a moment later: a decision
        await settled(pilot)
        assert engine.store.approval(bar.view.approval_id).status == "allowed"
        assert app.composer.text == "draft"


async def test_escape_and_ctrl_c_in_the_bar_go_back_to_the_box_and_never_stop_the_turn(engine, clock) -> None:
    app = make_app(engine)
    async with app.run_test(size=(100, 30)) as pilot:
        await opened(pilot)
        await send(pilot, CALL)
        await waiting(pilot)
        clock.t += 1
        for key in ("escape", "ctrl+c"):
            await to_the_bar(pilot, clock)
            await pilot.press(key)
            await pilot.pause(0.1)
            assert app.turn_running and app.approval_bar is not None, key
            assert app.approvals.approver.pending() == [app.approval_bar.view.approval_id], key
            if key == "escape":
                assert app.composer.has_focus
            else:  # ctrl+c there says how to quit; the approval still waits
                await pilot.press("escape")
                assert app.composer.has_focus
        await pilot.press("escape")  # in the message box, Esc still stops the turn
        await settled(pilot)
        assert not app.turn_running and app.approval_bar is None


def test_the_bars_hints_name_every_key_it_takes() -> None:
    from tui.widgets import approval

    here = approval.HINT_HERE
    keys = {b.key for b in ApprovalBar.BINDINGS}  # y, n, exclamation_mark, left, right, enter, escape
    spelled = {"exclamation_mark": "!", "left": "\u2190", "right": "\u2192", "enter": "Enter", "escape": "Esc"}
    for key in keys:
        assert spelled.get(key, key) in here, key
    assert "Tab" in here and "Tab" in approval.HINT_AWAY
    assert all(k in approval.HINT_CONFIRM for k in ("Enter", "Tab", "Esc"))
