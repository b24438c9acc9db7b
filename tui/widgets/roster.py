"""The roster panel: the chat's plan as sections (Defined, Indexed or Deferred, Skipped) with
their budgets, each folded or shown, every tool in words (what it does, its tokens, its server
and untrusted marker: the side-effect codes, the policy and the builder are in the detail
views), live marks for what this chat called, discovered or loaded, a pin
mark on always-load tools (the tool screen's reason says what pins each), the chat's "allow
for this chat" grants, a filter, server status and the roster-changed notice. It shows the
plan; it never computes one.

Where the terminal is too narrow for it, the app folds the panel into :class:`RosterStrip`,
one line in the words of the panel's summary.

The list is arranged to what its height holds (:meth:`RosterPanel.arrangement`): until the person
folds or shows a section, Defined is folded to its heading and count when the whole list does not
fit, so the deferred tools are on the first screen; and each tool takes two lines (what it does
and its tokens below its name) where they fit, one line where they do not. Enter or a click on a
heading folds or shows its section; Left folds the section under the cursor, Right shows it. The
person's folds hold for the panel's life: across chats, a refreshed roster, a provider switch and
any resize."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

from textual import events
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
from tui.state import (
    CALLED,
    DISCOVERED,
    LOADED,
    MARK_GLYPH,
    SIDE_EFFECT_BADGE,
    effect_verb,
    effect_words,
    is_read,
    tokens_words,
)

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


def tool_words(t: ToolPlacement, marks: set[str], granted: bool = False) -> str:
    """What the filter matches: name, origin, server, side effect (its code, badge and words),
    placement, marks, a grant."""
    label = {Placement.DEFERRED: "indexed deferred"}.get(t.placement, t.placement.value)
    untrusted = "untrusted" if t.untrusted else ""
    return " ".join(
        [
            t.name,
            t.origin,
            t.server or "",
            t.side_effect,
            SIDE_EFFECT_BADGE.get(t.side_effect, ""),
            effect_words(t.side_effect, t.origin),
            "reads" if is_read(t.side_effect) else "writes",
            label,
            untrusted,
            "pinned always-load" if t.always_load else "",
            GRANTED_WORDS if granted else "",
            *marks,
        ]
    ).lower()


FOLDED, UNFOLDED = "\u25b8", "\u25be"  # a section's heading: its tools folded away, or shown
GRANTED_WORDS = "allowed"  # a tool with an "allow for this chat" grant: its row says so
UNTRUSTED_MARK = "\u26a0"  # after a server's name: the tool's text is the server's (untrusted)


def tool_prompt(t: ToolPlacement, marks: set[str], granted: bool = False) -> Content:
    """Two lines: the marks, the tool's name and its server; then what it does in words and its
    tokens, after "allowed" when the chat has a grant of it (first, so a narrow panel cuts the
    tokens, never the grant)."""
    glyphs = "".join(MARK_GLYPH[m] if m in marks else " " for m in (CALLED, DISCOVERED, LOADED))
    short = safe(t.remote_name if (t.server and t.remote_name) else t.name)
    line1: list[tuple[str, str] | str] = [(glyphs, "bold cyan")]
    line1.append((PIN_MARK, "bold yellow") if t.always_load else " ")  # the pin takes the gap before the name
    line1.append((short, "bold"))
    if t.server:
        line1 += ["  ", (safe(t.server), "dim")]
    if t.untrusted:
        line1.append((f" {UNTRUSTED_MARK}", "red"))
    line2: list[tuple[str, str] | str] = ["    "]
    if granted:
        line2 += [(f"\u2713 {GRANTED_WORDS}", "bold green"), " \u00b7 "]
    line2 += [
        (effect_words(t.side_effect, t.origin), badge_style(t.side_effect)),
        (f" \u00b7 {tokens_words(t.tokens)}", "dim"),
    ]
    return Content.assemble(*line1, "\n", *line2)


def _line_head(t: ToolPlacement, marks: set[str]) -> Content:
    """A one-line row's left part: the marks, the pin, the name, its server and untrusted marker."""
    glyphs = "".join(MARK_GLYPH[m] if m in marks else " " for m in (CALLED, DISCOVERED, LOADED))
    short = safe(t.remote_name if (t.server and t.remote_name) else t.name)
    parts: list[tuple[str, str] | str] = [(glyphs, "bold cyan")]
    parts.append((PIN_MARK, "bold yellow") if t.always_load else " ")
    parts.append((short, "bold"))
    if t.server:
        parts += [" ", (safe(t.server), "dim")]
    if t.untrusted:
        parts.append((f" {UNTRUSTED_MARK}", "red"))
    return Content.assemble(*parts)


