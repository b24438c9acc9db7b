"""What the chat log and the roster panel show, as plain data (no Textual here).

The engine decides; these records only remember what its events said, so a widget can be
rebuilt from them at any time (the chat log mounts only a window of them). Building the
items of a reopened chat from the store is a pure function, tested without an app.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from core.context.envelope import CLOSE_TAG, OPEN_TAG
from core.events import Event, ModelToolSearch, ToolDiscovered, ToolRequested, parse_event
from core.pipeline import codes
from core.pipeline.preview import SIDE_EFFECT_WORDS as APPROVAL_WORDS
from core.tools import EFFECT_WORDS, SideEffect

if TYPE_CHECKING:
    from core.store import InvocationRow, MessageRow, TurnRow

log = logging.getLogger("deferchat.tui")

# Tool-row statuses, in the words the row shows.
PENDING = "pending"
AWAITING = "awaiting approval"
RUNNING = "running"
DONE = "done"
FAILED = "failed"
DENIED = "denied"
STATUSES = (PENDING, AWAITING, RUNNING, DONE, FAILED, DENIED)

_INVOCATION_STATUS = {
    "requested": PENDING,
    "awaiting_approval": AWAITING,
    "running": RUNNING,
    "completed": DONE,
    "failed": FAILED,
    "unknown": FAILED,
    "denied": DENIED,
}

STATUS_GLYPH = {PENDING: "\u25cb", AWAITING: "?", RUNNING: "\u25b6", DONE: "\u2713", FAILED: "\u2717", DENIED: "\u2298"}

# Live marks on the roster panel: what happened to a tool in this chat.
CALLED = "called"
DISCOVERED = "discovered"
LOADED = "loaded"
MARK_GLYPH = {CALLED: "\u25cf", DISCOVERED: "\u25c6", LOADED: "\u25c7"}
MARK_HELP = {CALLED: "called", DISCOVERED: "discovered (active-tools pool)", LOADED: "loaded by native tool search"}

# The words the TUI shows for each side-effect class. Keyed by core's enum (a str enum, so a
# plan's plain string looks up the same entry); which classes are reads is core's fact.
SIDE_EFFECT_BADGE: dict[str, str] = {
    SideEffect.NONE: "pure",
    SideEffect.WORKSPACE_READ: "ws-read",
    SideEffect.NETWORK_READ: "net-read",
    SideEffect.WORKSPACE_WRITE: "ws-write",
    SideEffect.NETWORK_WRITE: "net-write",
    SideEffect.COMMUNICATION: "comms",
}
SIDE_EFFECT_MEANING: dict[str, str] = APPROVAL_WORDS  # the words an approval uses (core.pipeline.preview)


SIDE_EFFECT_WORDS: dict[str, str] = EFFECT_WORDS
"""What a tool does, in a person's words (core's, :data:`core.tools.EFFECT_WORDS`): the roster's
rows (the class and its code are in the tool's detail)."""
CONTROL_WORDS = "control tool"  # deferchat's own tools (tool.call, tool.search, ...): they reach nothing


EFFECT_VERB: dict[str, str] = {
    SideEffect.NONE: "computes",
    SideEffect.WORKSPACE_READ: "reads",
    SideEffect.NETWORK_READ: "reads the web",
    SideEffect.WORKSPACE_WRITE: "changes",
    SideEffect.NETWORK_WRITE: "sends",
    SideEffect.COMMUNICATION: "contacts",
}
"""The same in a word or two: a one-line roster row too narrow for :data:`SIDE_EFFECT_WORDS`."""


def effect_verb(side_effect: str, origin: str = "") -> str:
    """:func:`effect_words` in a word or two (a one-line roster row on a narrow panel)."""
    if origin == "control":
        return "control"
    return EFFECT_VERB.get(side_effect, side_effect)


def effect_words(side_effect: str, origin: str = "") -> str:
    """A roster row's words for what the tool does: "control tool" for deferchat's own, else
    :data:`SIDE_EFFECT_WORDS` (the class itself for one the TUI does not know)."""
    if origin == "control":
        return CONTROL_WORDS
    return SIDE_EFFECT_WORDS.get(side_effect, side_effect)


STRATEGY_WORDS: dict[str, str] = {
    "wrapper": "deferred tools are listed in an index and called through tool.call",
    "anthropic": "deferred tools are found by Anthropic's own tool search",
    "openai": "deferred tools are found by OpenAI's own tool search",
    "active-tools": "deferred tools are found with tool.search and added as needed",
}
"""How the model reaches the deferred tools, in words: the header (the strategy's reason, with
its design references, is the badge's tooltip and the plan inspector's)."""


def first_key(keys: Callable[[str], str], action: str, default: str = "") -> str:
    """An action's first key as a person reads it (F10, Tab, ctrl+r): ``keys`` is the app's
    ``keys_for`` (the keymap's keys, comma-separated), ``default`` when it has none."""
    key = (keys(action) or default).split(",")[0].strip()
    if key[:1] == "f" and key[1:].isdigit():
        return key.upper()
    return key.capitalize() if key in ("tab", "enter", "escape") else key


def tokens_words(n: int) -> str:
    return f"{n:,} token" + ("" if n == 1 else "s")


def is_read(side_effect: str | None) -> bool:
    """Whether a side-effect class (as a plan or an event spells it) only reads:
    :attr:`core.tools.SideEffect.is_read`, False for a class core does not know."""
    try:
        return SideEffect(side_effect).is_read
    except ValueError:
        return False


@dataclass(eq=False)
class Item:
    """One entry of the chat log. ``widget`` is the mounted widget, if the window shows it."""

    widget: Any = field(default=None, repr=False, compare=False)


@dataclass(eq=False)
class UserItem(Item):
    text: str = ""


@dataclass(eq=False)
class AssistantItem(Item):
    text: str = ""
    streaming: bool = False


@dataclass(eq=False)
class NoteItem(Item):
    text: str = ""
    level: str = "info"  # info | warning | error


@dataclass(eq=False)
class ToolItem(Item):
    """A tool call as the log shows it. ``model_name`` is what the model wrote (e.g. tool.call);
    ``name`` is the deferred tool's own name once the pipeline has said it."""

    call_id: str = ""
    model_name: str = ""
    name: str | None = None
    via: str | None = None
    status: str = PENDING
    code: str | None = None
    message: str | None = None
    arguments: Any = None
    result: Any = None
    side_effect: str | None = None
    scope: str | None = None
    replayed: bool = False
    display: str = ""  # the short name the row shows, e.g. start_call (mcp.bland_call.start_call)

    @property
    def shown_name(self) -> str:
        return self.display or self.name or self.model_name


def tool_display(name: str, remote_name: str | None = None, server: str | None = None) -> str:
    """``start_call (mcp.bland_call.start_call)`` for a server's tool, the name itself otherwise."""
    if remote_name and server and name != remote_name:
        return f"{remote_name} ({name})"
    return name


def status_of_invocation(status: str | None) -> str:
    return _INVOCATION_STATUS.get(status or "", PENDING)


def tool_title(item: ToolItem) -> str:
    """The row's title: glyph, status, name and the wrapper it came through; a failed or
    denied call says why in the owner's words (``codes.describe``; the raw code is in the row's
    detail)."""
    status = item.status
    if item.code and item.status in (FAILED, DENIED):
        status += f": {codes.describe(item.code)}"
    if item.status == DONE and item.replayed:
        status += " (replayed)"
    parts = [STATUS_GLYPH.get(item.status, "\u00b7"), status, "\u00b7", item.shown_name]
    if item.via:
        parts.append(f"via {item.via}")
    if item.scope in ("once", "chat") and item.status not in (DENIED,):
        parts.append("\u00b7 allowed " + ("for this chat" if item.scope == "chat" else "once"))
    return " ".join(parts)


def compact_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), sort_keys=False)
    except (TypeError, ValueError):
        return str(value)


