"""The event vocabulary: everything the engine tells its subscribers (TUI, headless CLI, store).

`model.*` events speak as the model wrote it (a deferred call shows as ``tool.call``);
`tool.*` events come from the pipeline and carry the deferred tool's own name, with
``via`` naming the wrapper the model used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from core.pipeline.preview import ActionPreview


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")
    chat_id: str | None = None

    def to_json(self) -> str:
        return self.model_dump_json(exclude_none=False)


class PlanEvent(_Event):
    type: Literal["plan"] = "plan"
    builder: str
    policy: str
    strategy: str
    strategy_reason: str = ""
    pinned: bool = Field(False, description="True when the chat reused its stored plan")
    agent: dict[str, Any] = Field(default_factory=dict)
    defined_tool_names: list[str]
    deferred_tool_names: list[str]
    skipped_tool_names: list[str]
    definition_tokens: int
    index_tokens: int
    caps: dict[str, int] = Field(default_factory=dict)
    # Always-load pins (defined first, never deferred unless over the caps), in rank order.
    always_load_tool_names: list[str] = Field(default_factory=list)


class TurnStarted(_Event):
    type: Literal["turn.started"] = "turn.started"
    turn_id: str
    text: str = ""
    resumed: bool = False


class ModelTextDelta(_Event):
    type: Literal["model.text.delta"] = "model.text.delta"
    text: str


class ModelText(_Event):
    type: Literal["model.text"] = "model.text"
    text: str


class ModelThinkingDelta(_Event):
    """A piece of the model's thinking as it streams (Anthropic thinking, an OpenAI reasoning
    summary, an OpenAI-compatible server's reasoning_content)."""

    type: Literal["model.thinking.delta"] = "model.thinking.delta"
    text: str


class ModelThinking(_Event):
    """One whole thinking block of a response, after the response: ``redacted`` when the
    provider encrypted it (Anthropic redacted_thinking; ``text`` is then empty)."""

    type: Literal["model.thinking"] = "model.thinking"
    text: str
    redacted: bool = False


class ModelToolUse(_Event):
    type: Literal["model.tool_use"] = "model.tool_use"
    id: str
    name: str  # as the model wrote it, e.g. tool.call
    input: Any = None


class ModelToolSearch(_Event):
    type: Literal["model.tool_search"] = "model.tool_search"
    id: str = ""
    query: str = ""
    references: list[str] = Field(default_factory=list)
    executor: Literal["server", "client"] = "server"


class ToolDiscovered(_Event):
    """active-tools: names added to this turn's discovery pool (they join the tools array)."""

    type: Literal["tool.discovered"] = "tool.discovered"
    names: list[str]
    source: Literal["search", "history"] = "search"


class ToolRequested(_Event):
    type: Literal["tool.requested"] = "tool.requested"
    call_id: str
    name: str  # the deferred tool's own name
    via: str | None = None  # "tool.call" when unwrapped from the wrapper
    arguments: Any = None


class ToolApprovalRequired(_Event):
    type: Literal["tool.approval_required"] = "tool.approval_required"
    call_id: str
    name: str
    via: str | None = None
    approval_id: str
    side_effect: str
    arguments: Any = None  # the canonical values the tool will receive
    reason: str = ""
    preview: ActionPreview | None = None  # what the person is shown (core.pipeline.preview)


class ToolApproved(_Event):
    """A call may run. ``scope``: ``once`` (this call), ``chat`` (an "allow for this chat"
    grant), ``policy``. ``granted``: this answer gave the chat's grant (False when an earlier
    grant allowed the call)."""

    type: Literal["tool.approved"] = "tool.approved"
    call_id: str
    name: str
    via: str | None = None
    scope: Literal["once", "chat", "policy"] = "once"
    granted: bool = False


class GrantRevoked(_Event):
    """An "Allow for this chat" grant was taken back (the tool asks again at its next call).
    ``by``: where (``app``, ``cli``)."""

    type: Literal["grant.revoked"] = "grant.revoked"
    tool: str
    by: str


class ToolDenied(_Event):
    type: Literal["tool.denied"] = "tool.denied"
    call_id: str
    name: str
    via: str | None = None
    code: str
    message: str


class ToolStarted(_Event):
    type: Literal["tool.started"] = "tool.started"
    call_id: str
    name: str
    via: str | None = None