EffectWords = Callable[[str, str], str]


def line_words(tools: Sequence[ToolPlacement], width: int) -> EffectWords:
    """How one-line rows of ``tools`` say what each does: :func:`effect_words` where every row
    has room for them at ``width`` (a section's rows read alike), else :func:`effect_verb` (a row
    without room even for that leaves it to the detail view)."""
    if all(_line_head(t, set()).cell_length + 1 + len(effect_words(t.side_effect, t.origin)) <= width for t in tools):
        return effect_words
    return effect_verb


def tool_line(
    t: ToolPlacement,
    marks: set[str],
    granted: bool = False,
    width: int = 0,
    words: EffectWords = effect_words,
) -> Content:
    """One line, for a list too short for :func:`tool_prompt`'s two: the marks, the name, its
    server and untrusted marker; "allowed" for a granted tool (at the least its mark: never left
    out); and what it does in ``words`` (:func:`line_words`), at the right edge of ``width``
    cells (0: no limit, one space before), in a word or two where a grant takes the room. The
    tokens are the detail view's."""
    line = _line_head(t, marks)
    if granted:
        grant = f" \u2713 {GRANTED_WORDS}"
        if width and line.cell_length + len(grant) > width:
            grant = " \u2713"
        line = Content.assemble(line, (grant, "bold green"))
    for say in (words, effect_verb):
        text = say(t.side_effect, t.origin)
        gap = width - line.cell_length - len(text) if width else 2
        if gap >= 1:
            return Content.assemble(line, " " * gap, (text, badge_style(t.side_effect)))
    return line


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
    """What the marks mean; the pin and untrusted marks only where the plan has them."""
    marks = f"{MARK_GLYPH[CALLED]}called {MARK_GLYPH[DISCOVERED]}discovered {MARK_GLYPH[LOADED]}loaded"
    parts: list[tuple[str, str] | str] = [(marks, "dim")]
    if plan is not None and any(t.untrusted for t in plan.tools):
        parts += [" ", (f"{UNTRUSTED_MARK}untrusted", "red")]
    if plan is not None and plan.always_load_tool_names:
        parts += [" ", (f"{PIN_MARK}pinned", "yellow")]
    return Content.assemble(*parts)


def section_heading(plan: RosterPlan, key: str, *, folded: bool, showing: int | None = None) -> Content:
    """A section's heading: ▸ folded or ▾ shown, then its budget line;
    a folded one says how many tools it holds and how to show them. ``showing``: the filter's
    count (a filter shows its matches in every section, folded or not)."""
    line = budget_lines(plan)[key]  # "tok": the heading fits the narrowest panel on one line
    if showing is not None:  # the count, not the budget: the heading stays on one line
        counted = line.split(" \u00b7 ")[0]
        return Content.styled(f"{UNFOLDED} {counted}  (showing {showing})", "bold reverse")
    heading = Content.styled(f"{FOLDED if folded else UNFOLDED} {line}", "bold reverse")
    tools = {"defined": plan.defined_tool_names, "deferred": plan.deferred_tool_names}.get(key, plan.skipped_tool_names)
    if folded and tools:
        n = len(tools)
        return Content.assemble(heading, "\n", (f"  {n} tool{'s' if n != 1 else ''} \u00b7 Enter shows them", "dim"))
    return heading


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


def heading_height(folded: bool, tools: int) -> int:
    """The lines a section's heading takes (:func:`section_heading`: a folded one with tools says
    how many on a second line)."""
    return 2 if folded and tools else 1


class RosterList(OptionList):
    """The roster's list; it tells the panel when its size changes (the server line or the
    changed notice appearing, the terminal resized), so the panel arranges the list again."""

    class Resized(Message):
        pass

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.Resized())


