"""The running cost meter: what each model request used and cost, and where its cached prefix broke.

Per request the turn loop asks :meth:`Meter.sent` as the request goes out and :meth:`Meter.record`
when its response is done. ``record`` emits a ``usage`` event (tokens in Anthropic's terms, the
provider and model, ``cost_usd``); ``sent`` emits a ``prefix.break`` for each way the request's
cacheable prefix differs from the previous request's in this chat:

* ``switch``: another provider or model (a switch, or a fallback); the one break of such a request,
  whatever else changed with it;
* ``tools``: the tools array changed (a discovery under active-tools, or the pool emptied again
  at a new turn);
* ``system``: the system prompt changed (the chat's own prompt was edited after the first message).

The previous request is the one this meter saw last, else the last one stored (its ``usage``
event carries the digest of its prefix), so a change made in another process (``deferchat ask
--chat ID --system ...``) is counted on the next request wherever it is sent.

The **cache hit ratio** is ``cache_read / (input + cache_read + cache_write)``: the share of the
prompt's tokens that the provider read from its cache (``input`` is the uncached input, as the
adapters report it). It is None for a request (or a chat) with no prompt tokens.

Prices come from the provider's profile (:attr:`ProviderProfile.prices`) with ``[prices."p:m"]``
from config.toml over them. A model without a price (or a request with tokens of a kind its price
leaves out) has ``cost_usd`` None: its tokens are shown, its cost never guessed. A chat's total
cost is the sum of the requests that have one, with the count of those that have none beside it.

Everything is read back from the stored events (:func:`chat_usage`); nothing else is stored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from core import events as ev
from core.config import PriceSettings
from core.providers.profiles import ModelPrice, profile_for
from core.providers.profiles.base import dated_base
from core.tools import canonical_json

if TYPE_CHECKING:
    from core.providers.base import ModelRequest, Usage
    from core.store import Store

BreakCause = Literal["tools", "system", "switch"]
RequestStatus = Literal["done", "stopped", "interrupted", "failed"]
_STATUSES: dict[str, RequestStatus] = {
    "done": "done",
    "stopped": "stopped",
    "interrupted": "interrupted",
    "failed": "failed",
}
CAUSES: tuple[BreakCause, ...] = ("tools", "system", "switch")
EVENT_TYPES = ("usage", "prefix.break")


# -- prices --------------------------------------------------------------------------------------
def price_for(provider: str, model: str, overrides: Mapping[str, PriceSettings] | None = None) -> ModelPrice | None:
    """``model``'s price on ``provider``: the profile's row, with config.toml's
    ``[prices."provider:model"]`` over it. None when no input or output price is known."""
    profile = profile_for(provider)
    base = profile.price_of(model) if profile else None
    table = overrides or {}
    own = table.get(f"{provider}:{model}") or table.get(f"{provider}:{dated_base(model)}")
    if own is None:
        return base
    given = own.model_dump(exclude_none=True)
    if base is not None:
        return replace(base, **given)
    if "input" not in given or "output" not in given:
        return None
    return ModelPrice(**given)


def cost_usd(usage: Usage, price: ModelPrice | None) -> float | None:
    """What ``usage`` cost at ``price``, in dollars; None without a price for every kind of token
    it has (never a guess)."""
    if price is None:
        return None
    total = usage.input_tokens * price.input + usage.output_tokens * price.output
    for tokens, rate in (
        (usage.cache_read_input_tokens, price.cache_read),
        (usage.cache_creation_input_tokens, price.cache_write),
    ):
        if tokens:
            if rate is None:
                return None
            total += tokens * rate
    return total / 1_000_000


def hit_ratio(input_tokens: int, cache_read: int, cache_write: int) -> float | None:
    """``cache_read / (input + cache_read + cache_write)``; None with no prompt tokens."""
    prompt = input_tokens + cache_read + cache_write
    return cache_read / prompt if prompt else None


# -- the prefix ----------------------------------------------------------------------------------
def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class _Prefix:
    """A digest of each half of a request's cacheable prefix: its tools array and its system prompt."""

    tools: str
    system: str

    @classmethod
    def of(cls, request: ModelRequest) -> _Prefix:
        return cls(_sha(canonical_json(request.tools)), _sha(request.system))

    @classmethod
    def stored(cls, digest: str) -> _Prefix:
        """One read back from a ``usage`` event's ``prefix``; neither half when it has no dot."""
        tools, system = digest.split(".", 1) if "." in digest else ("", "")
        return cls(tools, system)

    def __str__(self) -> str:
        return f"{self.tools}.{self.system}"


