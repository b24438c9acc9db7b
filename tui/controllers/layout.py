"""The layout: what the terminal's width leaves room for, and the roster panel's toggle.

Below :data:`ROSTER_FOLD_WIDTH` columns the roster folds into its one-line strip (the chat gets
the width) and the footer is compact; the owner's toggle brings the panel back (or hides it at
any width). A narrow footer leaves out the plan and what-if keys while a turn's own keys (Stop,
Answer) need the room: the palette still has them, with their keys.
"""

from __future__ import annotations

from textual.binding import Binding

from tui.controllers.host import Host

ROSTER_FOLD_WIDTH = 100  # below this many columns the roster folds into one line
WIDE_WIDTH = 160  # from this many columns the roster gets more room (app.tcss: -wide)
FOOTER_SPARE = frozenset({"plan", "whatif"})  # the palette has them, with their keys


class Layout:
    def __init__(self, host: Host) -> None:
        self.host = host
        self.roster_wanted: bool | None = None  # the owner's toggle; None: the width decides

    def lay_out(self, width: int) -> None:
        host = self.host
        host.screen.set_class(width < ROSTER_FOLD_WIDTH, "-narrow")
        host.screen.set_class(width >= WIDE_WIDTH, "-wide")
        host.footer.compact = width < ROSTER_FOLD_WIDTH
        host.refresh_bindings()  # the footer recomposes for the width (footer_spare)
        shown = self.roster_wanted if self.roster_wanted is not None else width >= ROSTER_FOLD_WIDTH
        host.roster.display = shown
        host.roster.strip.display = not shown
        key = (host.keys_for("toggle_roster") or "ctrl+r").split(",")[0].strip()
        host.roster.strip.set_key(host.get_key_display(Binding(key, "toggle_roster")))

    def footer_spare(self) -> frozenset[str]:
        """What a narrow footer leaves out while a turn's own keys (Stop, Answer) need the room."""
        return FOOTER_SPARE if self.host.size.width < ROSTER_FOLD_WIDTH and self.host.turn_running else frozenset()

    def toggle_roster(self) -> None:
        self.roster_wanted = not self.host.roster.display
        self.lay_out(self.host.size.width)

    def filter_tools(self) -> None:
        self.roster_wanted = True
        self.lay_out(self.host.size.width)
        self.host.roster.filter.focus()
