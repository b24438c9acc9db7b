"""The roster panel: the chat's plan as sections (Defined, Indexed or Deferred, Skipped) with
their budgets, every tool with its side-effect badge, tokens, origin, server and untrusted
marker, live marks for what this chat called, discovered or loaded, a pin mark on always-load
tools (the tool screen's reason says what pins each), a filter, server status and the
roster-changed notice. It shows the plan; it never computes one.

Where the terminal is too narrow for it, the app folds the panel into :class:`RosterStrip`,
one line in the words of the panel's summary."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from core.display import safe
from core.roster.bounds import Placement
from core.roster.report import PIN_MARK, budget_lines, deferred_reach
from core.tools import SideEffect
from tui.state import CALLED, DISCOVERED, LOADED, MARK_GLYPH, SIDE_EFFECT_BADGE, is_read

if TYPE_CHECKING:
    from core.roster.models import RosterPlan, ToolPlacement

SECTIONS = ((Placement.DEFINED, "defined"), (Placement.DEFERRED, "deferred"), (Placement.SKIPPED, "skipped"))
_STATUS_GLYPH = {
    "starting": "\u2026",
    "ready": "\u2713",
    "restarted": "\u21bb",
    "failed": "\u2717",
    "stopped": "\u2013",
    "needs_sign_in": "\u26a0",
}


def badge_style(side_effect: str) -> str:
    if is_read(side_effect):
        return "green"
    if side_effect == SideEffect.COMMUNICATION:
        return "bold magenta"
    return "yellow"


def tool_words(t: ToolPlacement, marks: set[str]) -> str:
    """What the filter matches: name, origin, server, side effect, placement, marks."""
    label = {Placement.DEFERRED: "indexed deferred"}.get(t.placement, t.placement.value)
    untrusted = "untrusted" if t.untrusted else ""
    return " ".join(
        [
            t.name,
            t.origin,
            t.server or "",
            t.side_effect,
            SIDE_EFFECT_BADGE.get(t.side_effect, ""),
            label,
            untrusted,
            "pinned always-load" if t.always_load else "",
            *marks,
        ]
    ).lower()


def tool_prompt(t: ToolPlacement, marks: set[str]) -> Content:
    glyphs = "".join(MARK_GLYPH[m] if m in marks else " " for m in (CALLED, DISCOVERED, LOADED))
    short = safe(t.remote_name if (t.server and t.remote_name) else t.name)
    where = safe(t.origin + (f":{t.server}" if t.server else ""))
    # the tokens before the origin: a long server name is what a narrow panel cuts, not the count
    line2: list[tuple[str, str] | str] = [
        "    ",
        (SIDE_EFFECT_BADGE.get(t.side_effect, t.side_effect), badge_style(t.side_effect)),
        (f" {t.tokens:,} tok ", "dim"),
        (where, "dim"),
    ]
    if t.untrusted:
        line2.append((" \u26a0untrusted", "red"))
    pin = (PIN_MARK, "bold yellow") if t.always_load else " "  # the pin takes the gap before the name
    return Content.assemble((glyphs, "bold cyan"), pin, (short, "bold"), "\n", *line2)


PINNED = "pinned plan"  # the chat's plan; the what-if screen calls it the same
PREVIEW = "plan preview \u00b7 servers starting"  # before the new chat's servers listed their tools


def summary_parts(plan: RosterPlan) -> list[tuple[str, str] | str]:
    """Defined, deferred and skipped counts in the section headings' words: "indexed" where the
    index carries the deferred tools (wrapper), else "deferred" and how the model reaches them."""
    deferred = (
        f"{len(plan.deferred_tool_names)} indexed"
        if plan.strategy == "wrapper"
        else f"{len(plan.deferred_tool_names)} deferred, reached by {deferred_reach(plan)}"
    )
    parts: list[tuple[str, str] | str] = [
        (f"{len(plan.defined_tool_names)} defined", "bold"),
        " \u00b7 ",
        (deferred, "bold"),
        " \u00b7 ",
        (f"{len(plan.skipped_tool_names)} skipped", "bold"),
    ]
    if plan.always_load_tool_names:
        parts += [" \u00b7 ", (f"{PIN_MARK} {len(plan.always_load_tool_names)} pinned", "bold yellow")]
    return parts


def legend(plan: RosterPlan | None) -> Content:
    """What the marks mean; the pin mark only where the plan pins something."""
    marks = f"{MARK_GLYPH[CALLED]} called {MARK_GLYPH[DISCOVERED]} discovered {MARK_GLYPH[LOADED]} loaded"
    if plan is not None and plan.always_load_tool_names:
        return Content.assemble((marks, "dim"), " ", (f"{PIN_MARK} pinned", "yellow"))
    return Content.assemble((marks, "dim"))


class RosterStrip(Static):
    """The roster folded into one line (a narrow terminal, or the panel hidden): the summary,
    the servers that are not ready, and the key that brings the panel back."""

    def __init__(self, **kw) -> None:
        super().__init__("", **kw)
        self.key = ""  # the key display of the toggle, set by the app (it knows the keymap)
        self.parts: list[tuple[str, str] | str] = []
        self.down: list[str] = []

    def show(self, parts: list[tuple[str, str] | str], servers: dict[str, tuple[str, int, str]]) -> None:
        self.parts = parts
        self.down = sorted(n for n, (status, _, _) in servers.items() if status == "failed")
        self._render_strip()

    def set_key(self, key: str) -> None:
        self.key = key
        self._render_strip()

    def _render_strip(self) -> None:
        parts: list[tuple[str, str] | str] = [("Roster ", "bold"), *(self.parts or [("no plan yet", "dim")])]
        if self.down:
            parts += [" \u00b7 ", (f"\u2717 {', '.join(safe(n) for n in self.down)}", "bold red")]
        if self.key:
            parts += ["  ", (f"{self.key} shows it", "dim")]
        self.update(Content.assemble(*parts))


class RosterPanel(Vertical):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "clear_filter", "Clear filter", show=False, id="roster_clear_filter"),
    ]

    class ToolSelected(Message):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.plan: RosterPlan | None = None
        self.pinned = False
        self.marks: dict[str, set[str]] = {}
        self.servers: dict[str, tuple[str, int, str]] = {}
        self.changed: list[str] = []
        self.strip = RosterStrip(id="roster-strip")  # the app places it (above the chat log)
        self.title = Static("Roster", id="roster-title")
        self.summary = Static("", id="roster-summary")
        self.filter = Input(placeholder="filter tools (name, server, net-write, called\u2026)", id="roster-filter")
        self.options = OptionList(id="roster-list")
        self.servers_line = Static("", id="roster-servers")
        self.changed_line = Static("", id="roster-changed")
        self.legend = Static(legend(None), id="roster-legend")

    def compose(self) -> ComposeResult:
        yield self.title
        yield self.summary
        yield self.filter
        yield self.options
        yield self.changed_line
        yield self.servers_line
        yield self.legend

    def on_mount(self) -> None:
        self.changed_line.display = False
        self.servers_line.display = False

    # -- state --------------------------------------------------------------------------------
    def reset(self) -> None:
        self.plan = None
        self.marks = {}
        self.servers = {}
        self.changed = []
        self.title.update("Roster")
        self.summary.update("")
        self.legend.update(legend(None))
        self.options.clear_options()
        self._render_servers()
        self._render_changed()
        self.strip.show([], {})

    def set_plan(
        self, plan: RosterPlan, *, pinned: bool, marks: dict[str, set[str]] | None = None, preview: bool = False
    ) -> None:
        """``preview``: not the chat's plan yet, the one a new chat would pin if its servers list
        what the roster recorded (shown while they start; the chat's pinned plan replaces it)."""
        self.plan = plan
        self.pinned = pinned
        self.marks = {k: set(v) for k, v in (marks or {}).items()}
        state = PINNED if pinned else f"{PINNED} (new)"  # a new chat pins its plan as it opens
        if preview:
            state = PREVIEW
        self.title.update(
            Content.assemble(("Roster", "bold"), f" \u00b7 {state} \u00b7 {plan.policy} \u00b7 {plan.builder}")
        )
        parts = summary_parts(plan)
        self.summary.update(Content.assemble(*parts))
        self.legend.update(legend(plan))
        self.strip.show(parts, self.servers)
        self.render_tools()

    def set_strategy(self, strategy: str, reason: str = "") -> None:
        """The chat now runs under another strategy (a switch of provider resolved it again): the
        pinned plan's tools stay where they are, and the summary, the legend and the rows say how
        the deferred ones are reached now."""
        if self.plan is None or self.plan.strategy == strategy:
            return
        plan = self.plan.model_copy(update={"strategy": strategy, "strategy_reason": reason})
        self.set_plan(plan, pinned=self.pinned, marks=self.marks)

    def mark(self, name: str, mark: str) -> bool:
        have = self.marks.setdefault(name, set())
        if mark in have:
            return False
        have.add(mark)
        placement = self.plan.placement_of(name) if self.plan is not None else None
        if placement is None:
            return True
        if self.filter.value.strip():  # the mark may change what the filter lets through
            self.render_tools()
        elif name in self.shown_names():  # one prompt changes; the list keeps its place
            self.options.replace_option_prompt(name, tool_prompt(placement, have))
        return True

    def visible_tools(self) -> dict[Placement, list[ToolPlacement]]:
        """The tools the filter lets through, per section, in plan order."""
        assert self.plan is not None
        needle = self.filter.value.strip().lower()
        order = {n: i for i, n in enumerate(self.plan.deferred_tool_names)}
        out: dict[Placement, list[ToolPlacement]] = {}
        for placement, _ in SECTIONS:
            tools = [t for t in self.plan.tools if t.placement is placement]
            tools.sort(key=lambda t: (order.get(t.name, 0), t.rank))
            if needle:
                tools = [
                    t for t in tools if all(w in tool_words(t, self.marks.get(t.name, set())) for w in needle.split())
                ]
            out[placement] = tools
        return out

    def render_tools(self) -> None:
        if self.plan is None:
            return
        highlighted = self.options.highlighted_option.id if self.options.highlighted_option else None
        budgets = budget_lines(self.plan)
        filtering = bool(self.filter.value.strip())
        options: list[Option] = []
        sections = self.visible_tools()
        for placement, key in SECTIONS:
            tools = sections[placement]
            heading = budgets[key] + (f"  (showing {len(tools)})" if filtering else "")
            options.append(Option(Content.styled(heading, "bold reverse"), id=f"section:{key}", disabled=True))
            options += [Option(tool_prompt(t, self.marks.get(t.name, set())), id=t.name) for t in tools]
        self.options.set_options(options)
        if highlighted is not None and highlighted in {o.id for o in options}:
            self.options.highlighted = self.options.get_option_index(highlighted)

    def shown_names(self) -> list[str]:
        return [o.id for o in self.options.options if o.id and not o.id.startswith("section:")]

    def set_server(self, server: str, status: str, tools: int, message: str) -> None:
        self.set_servers({**self.servers, server: (status, tools, message)})

    def set_servers(self, servers: dict[str, tuple[str, int, str]]) -> None:
        """Every server's (status, tools, message) at once: the open chat's replace the line, so
        a server the preview marked as starting that this chat does not run leaves it."""
        self.servers = dict(servers)
        self._render_servers()
        if self.plan is not None:
            self.strip.show(summary_parts(self.plan), self.servers)

    def _render_servers(self) -> None:
        if not self.servers:
            self.servers_line.display = False
            return
        parts: list[tuple[str, str] | str] = [("MCP ", "bold")]
        for name in sorted(self.servers):
            status, tools, message = self.servers[name]
            style = {"failed": "bold red", "ready": "green", "restarted": "yellow", "needs_sign_in": "bold yellow"}.get(
                status, "dim"
            )
            text = f"{_STATUS_GLYPH.get(status, '?')} {safe(name)}"
            if status in ("ready", "restarted"):
                text += f" {tools}"
            if status == "failed":
                text += f": {safe(message)}"
            elif status == "needs_sign_in":
                text += " needs sign-in"
            parts += [(text, style), "  "]
        self.servers_line.update(Content.assemble(*parts))
        self.servers_line.display = True

    def roster_changed(self, server: str) -> None:
        if server not in self.changed:
            self.changed.append(server)
        self._render_changed()

    def _render_changed(self) -> None:
        if not self.changed:
            self.changed_line.display = False
            return
        servers = safe(", ".join(self.changed))
        self.changed_line.update(
            Content.styled(
                f"\u26a0 {servers} changed its tools: this chat keeps its pinned plan; a new chat will pick it up",
                "yellow",
            )
        )
        self.changed_line.display = True

    # -- interaction -----------------------------------------------------------------------------
    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input is self.filter:
            event.stop()
            self.render_tools()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id and not event.option.id.startswith("section:"):
            self.post_message(self.ToolSelected(event.option.id))

    def action_clear_filter(self) -> None:
        self.filter.value = ""
        # and the key goes on to the app's Escape: back to the message box, from here too
        raise SkipAction()