def prefix_digest(request: ModelRequest) -> str:
    """``<tools>.<system>``: a digest of each half of the request's cacheable prefix."""
    return str(_Prefix.of(request))


def _tool_name(tool: dict[str, Any]) -> str:
    return str(tool.get("name") or tool.get("type") or "?")


@dataclass(frozen=True)
class _Seen:
    """The previous request's prefix; ``tools``/``system_chars`` only when this process sent it."""

    provider: str
    model: str
    prefix: _Prefix
    tools: tuple[str, ...] | None = None
    system_chars: int | None = None


class Meter:
    """One chat's meter. ``emit`` is the chat's event log's; ``prices`` config.toml's table."""

    def __init__(
        self,
        *,
        store: Store,
        chat_id: str,
        emit: ev.EventSink,
        prices: Mapping[str, PriceSettings] | None = None,
    ):
        self.store = store
        self.chat_id = chat_id
        self.emit = emit
        self.prices = dict(prices or {})
        self._last: _Seen | None = None
        self._seeded = False
        # the request whose prefix was digested last, and its digests: sent() and record() of one
        # request (the same object, never changed once built) read them without digesting again
        self._digested: tuple[ModelRequest, _Prefix] | None = None

    def _prefix(self, request: ModelRequest) -> _Prefix:
        if self._digested is not None and self._digested[0] is request:
            return self._digested[1]
        prefix = _Prefix.of(request)
        self._digested = (request, prefix)
        return prefix

    def _previous(self) -> _Seen | None:
        if not self._seeded:
            self._seeded = True
            e = self.store.last_event(self.chat_id, "usage")
            if e is not None and e.get("prefix"):  # one stored before the meter had no digest: no guess
                self._last = _Seen(
                    str(e.get("provider") or ""), str(e.get("model") or ""), _Prefix.stored(str(e["prefix"]))
                )
        return self._last

    def breaks(self, request: ModelRequest, provider: str) -> list[ev.PrefixBreak]:
        """How ``request``'s prefix differs from the previous request's (none for the first)."""
        before = self._previous()
        if before is None:
            return []
        if (before.provider, before.model) != (provider, request.model) and before.provider:
            where = f"{before.provider}/{before.model} -> {provider}/{request.model}"
            return [ev.PrefixBreak(cause="switch", detail=where)]
        was, now = before.prefix, self._prefix(request)
        found: list[ev.PrefixBreak] = []
        if now.tools != was.tools:
            found.append(ev.PrefixBreak(cause="tools", detail=_tools_detail(before.tools, request.tools)))
        if now.system != was.system:
            chars = f"{len(request.system):,} characters"
            size = f"{before.system_chars:,} -> {chars}" if before.system_chars is not None else f"now {chars}"
            found.append(ev.PrefixBreak(cause="system", detail=f"the system prompt changed ({size})"))
        return found

    def sent(self, request: ModelRequest, provider: str) -> list[ev.PrefixBreak]:
        """``request`` goes out: emit its prefix breaks, and remember its prefix."""
        found = self.breaks(request, provider)
        for event in found:
            self.emit(event)
        self._last = _Seen(
            provider,
            request.model,
            self._prefix(request),
            tuple(_tool_name(t) for t in request.tools),
            len(request.system),
        )
        return found

    def record(
        self,
        request: ModelRequest,
        usage: Usage,
        provider: str,
        *,
        status: RequestStatus = "done",
        estimated: bool = False,
        http_status: int | None = None,
        purpose: Literal["turn", "summary"] = "turn",
    ) -> ev.UsageEvent:
        """``request``'s response is done (or ended otherwise, after the provider received it:
        ``status``): emit its usage and cost. A ``summary`` request (the history summarised,
        :mod:`core.chat.compaction`) is no part of the chat's prefix: its event carries the chat's
        own last prefix, so the next request's breaks are still read against the chat's, in this
        process or the next."""
        if purpose == "summary":
            before = self._previous()
            prefix = str(before.prefix) if before is not None else ""
        else:
            prefix = str(self._prefix(request))
        event = ev.UsageEvent(
            status=status,
            estimated=estimated,
            http_status=http_status,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_input_tokens=usage.cache_read_input_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens,
            provider=provider,
            model=request.model,
            # a request the provider refused bills nothing, priced or not
            cost_usd=0.0
            if http_status is not None
            else cost_usd(usage, price_for(provider, request.model, self.prices)),
            prefix=prefix,
            purpose=purpose,
        )
        self.emit(event)
        return event


