"""One pipeline for every tool use (ADR-0123 decisions 7-11):

unwrap ``tool.call`` -> resolve against the run's pins -> validate arguments -> classify ->
trust overlay -> policy -> hardline rules -> approval -> idempotency -> invoke -> one
invocation row and its events, all under the deferred tool's own name, answering the
model's original call id.

A ``tool.call`` is never executed and re-entered: it is unwrapped before resolution, so one
call has one row, one policy evaluation, one approval and one result.

Validation lives in :mod:`core.pipeline.validation`, call ids in :mod:`core.pipeline.call_ids`.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from core import events as ev
from core.context import envelope
from core.events import Event
from core.limits import MAX_JSON_DEPTH, holds_marker
from core.pipeline import codes
from core.pipeline.approvals import ApprovalRequest, Approver, Decision
from core.pipeline.call_ids import CallIds, new_call_id
from core.pipeline.canonical import CanonicalError
from core.pipeline.policy import Policy
from core.pipeline.validation import check_arguments, invalid_arguments_text, schema_for_model, validation_error
from core.roster.controls import CONTROL_NAMES, TOOL_CALL, TOOL_RESULT
from core.roster.models import RosterPlan
from core.store import InvocationRow, Store, now
from core.tools import Origin, SideEffect, ToolResult, ToolSpec, canonical_json, result_envelope_source

MAX_MODEL_RESULT_CHARS = 16_000

log = logging.getLogger("deferchat.pipeline")


class ToolHost(Protocol):
    """What the pipeline needs from the chat it runs in: run a judged tool, and tell a tool's pin
    as it is now (the live listing, for resumes)."""

    async def run(self, spec: ToolSpec, arguments: dict[str, Any], call_id: str) -> ToolResult: ...

    def live_pin(self, name: str) -> str | None: ...


@dataclass
class Outcome:
    """What the pipeline gives back for one tool use."""

    result_block: dict[str, Any] | None  # the tool_result for the model; None when parked
    parked: bool = False
    name: str = ""
    via: str | None = None
    status: str = ""  # completed | failed | denied | parked | replayed


@dataclass
class RunContext:
    """One turn's view of its chat: the pins, the rules, who approves, where tools run and where
    events go. Nothing else of the chat reaches the pipeline."""

    chat_id: str
    turn_id: str
    store: Store
    plan: RosterPlan
    policy: Policy
    approver: Approver
    tools: ToolHost
    emit: Callable[[Event], None]
    specs: dict[str, ToolSpec] = field(default_factory=dict)
    max_result_chars: int = MAX_MODEL_RESULT_CHARS

    def __post_init__(self) -> None:
        if not self.specs:
            self.specs = {n: s for n in self.plan.pinned_names() if (s := self.plan.spec_of(n)) is not None}


class _Stop(Exception):
    """Ends a call early with a code; carries what the model and the events get."""

    def __init__(self, code: str, message: str, *, denied: bool, model_text: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.denied = denied
        self.model_text = model_text or f"{code}: {message}"


def unwrap(raw_input: Any) -> tuple[str, Any]:
    """``tool.call {name, arguments}`` -> (name, arguments); raises on a malformed wrapper.

    A JSON string that decodes to an object is accepted for ``arguments`` (weaker models
    write one); anything else that is not an object is malformed.
    """
    if not isinstance(raw_input, dict):
        raise _Stop(
            codes.ARGUMENTS_INVALID, 'tool.call takes an object {"name": ..., "arguments": {...}}', denied=False
        )
    extra = set(raw_input) - {"name", "arguments"}
    name = raw_input.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _Stop(codes.ARGUMENTS_INVALID, 'tool.call needs "name": the exact name of a deferred tool', denied=False)
    if "arguments" not in raw_input:
        raise _Stop(
            codes.ARGUMENTS_INVALID,
            f'tool.call for {name} needs "arguments": an object (use {{}} when the tool takes none)',
            denied=False,
        )
    if extra:
        raise _Stop(
            codes.ARGUMENTS_INVALID, f"tool.call takes only name and arguments, not {sorted(extra)}", denied=False
        )
    arguments = raw_input["arguments"]
    if isinstance(arguments, str):
        with contextlib.suppress(json.JSONDecodeError):
            arguments = json.loads(arguments)
    if not isinstance(arguments, dict):
        raise _Stop(codes.ARGUMENTS_INVALID, f"tool.call arguments for {name} must be an object", denied=False)
    return name.strip(), arguments


def _stored_as(stored: str | None, forms: list[Any]) -> bool:
    """Whether a row's stored arguments (JSON text, or the raw text of a call whose input was a
    string) are one of ``forms``, compared canonically."""
    if any(isinstance(f, str) and f == stored for f in forms):
        return True
    try:
        parsed = canonical_json(json.loads(stored) if stored is not None else None)
    except (ValueError, TypeError, RecursionError):
        return False
    for form in forms:
        try:
            if canonical_json(form) == parsed:
                return True
        except (ValueError, TypeError, RecursionError):
            continue
    return False


def _stored_result(stored: str | None, model_text: str) -> ToolResult:
    """A completed call's stored result; one this version cannot read is replayed as the text the
    model read (a replay never fails on what the store holds)."""
    if stored:
        try:
            return ToolResult.model_validate(json.loads(stored))
        except ValueError:  # not JSON, or not a ToolResult (pydantic's ValidationError)
            pass
    return ToolResult.of_text(model_text) if model_text else ToolResult()


def effective_side_effect(spec: ToolSpec, policy: Policy) -> SideEffect:
    """Trust overlay: a server whose annotations are not believed cannot claim a read."""
    if spec.untrusted and spec.server in policy.distrust_annotations:
        return SideEffect.NETWORK_WRITE
    return spec.side_effect


def judged_spec(spec: ToolSpec, policy: Policy) -> ToolSpec:
    """The spec as policy judges it: with the side effect the trust overlay gives it."""
    side_effect = effective_side_effect(spec, policy)
    return spec if side_effect is spec.side_effect else spec.model_copy(update={"side_effect": side_effect})


def same_call(
    inv: InvocationRow, raw_name: str, raw_input: Any, *, specs: Mapping[str, ToolSpec], policy: Policy
) -> bool:
    """Whether ``inv`` is the row of this very call (the tool use ``raw_name``/``raw_input`` as the
    model wrote it): the same tool and the same arguments, in any form the row may have stored
    them (as the model wrote them, unwrapped from tool.call, or canonical). A row that is not
    is another call's, which this one must neither touch nor be answered from."""
    names = {raw_name}
    forms: list[Any] = [raw_input]
    name = raw_name
    if raw_name == TOOL_CALL and isinstance(raw_input, dict):
        inner = raw_input.get("name")
        if isinstance(inner, str):
            names.update((inner, inner.strip()))
        try:
            name, unwrapped = unwrap(raw_input)
            forms.append(unwrapped)
        except _Stop:
            pass
    if inv.name not in names:
        return False
    spec = specs.get(name)
    if spec is not None and isinstance(forms[-1], dict):
        with contextlib.suppress(Exception):  # no canonical form: the forms above are all there is
            forms.append(policy.canonical_arguments(judged_spec(spec, policy), forms[-1]))
    return _stored_as(inv.arguments, forms)


