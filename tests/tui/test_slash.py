"""Slash commands in the message box (issue 19, item 7): the completion list as one types /,
Tab and Enter to take, Esc to close, typing never swallowed; each command mirrors its palette
entry; a line that names no command is sent as typed after asking once; other rooms add their
own commands, dynamic ones with arguments included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.tui.conftest import make_app, opened, send, settled, until
from tui.app import COMMANDS, DeferchatApp
from tui.screens.chats import ChatsScreen
from tui.screens.plan import PlanScreen
from tui.screens.slash_help import SlashHelp
from tui.screens.usage import UsageScreen
from tui.slash import Completion, SlashCommand
from tui.state import NoteItem, UserItem

APP_COMMANDS = tuple(
    sorted(
        (
            *("chats", "cost", "export", "help", "model", "new", "permissions", "plan", "resume", "system", "whatif"),
            *("attach", "mcp", "mcp login", "mcp logout"),  # the MCP room's (tui/controllers/mcp.py)
            "compact",  # the turns room's (tui/controllers/turns.py)
        )
    )
)


async def type_in(pilot: Any, text: str) -> None:
    """Type ``text`` key by key, as a person does."""
    app = pilot.app
    app.composer.focus()
    await pilot.press(*text)  # single characters: Textual names each key
    await pilot.pause()


def listed(app: DeferchatApp) -> list[str]:
    return [e.label for e in app.slash_menu.entries] if app.slash_menu.display else []


def users(app: DeferchatApp) -> list[str]:
    return [i.text for i in app.log_view.items if isinstance(i, UserItem)]


async def test_the_list_completes_as_one_types_and_never_swallows_typing(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await type_in(pilot, "/")
        assert [label.split(" [")[0].split(" NAME")[0][1:] for label in listed(app)] == list(APP_COMMANDS)
        assert app.slash_menu.highlighted == 0
        await type_in(pilot, "mo")
        assert listed(app) == ["/model [PROVIDER:MODEL]"] and app.composer.text == "/mo"
        await pilot.press("tab")
        await until(pilot, lambda: app.composer.text == "/model ")
        # the arguments it offers now, none taken until ↑/↓
        await until(pilot, lambda: listed(app) == ["demo:demo-1"])
        assert app.slash_menu.highlighted is None
        await pilot.press("escape")
        await until(pilot, lambda: not app.slash_menu.display)
        assert app.composer.text == "/model " and app.composer.has_focus
        await type_in(pilot, "x")  # typing after Esc goes on in the box
        assert app.composer.text == "/model x"
        # text that is no command's: the list closes, every key goes in the box as typed
        app.composer.text = ""
        await type_in(pilot, "/etc/hosts is a file")
        assert app.composer.text == "/etc/hosts is a file" and not app.slash_menu.display
        # ↑/↓ move in the list while it is open (not the input history)
        app.composer.text = ""
        await type_in(pilot, "/")
        await pilot.press("down", "down", "down", "down")  # past /attach (the MCP room's), /chats, /compact, /cost
        assert app.slash_menu.chosen is not None and app.slash_menu.chosen.label == "/export [PATH]"
        await pilot.press("up")
        assert app.slash_menu.chosen.label == "/cost"


async def test_enter_runs_the_highlighted_command_the_palette_entry_it_mirrors(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        for typed, screen in (("/pl", PlanScreen), ("/cost", UsageScreen), ("/chats", ChatsScreen), ("/he", SlashHelp)):
            await type_in(pilot, typed)
            await pilot.press("enter")
            await until(pilot, lambda screen=screen: isinstance(app.screen, screen))
            assert app.composer.text == ""
            await pilot.press("escape")
            await until(pilot, lambda: app.screen is app.screen_stack[0])
        assert not users(app)  # no command was sent to the model


async def test_help_lists_every_command_with_its_keys(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await type_in(pilot, "/help")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, SlashHelp))
        rows = {usage.split(" [")[0]: (what, keys) for usage, what, keys, _ in app.screen.rows}
        assert sorted(rows) == [f"/{c}" for c in APP_COMMANDS]
        assert rows["/cost"][1] == "f7" and rows["/plan"][1] == "ctrl+g" and rows["/model"][1] == "f10"


def test_every_command_mirrors_a_palette_entry() -> None:
    app = DeferchatApp()
    palette = {action for action, _, _ in COMMANDS}
    for command in app.slash_commands.commands():
        if command.name == "help":  # /help is its own
            continue
        assert command.action in palette, command.name
        assert callable(getattr(app, f"action_{command.action}", None)), command.name


async def test_a_line_that_names_no_command_is_sent_as_typed_after_asking_once(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await type_in(pilot, "/etc/hosts is where names live?")
        await pilot.press("enter")
        await until(pilot, lambda: any("not a command" in n.message for n in app._notifications))
        assert app.composer.text == "/etc/hosts is where names live?" and not users(app)
        await pilot.press("enter")  # asked once: now it goes
        await until(pilot, lambda: users(app) == ["/etc/hosts is where names live?"])
        await settled(pilot)
        app.clear_notifications()
        await type_in(pilot, "//model means the command")  # the escape: sent at once, one slash less
        await pilot.press("enter")
        await until(pilot, lambda: len(users(app)) == 2)
        assert users(app)[1] == "/model means the command"
        assert not any("not a command" in n.message for n in app._notifications)


async def test_commands_with_arguments(engine, tmp_path: Path) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        first = (await opened(pilot)).session.chat_id  # type: ignore[union-attr]
        await send(pilot, "hello there")
        await settled(pilot)
        # /export PATH writes there without asking for the path
        target = tmp_path / "out" / "chat.md"
        await type_in(pilot, f"/export {target}")
        await pilot.press("enter")
        await until(pilot, lambda: target.exists())
        assert target.read_text().startswith("# hello there")
        # /model PROVIDER:MODEL switches at once
        await type_in(pilot, "/model demo:demo-2")
        await pilot.press("enter")
        await until(pilot, lambda: app.session is not None and app.session.provider.model == "demo-2")
        assert any(isinstance(i, NoteItem) and "demo/demo-2" in i.text for i in app.log_view.items)
        # /new, then /resume ID opens the first chat again (its id completes)
        await type_in(pilot, "/new")
        await pilot.press("enter")
        await until(pilot, lambda: app.session is not None and app.session.chat_id != first and not app.opening)
        await type_in(pilot, f"/resume {first[:9]}")
        await until(pilot, lambda: any(e.label == first for e in app.slash_menu.entries))
        await pilot.press("down", "enter")
        await until(pilot, lambda: app.session is not None and app.session.chat_id == first and not app.opening)
        await until(pilot, lambda: users(app) == ["hello there"])
        # a command that takes none says so, and the line stays
        await type_in(pilot, "/plan everything")
        await pilot.press("enter")
        await until(pilot, lambda: any("takes no arguments" in n.message for n in app._notifications))
        assert app.composer.text == "/plan everything"


async def test_another_room_adds_commands_dynamic_ones_with_arguments(engine) -> None:
    app = make_app(engine)
    ran: list[str] = []
    prompts = ["review", "summarise"]

    async def run(prompt: str, args: str) -> None:
        ran.append(f"{prompt}:{args}")

    app.slash_commands.source(
        lambda: [
            SlashCommand(
                f"github:{p}",
                f"the server's {p} prompt",
                args="REPO",
                run=lambda args, p=p: run(p, args),
                complete=lambda typed: [Completion("deferchat/deferchat", "the repo"), Completion("other/repo")],
                origin="github",
            )
            for p in prompts
        ]
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await type_in(pilot, "/git")
        assert listed(app) == ["/github:review REPO", "/github:summarise REPO"]
        await pilot.press("enter")  # it needs its argument: the box waits for it
        await until(pilot, lambda: app.composer.text == "/github:review ")
        await until(pilot, lambda: listed(app) == ["deferchat/deferchat", "other/repo"])
        await type_in(pilot, "oth")
        assert listed(app) == ["other/repo"]
        await pilot.press("tab")
        await until(pilot, lambda: app.composer.text == "/github:review other/repo")
        await pilot.press("enter")
        await until(pilot, lambda: ran == ["review:other/repo"])
        prompts.remove("review")  # the server dropped it
        await type_in(pilot, "/github:review x")
        await pilot.press("enter")
        await until(pilot, lambda: any("not a command" in n.message for n in app._notifications))


async def test_esc_closes_the_list_without_stopping_the_turn(engine) -> None:
    app = make_app(engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await opened(pilot)
        await send(pilot, "move my standup to 10am")  # the demo asks for an approval: the turn waits
        await until(pilot, lambda: app.approval_bar is not None)
        await type_in(pilot, "/")
        assert app.slash_menu.display
        await pilot.press("escape")
        await until(pilot, lambda: not app.slash_menu.display)
        assert app.turn_running and app.approval_bar is not None