def _tools_detail(before: tuple[str, ...] | None, now: list[dict[str, Any]]) -> str:
    names = [_tool_name(t) for t in now]
    if before is None:
        return f"{len(names)} tools, not the last request's"
    added = [n for n in names if n not in before]
    gone = [n for n in before if n not in names]
    moves = [f"+{n}" for n in added] + [f"-{n}" for n in gone]
    return f"{len(before)} -> {len(names)} tools" + (
        f": {', '.join(moves[:6])}" if moves else " (reordered or changed)"
    )


# -- reading it back -----------------------------------------------------------------------------
class _Counts:
    """What a request and a chat's totals share: four token counts and a cost."""

    input_tokens: int
    output_tokens: int
    cache_read: int
    cache_write: int
    cost_usd: float | None

    @property
    def hit_ratio(self) -> float | None:
        return hit_ratio(self.input_tokens, self.cache_read, self.cache_write)

    def counts_json(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_input_tokens": self.cache_read,
            "cache_creation_input_tokens": self.cache_write,
            "cache_hit_ratio": self.hit_ratio,
            "cost_usd": self.cost_usd,
        }


@dataclass(frozen=True)
class RequestUsage(_Counts):
    """One model request as the meter recorded it."""

    n: int
    turn_id: str | None
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    cache_read: int
    cache_write: int
    cost_usd: float | None
    breaks: tuple[tuple[BreakCause, str], ...] = ()
    status: RequestStatus = "done"
    estimated: bool = False  # some counts are estimates: the provider's usage never came
    http_status: int | None = None  # a request the provider refused, with this status

    def to_json(self) -> dict[str, Any]:
        where = {"n": self.n, "turn_id": self.turn_id, "provider": self.provider, "model": self.model}
        how = {"status": self.status, "estimated": self.estimated, "http_status": self.http_status}
        breaks = [{"cause": c, "detail": d} for c, d in self.breaks]
        return {**where, **how, **self.counts_json(), "prefix_breaks": breaks}

    @property
    def ended(self) -> str:
        """How the request ended, in words ("" for a finished one)."""
        if self.status == "failed":
            return f"refused (HTTP {self.http_status})" if self.http_status else "failed"
        return "" if self.status == "done" else self.status


@dataclass
class UsageTotals(_Counts):
    """A chat's totals; ``cost_usd`` sums the requests that have a cost (None if none has),
    ``unpriced`` counts those that have none."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost_usd: float | None = None
    unpriced: int = 0
    estimated: int = 0  # requests whose counts are partly estimated (stopped or failed mid-answer)
    breaks: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CAUSES, 0))

    def add(self, r: RequestUsage) -> None:
        self.requests += 1
        self.estimated += r.estimated
        self.input_tokens += r.input_tokens
        self.output_tokens += r.output_tokens
        self.cache_read += r.cache_read
        self.cache_write += r.cache_write
        if r.cost_usd is None:
            self.unpriced += 1
        else:
            self.cost_usd = (self.cost_usd or 0.0) + r.cost_usd
        for cause, _ in r.breaks:
            self.breaks[cause] = self.breaks.get(cause, 0) + 1

    def add_event(self, e: ev.UsageEvent, breaks: Iterable[ev.PrefixBreak] = ()) -> None:
        """The TUI's running totals: one live ``usage`` event (and the breaks before it)."""
        self.add(_request(self.requests + 1, None, e.model_dump(), [(b.cause, b.detail) for b in breaks]))

    @property
    def prefix_breaks(self) -> int:
        return sum(self.breaks.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            **self.counts_json(),
            "unpriced_requests": self.unpriced,
            "estimated_requests": self.estimated,
            "prefix_breaks": dict(self.breaks),
        }


@dataclass
class ChatUsage:
    requests: list[RequestUsage]
    totals: UsageTotals

    def to_json(self, chat_id: str) -> dict[str, Any]:
        return {"chat_id": chat_id, "totals": self.totals.to_json(), "requests": [r.to_json() for r in self.requests]}