class Pipeline:
    def __init__(self, ctx: RunContext):
        self.ctx = ctx

    # -- helpers ---------------------------------------------------------------------------
    def _emit(self, event: Event) -> None:
        event.chat_id = self.ctx.chat_id
        self.ctx.emit(event)

    def _result_block(self, call_id: str, text: str, is_error: bool) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": text}
        if is_error:
            block["is_error"] = True
        return block

    def model_text(self, spec: ToolSpec | None, result: ToolResult, call_id: str) -> tuple[str, bool]:
        """What the model reads: untrusted results enveloped, large ones cut (kept whole in the store)."""
        text = result.text()
        truncated = False
        limit = self.ctx.max_result_chars
        if len(text) > limit:
            more = (
                f'read on with tool.result {{"call_id": "{call_id}", "offset": {limit}}}'
                if TOOL_RESULT in self.ctx.plan.defined_tool_names
                else "the full result is kept in the chat"
            )
            text = text[:limit] + f"\n[result cut at {limit:,} of {len(result.text()):,} characters; {more}]"
            truncated = True
        return envelope.fence(text, result_envelope_source(spec, result)), truncated

    # -- the pipeline ----------------------------------------------------------------------
    async def run(self, block: dict[str, Any], *, resuming: bool = False) -> Outcome:
        ctx = self.ctx
        # The turn loop gives every tool use an id before it stores the response (CallIds); a
        # use that reaches the pipeline without one is a call of its own all the same.
        call_id = str(block.get("id") or "") or new_call_id()
        raw_name = str(block.get("name") or "")
        raw_input = block.get("input")
        via: str | None = None
        name = raw_name
        arguments: Any = raw_input
        spec: ToolSpec | None = None
        inv = ctx.store.invocation(ctx.chat_id, call_id)
        if inv is not None and not self._same_call(inv, raw_name, raw_input):
            # The id is bound to an earlier call of another tool or other arguments: that call's
            # row is never touched and its result never given to this one.
            return self._reused(inv, call_id, raw_name, raw_input)
        inv_id = inv.id if inv else None
        requested = False

        def ensure_row(status: str, **fields: Any) -> str:
            nonlocal inv_id
            if inv_id is None:
                inv_id = ctx.store.create_invocation(
                    chat_id=ctx.chat_id,
                    turn_id=ctx.turn_id,
                    call_id=call_id,
                    name=name,
                    via=via,
                    arguments=arguments,
                    side_effect=spec.side_effect.value if spec else None,
                    pin=spec.content_hash() if spec else None,
                    status=status,
                    **fields,
                )
            else:
                ctx.store.update_invocation(inv_id, status=status, **fields)
            return inv_id

        try:
            if holds_marker(raw_input):  # nested deeper than deferchat reads: never kept, never run
                raise _Stop(
                    codes.ARGUMENTS_INVALID,
                    f"the arguments for {raw_name} nest deeper than {MAX_JSON_DEPTH} levels, more than deferchat "
                    "reads; the call was not run",
                    denied=False,
                )
            # 1. unwrap tool.call before resolution
            if raw_name == TOOL_CALL:
                via = TOOL_CALL
                if TOOL_CALL not in ctx.plan.defined_tool_names:
                    raise _Stop(
                        codes.NOT_OFFERED,
                        "tool.call is not offered in this chat (its plan defers nothing through the wrapper)",
                        denied=True,
                    )
                name, arguments = unwrap(raw_input)
            self._emit(ev.ToolRequested(call_id=call_id, name=name, via=via, arguments=arguments))
            requested = True

            # 2. resolve against the run's pins
            spec = ctx.specs.get(name)
            if spec is None or (via == TOOL_CALL and name in CONTROL_NAMES):
                why = (
                    "is a control tool and cannot be called through tool.call"
                    if via == TOOL_CALL and name in CONTROL_NAMES
                    else "is not offered in this chat"
                )
                raise _Stop(codes.NOT_OFFERED, f"{name} {why}", denied=True)
            if spec.origin is Origin.CONTROL and name not in ctx.plan.defined_tool_names:
                raise _Stop(codes.NOT_OFFERED, f"{name} is not offered in this chat", denied=True)

            # 3. validate the named tool's arguments (its schema never reached the provider)
            problem = await check_arguments(spec, arguments)
            if problem:
                raise _Stop(
                    codes.ARGUMENTS_INVALID,
                    f"arguments for {name} do not match its input schema: {problem}",
                    denied=False,
                    model_text=invalid_arguments_text(spec, name, problem),
                )

            # 4-7. classify (the named tool's own class; tool.call is NONE and adds nothing),
            # trust overlay, policy, hardline rules
            side_effect = effective_side_effect(spec, ctx.policy)
            judged = judged_spec(spec, ctx.policy)
            action, why = ctx.policy.decide(judged)
            if spec.origin is Origin.CONTROL:
                action, why = "allow", "control tool"
            elif spec.requires_approval and action == "allow":
                action, why = "ask", "the tool's configuration requires approval"
            if action == "deny":
                raise _Stop(codes.DENIED_POLICY, f"{name} is denied by policy ({why})", denied=True)
            # The values hardline rules look at in canonical form: the rule, the approval and the
            # tool all see the same phone number, address, URL or path.
            try:
                arguments = ctx.policy.canonical_arguments(judged, arguments)
            except CanonicalError as exc:
                raise _Stop(codes.ARGUMENTS_INVALID, f"arguments for {name}: {exc}", denied=False) from None
            line = ctx.policy.hardline_for(judged, arguments)
            if line is not None:
                raise _Stop(codes.DENIED_HARDLINE, f"{name} is denied by a hardline rule: {line.reason}", denied=True)

            # Resuming a parked run: the tool must still be what was pinned.
            if resuming and inv and inv.status == "awaiting_approval":
                live = ctx.tools.live_pin(name)
                if live != spec.content_hash():
                    state = "is no longer offered" if live is None else "has changed since the chat pinned it"
                    raise _Stop(
                        codes.PIN_MISMATCH,
                        f"{name} {state}; the parked call cannot run. Start a new chat to use the tool as it is now.",
                        denied=False,
                    )

            # 8. approval (a decision already stored for this call id stands)
            if action == "ask":
                decided = await self._approval(spec, name, via, call_id, arguments, why, side_effect, ensure_row)
                if decided is None:
                    return Outcome(None, parked=True, name=name, via=via, status="parked")

            # 9. idempotency: a call id seen before in this chat is answered from the store
            inv = ctx.store.invocation(ctx.chat_id, call_id)
            if inv and inv.status in ("completed", "failed", "unknown"):
                return self._replay(inv, spec, name, via, call_id)
            if inv and inv.status == "running" and not side_effect.is_read:
                raise _Stop(
                    codes.OUTCOME_UNKNOWN,
                    f"{name} was interrupted while running; it changes the world, so it is not run "
                    "again. Check whether it took effect before retrying.",
                    denied=False,
                )
            # (a read interrupted mid-call is simply run again)

            # 10. invoke
            inv_id = ensure_row("running", started_at=now())
            self._emit(ev.ToolStarted(call_id=call_id, name=name, via=via))
            try:
                result = await ctx.tools.run(spec, arguments, call_id)
            except Exception as exc:  # the tool's failure, never the chat's
                result = ToolResult.failure(codes.EXECUTION_FAILED, f"{name} failed: {type(exc).__name__}: {exc}")
            text, truncated = self.model_text(spec, result, call_id)
            status = "failed" if result.is_error else "completed"
            code = (result.error_code or codes.EXECUTION_FAILED) if result.is_error else None
            ctx.store.update_invocation(
                inv_id,
                status=status,
                result=result.model_dump(),
                model_result=text,
                is_error=int(result.is_error),
                error_code=code,
                finished_at=now(),
            )
            if result.is_error:
                self._emit(
                    ev.ToolFailed(
                        call_id=call_id,
                        name=name,
                        via=via,
                        code=code or codes.EXECUTION_FAILED,
                        message=result.text()[:500],
                    )
                )
            else:
                self._emit(
                    ev.ToolCompleted(
                        call_id=call_id, name=name, via=via, result=self._event_result(result), truncated=truncated
                    )
                )
            return Outcome(self._result_block(call_id, text, result.is_error), name=name, via=via, status=status)

        except _Stop as stop:
            if not requested:  # a malformed wrapper: the call still shows, under the best name known
                if via == TOOL_CALL and isinstance(raw_input, dict) and isinstance(raw_input.get("name"), str):
                    name = raw_input["name"]
                self._emit(ev.ToolRequested(call_id=call_id, name=name, via=via, arguments=arguments))
            status = "unknown" if stop.code == codes.OUTCOME_UNKNOWN else "denied" if stop.denied else "failed"
            ensure_row(
                status,
                is_error=1,
                error_code=stop.code,
                error_message=stop.message,
                model_result=stop.model_text,
                finished_at=now(),
            )
            if stop.denied:
                self._emit(ev.ToolDenied(call_id=call_id, name=name, via=via, code=stop.code, message=stop.message))
            else:
                self._emit(ev.ToolFailed(call_id=call_id, name=name, via=via, code=stop.code, message=stop.message))
            return Outcome(
                self._result_block(call_id, stop.model_text, True),
                name=name,
                via=via,
                status="denied" if stop.denied else "failed",
            )

    async def _approval(
        self,
        spec: ToolSpec,
        name: str,
        via: str | None,
        call_id: str,
        arguments: Any,
        why: str,
        side_effect: SideEffect,
        ensure_row: Callable[..., str],
    ) -> bool | None:
        """True when allowed; raises a denial; None when parked."""
        ctx = self.ctx
        if ctx.store.granted(ctx.chat_id, name):
            self._emit(ev.ToolApproved(call_id=call_id, name=name, via=via, scope="chat"))
            return True
        stored = ctx.store.approval_for_call(ctx.chat_id, call_id)
        if stored is not None and (stored.tool != name or not _stored_as(stored.arguments, [arguments])):
            stored = None  # a decision about another call never stands for this one
        if stored and stored.status == "allowed":
            return True
        if stored and stored.status == "denied":
            raise _Stop(codes.DENIED_APPROVAL, f"{name} was denied by the owner", denied=True)
        inv_id = ensure_row("awaiting_approval")
        if stored and stored.status == "pending":
            appr_id = stored.id
        else:
            appr_id = ctx.store.create_approval(
                chat_id=ctx.chat_id,
                turn_id=ctx.turn_id,
                invocation_id=inv_id,
                call_id=call_id,
                tool=name,
                via=via,
                side_effect=side_effect.value,
                arguments=arguments,
                reason=why,
            )
        self._emit(
            ev.ToolApprovalRequired(
                call_id=call_id,
                name=name,
                via=via,
                approval_id=appr_id,
                side_effect=side_effect.value,
                arguments=arguments,
                reason=why,
            )
        )
        request = ApprovalRequest(
            approval_id=appr_id,
            chat_id=ctx.chat_id,
            call_id=call_id,
            tool=name,
            via=via,
            side_effect=side_effect.value,
            arguments=arguments,
            reason=why,
            untrusted=spec.untrusted,
        )
        decision = await ctx.approver.decide(request)
        if decision is Decision.PARK:
            return None
        if decision is Decision.DENY:
            ctx.store.decide_approval(appr_id, "denied")
            raise _Stop(codes.DENIED_APPROVAL, f"{name} was denied by the owner", denied=True)
        scope = "chat" if decision is Decision.ALLOW_CHAT else "once"
        if scope == "chat":
            ctx.store.grant(ctx.chat_id, name)
        ctx.store.decide_approval(appr_id, "allowed", scope)
        self._emit(ev.ToolApproved(call_id=call_id, name=name, via=via, scope=scope))
        return True

    # -- call ids ---------------------------------------------------------------------------
    def _same_call(self, inv: InvocationRow, raw_name: str, raw_input: Any) -> bool:
        return same_call(inv, raw_name, raw_input, specs=self.ctx.specs, policy=self.ctx.policy)

    def _reused(self, inv: InvocationRow, call_id: str, raw_name: str, raw_input: Any) -> Outcome:
        """Answer a call whose id an earlier call of this chat already has: a tool error of its own
        (``tool.call_id_reused``), no row written (the id's row is the earlier call's), nothing run."""
        name, via, arguments = raw_name, None, raw_input
        if raw_name == TOOL_CALL:
            via = TOOL_CALL
            if isinstance(raw_input, dict) and isinstance(raw_input.get("name"), str):
                name, arguments = raw_input["name"].strip(), raw_input.get("arguments")
        same = "other arguments" if inv.name == name else "another tool"
        message = (
            f"the call id {call_id!r} already belongs to an earlier call in this chat ({inv.name}); a call "
            f"with {same} cannot reuse it, so {name or 'this call'} was not run. Call it again with an id "
            "of its own."
        )
        self._emit(ev.ToolRequested(call_id=call_id, name=name, via=via, arguments=arguments))
        self._emit(ev.ToolFailed(call_id=call_id, name=name, via=via, code=codes.CALL_ID_REUSED, message=message))
        return Outcome(
            self._result_block(call_id, f"{codes.CALL_ID_REUSED}: {message}", True), name=name, via=via, status="failed"
        )

    def _replay(self, inv: InvocationRow, spec: ToolSpec, name: str, via: str | None, call_id: str) -> Outcome:
        is_error = bool(inv.is_error)
        text = inv.model_result or ""
        if inv.status == "completed":
            result = _stored_result(inv.result, text)
            self._emit(
                ev.ToolCompleted(call_id=call_id, name=name, via=via, result=self._event_result(result), replayed=True)
            )
        else:
            self._emit(
                ev.ToolFailed(
                    call_id=call_id,
                    name=name,
                    via=via,
                    code=inv.error_code or codes.EXECUTION_FAILED,
                    message=(inv.error_message or text)[:500],
                )
            )
        return Outcome(self._result_block(call_id, text, is_error), name=name, via=via, status="replayed")

    @staticmethod
    def _event_result(result: ToolResult) -> Any:
        if result.structured is not None:
            return result.structured
        text = result.text()
        return text if len(text) <= 4000 else text[:4000] + "\u2026"


__all__ = [
    "CallIds",
    "Outcome",
    "Pipeline",
    "RunContext",
    "ToolHost",
    "effective_side_effect",
    "judged_spec",
    "new_call_id",
    "same_call",
    "schema_for_model",
    "unwrap",
    "validation_error",
]