class RosterPanel(Vertical):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "clear_filter", "Clear filter", show=False, id="roster_clear_filter"),
        Binding("left", "fold_section", "Fold section", show=False, id="roster_fold_section"),
        Binding("right", "unfold_section", "Show section", show=False, id="roster_unfold_section"),
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
        self.grants: dict[str, str] = {}  # tool -> its active grant in words ("allowed for this chat since ...")
        self.folds: set[str] | None = None  # the sections the person folded (kept across chats); None: arrangement()
        self.compact = False  # the tools' rows take one line each (the list's height holds no more)
        self._line_words: dict[Placement, EffectWords] = {}  # per section, for one-line rows
        self._arranged: tuple[frozenset[str], bool, int] | None = None  # render_tools' last _arrangement_now
        self.servers: dict[str, tuple[str, int, str]] = {}
        self.changed: list[str] = []
        self.strip = RosterStrip(id="roster-strip")  # the app places it (above the chat log)
        self.title = Static("Roster", id="roster-title")
        self.summary = Static("", id="roster-summary")
        self.filter = Input(placeholder="filter tools (name, writes, called\u2026)", id="roster-filter")
        self.options = RosterList(id="roster-list")
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
        self.grants = {}
        self.servers = {}
        self.changed = []
        self.title.update("Roster")
        self.title.tooltip = None
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
        self.title.update(Content.assemble(("Roster", "bold"), f" \u00b7 {state}"))
        # the codes are for the detail views (the plan inspector has them all)
        self.title.tooltip = f"policy {plan.policy} \u00b7 strategy {plan.strategy} \u00b7 {plan.builder}"
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
        self._redraw_tool(name)
        return True

    def set_grants(self, grants: dict[str, str]) -> None:
        """The chat's active "allow for this chat" grants (tool -> since when and by whom, in
        words), read from the store: each granted row says "allowed" (the tool screen says the rest)."""
        before, self.grants = self.grants, dict(grants)
        for name in set(before) ^ set(self.grants):
            self._redraw_tool(name)

    def _redraw_tool(self, name: str) -> None:
        placement = self.plan.placement_of(name) if self.plan is not None else None
        if placement is None:
            return
        if self.filter.value.strip():  # a mark or a grant may change what the filter lets through
            self.render_tools()
        elif name in self.shown_names():  # one prompt changes; the list keeps its place
            self.options.replace_option_prompt(name, self._prompt(placement))

    def _prompt(self, t: ToolPlacement) -> Content:
        marks, granted = self.marks.get(t.name, set()), t.name in self.grants
        if self.compact:
            width = self._arranged[2] if self._arranged is not None else 0
            return tool_line(t, marks, granted, width, self._line_words.get(t.placement, effect_words))
        return tool_prompt(t, marks, granted)

    def visible_tools(self) -> dict[Placement, list[ToolPlacement]]:
        """The tools the filter lets through, per section, in plan order (folded sections
        included: what the list shows of them is :meth:`render_tools`'s)."""
        assert self.plan is not None
        needle = self.filter.value.strip().lower()
        order = {n: i for i, n in enumerate(self.plan.deferred_tool_names)}
        out: dict[Placement, list[ToolPlacement]] = {}
        for placement, _ in SECTIONS:
            tools = [t for t in self.plan.tools if t.placement is placement]
            tools.sort(key=lambda t: (order.get(t.name, 0), t.rank))
            if needle:
                tools = [
                    t
                    for t in tools
                    if all(
                        w in tool_words(t, self.marks.get(t.name, set()), t.name in self.grants) for w in needle.split()
                    )
                ]
            out[placement] = tools
        return out

    def arrangement(
        self, sections: dict[Placement, list[ToolPlacement]] | None = None
    ) -> tuple[frozenset[str], bool, bool]:
        """The sections folded to their heading, whether the tools' rows take one line
        (compact), and whether the list still scrolls, for the list's height. The person's folds
        once they folded or showed a section; until then Defined, when the plan defers tools and
        the list cannot show every section (the deferred tools are what the first screen shows).
        Rows take two lines where the unfolded sections fit in them, else one. A filter shows its
        matches in every section."""
        if self.plan is None:
            return frozenset(), False, False
        sections = sections if sections is not None else self.visible_tools()
        filtering = bool(self.filter.value.strip())
        height = self.options.size.height  # 0: not laid out yet (the panel hidden, or before the first frame)

        def lines(folded: frozenset[str], compact: bool) -> int:
            total = 0
            for placement, key in SECTIONS:
                shut = key in folded and not filtering
                total += heading_height(shut, len(sections[placement]))
                total += 0 if shut else len(sections[placement]) * (1 if compact else 2)
            return total

        if self.folds is not None:
            folded = frozenset(self.folds)
        elif self.plan.deferred_tool_names and (not height or lines(frozenset(), True) > height):
            folded = frozenset({"defined"})
        else:
            folded = frozenset()
        compact = bool(height) and lines(folded, False) > height
        return folded, compact, bool(height) and lines(folded, compact) > height

    def _arrangement_now(
        self, sections: dict[Placement, list[ToolPlacement]] | None = None
    ) -> tuple[frozenset[str], bool, int]:
        """:meth:`arrangement` and the cells one-line rows are fitted to: the list's width, less
        the scrollbar's column where the list scrolls (0 for two-line rows: the width does not
        change them)."""
        shut, compact, scrolls = self.arrangement(sections)
        if not compact:
            return shut, False, 0
        width = self.options.size.width - (self.options.styles.scrollbar_size_vertical if scrolls else 0)
        return shut, True, max(width, 1)

    def render_tools(self) -> None:
        """The list: each section's heading, then its tools unless it is folded (a filter shows
        its matches in every section), arranged for the list's height (:meth:`arrangement`)."""
        if self.plan is None:
            return
        highlighted = self.options.highlighted_option.id if self.options.highlighted_option else None
        filtering = bool(self.filter.value.strip())
        options: list[Option] = []
        sections = self.visible_tools()
        self._arranged = self._arrangement_now(sections)
        shut, self.compact, width = self._arranged
        if self.compact:  # each section's rows say what they do alike (the plan's whole section)
            self._line_words = {
                placement: line_words([t for t in self.plan.tools if t.placement is placement], width)
                for placement, _ in SECTIONS
            }
        for placement, key in SECTIONS:
            tools = sections[placement]
            folded = key in shut and not filtering
            heading = section_heading(self.plan, key, folded=folded, showing=len(tools) if filtering else None)
            options.append(Option(heading, id=f"section:{key}"))
            if not folded:
                options += [Option(self._prompt(t), id=t.name) for t in tools]
        self.options.set_options(options)
        if highlighted is not None and highlighted in {o.id for o in options}:
            self.options.highlighted = self.options.get_option_index(highlighted)

    def folded(self) -> set[str]:
        """The sections folded to their heading now (:meth:`arrangement`)."""
        return set(self.arrangement()[0])

    def toggle_section(self, key: str) -> None:
        """Fold a section to its heading, or show its tools: from now on the person's folds
        hold (the list no longer folds Defined to fit)."""
        self.set_folded(key, key not in self.folded())

    def set_folded(self, key: str, folded: bool) -> None:
        now = self.folded()
        self.folds = now | {key} if folded else now - {key}
        if self.folds != now:
            self.render_tools()

    def on_roster_list_resized(self, message: RosterList.Resized) -> None:
        """The list's height or width changed: arrange it again where that changes what fits."""
        message.stop()
        if self.plan is None or not self.options.size.height:
            return
        if self._arrangement_now() != self._arranged:
            self.render_tools()

    def _section_at_cursor(self) -> str | None:
        """The section of the highlighted row (a heading, or a tool under it)."""
        option = self.options.highlighted_option
        if option is None or not option.id or self.plan is None:
            return None
        if option.id.startswith("section:"):
            return option.id.removeprefix("section:")
        placement = self.plan.placement_of(option.id)
        return dict(SECTIONS).get(placement.placement) if placement is not None else None

    def action_fold_section(self) -> None:
        """Left: fold the section under the cursor, which moves to its heading (a filter shows
        every section's matches: nothing folds while it is set)."""
        key = self._section_at_cursor()
        if key is None or self.filter.value.strip():
            return
        self.set_folded(key, True)
        self.options.highlighted = self.options.get_option_index(f"section:{key}")

    def action_unfold_section(self) -> None:
        """Right: show the tools of the section under the cursor."""
        key = self._section_at_cursor()
        if key is not None and not self.filter.value.strip():
            self.set_folded(key, False)

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
        option_id = event.option.id or ""
        if option_id.startswith("section:"):
            if not self.filter.value.strip():  # a filter shows every section's matches
                self.toggle_section(option_id.removeprefix("section:"))
        elif option_id:
            self.post_message(self.ToolSelected(option_id))

    def action_clear_filter(self) -> None:
        self.filter.value = ""
        # and the key goes on to the app's Escape: back to the message box, from here too
        raise SkipAction()