def _request(n: int, turn_id: str | None, e: Mapping[str, Any], breaks: list[tuple[BreakCause, str]]) -> RequestUsage:
    cost = e.get("cost_usd")
    return RequestUsage(
        n=n,
        turn_id=turn_id,
        provider=str(e.get("provider") or ""),
        model=str(e.get("model") or ""),
        input_tokens=int(e.get("input_tokens") or 0),
        output_tokens=int(e.get("output_tokens") or 0),
        cache_read=int(e.get("cache_read_input_tokens") or 0),
        cache_write=int(e.get("cache_creation_input_tokens") or 0),
        cost_usd=float(cost) if cost is not None else None,
        breaks=tuple(breaks),
        status=_STATUSES.get(str(e.get("status")), "done"),
        estimated=bool(e.get("estimated")),
        http_status=int(e["http_status"]) if isinstance(e.get("http_status"), int) else None,
    )


def usage_from_events(stored: Iterable[tuple[str | None, Mapping[str, Any]]]) -> ChatUsage:
    """Per-request rows from stored ``usage`` and ``prefix.break`` events, in order: each break
    belongs to the next usage (a break of a request that failed goes with the one after it)."""
    requests: list[RequestUsage] = []
    totals = UsageTotals()
    pending: list[tuple[BreakCause, str]] = []
    for turn_id, e in stored:
        if e.get("type") == "prefix.break" and e.get("cause") in CAUSES:
            pending.append((e["cause"], str(e.get("detail") or "")))
        elif e.get("type") == "usage":
            r = _request(len(requests) + 1, turn_id, e, pending)
            pending = []
            requests.append(r)
            totals.add(r)
    return ChatUsage(requests, totals)


def chat_usage(store: Store, chat_id: str) -> ChatUsage:
    """The chat's meter, read back from its stored events."""
    return usage_from_events(store.turn_events(chat_id, EVENT_TYPES))


# -- how it reads --------------------------------------------------------------------------------
def tokens_text(n: int) -> str:
    """``1,234`` below ten thousand, then ``12.3k``, ``4.56M``."""
    if n < 10_000:
        return f"{n:,}"
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.2f}M"


def ratio_text(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.0%}"


def cost_text(cost: float | None, unpriced: int = 0, *, estimated: bool = False) -> str:
    """``$0.0123``; ``-`` when unknown; a partial sum says how many requests it leaves out; ``~``
    before a cost that is partly an estimate."""
    if cost is None:
        return "-"
    text = ("~" if estimated else "") + (f"${cost:.4f}" if cost < 1 else f"${cost:,.2f}")
    return text + (f" (+{unpriced} unpriced)" if unpriced else "")


def totals_text(t: UsageTotals) -> str:
    """One line: requests, tokens, cache hit ratio, cost when known, breaks."""
    parts = [
        f"{t.requests} requests",
        f"in {tokens_text(t.input_tokens)}",
        f"out {tokens_text(t.output_tokens)}",
        f"cache read {tokens_text(t.cache_read)} / write {tokens_text(t.cache_write)}",
        f"hit {ratio_text(t.hit_ratio)}",
        f"cost {cost_text(t.cost_usd, t.unpriced, estimated=bool(t.estimated))}",
    ]
    if t.estimated:
        parts.append(f"{t.estimated} estimated (stopped or failed before the provider's count came)")
    breaks = ", ".join(f"{c} {n}" for c, n in t.breaks.items() if n)
    parts.append(f"prefix breaks {t.prefix_breaks}" + (f" ({breaks})" if breaks else ""))
    return " · ".join(parts)


COLUMNS = ("#", "model", "input", "output", "cache read", "cache write", "hit", "cost", "prefix break")


def row_cells(r: RequestUsage) -> tuple[str, ...]:
    """One request as :data:`COLUMNS` (the usage view, ``chats show --usage``, the export)."""
    where = f"{r.provider}/{r.model}" if r.provider else (r.model or "?")
    breaks = "; ".join(f"{c}: {d}" if d else c for c, d in r.breaks)
    mark = "~" if r.estimated else ""  # an estimate, not the provider's count
    return (
        f"{r.n} {r.ended}".rstrip(),
        where,
        f"{mark}{r.input_tokens:,}",
        f"{mark}{r.output_tokens:,}",
        f"{r.cache_read:,}",
        f"{r.cache_write:,}",
        ratio_text(r.hit_ratio),
        cost_text(r.cost_usd, estimated=r.estimated),
        breaks,
    )
