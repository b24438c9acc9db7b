"""The engine: session open (plan once, pin), the agent loop, approvals, resume.

Presentation layers (the TUI, the headless CLI) only subscribe to events and answer
approvals; everything that decides anything lives here and below.

Session open plans the roster once per chat and pins it (ADR-0123 decisions 2 and 19):
reopening a chat reuses its stored plan even when its servers now offer more tools. The
loop steps until the model stops calling tools, sending every tool use through the one
pipeline.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core import events as ev
from core.config import Settings, load_settings
from core.context.prompt import assemble_system, compact
from core.deferral.strategies import Strategy, make_strategy
from core.errors import UsageError, UserFacingError
from core.pipeline import codes
from core.pipeline.approvals import Approver, Decision, FixedApprover
from core.pipeline.pipeline import Pipeline, RunContext
from core.pipeline.policy import Policy, load_policy
from core.providers.base import (
    ModelRequest, Provider, ProviderError, ResponseDone, ServerToolUse, TextDelta, ToolSearchResult, ToolUse, Usage,
)
from core.roster.controls import CHAT_TITLE, TOOL_DESCRIBE, TOOL_RESULT, TOOL_SEARCH
from core.roster.loader import Roster, load_roster
from core.roster.models import AgentConfig, Caps, PlanInput, PolicyConfig, RosterPlan
from core.roster.planner import plan_is_current, plan_roster
from core.store import Store
from core.tokens import TokenEstimator
from core.tools import Origin, ToolResult, ToolSpec

log = logging.getLogger("deferchat.engine")

HISTORY_BUDGET_TOKENS = 120_000
TOOL_TIMEOUT_SECONDS = 120.0
CLIENT_SEARCH_LIMIT = 5  # tools one client-executed native search loads (all its queries together)
# The native search flavour of chats opened before it was a setting (and pinned in ``sources``).
DEFAULT_TOOL_SEARCH = {"anthropic": "bm25", "openai": "hosted"}


@dataclass
class ChatOptions:
    """How to open a new chat. Everything else comes from settings."""

    roster: str | None = None
    mcp_config: str | None = None
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    script: str | None = None
    strategy: str | None = None  # wrapper | anthropic | openai | active-tools | auto
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    caps: Caps = field(default_factory=Caps)
    title: str | None = None
    start_demo_servers: bool = True


@dataclass
class TurnResult:
    status: str  # done | parked | failed
    turn_id: str
    text: str = ""
    error: str | None = None


ProviderFactory = Callable[[str, str, str | None, dict[str, Any]], Provider]


def default_provider_factory(settings: Settings) -> ProviderFactory:
    def make(name: str, model: str, base_url: str | None, extra: dict[str, Any]) -> Provider:
        if name == "demo":
            from core.providers.demo import DemoProvider

            return DemoProvider(model, delay=float(extra.get("demo_delay", 0.0)))
        if name == "script":
            from core.providers.script import ScriptProvider

            if not extra.get("script"):
                raise UsageError("the script provider needs --script FILE")
            return ScriptProvider(extra["script"], model)
        from core.providers import SDK_PROVIDERS, make_provider

        if name not in SDK_PROVIDERS:
            raise UsageError(f"unknown provider {name!r}: demo, script, {', '.join(SDK_PROVIDERS)}")
        key = settings.api_key(name)
        if not key and not base_url:
            env = {"anthropic": "ANTHROPIC_API_KEY"}.get(name, "OPENAI_API_KEY")
            raise UsageError(f"provider {name} needs an API key: set {env} or [keys] in {settings_file()}")
        return make_provider(name, model, base_url=base_url, api_key=key or "not-needed")

    return make


def settings_file() -> str:
    from core.config import settings_path

    return str(settings_path())


class Engine:
    """Opens chats. One engine per process; it owns the store."""

    def __init__(self, store: Store | None = None, settings: Settings | None = None, *,
                 policy: Policy | None = None, provider_factory: ProviderFactory | None = None,
                 estimator: TokenEstimator | None = None, demo_delay: float = 0.0):
        self.settings = settings or load_settings()
        self.store = store or Store()
        self.policy = policy or load_policy(self.settings.policy_file)
        self.provider_factory = provider_factory or default_provider_factory(self.settings)
        self.estimator = estimator or TokenEstimator(self.store.token_cache)
        self.demo_delay = demo_delay

    # -- opening ---------------------------------------------------------------------------------
    def resolve_provider(self, opts: ChatOptions) -> tuple[str, str, str | None]:
        provider = opts.provider or ("script" if opts.script else self.settings.default_provider())
        model = opts.model or self.settings.model_for(provider)
        base_url = opts.base_url or (self.settings.base_url if provider == self.settings.provider else None)
        return provider, model, base_url

    async def open_chat(self, chat_id: str | None = None, options: ChatOptions | None = None, *,
                        approver: Approver | None = None,
                        subscribers: list[Callable[[Any], None]] | None = None,
                        record: str | None = None) -> ChatSession:
        """A new chat (``chat_id`` None) planned now, or an existing one with its pinned plan."""
        opts = options or ChatOptions()
        session = ChatSession(self, approver or FixedApprover(Decision.PARK), list(subscribers or []), record)
        try:
            if chat_id is None:
                await session._open_new(opts)
            else:
                row = self.store.find_chat(chat_id)
                if row is None:
                    raise UsageError(f"no chat {chat_id!r}; `deferchat chats list` shows them")
                await session._reopen(row, opts)
        except BaseException:
            # A failed or cancelled open (quitting while servers start) must not leave MCP
            # servers running: close what was started, even under cancellation.
            await asyncio.shield(session.close())
            raise
        return session


class ChatSession:
    """One open chat: its pinned plan, strategy, provider, MCP servers and event subscribers."""

    def __init__(self, engine: Engine, approver: Approver, subscribers: list[Callable[[Any], None]],
                 record: str | None):
        self.engine = engine
        self.store = engine.store
        self.approver = approver
        self.subscribers = subscribers
        self.record_path = record
        self.chat_id = ""
        self.plan: RosterPlan | None = None
        self.specs: dict[str, ToolSpec] = {}
        self.live: dict[str, ToolSpec] = {}
        self.strategy: Strategy | None = None
        self.provider: Provider | None = None
        self.mcp: Any = None
        self.sources: dict[str, Any] = {}
        self.server_status: dict[str, ev.ServerStatus] = {}
        self.roster_changed: list[str] = []
        self._search_index: Any = None
        self._searches: dict[str, str] = {}  # search id -> query, for the whole turn
        self._busy = asyncio.Lock()

    # -- events ----------------------------------------------------------------------------------
    def subscribe(self, fn: Callable[[Any], None]) -> None:
        self.subscribers.append(fn)

    def emit(self, event: Any) -> None:
        if self.chat_id and getattr(event, "chat_id", None) is None:
            event.chat_id = self.chat_id
        if self.chat_id and event.type != "model.text.delta":
            self.store.add_event(self.chat_id, getattr(self, "_turn_id", None), event.type, event.to_json())
        for fn in list(self.subscribers):
            try:
                fn(event)
            except Exception:  # a broken subscriber never breaks a turn
                log.exception("event subscriber failed on %s", event.type)

    def _on_mcp_event(self, event: Any) -> None:
        if event.type == "server.status":
            self.server_status[event.server] = event
        elif event.type == "roster.changed":
            self.roster_changed.append(event.server)
            event.message = event.message or (f"server {event.server} changed its tools; this chat keeps its pinned "
                                              "plan, a new chat will pick the change up")
        self.emit(event)

    # -- session open ------------------------------------------------------------------------------
    async def _start_servers(self, roster: Roster, mcp_config: str | None, start_demo: bool) -> None:
        """Live MCP servers: the user's and project's config, ``--mcp-config``, and the embedded
        demo servers for any roster server that no config provides."""
        from core.mcp.config import McpConfig, load_mcp_config

        config = load_mcp_config([mcp_config] if mcp_config else [])
        configured = {s.name for s in config.servers}
        if start_demo:
            from core.demo import DEMO_SERVERS, demo_config

            wanted = [s for s in roster.servers() if s in DEMO_SERVERS and s not in configured]
            if wanted:
                demo = demo_config()
                config = McpConfig(servers=tuple(s for s in demo.servers if s.name in wanted)).merged(config)
        if not config.servers:
            return
        from core.mcp.client import McpManager

        self.mcp = McpManager(config, on_event=self._on_mcp_event)
        await self.mcp.start()

    def _live_specs(self, roster: Roster) -> dict[str, ToolSpec]:
        """Tools as they are now: the roster's configured tools, live MCP tools where a server
        answers, the roster's static server tools elsewhere."""
        from core.session import merge_discovered

        live_tools = list(self.mcp.tools()) if self.mcp is not None else []
        return {t.name: t for t in (*roster.configured, *merge_discovered(roster.discovered, live_tools))}

    async def _open_new(self, opts: ChatOptions) -> None:
        eng = self.engine
        provider, model, base_url = eng.resolve_provider(opts)
        requested = opts.strategy or eng.settings.strategy
        from core.session import resolve_strategy_for

        strategy, reason = resolve_strategy_for(requested, provider, model, base_url)
        if strategy == "openai" and eng.settings.openai_tool_search == "client":
            reason += "; tool_search runs client-side (openai_tool_search = \"client\"): deferchat's own index answers it"
        elif strategy == "anthropic" and eng.settings.anthropic_tool_search == "regex":
            reason += "; the server tool search is the regex variant (anthropic_tool_search = \"regex\")"
        roster_name = opts.roster or eng.settings.roster
        roster = load_roster(roster_name)
        extra = {"script": str(Path(opts.script).resolve()) if opts.script else None, "demo_delay": eng.demo_delay}
        self.provider = eng.provider_factory(provider, model, base_url, extra)
        await self._start_servers(roster, opts.mcp_config, opts.start_demo_servers)
        self.live = self._live_specs(roster)
        discovered = tuple(t for t in self.live.values() if t.origin is not Origin.CONFIGURED)
        inp = PlanInput(agent=roster.agent, configured=roster.configured, discovered=discovered, caps=opts.caps,
                        policy=opts.policy, strategy=strategy, strategy_reason=reason)
        plan = plan_roster(inp, eng.estimator)
        self.store.token_cache.flush()
        plan_id = self.store.save_plan(plan.to_json(), plan.builder)
        self.sources = {"roster": roster_name if not Path(roster_name).exists() else str(Path(roster_name).resolve()),
                        "mcp_config": str(Path(opts.mcp_config).resolve()) if opts.mcp_config else None,
                        "script": extra["script"], "start_demo_servers": opts.start_demo_servers,
                        # pinned: a later change of settings must not change this chat's tools array
                        "tool_search": {"anthropic": eng.settings.anthropic_tool_search,
                                        "openai": eng.settings.openai_tool_search}}
        self.chat_id = self.store.create_chat(
            title=opts.title or "New chat", agent_name=roster.agent.name, agent_version=roster.agent.version,
            roster=self.sources["roster"], plan_id=plan_id, builder=plan.builder, strategy=strategy,
            strategy_reason=reason, policy=opts.policy.name, provider=provider, model=model, base_url=base_url,
            sources=json.dumps(self.sources))
        self._install(plan, roster)
        for status in self.server_status.values():
            self.store.add_event(self.chat_id, None, status.type, status.model_copy(update={"chat_id": self.chat_id})
                                 .to_json())
        self.emit(self._plan_event(pinned=False))

    async def _reopen(self, row: dict[str, Any], opts: ChatOptions) -> None:
        eng = self.engine
        self.chat_id = row["id"]
        plan_json = self.store.plan_json(row["plan_id"])
        if plan_json is None:
            raise UserFacingError(f"chat {row['id']} has lost its plan; it cannot be reopened")
        plan = RosterPlan.model_validate_json(plan_json)
        self.sources = json.loads(row.get("sources") or "{}")
        try:
            roster = load_roster(self.sources.get("roster") or row.get("roster") or eng.settings.roster)
        except UserFacingError as exc:
            # The roster is gone: the pinned plan still runs; nothing counts as live for resumes.
            self.emit(ev.ErrorEvent(code="roster.missing", message=str(exc)))
            roster = Roster(name="(missing)", agent=AgentConfig(name=plan.agent.get("name", "chat"),
                                                                version=plan.agent.get("version", "?")),
                            configured=(), discovered=())
        extra = {"script": opts.script or self.sources.get("script"), "demo_delay": eng.demo_delay}
        self.provider = eng.provider_factory(row["provider"], row["model"], row.get("base_url"), extra)
        await self._start_servers(roster, self.sources.get("mcp_config"),
                                  bool(self.sources.get("start_demo_servers", True)))
        self.live = self._live_specs(roster)
        self._install(plan, roster)
        if not plan_is_current(plan):
            self.emit(ev.ErrorEvent(code="plan.not_current",
                                    message=f"this chat's plan was built by {plan.builder}, which this version "
                                            "cannot render byte for byte; it is kept as pinned (never re-planned)"))
        self.emit(self._plan_event(pinned=True))

    def _install(self, plan: RosterPlan, roster: Roster) -> None:
        eng = self.engine
        self.plan = plan
        self.specs = {n: s for n in plan.pinned_names() if (s := plan.spec_of(n)) is not None}
        flavour = {**DEFAULT_TOOL_SEARCH, **(self.sources.get("tool_search") or {})}
        self.strategy = make_strategy(plan.strategy, plan, "", self.specs, anthropic_search=flavour["anthropic"],
                                      openai_search=flavour["openai"])
        self.strategy.base_system = assemble_system(
            instructions=roster.agent.instructions, agent_name=roster.agent.name, owner=eng.settings.owner_name,
            timezone=eng.settings.owner_timezone(), strategy_note=self.strategy.note(), index_text="",
            est=eng.estimator)
        # Tools loaded in earlier sessions of this chat stay marked for the UI.
        for e in self.store.events(self.chat_id, ("tool.discovered", "model.tool_search")) if self.chat_id else []:
            for n in e.get("names") or e.get("references") or []:
                if n in self.specs and n not in self.strategy.loaded:
                    self.strategy.loaded.append(n)

    def _plan_event(self, pinned: bool) -> ev.PlanEvent:
        p = self.plan
        assert p is not None
        return ev.PlanEvent(builder=p.builder, policy=p.policy, strategy=p.strategy, strategy_reason=p.strategy_reason,
                            pinned=pinned, agent=p.agent, defined_tool_names=p.defined_tool_names,
                            deferred_tool_names=p.deferred_tool_names, skipped_tool_names=p.skipped_tool_names,
                            definition_tokens=p.definition_tokens, index_tokens=p.index_tokens, caps=p.caps)

    def chat(self) -> dict[str, Any]:
        row = self.store.chat(self.chat_id)
        assert row is not None
        return row

    async def close(self) -> None:
        if self.mcp is not None:
            await self.mcp.close()
            self.mcp = None

    # -- turns -------------------------------------------------------------------------------------
    def parked(self) -> dict[str, Any] | None:
        """The chat's unfinished turn (parked on an approval, or interrupted), if any."""
        return self.store.open_turn(self.chat_id)

    def pending_approvals(self) -> list[dict[str, Any]]:
        return self.store.pending_approvals(self.chat_id)

    async def send(self, text: str) -> TurnResult:
        async with self._busy:
            open_turn = self.parked()
            if open_turn is not None:
                raise UsageError(f"chat {self.chat_id} has an unfinished turn ({open_turn['status']}); answer its "
                                 f"approval or run `deferchat resume {self.chat_id}` first")
            parent = self.store.last_message_id(self.chat_id)
            msg_id = self.store.add_message(self.chat_id, "user", [{"type": "text", "text": text}], turn_id=None,
                                            parent_id=parent)
            turn_id = self.store.start_turn(self.chat_id, msg_id)
            self.store.db["messages"].update(msg_id, {"turn_id": turn_id})
            self._turn_id = turn_id
            self._searches = {}
            if self.chat()["title"] in (None, "", "New chat"):
                self.store.update_chat(self.chat_id, title=_title_from(text))
                self.emit(ev.ChatTitled(title=_title_from(text)))
            self.emit(ev.TurnStarted(turn_id=turn_id, text=text))
            assert self.strategy is not None
            self.strategy.begin_turn()
            return await self._loop(turn_id)

    async def resume(self, approver: Approver | None = None) -> TurnResult:
        """Continue the chat's parked or interrupted turn, answering its approval with ``approver``."""
        async with self._busy:
            turn = self.parked()
            if turn is None:
                raise UsageError(f"chat {self.chat_id} has nothing to resume")
            if approver is not None:
                self.approver = approver
            turn_id = turn["id"]
            self._turn_id = turn_id
            self._searches = {}
            self.store.update_turn(turn_id, status="running")
            self.emit(ev.TurnStarted(turn_id=turn_id, resumed=True))
            assert self.strategy is not None
            self.strategy.begin_turn()
            history = self._history()
            if history and history[-1]["role"] == "assistant":
                content = history[-1]["content"]
                uses = [b for b in content if b.get("type") == "tool_use"]
                searches = pending_client_searches(content)
                if not uses and not searches:
                    return self._end(turn_id, "done")
                if await self._answer(turn_id, uses, searches, resuming=True):
                    return self._end(turn_id, "parked")
            return await self._loop(turn_id)

    def _history(self) -> list[dict[str, Any]]:
        return [{"role": m["role"], "content": m["content"]} for m in self.store.messages(self.chat_id)]

    def _add(self, role: str, content: list[dict[str, Any]], turn_id: str) -> str:
        return self.store.add_message(self.chat_id, role, content, turn_id=turn_id,
                                      parent_id=self.store.last_message_id(self.chat_id))

    def _end(self, turn_id: str, status: str, error: str | None = None, text: str = "",
             stop_reason: str | None = None) -> TurnResult:
        self.store.end_turn(turn_id, self.chat_id, status, error)
        self.emit(ev.TurnCompleted(turn_id=turn_id, status=status, stop_reason=stop_reason))
        return TurnResult(status=status, turn_id=turn_id, text=text, error=error)

    async def _loop(self, turn_id: str) -> TurnResult:
        eng = self.engine
        assert self.strategy is not None and self.provider is not None and self.plan is not None
        text_out = ""
        for step in range(eng.settings.max_steps):
            history = self._history()
            sent = compact(history, HISTORY_BUDGET_TOKENS, eng.estimator)
            added = self.strategy.seed(sent)
            if added:
                self.emit(ev.ToolDiscovered(names=added, source="history"))
            surface = self.strategy.surface(sent)
            request = ModelRequest(model=self.provider.model, system=surface.system, tools=surface.tools,
                                   messages=sent, cache_prefix_tools=surface.cache_prefix_tools)
            self._record(request)
            self.store.update_turn(turn_id, steps=step + 1)
            try:
                done, searches = await self._stream(request)
            except ProviderError as exc:
                self.emit(ev.ErrorEvent(code=exc.code, message=exc.message, retryable=exc.retryable))
                return self._end(turn_id, "failed", exc.message, stop_reason="error")
            except Exception as exc:  # an adapter bug must not lose the chat
                log.exception("provider failed")
                msg = f"{type(exc).__name__}: {exc}"
                self.emit(ev.ErrorEvent(code="provider.unexpected", message=msg))
                return self._end(turn_id, "failed", msg, stop_reason="error")
            content = done.content
            self._add("assistant", content, turn_id)
            text = "\n\n".join(b["text"] for b in content if b.get("type") == "text" and b.get("text"))
            if text:
                text_out = text
                self.emit(ev.ModelText(text=text))
            u = done.usage
            self.emit(ev.UsageEvent(input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                                    cache_read_input_tokens=u.cache_read_input_tokens,
                                    cache_creation_input_tokens=u.cache_creation_input_tokens))
            uses = [b for b in content if b.get("type") == "tool_use"]
            if not uses and not searches:
                return self._end(turn_id, "done", text=text_out, stop_reason=done.stop_reason)
            if await self._answer(turn_id, uses, searches):
                return self._end(turn_id, "parked", text=text_out, stop_reason="tool_use")
        msg = f"the model called tools {eng.settings.max_steps} times in a row without answering; stopped"
        self.emit(ev.ErrorEvent(code="engine.max_steps", message=msg))
        return self._end(turn_id, "failed", msg, stop_reason="max_steps")

    async def _answer(self, turn_id: str, uses: list[dict[str, Any]], searches: list[ServerToolUse], *,
                      resuming: bool = False) -> bool:
        """Answer one response: every tool use through the pipeline, then every search the client
        must run; append the results as the next user message. True when a tool parked (the
        searches are then answered on resume, from the stored response)."""
        results, parked = await self._run_tools(turn_id, uses, resuming=resuming) if uses else ([], False)
        if parked:
            return True
        answers = [self._client_search(s.id, s.input) for s in searches]
        self._add("user", answers + results, turn_id)
        return False

    async def _stream(self, request: ModelRequest) -> tuple[ResponseDone, list[ServerToolUse]]:
        """Stream one response, emitting its events. Returns the response and the searches the
        client must run (OpenAI's client-executed tool_search)."""
        assert self.provider is not None and self.strategy is not None
        done: ResponseDone | None = None
        client_searches: list[ServerToolUse] = []
        async for item in self.provider.stream(request):
            if isinstance(item, TextDelta):
                self.emit(ev.ModelTextDelta(text=item.text))
            elif isinstance(item, ToolUse):
                self.emit(ev.ModelToolUse(id=item.id, name=item.name, input=item.input))
            elif isinstance(item, ServerToolUse):
                query = search_label(item.input)
                self._searches[item.id] = query
                self.emit(ev.ModelToolSearch(id=item.id, query=query, executor=item.executor))
                if item.executor == "client":
                    client_searches.append(item)
            elif isinstance(item, ToolSearchResult):
                self.strategy.discover(item.references)
                self.emit(ev.ModelToolSearch(id=item.tool_use_id, references=item.references,
                                             query=self._search_query(item.tool_use_id, request.messages)))
            elif isinstance(item, Usage):
                pass
            elif isinstance(item, ResponseDone):
                done = item
        if done is None:
            raise ProviderError("provider.incomplete", "the model's response ended before it was complete",
                                retryable=True)
        return done, client_searches

    def _search_query(self, search_id: str, messages: list[dict[str, Any]]) -> str:
        """The query of a search whose result arrived: asked earlier in this turn, or (a turn
        resumed in a new process) found in the history that was sent."""
        if search_id in self._searches:
            return self._searches[search_id]
        for m in messages:
            for b in m["content"] if isinstance(m.get("content"), list) else []:
                if b.get("type") == "server_tool_use" and b.get("id") == search_id:
                    return search_label(b.get("input"))
        return ""

    def _client_search(self, search_id: str, tool_input: Any) -> dict[str, Any]:
        """Run a native search the client must execute over the plan's deferred tools; the
        answer is a tool_result of ``tool_reference`` blocks (the adapter expands them)."""
        assert self.strategy is not None
        query = self._searches.setdefault(search_id, search_label(tool_input))
        hits = self._search_and_load(search_queries(tool_input), CLIENT_SEARCH_LIMIT, query, search_id)
        return {"type": "tool_result", "tool_use_id": search_id,
                "content": [{"type": "tool_reference", "tool_name": n} for n in hits]}

    def _record(self, request: ModelRequest) -> None:
        if self.record_path:
            with open(self.record_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(request.record(), ensure_ascii=False) + "\n")

    async def _run_tools(self, turn_id: str, uses: list[dict[str, Any]], *, resuming: bool = False
                         ) -> tuple[list[dict[str, Any]], bool]:
        assert self.plan is not None
        ctx = RunContext(chat_id=self.chat_id, turn_id=turn_id, store=self.store, plan=self.plan,
                         policy=self.engine.policy, approver=self.approver, runner=self._run_tool, emit=self.emit,
                         live_pin=self._live_pin, specs=self.specs)
        pipeline = Pipeline(ctx)
        results: list[dict[str, Any]] = []
        for block in uses:
            outcome = await pipeline.run(block, resuming=resuming)
            if outcome.parked:
                return results, True
            assert outcome.result_block is not None
            results.append(outcome.result_block)
        return results, False

    def _live_pin(self, name: str) -> str | None:
        """The pin of ``name`` as it is now; control tools are built in and never change."""
        spec = self.live.get(name)
        if spec is None and (pinned := self.specs.get(name)) is not None and pinned.origin is Origin.CONTROL:
            spec = pinned
        return spec.content_hash() if spec else None

    # -- running one tool --------------------------------------------------------------------------
    async def _run_tool(self, spec: ToolSpec, arguments: dict[str, Any], call_id: str) -> ToolResult:
        if spec.origin is Origin.CONTROL:
            return await self._control(spec.name, arguments, call_id)
        if spec.origin is Origin.CONFIGURED:
            from core.builtins import ToolContext, get_builtin

            fn = get_builtin(spec.name)
            if fn is None:
                return ToolResult.failure(codes.UNAVAILABLE, f"{spec.name} has no implementation in this deferchat; "
                                          "it is listed by the roster but cannot run here")
            settings = self.engine.settings
            tctx = ToolContext(db=self.store.db, chat_id=self.chat_id, call_id=call_id,
                               workspace=settings.workspace_path(), timezone=settings.owner_timezone(),
                               settings=settings.tools.model_dump())
            return await asyncio.wait_for(fn(arguments, tctx), TOOL_TIMEOUT_SECONDS)
        if self.mcp is None or spec.server not in {s.name for s in self.mcp.servers()}:
            return ToolResult.failure(codes.UNAVAILABLE, f"{spec.name}: no MCP server {spec.server!r} is running for "
                                      "this chat (the roster lists it, but no configuration starts it)")
        return await self.mcp.call(spec, arguments)  # each server's own call_timeout applies

    async def _control(self, name: str, arguments: dict[str, Any], call_id: str) -> ToolResult:
        assert self.plan is not None and self.strategy is not None
        if name == TOOL_SEARCH:
            return self._tool_search(str(arguments.get("query", "")), int(arguments.get("limit") or 5))
        if name == TOOL_DESCRIBE:
            target = self.specs.get(str(arguments.get("name", "")))
            if target is None or target.origin is Origin.CONTROL:
                return ToolResult.of_text(f"{codes.NOT_OFFERED}: {arguments.get('name')} is not offered in this chat",
                                          is_error=True)
            from core.pipeline.pipeline import schema_for_model

            text = f"{target.name} ({target.side_effect.value})\n{target.description}\nInput schema:\n"
            if target.untrusted:
                from core.context import envelope

                text = (f"{target.name} ({target.side_effect.value})\n"
                        + envelope.wrap(target.description, f"mcp.{target.server}") + "\nInput schema:\n")
            return ToolResult.of_text(text + schema_for_model(target))
        if name == TOOL_RESULT:
            inv = self.store.invocation(self.chat_id, str(arguments.get("call_id", "")))
            if inv is None or not inv["result"]:
                return ToolResult.of_text(f"no stored result for call {arguments.get('call_id')}", is_error=True)
            full = ToolResult.model_validate(json.loads(inv["result"])).text()
            offset = max(0, int(arguments.get("offset") or 0))
            chunk = full[offset: offset + 16_000]
            more = f"\n[{len(full) - offset - len(chunk):,} characters remain]" if offset + len(chunk) < len(full) else ""
            return ToolResult.of_text(chunk + more)
        if name == CHAT_TITLE:
            title = str(arguments.get("title", "")).strip()[:80]
            self.store.update_chat(self.chat_id, title=title)
            self.emit(ev.ChatTitled(title=title))
            return ToolResult.of_text(f"The chat is now titled {title!r}.")
        return ToolResult.failure(codes.UNAVAILABLE, f"{name} has no implementation")

    def _search(self, queries: list[str], limit: int) -> list[str]:
        """The deferred tools best matching ``queries``: each query's best first, then each one's
        second best, and so on, without repeats, at most ``limit``."""
        assert self.plan is not None
        if self._search_index is None:
            from core.deferral.search import ToolSearchIndex

            self._search_index = ToolSearchIndex([self.specs[n] for n in self.plan.deferred_tool_names
                                                  if n in self.specs])
        ranked = [[h.name for h in self._search_index.search(q, k=limit)] for q in queries]
        hits: list[str] = []
        for rank in range(limit):
            for names in ranked:
                if rank < len(names) and names[rank] not in hits:
                    hits.append(names[rank])
        return hits[:limit]

    def _search_and_load(self, queries: list[str], limit: int, label: str, search_id: str = "") -> list[str]:
        """Search the deferred tools, hand the hits to the strategy (active-tools loads them) and
        report both; the hits, best first."""
        assert self.strategy is not None
        hits = self._search(queries, limit)
        added = self.strategy.discover(hits)
        if added:
            self.emit(ev.ToolDiscovered(names=added, source="search"))
        self.emit(ev.ModelToolSearch(id=search_id, query=label, references=hits, executor="client"))
        return hits

    def _tool_search(self, query: str, limit: int) -> ToolResult:
        assert self.plan is not None and self.strategy is not None
        hits = self._search_and_load([query], max(1, min(limit, 10)), query)
        if not hits:
            return ToolResult.of_text(f"No tool matches {query!r}. No such tool exists here; do not search again "
                                      "for the same thing.")
        from core.context import envelope
        from core.roster.index import entry_text

        lines = [f"Loaded {len(hits)} tool(s); call them directly from your next step:"]
        for n in hits:
            spec = self.specs[n]
            line = entry_text(spec)
            lines.append(envelope.wrap(line, f"mcp.{spec.server}") if spec.untrusted else line)
        return ToolResult(content=[{"type": "text", "text": "\n".join(lines)}], structured={"loaded": hits})


