"""Screenshots of the TUI's main states, as SVG (Textual's own export) and PNG (rsvg-convert).

    python scripts/screenshots.py [--out screenshots] [--no-png]

Runs headless and offline in a temporary DEFERCHAT_HOME: the embedded default (demo model,
production roster, the demo MCP servers), so the pictures show the done-when flow as a
person sees it. PNGs need ``rsvg-convert`` (Debian: ``apt-get install librsvg2-bin``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CALL = "start a call to +1 555 0100 about the invoice"
STANDUP = "move my 9am standup to 10am"


async def until(pilot: Any, condition: Callable[[], object], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(getattr(condition, "__name__", "condition"))
        await pilot.pause(0.02)


async def ready(pilot: Any) -> None:
    app = pilot.app
    await until(pilot, lambda: app.session is not None and app.roster.plan is not None)
    # the demo MCP servers report in
    await until(pilot, lambda: app.roster.servers and all(s[0] == "ready" for s in app.roster.servers.values()))


async def ask(pilot: Any, text: str) -> None:
    app = pilot.app
    app.composer.focus()
    app.composer.text = text
    await pilot.press("enter")


async def approval(pilot: Any) -> None:
    app = pilot.app
    await until(pilot, lambda: app.approval_bar is not None)
    await until(pilot, lambda: not app.approval_bar.has_class("-grace"))  # past its grace period


async def to_the_bar(pilot: Any) -> None:
    """Tab to the approval bar, and past the guard Tab starts (a key in the same burst answers nothing)."""
    await pilot.press("tab")
    await until(pilot, lambda: pilot.app.approval_bar.has_focus)
    await until(pilot, lambda: not pilot.app.approval_bar.has_class("-grace"))


async def approve(pilot: Any) -> None:
    await approval(pilot)
    await to_the_bar(pilot)  # typing never answers it; then y allows once
    await pilot.press("y")
    await until(pilot, lambda: not pilot.app.turn_running and pilot.app.approval_bar is None)


async def settle(pilot: Any) -> None:
    app = pilot.app
    for widget in app.screen.query("Input, TextArea"):
        widget.cursor_blink = False
    app.clear_notifications()
    await pilot.pause(0.2)


Scene = Callable[[Any], Awaitable[None]]


async def allow_for_the_chat(pilot: Any) -> None:
    """Answer the waiting approval with "Allow for this chat" (! then its confirmation)."""
    app = pilot.app
    await approval(pilot)
    await to_the_bar(pilot)
    await pilot.press("exclamation_mark")
    await until(pilot, lambda: not app.approval_bar.has_class("-grace"))  # the confirmation's own
    await pilot.press("enter")
    await until(pilot, lambda: not app.turn_running and app.approval_bar is None)


async def permissions(pilot: Any) -> None:
    """Two grants (a call, then the standup moved), the first taken back in the app."""
    app = pilot.app
    await ready(pilot)
    await ask(pilot, CALL)
    await allow_for_the_chat(pilot)
    await ask(pilot, STANDUP)
    await allow_for_the_chat(pilot)
    await pilot.press("f12")
    await until(pilot, lambda: type(app.screen).__name__ == "PermissionsScreen")
    await pilot.press("r")  # the first row: the call's grant
    await until(pilot, lambda: "1 revoked" in str(app.screen.query_one("#permissions-title").render()))
    await pilot.pause(0.2)


async def new_chat(pilot: Any) -> None:
    await ready(pilot)


async def inline_approval(pilot: Any) -> None:
    await ready(pilot)
    await ask(pilot, CALL)
    await approval(pilot)


async def call_done(pilot: Any) -> None:
    await inline_approval(pilot)
    await approve(pilot)


async def standup_done(pilot: Any) -> None:
    await ready(pilot)
    await ask(pilot, STANDUP)
    await approve(pilot)
    row = next(i for i in pilot.app.log_view.items if getattr(i, "name", "") == "schedule.update").widget
    row.collapsed = False
    await pilot.pause(0.1)


async def roster_filter(pilot: Any) -> None:
    await call_done(pilot)
    await pilot.press("ctrl+f", *"called")
    await until(pilot, lambda: len(pilot.app.roster.shown_names()) == 1)


async def tool_detail(pilot: Any) -> None:
    await ready(pilot)
    options = pilot.app.roster.options
    options.focus()
    options.highlighted = options.get_option_index("mcp.bland_call.start_call")
    await pilot.press("enter")
    await pilot.pause(0.2)


async def plan_inspector(pilot: Any) -> None:
    await ready(pilot)
    await pilot.press("ctrl+g")
    await pilot.pause(0.2)
    pilot.app.screen.query_one("#plan-tabs").active = "tab-index"
    await pilot.pause(0.2)


async def what_if(pilot: Any) -> None:
    await ready(pilot)
    await pilot.press("ctrl+t")
    await until(pilot, lambda: getattr(pilot.app.screen, "result", None) is not None)
    screen = pilot.app.screen
    screen.query_one("#whatif-policy").value = "threshold"
    await until(pilot, lambda: screen.result.policy == "threshold")
    await pilot.press("ctrl+t")


async def chats(pilot: Any) -> None:
    await call_done(pilot)
    await pilot.press("ctrl+n")
    await until(pilot, lambda: pilot.app.log_view.items == [] and pilot.app.session is not None)
    await ready(pilot)
    await ask(pilot, STANDUP)
    await approve(pilot)
    await pilot.press("ctrl+o")
    await pilot.pause(0.3)


SCENES: list[tuple[str, Scene, tuple[int, int], str]] = [
    (
        "01-new-chat",
        new_chat,
        (120, 40),
        "The first screen: the offline demo, the step to a real model, the deferred tools in words",
    ),
    (
        "02-inline-approval",
        inline_approval,
        (120, 40),
        "Inline approval: the tool.call row is already start_call via tool.call",
    ),
    ("03-call-done", call_done, (120, 40), "Approved: start_call (mcp.bland_call.start_call) via tool.call is done"),
    ("04-standup-done", standup_done, (120, 40), "A listed tool, then a deferred one through tool.call, expanded"),
    ("05-roster-filter", roster_filter, (120, 40), "The roster filtered to the tools this chat called"),
    ("06-tool-detail", tool_detail, (120, 40), "A tool: what it does, why it is indexed, its entry, its schema"),
    ("07-plan-index", plan_inspector, (120, 40), "The plan inspector: the index region exactly as sent"),
    ("08-what-if", what_if, (120, 40), "What-if: the threshold policy beside the pinned plan"),
    ("09-chats", chats, (120, 40), "Chats: open, new, rename, delete, export"),
    ("10-small-terminal", inline_approval, (80, 24), "The approval at 80x24"),
    ("11-new-chat-80x24", new_chat, (80, 24), "The first screen at 80x24: the roster folded into a line"),
    ("12-permissions", permissions, (120, 40), "Permissions: a grant taken back, one still allowed"),
]


def to_png(svg: Path, png: Path) -> None:
    # rsvg does not keep runs of non-breaking spaces at their width; plain spaces under
    # xml:space="preserve" render the terminal grid faithfully.
    text = svg.read_text(encoding="utf-8").replace("&#160;", " ")
    text = re.sub(r"<text ", '<text xml:space="preserve" ', text)
    with tempfile.NamedTemporaryFile("w", suffix=".svg", delete=False, encoding="utf-8") as tmp:
        tmp.write(text)
    try:
        subprocess.run(["rsvg-convert", tmp.name, "-o", str(png)], check=True)
    finally:
        os.unlink(tmp.name)


async def shoot(name: str, scene: Scene, size: tuple[int, int], out: Path) -> Path:
    from core.engine import Engine
    from tui.app import DeferchatApp

    with tempfile.TemporaryDirectory() as home:
        os.environ["DEFERCHAT_HOME"] = home
        app = DeferchatApp(Engine(demo_delay=0))
        async with app.run_test(size=size) as pilot:
            await scene(pilot)
            await settle(pilot)
            path = Path(app.save_screenshot(f"{name}.svg", str(out)))
            await app.stop_and_quit()  # no question: the scene may leave a turn waiting
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(REPO / "screenshots"))
    parser.add_argument("--no-png", action="store_true")
    parser.add_argument("--only", default=None, help="one scene by name")
    args = parser.parse_args()
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        os.environ.pop(key, None)
    os.environ["TZ"] = "UTC"
    time.tzset()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    png = not args.no_png
    if png and shutil.which("rsvg-convert") is None:
        print("rsvg-convert is missing (apt-get install librsvg2-bin); writing SVG only", file=sys.stderr)
        png = False
    for name, scene, size, caption in SCENES:
        if args.only and name != args.only:
            continue
        svg = asyncio.run(shoot(name, scene, size, out))
        if png:
            to_png(svg, svg.with_suffix(".png"))
        print(f"{svg.relative_to(out.parent) if svg.is_relative_to(out.parent) else svg}: {caption}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