def pretty_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        return str(value)


def clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(1, width - 1)] + "\u2026"


def json_value(value: Any) -> Any:
    """Stored JSON text as its value (text that is not JSON stays as it is)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


STOPPED_NOTE = "Stopped by you; what the model had written is kept."
"""The log's line after a turn the owner stopped (live, and when the chat is opened again)."""


def items_from_history(
    messages: Iterable[MessageRow],
    invocations: Iterable[InvocationRow],
    displays: dict[str, str] | None = None,
    stopped: Collection[str] = (),
) -> list[Item]:
    """The log of a stored chat: its messages in order, every tool call under the tool's own
    name (from its invocation row), tool results folded into their calls, and after the last
    message of each turn in ``stopped`` (the ids of the turns whose row says ``stopped``) the
    note the log showed when it stopped."""
    by_call = {inv.call_id: inv for inv in invocations}
    displays = displays or {}
    items: list[Item] = []
    rows = list(messages)
    for i, m in enumerate(rows):
        for block in m.blocks:
            kind = block.get("type")
            if kind == "text" and block.get("text"):
                items.append(UserItem(text=block["text"]) if m.role == "user" else AssistantItem(text=block["text"]))
            elif kind == "tool_use":
                call_id = str(block.get("id") or "")
                inv = by_call.get(call_id)
                item = ToolItem(call_id=call_id, model_name=str(block.get("name") or "?"), arguments=block.get("input"))
                if inv is not None:
                    item.name = inv.name or item.model_name
                    item.via = inv.via
                    item.status = status_of_invocation(inv.status)
                    item.code = inv.error_code
                    item.message = inv.error_message
                    item.side_effect = inv.side_effect
                    if inv.arguments:
                        item.arguments = json_value(inv.arguments)
                    item.result = inv.model_result
                    item.display = displays.get(item.name or "", "")
                items.append(item)
            elif (thought := stored_thinking(block)) is not None:
                items.append(thought)
            elif kind == "server_tool_use":
                items.append(NoteItem(text=f"tool search: {compact_json(block.get('input'))}"))
            elif kind == "tool_search_tool_result":
                content = block.get("content") or {}
                refs = [r.get("tool_name") for r in content.get("tool_references", []) if isinstance(r, dict)]
                items.append(NoteItem(text="tool search found: " + (", ".join(str(r) for r in refs) or "nothing")))
        last_of_turn = i + 1 == len(rows) or rows[i + 1].turn_id != m.turn_id
        if m.turn_id in stopped and last_of_turn:
            items.append(NoteItem(text=STOPPED_NOTE, level="warning"))
    return items


