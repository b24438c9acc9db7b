"""The turn loop: one user message (or a resumed turn) through model steps until the model stops
calling tools, parks on an approval, fails, runs out of steps, or the owner stops it.

Each step fits the history to the request's budget (:mod:`core.chat.compaction`: the model's
window, its oldest turns summarised as it nears it), asks the strategy for the request's surface,
streams the response (emitting its events), stores it, and answers every tool use through the
pipeline and every search the client must run. A turn that parks is resumed later, here or in
another process, from what the store holds. :meth:`TurnLoop.stop` stops the running turn at once
(see :mod:`core.chat.stopping` for what is kept).

The history is kept in memory across steps and turns (:mod:`core.chat.history`) and each request's
conversion for its API is kept per message (:class:`core.providers.portable.PortableHistory`), so a
step costs what is new, not the whole chat.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core import events as ev
from core.chat.compaction import Compaction, HistoryTooLarge
from core.chat.eventlog import EventLog
from core.chat.history import ChatHistory
from core.chat.meter import Meter, RequestStatus
from core.chat.options import TurnResult, TurnStatus
from core.chat.stopping import STOP_REASON, STOPPED_ERROR, PartialResponse, settle_unanswered
from core.context.budget import DEFAULT_OUTPUT_TOKENS, Budget
from core.controls.search import DeferredSearch
from core.deferral.strategies import Strategy
from core.errors import UsageError
from core.pipeline.approvals import Approver
from core.pipeline.pipeline import CallIds, Pipeline, RunContext, ToolHost, path_bases_of
from core.pipeline.policy import Policy
from core.providers.base import (
    ModelRequest,
    Provider,
    ProviderError,
    ResponseDone,
    Retrying,
    ServerToolUse,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolSearchResult,
    ToolUse,
    Usage,
    thinking_of,
)
from core.providers.portable import PortableHistory
from core.providers.window import DEFAULT_WINDOW, ContextWindow
from core.roster.models import RosterPlan
from core.store import Store, TurnRow
from core.tokens import TokenEstimator
from core.tools import ToolSpec, canonical_json

log = logging.getLogger("deferchat.turn")


@dataclass
class _Answered:
    """What the provider answered one request with so far."""

    answered: bool = False  # an item of its answer came (the provider received the request)
    usage: Usage | None = None  # the last usage it reported


YIELD_EVERY = 0.008  # seconds a stream's events are handled in a row before the loop gets a turn
TITLE_CHARS = 60
UNTITLED = (None, "", "New chat")


def title_from(text: str) -> str:
    """A chat title from the owner's first message: one line, at most 60 characters."""
    line = " ".join(text.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "\u2026"


class TurnLoop:
    """Runs one chat's turns, one at a time."""

    def __init__(
        self,
        *,
        chat_id: str,
        store: Store,
        events: EventLog,
        plan: RosterPlan,
        specs: Mapping[str, ToolSpec],
        strategy: Strategy,
        provider: Provider,
        search: DeferredSearch,
        tools: ToolHost,
        policy: Policy,
        approver: Approver,
        estimator: TokenEstimator,
        max_steps: int,
        meter: Meter,
        record: str | None = None,
        fallback: Callable[[str, ProviderError], bool] | None = None,
        window: ContextWindow | None = None,
        auto_compact: bool = True,
    ):
        self.chat_id = chat_id
        self.store = store
        self.events = events
        self.plan = plan
        self.specs = dict(specs)
        self.strategy = strategy
        self.provider = provider
        self.search = search
        self.tools = tools
        self.policy = policy
        self.approver = approver
        self.estimator = estimator
        self.max_steps = max_steps
        self.record_path = record
        self.meter = meter  # usage, cost, prefix breaks
        # called when the provider failed: True when it switched the chat to a fallback (use())
        self.fallback = fallback
        self._busy = asyncio.Lock()
        # the running turn: its task (what stop() cancels), the response being streamed and the
        # results of the tool uses answered so far (what a stop keeps)
        self._task: asyncio.Task[Any] | None = None
        self._stopping = False
        self._partial: PartialResponse | None = None
        self._cut_short: tuple[ModelRequest, _Answered] | None = None  # the request a stop cut short
        self._answered: dict[str, dict[str, Any]] = {}
        # the chat's messages, held across steps and turns; the store stays the truth (core.chat.history)
        self.history = ChatHistory(store, chat_id)
        self.window = window or ContextWindow(DEFAULT_WINDOW, "default")
        self.compaction = Compaction(
            chat_id=chat_id,
            store=store,
            history=self.history,
            estimator=estimator,
            meter=meter,
            emit=events.emit,
            deferred=set(plan.deferred_tool_names),
            auto=auto_compact,
        )
        self._portable: dict[str, PortableHistory] = {}  # each target's conversion, kept per message

    def use(self, provider: Provider, strategy: Strategy, window: ContextWindow | None = None) -> None:
        """Run the next requests on ``provider`` with ``strategy`` (a switch, between turns or,
        for a fallback, between two requests of one turn), within its model's ``window``."""
        self.provider, self.strategy = provider, strategy
        if window is not None:
            self.window = window

    def budget(self) -> Budget:
        """The next request's budget: the model's window, less what its answer may take."""
        max_tokens = self.window.output_tokens or DEFAULT_OUTPUT_TOKENS
        reserve = getattr(self.provider, "output_reserve", None)
        return Budget(self.window, reserve(max_tokens) if callable(reserve) else max_tokens)

    async def _request(self) -> ModelRequest:
        """The next request: the history fitted to the budget (compacted when it nears the
        window), the strategy's surface for it, and it converted for the provider's API
        (core.providers.portable; the store keeps it as it is)."""
        self.history.sync()  # another process may have written to the chat since the last request
        budget = self.budget()
        surfaces: list[Any] = []

        def surface(view: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
            surfaces.append(self.strategy.surface(view))
            return surfaces[-1].tools, surfaces[-1].system

        sent = await self.compaction.fit(budget, surface, self.provider)
        final = surfaces[-1]
        seeded = list(dict.fromkeys(n for s in surfaces for n in s.seeded))
        if seeded:
            self.events.emit(ev.ToolDiscovered(names=seeded, source="history"))
        target = self.provider.name
        converted = final.converted  # a native strategy converted a switched chat's history already
        if converted is not None and converted[0] == target:
            messages = converted[1]
        else:
            messages = self._portable.setdefault(target, PortableHistory(target)).convert(sent, final.tools)
        # built, not validated: a validated model would copy each message, and the adapter knows a
        # message it already put on the wire by its identity (core.memo)
        return ModelRequest.model_construct(
            model=self.provider.model,
            system=final.system,
            tools=final.tools,
            messages=messages,
            max_tokens=self.window.output_tokens or DEFAULT_OUTPUT_TOKENS,
            cache_prefix_tools=final.cache_prefix_tools,
        )

    # -- the turn's bounds -------------------------------------------------------------------------
    def open_turn(self) -> TurnRow | None:
        """The chat's unfinished turn (parked on an approval, or interrupted), if any."""
        return self.store.open_turn(self.chat_id)

    @property
    def running(self) -> bool:
        """Whether a turn runs now (and :meth:`stop` would stop it)."""
        return self._task is not None

    def stop(self) -> bool:
        """Stop the running turn at once; False when none runs.

        Cancels the turn's task wherever it waits: the provider's stream is closed (its HTTP
        connection with it), a tool call in flight is abandoned, an open approval is withdrawn.
        The turn then ends ``stopped`` (:meth:`_stopped`) and ``send``/``resume`` return its
        result: nothing is raised to the caller."""
        task = self._task
        if task is None or task.done():
            return False
        if not self._stopping:
            self._stopping = True
            task.cancel()
        return True

    async def _guarded(self, turn_id: str, work: Coroutine[Any, Any, TurnResult]) -> TurnResult:
        """Run a turn's steps so that :meth:`stop` can end them. A cancellation that is not a
        stop (the app closing) goes on up and leaves the turn open, as a killed process would."""
        task = asyncio.current_task()
        self._task, self._stopping, self._partial, self._answered = task, False, None, {}
        self._cut_short = None
        try:
            return await work
        except asyncio.CancelledError:
            if not self._stopping or task is None:
                raise
            result = self._stopped(turn_id)
            if task.uncancel() > 0:  # cancelled for another reason too: that one goes on
                raise
            return result
        finally:
            self._task, self._stopping, self._partial = None, False, None

    def _check_stop(self) -> None:
        """A stop whose cancellation something below swallowed still stops, between steps."""
        if self._stopping:
            raise asyncio.CancelledError

    def _stopped(self, turn_id: str) -> TurnResult:
        """End the turn the owner stopped: keep what the model wrote (the text so far and the
        tool uses it finished), answer every tool use of the turn's last response (what finished
        keeps its result, the rest is settled by :func:`settle_unanswered`), end it ``stopped``."""
        partial, self._partial = self._partial, None
        text = ""
        if partial is not None:
            content = partial.content()
            if content:
                self._add("assistant", content, turn_id)
            text = partial.text
            if text.strip():
                self.events.emit(ev.ModelText(text=text))
            if self._cut_short is not None:  # the request the stop cut short, after its text (as a done one)
                self._meter_unfinished(*self._cut_short, partial, "stopped")
        self._cut_short = None
        history = self._history()
        if history and history[-1]["role"] == "assistant":
            content = history[-1]["content"]
            uses = [b for b in content if b.get("type") == "tool_use"]
            searches = self.provider.pending_client_searches(content)
            if uses or searches:
                results = [
                    self._answered.get(str(b.get("id") or ""))
                    or settle_unanswered(
                        b,
                        store=self.store,
                        chat_id=self.chat_id,
                        turn_id=turn_id,
                        specs=self.specs,
                        policy=self.policy,
                        emit=self.events.emit,
                        paths=path_bases_of(self.tools),
                    )
                    for b in uses
                ]
                answers = [self.search.answer_client_search(s.id, s.input) for s in searches]
                self._add("user", answers + results, turn_id)
        return self._end(turn_id, "stopped", STOPPED_ERROR, text=text, stop_reason=STOP_REASON)

    async def close_open_turn(self, *, wait: bool = False) -> bool:
        """Close the chat's unfinished turn as stopped (:meth:`_close_unfinished`), as the next
        message would: for what must happen before it (a switch of model). False: none was open."""
        async with self._busy, self.store.turn_lease(self.chat_id, wait=wait):
            turn = self.open_turn()
            if turn is None:
                return False
            self._close_unfinished(turn.id)
            return True

    def _close_unfinished(self, turn_id: str) -> None:
        """A new message while the chat has an unfinished turn (parked on an approval, or cut off
        when its process was closed or killed): that turn is closed first, as a stop would have
        closed it (:meth:`_stopped`): what it stored is kept, every tool use of its last
        response gets its result (a pending approval is cancelled, a write that was running is
        ``tool.outcome_unknown``), and it ends ``stopped``. So a chat never refuses the owner's
        next message; ``resume`` is there to continue the turn instead. The caller holds the
        chat's turn lease: a turn still running in another process is never closed here."""
        self.events.turn_id = turn_id
        self._partial, self._answered = None, {}
        self._stopped(turn_id)

    def _begin(self, turn_id: str) -> None:
        self.events.turn_id = turn_id
        self.compaction.refresh()  # another process may have compacted the chat since
        self.search.begin_turn()
        self.strategy.begin_turn()

    def _end(
        self, turn_id: str, status: TurnStatus, error: str | None = None, text: str = "", stop_reason: str | None = None
    ) -> TurnResult:
        self.store.end_turn(turn_id, self.chat_id, status, error)
        self.estimator.flush()  # the counts made this turn (a prefix's) stay for the next process
        self.compaction.keep_counts()  # and the history's, beside their messages
        self.events.emit(ev.TurnCompleted(turn_id=turn_id, status=status, stop_reason=stop_reason))
        return TurnResult(status=status, turn_id=turn_id, text=text, error=error)

    async def send(
        self, text: str, *, replaces: str | None = None, wait: bool = False, blocks: Sequence[dict[str, Any]] = ()
    ) -> TurnResult:
        """Send ``text`` as a new turn. ``replaces`` names an earlier user message that this one
        takes the place of: the new message branches from that one's parent, so what followed
        it is no longer sent to the model (the store keeps it, with its invocation rows).

        Every turn holds the chat's turn lease while it runs (:mod:`core.store.lease`): a turn
        of this chat running in another process refuses this one (``ChatBusy``), or, with
        ``wait``, this one waits for it. The same holds for :meth:`resume` and :meth:`rerun`."""
        async with self._busy, self.store.turn_lease(self.chat_id, wait=wait):
            self.history.sync()  # what another process wrote between two turns of this one
            open_turn = self.open_turn()
            if open_turn is not None:
                self._close_unfinished(open_turn.id)
            parent = self.history.last_id if replaces is None else self._parent_of(replaces)
            msg_id = self.history.add(
                "user",
                [{"type": "text", "text": text}, *blocks],  # blocks: attached resources, each enveloped
                turn_id=None,
                parent_id=parent,
                replaces=replaces,
            )
            turn_id = self.store.start_turn(self.chat_id, msg_id)
            self.history.set_turn(msg_id, turn_id)
            self._begin(turn_id)
            chat = self.store.chat(self.chat_id)
            if chat is not None and chat.title in UNTITLED:
                self.store.update_chat(self.chat_id, title=title_from(text))
                self.events.emit(ev.ChatTitled(title=title_from(text)))
            self.events.emit(ev.TurnStarted(turn_id=turn_id, text=text))
            return await self._guarded(turn_id, self._loop(turn_id))

    def _parent_of(self, message_id: str) -> str | None:
        replaced = self.store.message(message_id)
        if replaced is None or replaced.chat_id != self.chat_id or replaced.role != "user":
            raise UsageError(f"message {message_id} is not a message of yours in chat {self.chat_id}")
        return replaced.parent_id

    async def rerun(self, turn_id: str) -> TurnResult:
        """Ask the model again in a turn that failed on its request (the history ends with what
        the model was asked). What the turn already ran is not run again."""
        async with self._busy, self.store.turn_lease(self.chat_id):
            if self.open_turn() is not None:
                raise UsageError(f"chat {self.chat_id} has an unfinished turn; answer it or resume it first")
            self.store.update_turn(turn_id, status="running", error=None, ended_at=None)
            self._begin(turn_id)
            self.events.emit(ev.TurnStarted(turn_id=turn_id, resumed=True))
            return await self._guarded(turn_id, self._loop(turn_id))

    async def resume(self, approver: Approver | None = None, *, wait: bool = False) -> TurnResult:
        """Continue the chat's parked or interrupted turn, answering its approval with ``approver``."""
        async with self._busy, self.store.turn_lease(self.chat_id, wait=wait):
            turn = self.open_turn()
            if turn is None:
                raise UsageError(f"chat {self.chat_id} has nothing to resume")
            if approver is not None:
                self.approver = approver
            turn_id = turn.id
            self.store.update_turn(turn_id, status="running")
            self._begin(turn_id)
            self.events.emit(ev.TurnStarted(turn_id=turn_id, resumed=True))
            return await self._guarded(turn_id, self._resumed(turn_id))

    async def _resumed(self, turn_id: str) -> TurnResult:
        self.history.sync()
        history = self._history()
        if history and history[-1]["role"] == "assistant":
            content = self._with_call_ids(history[-1]["content"])
            uses = [b for b in content if b.get("type") == "tool_use"]
            searches = self.provider.pending_client_searches(content)
            if not uses and not searches:
                return self._end(turn_id, "done")
            if uses and callable(ready := getattr(self.tools, "ready", None)):
                await ready()  # the parked calls' pin check reads the tools as they are now
            if await self._answer(turn_id, uses, searches, resuming=True):
                return self._end(turn_id, "parked")
        return await self._loop(turn_id)

    # -- steps -------------------------------------------------------------------------------------
    def _history(self) -> list[dict[str, Any]]:
        # whatever a stored message holds, the loop, the strategies and the adapters read blocks
        return self.history.messages()

    def _with_call_ids(self, content: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The last stored response's blocks with an id on every tool use: one an older version
        stored without (or twice) gets one now, and keeps it (the message is rewritten), so its
        tool_result and invocation row carry the same id, on this resume and any later one."""
        fixed = CallIds().content(content)
        if fixed != content:
            self.history.rewrite_last(fixed)
        return fixed

    def _add(self, role: str, content: list[dict[str, Any]], turn_id: str) -> str:
        return self.history.add(role, content, turn_id=turn_id, parent_id=self.history.last_id)

    async def _loop(self, turn_id: str) -> TurnResult:
        text_out = ""
        for step in range(self.max_steps):
            self._check_stop()
            self.store.update_turn(turn_id, steps=step + 1)
            try:
                while True:
                    request = await self._request()
                    self._record(request)
                    try:
                        done, searches = await self._stream(request)
                        break
                    except ProviderError as exc:
                        self.events.emit(ev.ErrorEvent(code=exc.code, message=exc.message, retryable=exc.retryable))
                        if self.fallback is None or not self.fallback(turn_id, exc):
                            raise
                        self._partial = None  # the failed answer is not kept: the fallback answers anew
            except ProviderError as exc:
                return self._end(turn_id, "failed", exc.message, stop_reason="error")
            except HistoryTooLarge as exc:  # no request the model's window cannot hold is sent
                self.events.emit(ev.ErrorEvent(code=exc.code, message=exc.message))
                return self._end(turn_id, "failed", exc.message, stop_reason="error")
            except Exception as exc:  # an adapter bug must not lose the chat
                log.exception("provider failed")
                msg = f"{type(exc).__name__}: {exc}"
                self.events.emit(ev.ErrorEvent(code="provider.unexpected", message=msg))
                return self._end(turn_id, "failed", msg, stop_reason="error")
            content = done.content
            self._add("assistant", content, turn_id)
            self._partial = None  # stored whole
            text = "\n\n".join(b["text"] for b in content if b.get("type") == "text" and b.get("text"))
            if text:
                text_out = text
                self.events.emit(ev.ModelText(text=text))
            self.meter.record(request, done.usage, self.provider.name)  # usage and cost (core.chat.meter)
            uses = [b for b in content if b.get("type") == "tool_use"]
            if not uses and not searches:
                return self._end(turn_id, "done", text=text_out, stop_reason=done.stop_reason)
            if await self._answer(turn_id, uses, searches):
                return self._end(turn_id, "parked", text=text_out, stop_reason="tool_use")
            self._check_stop()
        msg = f"the model called tools {self.max_steps} times in a row without answering; stopped"
        self.events.emit(ev.ErrorEvent(code="engine.max_steps", message=msg))
        return self._end(turn_id, "failed", msg, stop_reason="max_steps")

    async def compact(self) -> ev.HistoryCompacted:
        """Summarise every turn but the latest now (the owner asked: ``/compact``), holding the
        chat's turn lease as a turn does."""
        async with self._busy, self.store.turn_lease(self.chat_id):
            task = asyncio.current_task()
            self._task, self._stopping = task, False  # stop() stops it as it stops a turn
            try:
                self.history.sync()
                self.compaction.refresh()
                budget = self.budget()
                view = self.compaction.view()
                surface = self.strategy.surface(view)
                need = self.compaction.need(budget, surface.tools, surface.system)
                done = await self.compaction.compact(
                    budget, self.provider, reason="owner", room=max(need.room, 1), before=need.tokens
                )
            except asyncio.CancelledError:
                if not self._stopping or task is None or task.uncancel() > 0:
                    raise
                raise UsageError("summarising was stopped; the chat is as it was") from None
            finally:
                self._task, self._stopping = None, False
            if done is None:
                raise UsageError("nothing to summarise yet: after any summary, the chat has only its latest turn")
            return done

    async def _stream(self, request: ModelRequest) -> tuple[ResponseDone, list[ServerToolUse]]:
        """Stream one response, emitting its events. Returns the response and the searches the
        client must run (OpenAI's client-executed tool_search)."""
        done: ResponseDone | None = None
        client_searches: list[ServerToolUse] = []
        emit = self.events.emit
        self._partial = partial = PartialResponse()
        ids = CallIds()  # every tool use gets an id of its own before anything stores it
        items = self.provider.stream(request)
        seen = _Answered()  # what the provider answered so far: the meter counts a request cut short
        try:
            done = await self._read_stream(request, items, partial, ids, client_searches, seen)
        except ProviderError as exc:
            self._meter_unfinished(request, seen, partial, "failed", exc.status)
            raise
        except asyncio.CancelledError:
            if self._stopping:  # counted once the stop has kept the partial answer (_stopped)
                self._cut_short = (request, seen)
            else:
                self._meter_unfinished(request, seen, partial, "interrupted")
            raise
        if done is None:
            self._meter_unfinished(request, seen, partial, "failed")
            raise ProviderError(
                "provider.incomplete", "the model's response ended before it was complete", retryable=True
            )
        done.content = ids.content(done.content)
        for text, redacted in thinking_of(done.content):
            emit(ev.ModelThinking(text=text, redacted=redacted))
        return done, client_searches

    async def _read_stream(
        self,
        request: ModelRequest,
        items: Any,
        partial: PartialResponse,
        ids: CallIds,
        client_searches: list[ServerToolUse],
        seen: _Answered,
    ) -> ResponseDone | None:
        """Read one response's items, emitting their events; the response once it is done."""
        done: ResponseDone | None = None
        emit = self.events.emit
        loop = asyncio.get_running_loop()
        ran_since = loop.time()
        async with contextlib.AsyncExitStack() as closing:
            if (aclose := getattr(items, "aclose", None)) is not None:
                closing.push_async_callback(aclose)  # a stop closes the stream (and its connection)
            async for item in items:
                if loop.time() - ran_since > YIELD_EVERY:
                    # a fast stream arrives in big reads, parsed without a pause: let the rest of
                    # the loop (a screen to redraw, a stop key) run between its pieces
                    await asyncio.sleep(0)
                    ran_since = loop.time()
                if isinstance(item, TextDelta):
                    partial.texts.append(item.text)
                    emit(ev.ModelTextDelta(text=item.text))
                elif isinstance(item, ThinkingDelta):
                    emit(ev.ModelThinkingDelta(text=item.text))
                elif isinstance(item, ThinkingBlock):
                    partial.thinking.append(item.block)  # whole, so a stop may keep it
                elif isinstance(item, ToolUse):
                    if (call_id := ids.for_use(item.id, item.name, item.input)) is None:
                        continue  # the wire repeated a use of this response: one invocation (CallIds)
                    if call_id != item.id:
                        item = item.model_copy(update={"id": call_id})
                    partial.tool_uses.append(
                        {"type": "tool_use", "id": item.id, "name": item.name, "input": item.input}
                    )
                    emit(ev.ModelToolUse(id=item.id, name=item.name, input=item.input))
                elif isinstance(item, ServerToolUse):
                    query = self.search.asked(item.id, item.input)
                    emit(ev.ModelToolSearch(id=item.id, query=query, executor=item.executor))
                    if item.executor == "client":
                        client_searches.append(item)
                elif isinstance(item, ToolSearchResult):
                    self.strategy.discover(item.references)
                    emit(
                        ev.ModelToolSearch(
                            id=item.tool_use_id,
                            references=item.references,
                            query=self.search.query_of(item.tool_use_id, request.messages),
                        )
                    )
                elif isinstance(item, ResponseDone):
                    done = item
                elif isinstance(item, Usage):
                    seen.usage = item  # so far (Anthropic's message_start), or the whole response's
                if isinstance(item, Retrying):  # the adapter waits before retrying: say how long
                    if item.status is not None:  # an attempt the provider refused is a request it received
                        self.meter.record(  # (before the wait's own event: the countdown ends on a usage)
                            request, Usage(), self.provider.name, status="failed", http_status=item.status
                        )
                    emit(ev.ProviderRetrying(seconds=item.seconds, attempt=item.attempt, reason=item.reason))
                else:
                    seen.answered = True
        return done

    def _meter_unfinished(
        self,
        request: ModelRequest,
        seen: _Answered,
        partial: PartialResponse,
        status: RequestStatus,
        http_status: int | None = None,
    ) -> None:
        """Count a request that ended before its response was done, if the provider received it:
        one it refused with an HTTP status (nothing to bill), or one it had begun to answer, with
        the provider's usage where it came and deferchat's estimate of the rest otherwise
        (marked ``estimated``). One the provider never answered is not counted."""
        try:
            if not seen.answered:
                if http_status is not None:
                    self.meter.record(request, Usage(), self.provider.name, status=status, http_status=http_status)
                return
            usage, estimated = seen.usage, False
            if usage is None:
                usage, estimated = Usage(input_tokens=self._prompt_tokens(request)), True
            answer = partial.text + "".join(canonical_json(u) for u in partial.tool_uses)
            written = self.estimator.count(answer) if answer else 0  # the answer so far, as the model wrote it
            if written > usage.output_tokens:
                usage, estimated = usage.model_copy(update={"output_tokens": written}), True
            self.meter.record(request, usage, self.provider.name, status=status, estimated=estimated)
        except Exception:  # the meter never stands in the way of a stop or of the failure's own report
            log.exception("could not count an unfinished request")

    def _prompt_tokens(self, request: ModelRequest) -> int:
        """An estimate of ``request``'s prompt: its system text, tools and messages (each message
        counted as the history's budget counts it, so the counts are the cached ones)."""
        est = self.estimator
        counted = est.count(request.system) + (est.count(canonical_json(request.tools)) if request.tools else 0)
        return counted + sum(est.count(canonical_json(m)) for m in request.messages)

    async def _answer(
        self, turn_id: str, uses: list[dict[str, Any]], searches: list[ServerToolUse], *, resuming: bool = False
    ) -> bool:
        """Answer one response: every tool use through the pipeline, then every search the client
        must run; append the results as the next user message. True when a tool parked (the
        searches are then answered on resume, from the stored response)."""
        results: list[dict[str, Any]] = []
        self._answered = {}
        if uses:
            pipeline = Pipeline(
                RunContext(
                    chat_id=self.chat_id,
                    turn_id=turn_id,
                    store=self.store,
                    plan=self.plan,
                    policy=self.policy,
                    approver=self.approver,
                    tools=self.tools,
                    emit=self.events.emit,
                    specs=self.specs,
                )
            )
            for block in uses:
                outcome = await pipeline.run(block, resuming=resuming)
                if outcome.parked:
                    return True
                assert outcome.result_block is not None
                results.append(outcome.result_block)
                self._answered[str(block.get("id") or "")] = outcome.result_block
        answers = [self.search.answer_client_search(s.id, s.input) for s in searches]
        self._add("user", answers + results, turn_id)
        return False

    def _record(self, request: ModelRequest) -> None:
        """``request`` goes out: the meter counts its prefix breaks, ``--record`` writes it."""
        self.meter.sent(request, self.provider.name)
        if self.record_path:
            with open(self.record_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(request.record(), ensure_ascii=False) + "\n")
