"""What the owner looks at beside the chat: the plan inspector, the what-if, the usage and
cost, a tool's detail from the roster; and the log's own actions (copy the last answer, show or
fold the thinking). Each screen is imported when first opened."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.controllers.host import Host
from tui.controllers.sessions import Sessions

if TYPE_CHECKING:
    from core.roster.models import RosterPlan


class Views:
    def __init__(self, host: Host, sessions: Sessions) -> None:
        self.host = host
        self.sessions = sessions

    def _open_plan(self) -> RosterPlan | None:
        """The open chat's plan; None (and the owner told) when no chat is open."""
        session = self.host.session
        if session is None or session.plan is None:
            self.host.notify("No chat is open.", severity="warning")
            return None
        return session.plan

    def plan(self) -> None:
        if (plan := self._open_plan()) is not None:
            from tui.screens.plan import PlanScreen

            self.host.push_screen(PlanScreen(plan, self.sessions.pinned))

    def whatif(self) -> None:
        if (plan := self._open_plan()) is not None:
            from tui.screens.whatif import WhatIfScreen

            self.host.push_screen(WhatIfScreen(plan, self.host.engine.estimator))

    def usage(self) -> None:
        session = self.host.session
        if session is None:
            self.host.notify("No chat is open.", severity="warning")
            return
        from core.chat.meter import chat_usage
        from tui.screens.usage import UsageScreen

        self.host.push_screen(UsageScreen(chat_usage(self.host.store, session.chat_id)))

    def tool(self, name: str) -> None:
        roster = self.host.roster
        if roster.plan is not None:
            from tui.screens.tool import ToolScreen

            self.host.push_screen(ToolScreen(roster.plan, name, roster.marks.get(name, set())))

    def copy_last(self) -> None:
        text = self.host.log_view.last_assistant_text()
        if not text:
            self.host.notify("No answer to copy yet.", severity="warning")
            return
        self.host.copy_to_clipboard(text)
        self.host.notify("Copied the last answer.", timeout=2)

    def toggle_thinking(self) -> None:
        shown = self.host.router.toggle_thinking()
        self.host.notify("The model's thinking is shown." if shown else "The model's thinking is folded.", timeout=2)

    async def scroll_log(self, where: str) -> None:
        """PageUp / PageDown / Home / End from the message box: the log moves."""
        view = self.host.log_view
        if where == "page_up":
            view.scroll_page_up(animate=False)
        elif where == "page_down":
            view.scroll_page_down(animate=False)
        elif where == "home":
            await view.action_load_all_earlier()
        else:
            await view.show_tail()
            view.scroll_end(animate=False)