def stopped_turns(turns: Iterable[TurnRow]) -> set[str]:
    """The ids of the turns that ended stopped (by the owner, or closed unfinished as a stop would)."""
    return {t.id for t in turns if t.status == "stopped"}


STOPPED = "stopped"  # a thinking block whose turn ended before the block did


@dataclass(eq=False)
class ThinkingItem(Item):
    """One thinking block as the log shows it."""

    text: str = ""
    streaming: bool = False
    redacted: bool = False
    expanded: bool = False
    ended: str = ""  # STOPPED: the turn ended before the block did

    @property
    def words(self) -> int:
        return len(self.text.split())

    def title(self) -> str:
        if self.redacted:
            return "Redacted thinking (encrypted by the provider)"
        if self.streaming:
            return f"Thinking\u2026 {self.words:,} words"
        if self.ended == STOPPED:
            return f"Thinking, stopped after {self.words:,} words"
        return f"Thought for {self.words:,} words"


def stored_thinking(block: Mapping[str, Any]) -> Item | None:
    """A stored block of the model's thinking as the log shows it (folded), or None: Anthropic
    thinking and redacted thinking, an OpenAI-compatible server's reasoning_content, and an
    OpenAI Responses reasoning item's summary (an item without one shows nothing)."""
    kind = block.get("type")
    if kind == "thinking":
        return ThinkingItem(text=str(block.get("thinking") or ""))
    if kind == "redacted_thinking":
        return ThinkingItem(redacted=True)
    if kind == "reasoning_content":
        return ThinkingItem(text=str(block.get("text") or "")) if block.get("text") else None
    item = block.get("item") if kind == "provider_item" else None
    if isinstance(item, Mapping) and item.get("type") == "reasoning":
        parts = [p.get("text") for p in item.get("summary") or [] if isinstance(p, Mapping)]
        text = "\n\n".join(str(t) for t in parts if t)
        return ThinkingItem(text=text) if text else None
    return None


def is_native_search(executor: str | None, search_id: str | None) -> bool:
    """A provider's native tool search: run by the provider's server, or handed to us to run
    (then it carries the provider's search id). Our own ``tool.search`` (active-tools) has
    no id; its finds are reported by ``tool.discovered``."""
    return (executor or "server") == "server" or bool(search_id)


MARKING_EVENTS = (ToolRequested, ToolDiscovered, ModelToolSearch)
"""The events that can set a roster mark (see :func:`marks_for`)."""
MARK_EVENT_TYPES: tuple[str, ...] = tuple(cls.model_fields["type"].default for cls in MARKING_EVENTS)
"""Their ``type`` names, to ask the store for a chat's marking events."""


def marks_from_events(events: Iterable[Mapping[str, Any]]) -> dict[str, set[str]]:
    """Roster marks from a chat's stored events (the same rules the live handler applies).
    A stored row that is not a valid event (written by another version) sets no mark."""
    marks: dict[str, set[str]] = {}
    for data in events:
        try:
            event = parse_event(dict(data))
        except ValidationError:
            log.warning("a stored %s event does not parse; it sets no roster mark", data.get("type"))
            continue
        for name, mark in marks_for(event):
            marks.setdefault(name, set()).add(mark)
    return marks


def marks_for(event: Event) -> list[tuple[str, str]]:
    """(tool, mark) pairs one event sets."""
    match event:
        case ToolRequested(name=name) if name:
            return [(name, CALLED)]
        case ToolDiscovered(names=names):
            return [(n, DISCOVERED) for n in names]
        case ModelToolSearch(executor=executor, id=search_id, references=references) if is_native_search(
            executor, search_id
        ):
            return [(n, LOADED) for n in references]
    return []


_OPEN, _CLOSE = f"<<<{OPEN_TAG} ", f"<<<{CLOSE_TAG} "  # how core.context.envelope opens and closes one


def index_block(index_text: str, entry: str | None) -> str | None:
    """The lines of the index region that carry ``entry``, exactly as the prompt has them:
    the entry alone for trusted configuration, the whole envelope it sits in otherwise.
    None when the index text does not carry it (another strategy, or not deferred)."""
    if not entry or not index_text:
        return None
    lines = index_text.splitlines()
    if entry not in lines:
        return None
    at = lines.index(entry)
    opened = None
    for i in range(at - 1, -1, -1):
        if lines[i].startswith(_CLOSE):
            break
        if lines[i].startswith(_OPEN):
            opened = i
            break
    if opened is None:
        return entry
    close = next((j for j in range(at + 1, len(lines)) if lines[j].startswith(_CLOSE)), len(lines) - 1)
    return "\n".join(lines[opened : close + 1])