class ToolCompleted(_Event):
    type: Literal["tool.completed"] = "tool.completed"
    call_id: str
    name: str
    via: str | None = None
    result: Any = None
    replayed: bool = False
    truncated: bool = False


class ToolFailed(_Event):
    type: Literal["tool.failed"] = "tool.failed"
    call_id: str
    name: str
    via: str | None = None
    code: str
    message: str


class UsageEvent(_Event):
    """One model request's usage, in Anthropic's terms (``input_tokens`` is the uncached input),
    and what it cost (:mod:`core.chat.meter`). ``cost_usd`` is None when no price is known for
    the model: it is never guessed."""

    type: Literal["usage"] = "usage"
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    provider: str = ""
    model: str = ""
    cost_usd: float | None = None
    prefix: str = ""  # a digest of the request's cacheable prefix (tools and system), see the meter
    # how the request ended: ``done``; ``stopped`` (the owner stopped the turn while it streamed),
    # ``interrupted`` (the app closed while it streamed), ``failed`` (it failed after the provider
    # received it: refused with ``http_status``, or broken off mid-answer)
    status: Literal["done", "stopped", "interrupted", "failed"] = "done"
    estimated: bool = False  # some counts are deferchat's estimate: the provider's usage never came
    http_status: int | None = None
    purpose: Literal["turn", "summary"] = "turn"  # summary: a request that summarised the history


class PrefixBreak(_Event):
    """The next request's cacheable prefix differs from the previous request's: ``tools`` (the
    tools array changed: a discovery under active-tools), ``system`` (the system prompt
    changed) or ``switch`` (another provider or model). Emitted before that request's usage."""

    type: Literal["prefix.break"] = "prefix.break"
    cause: Literal["tools", "system", "switch"]
    detail: str = ""


class SystemPromptChanged(_Event):
    """The chat's own system prompt was set or edited; after the first message it changes the
    cached prefix of the next request (a ``system`` prefix break)."""

    type: Literal["chat.system_prompt"] = "chat.system_prompt"
    text: str
    before_first_message: bool


class ServerStatus(_Event):
    """An MCP server's state at session open or after a crash."""

    type: Literal["server.status"] = "server.status"
    server: str
    status: Literal["starting", "ready", "failed", "restarted", "stopped", "needs_approval", "needs_sign_in"]
    tools: int = 0
    message: str = ""


class RosterChanged(_Event):
    """A server's tool list changed; the open chat keeps its pinned plan."""

    type: Literal["roster.changed"] = "roster.changed"
    server: str
    message: str = ""


class ToolChanged(_Event):
    """A server lists a tool the chat pinned otherwise now (``notifications/tools/list_changed``):
    its calls are judged by the stricter of the pinned and the live description. ``changes``
    names what differs (``class``, ``approval``, ``description``, ``input schema``, ``hints``,
    or ``removed``: no longer listed); ``side_effect`` is the class calls are now judged by."""

    type: Literal["tool.changed"] = "tool.changed"
    name: str
    server: str | None = None
    pinned_side_effect: str
    live_side_effect: str | None = None  # None: the server no longer lists it
    side_effect: str
    changes: list[str] = Field(default_factory=list)
    live_pin: str | None = None
    message: str = ""


class ElicitationRequested(_Event):
    """An MCP server asks the person for input (MCP elicitation): a form of ``fields`` (names,
    titles, kinds, whether required) or, in ``url`` mode, an address to open. ``message`` and the
    titles are the server's words, untrusted. The person answers; the model never sees it."""

    type: Literal["mcp.elicitation"] = "mcp.elicitation"
    server: str
    request_id: str
    mode: Literal["form", "url"] = "form"
    message: str = ""
    fields: list[dict[str, Any]] = Field(default_factory=list)
    url: str | None = None


class ElicitationAnswered(_Event):
    """How a request for input was answered: ``accept`` (with the names of the fields filled, never
    their values), ``decline`` or ``cancel``; ``reason`` when no person answered (a timeout, no
    terminal) or the server's form could not be shown."""

    type: Literal["mcp.elicitation.answered"] = "mcp.elicitation.answered"
    server: str
    request_id: str
    action: Literal["accept", "decline", "cancel"]
    answered: list[str] = Field(default_factory=list)
    reason: str = ""


class OffersChanged(_Event):
    """A server's resources or prompts changed (it sent ``list_changed``); ``count`` is how many it
    lists now. What the palette, ``@`` completion and the slash commands offer follows."""

    type: Literal["mcp.offers.changed"] = "mcp.offers.changed"
    server: str
    kind: Literal["resources", "prompts"]
    count: int = 0