def search_queries(tool_input: Any) -> list[str]:
    """The queries of a native search call, whatever shape its arguments take: ``queries`` or
    ``paths`` (lists), ``query`` (text), else every text value (``{"goal": ...}``, ``{"pattern": ...}``)."""
    if isinstance(tool_input, str):
        return [tool_input] if tool_input.strip() else []
    if not isinstance(tool_input, dict):
        return []
    for key in ("queries", "paths"):
        values = tool_input.get(key)
        if isinstance(values, list) and (found := [v for v in values if isinstance(v, str) and v.strip()]):
            return found
    query = tool_input.get("query")
    if isinstance(query, str) and query.strip():
        return [query]
    return [v for v in tool_input.values() if isinstance(v, str) and v.strip()]


def search_label(tool_input: Any) -> str:
    """A search call's query as one line for events and the UI."""
    queries = search_queries(tool_input)
    if queries:
        return " | ".join(queries)
    return "" if tool_input in (None, {}) else json.dumps(tool_input, ensure_ascii=False, sort_keys=True)


def pending_client_searches(content: list[dict[str, Any]]) -> list[ServerToolUse]:
    """The client-executed searches of a stored response (OpenAI ``tool_search_call`` items with
    ``execution: client``), as the adapter reported them, for a turn resumed after a park."""
    found = []
    for block in content:
        item = block.get("item") if block.get("type") == "provider_item" else None
        if isinstance(item, dict) and item.get("type") == "tool_search_call" and item.get("execution") == "client":
            found.append(ServerToolUse(id=item.get("call_id") or item.get("id") or "", name="tool_search",
                                       input=item.get("arguments"), executor="client"))
    return found


def _title_from(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 60 else line[:59].rstrip() + "\u2026"