class ResourceAttached(_Event):
    """A resource went with the person's message: ``tokens`` counts what the model reads of it
    (inside the server's envelope), ``chars`` the whole; ``truncated`` when it was cut."""

    type: Literal["mcp.resource.attached"] = "mcp.resource.attached"
    server: str
    uri: str
    name: str = ""
    chars: int = 0
    tokens: int = 0
    truncated: bool = False
    binary: bool = False


class ChatTitled(_Event):
    """The chat's title changed (from the first message, or the model's chat.title)."""

    type: Literal["chat.titled"] = "chat.titled"
    title: str


class ProviderRetrying(_Event):
    """A model request failed in a way worth another try (rate limited, overloaded, a dropped
    connection); the turn waits ``seconds`` before retry number ``attempt``. Stopping the turn
    stops the wait."""

    type: Literal["provider.retrying"] = "provider.retrying"
    seconds: float
    attempt: int
    reason: str


class ProviderSwitched(_Event):
    """The chat moved to another provider or model (the owner's choice, or a fallback after the
    provider kept failing). The pinned plan stays; the strategy was resolved again for the new
    provider (``strategy``, ``strategy_reason``), and the history is converted for its API on
    every request from now on (:mod:`core.providers.portable`)."""

    type: Literal["provider.switched"] = "provider.switched"
    from_provider: str
    from_model: str
    provider: str
    model: str
    base_url: str | None = None
    strategy: str
    strategy_reason: str = ""
    cause: Literal["owner", "fallback"] = "owner"
    reason: str = ""

    @field_validator("base_url")
    @classmethod
    def _no_credential(cls, value: str | None) -> str | None:
        from core.redaction import without_userinfo

        return without_userinfo(value)  # stored and shown: the credential stays in memory


class HistoryCompacted(_Event):
    """The chat's oldest turns were summarised into one summary that takes their place in
    requests (the store keeps them): ``turns`` and ``messages`` it now covers, the history's
    tokens before and after (cl100k, as the budget counts them), how it was made (``model``: the
    chat's own model wrote it; ``extractive``: made from the turns themselves, the model having
    failed (``error``) or the chat being offline; ``dropped``: the turns are left out, which the
    summary says), ``reason`` (``auto``: the chat neared its model's window; ``owner``: asked for),
    and ``message``, the line a person reads."""

    type: Literal["history.compacted"] = "history.compacted"
    summary_id: str = ""
    turns: int
    messages: int
    tokens_before: int
    tokens_after: int
    window: int = 0
    method: Literal["model", "extractive", "dropped"] = "model"
    reason: Literal["auto", "owner"] = "auto"
    error: str = ""
    message: str = ""


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    code: str
    message: str
    retryable: bool = False


class TurnCompleted(_Event):
    """The turn ended. ``stopped``: the owner stopped it (Esc, ctrl+c, SIGINT); its partial
    answer is kept and ``stop_reason`` is ``owner``."""

    type: Literal["turn.completed"] = "turn.completed"
    turn_id: str = ""
    status: Literal["done", "parked", "failed", "stopped"] = "done"
    stop_reason: str | None = None


Event = Annotated[
    PlanEvent
    | TurnStarted
    | ModelTextDelta
    | ModelText
    | ModelThinkingDelta
    | ModelThinking
    | ModelToolUse
    | ModelToolSearch
    | ToolDiscovered
    | ToolRequested
    | ToolApprovalRequired
    | ToolApproved
    | GrantRevoked
    | ToolDenied
    | ToolStarted
    | ToolCompleted
    | ToolFailed
    | UsageEvent
    | PrefixBreak
    | SystemPromptChanged
    | ServerStatus
    | RosterChanged
    | ToolChanged
    | ElicitationRequested
    | ElicitationAnswered
    | OffersChanged
    | ResourceAttached
    | ChatTitled
    | ProviderRetrying
    | ProviderSwitched
    | HistoryCompacted
    | ErrorEvent
    | TurnCompleted,
    Field(discriminator="type"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)

EventSink = Callable[[Event], None]
"""What a module that only reports needs: a function that takes an event."""


def parse_event(data: dict[str, Any] | str) -> Event:
    if isinstance(data, str):
        return EVENT_ADAPTER.validate_json(data)
    return EVENT_ADAPTER.validate_python(data)
