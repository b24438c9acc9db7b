"""The cost meter (core/chat/meter.py): the cache hit ratio, prefix breaks by cause, prices from
the profiles and config.toml (an unknown price is None, never a guess), per-request rows read
back from stored events, ``chats show --usage --json``, and migration 0006 on an old database."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlite_utils import Database

from core import events as ev
from core.chat.meter import Meter, chat_usage, cost_usd, hit_ratio, prefix_digest, price_for
from core.config import PriceSettings, load_settings
from core.providers.base import ModelRequest, Usage
from core.providers.profiles import ModelPrice
from core.store import SCHEMA, Store, open_db
from tests.helpers import ROOT

TOOLS = [{"name": "time.now", "description": "now", "input_schema": {"type": "object"}}]


def request(system: str = "You help.", tools: list[dict] | None = None, model: str = "m1") -> ModelRequest:
    return ModelRequest(model=model, system=system, tools=TOOLS if tools is None else tools, messages=[])


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "db.sqlite")


def chat(store: Store) -> str:
    return store.create_chat(title="t", provider="anthropic", model="m1", strategy="wrapper")


def metered(store: Store, chat_id: str, prices: dict[str, PriceSettings] | None = None) -> tuple[Meter, list]:
    seen: list[ev.Event] = []

    def emit(e: ev.Event) -> None:
        seen.append(e)
        store.add_event(chat_id, "turn_1", e.type, e.to_json())

    return Meter(store=store, chat_id=chat_id, emit=emit, prices=prices), seen


def test_the_hit_ratio_is_cache_reads_over_the_whole_prompt() -> None:
    assert hit_ratio(100, 300, 100) == 0.6  # 300 / (100 + 300 + 100)
    assert hit_ratio(0, 0, 0) is None
    assert hit_ratio(50, 0, 50) == 0.0


def test_breaks_by_cause_tools_system_and_switch(store: Store) -> None:
    chat_id = chat(store)
    meter, seen = metered(store, chat_id)
    assert meter.sent(request(), "anthropic") == []  # the first request breaks nothing
    assert meter.sent(request(), "anthropic") == []  # the same prefix again
    more = [*TOOLS, {"name": "email.subscriptions", "input_schema": {"type": "object"}}]
    (tools,) = meter.sent(request(tools=more), "anthropic")
    assert tools.cause == "tools" and "+email.subscriptions" in tools.detail and "1 -> 2 tools" in tools.detail
    (system,) = meter.sent(request(system="You help. Answer in French.", tools=more), "anthropic")
    assert system.cause == "system" and "9 -> 27 characters" in system.detail
    both = meter.sent(request(system="Other.", tools=TOOLS), "anthropic")
    assert [b.cause for b in both] == ["tools", "system"]
    # another model: one switch break, whatever else changed with it
    (switch,) = meter.sent(request(system="x", tools=[], model="m2"), "openai")
    assert (switch.cause, switch.detail) == ("switch", "anthropic/m1 -> openai/m2")
    assert [e.cause for e in seen if isinstance(e, ev.PrefixBreak)] == ["tools", "system", "tools", "system", "switch"]


def test_a_request_is_digested_once_for_its_breaks_and_its_usage(store: Store, monkeypatch) -> None:
    import core.chat.meter

    digested: list[int] = []
    canonical = core.chat.meter.canonical_json
    monkeypatch.setattr(core.chat.meter, "canonical_json", lambda v: digested.append(1) or canonical(v))
    meter, seen = metered(store, chat(store))
    for system in ("You help.", "You help.", "Edited."):
        r = request(system=system)
        meter.sent(r, "anthropic")
        meter.record(r, Usage(input_tokens=10), "anthropic")
    assert len(digested) == 3  # one per request, though sent() compares and both store it
    usages = [e for e in seen if isinstance(e, ev.UsageEvent)]
    assert [u.prefix for u in usages] == [
        prefix_digest(request(system=s)) for s in ("You help.", "You help.", "Edited.")
    ]
    assert [e.cause for e in seen if isinstance(e, ev.PrefixBreak)] == ["system"]


def test_a_stored_prefix_without_its_two_halves_breaks_both(store: Store) -> None:
    chat_id = chat(store)
    store.add_event(
        chat_id, None, "usage", ev.UsageEvent(input_tokens=5, provider="anthropic", model="m1", prefix="x").to_json()
    )
    meter, _ = metered(store, chat_id)
    assert [b.cause for b in meter.breaks(request(), "anthropic")] == ["tools", "system"]


def test_a_change_made_in_another_process_is_counted_from_the_stored_usage(store: Store) -> None:
    chat_id = chat(store)
    first, _ = metered(store, chat_id)
    first.sent(request(), "anthropic")
    first.record(request(), Usage(input_tokens=10), "anthropic")
    # a new process: its meter has seen nothing, the stored usage event carries the prefix digest
    again, _ = metered(store, chat_id)
    assert again.breaks(request(), "anthropic") == []
    (b,) = again.breaks(request(system="Edited elsewhere."), "anthropic")
    assert b.cause == "system" and "now 17 characters" in b.detail
    (s,) = again.breaks(request(model="m9"), "anthropic")
    assert s.cause == "switch"
    # a chat whose last usage was stored before the meter (no digest): nothing to compare, no guess
    older = chat(store)
    store.add_event(older, None, "usage", ev.UsageEvent(input_tokens=5).to_json())
    assert metered(store, older)[0].breaks(request(system="anything"), "anthropic") == []


def test_prices_unknown_is_none_never_a_guess_and_config_overrides() -> None:
    assert price_for("openai", "gpt-5.4") is None  # no first-party list: no price
    assert price_for("openai-chat", "deepseek-chat") is None and price_for("nobody", "x") is None
    sonnet = price_for("anthropic", "claude-sonnet-4-6")
    assert sonnet == ModelPrice(input=3.0, output=15.0, cache_read=0.30, cache_write=3.75)
    assert price_for("anthropic", "claude-sonnet-4-5-20250929") == sonnet  # a dated snapshot: its alias
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_input_tokens=2_000_000)
    assert cost_usd(usage, sonnet) == pytest.approx(3.0 + 1.5 + 0.6)
    assert cost_usd(usage, None) is None
    # config.toml: a row of its own, or fields over the profile's
    own = {"openai:gpt-5.4": PriceSettings(input=2.0, output=8.0, cache_read=0.2)}
    assert price_for("openai", "gpt-5.4", own) == ModelPrice(input=2.0, output=8.0, cache_read=0.2)
    cheaper = {"anthropic:claude-sonnet-4-6": PriceSettings(output=10.0)}
    assert price_for("anthropic", "claude-sonnet-4-6", cheaper) == ModelPrice(
        input=3.0, output=10.0, cache_read=0.30, cache_write=3.75
    )
    # an override without input and output prices nothing; a token kind left unpriced: no cost
    assert price_for("openai", "gpt-5.4", {"openai:gpt-5.4": PriceSettings(input=1.0)}) is None
    no_write = ModelPrice(input=1.0, output=1.0, cache_read=0.1)
    assert cost_usd(Usage(input_tokens=10, cache_creation_input_tokens=5), no_write) is None
    assert cost_usd(Usage(input_tokens=10), no_write) == pytest.approx(10 / 1_000_000)


def test_prices_and_the_default_system_prompt_load_from_config_toml(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        'system_prompt = "Answer briefly."\n[prices."openai:gpt-5.4"]\ninput = 2.5\noutput = 15\ncache_read = 0.25\n'
    )
    settings = load_settings(path)
    assert settings.system_prompt == "Answer briefly."
    price = price_for("openai", "gpt-5.4", settings.prices)
    assert price == ModelPrice(input=2.5, output=15.0, cache_read=0.25)
    path.write_text('[prices."openai:gpt-5.4"]\ninput = -1\n')
    with pytest.raises(Exception, match="input"):
        load_settings(path)


def test_usage_events_carry_provider_model_cost_and_read_back_per_request(store: Store) -> None:
    chat_id = chat(store)
    meter, seen = metered(store, chat_id)
    sonnet = request(model="claude-sonnet-4-6")
    meter.sent(sonnet, "anthropic")
    meter.record(sonnet, Usage(input_tokens=1000, output_tokens=100, cache_creation_input_tokens=4000), "anthropic")
    edited = request(system="New.", model="claude-sonnet-4-6")
    meter.sent(edited, "anthropic")
    meter.record(edited, Usage(input_tokens=10, output_tokens=50, cache_read_input_tokens=4000), "anthropic")
    unpriced = request(model="gpt-5.4")
    meter.sent(unpriced, "openai")
    meter.record(unpriced, Usage(input_tokens=500, output_tokens=20), "openai")
    usages = [e for e in seen if isinstance(e, ev.UsageEvent)]
    assert [(u.provider, u.model) for u in usages] == [
        ("anthropic", "claude-sonnet-4-6"),
        ("anthropic", "claude-sonnet-4-6"),
        ("openai", "gpt-5.4"),
    ]
    assert usages[0].cost_usd == pytest.approx((1000 * 3 + 100 * 15 + 4000 * 3.75) / 1e6)
    assert usages[2].cost_usd is None and usages[0].prefix == prefix_digest(sonnet)

    usage = chat_usage(store, chat_id)
    rows = usage.requests
    assert [r.n for r in rows] == [1, 2, 3] and rows[0].turn_id == "turn_1"
    assert [r.breaks for r in rows] == [
        (),
        (("system", "the system prompt changed (9 -> 4 characters)"),),
        (("switch", "anthropic/claude-sonnet-4-6 -> openai/gpt-5.4"),),
    ]
    assert rows[1].hit_ratio == pytest.approx(4000 / 4010)
    t = usage.totals
    assert (t.requests, t.input_tokens, t.output_tokens, t.cache_read, t.cache_write) == (3, 1510, 170, 4000, 4000)
    assert t.cost_usd == pytest.approx(usages[0].cost_usd + usages[1].cost_usd) and t.unpriced == 1
    assert t.breaks == {"tools": 0, "system": 1, "switch": 1} and t.hit_ratio == pytest.approx(4000 / 9510)


def test_chats_show_usage_json(home: Path) -> None:
    store = Store(home / "deferchat.db")
    chat_id = chat(store)
    meter, _ = metered(store, chat_id)
    for system in ("A.", "A.", "B."):
        r = request(system=system, model="claude-haiku-4-5")
        meter.sent(r, "anthropic")
        meter.record(r, Usage(input_tokens=100, output_tokens=10, cache_read_input_tokens=900), "anthropic")
    store.db.close()
    run = [sys.executable, "-m", "core.cli", "chats", "show", chat_id[:12], "--usage"]
    env = {"DEFERCHAT_HOME": str(home), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([*run, "--json"], capture_output=True, text=True, cwd=ROOT, env=env, check=True)
    data = json.loads(out.stdout)
    assert data["chat_id"] == chat_id and len(data["requests"]) == 3
    totals = data["totals"]
    assert (totals["requests"], totals["input_tokens"], totals["cache_read_input_tokens"]) == (3, 300, 2700)
    assert totals["cache_hit_ratio"] == pytest.approx(0.9) and totals["unpriced_requests"] == 0
    assert totals["cost_usd"] == pytest.approx(3 * (100 * 1.0 + 10 * 5.0 + 900 * 0.10) / 1e6)
    assert totals["prefix_breaks"] == {"tools": 0, "system": 1, "switch": 0}
    third = data["requests"][2]
    assert third["prefix_breaks"] == [{"cause": "system", "detail": "the system prompt changed (2 -> 2 characters)"}]
    assert set(third) >= {"n", "turn_id", "provider", "model", "cost_usd", "cache_hit_ratio", "output_tokens"}
    text = subprocess.run(run, capture_output=True, text=True, cwd=ROOT, env=env, check=True).stdout
    assert "anthropic/claude-haiku-4-5" in text and "total: 3 requests" in text and "hit 90%" in text


def test_an_old_database_upgrades_to_chat_system_prompts(tmp_path: Path) -> None:
    old = Database(tmp_path / "old.db")
    SCHEMA.apply(old, stop_before="0006_chat_system_prompt")  # as the release before chat prompts left it
    old["chats"].insert({"id": "chat_old", "title": "kept", "created_at": 1.0, "status": "idle", "deleted": 0})
    assert "system_prompt" not in old["chats"].columns_dict
    old.close()
    db = open_db(tmp_path / "old.db")
    assert "0006_chat_system_prompt" in [m.name for m in SCHEMA.applied(db)]
    assert "system_prompt" in db["chats"].columns_dict
    store = Store(db)
    row = store.chat("chat_old")
    assert row is not None and row.title == "kept" and row.system_prompt is None  # no prompt: its prefix as it was
    store.update_chat("chat_old", system_prompt="Be brief.")
    assert (store.chat("chat_old") or row).system_prompt == "Be brief."


def test_the_markdown_export_has_the_meter_and_the_chats_own_prompt(store: Store) -> None:
    from core.export import chat_markdown

    chat_id = chat(store)
    assert "## Usage" not in chat_markdown(store, chat_id)  # no request yet: no section
    store.update_chat(chat_id, system_prompt="Be | brief.")
    meter, _ = metered(store, chat_id)
    for system in ("A.", "B."):
        r = request(system=system, model="claude-sonnet-4-6")
        meter.sent(r, "anthropic")
        meter.record(r, Usage(input_tokens=1000, output_tokens=100, cache_read_input_tokens=3000), "anthropic")
    text = chat_markdown(store, chat_id)
    assert "- system prompt (this chat's own): 'Be | brief.'" in text
    section = text.split("## Usage\n\n", 1)[1]
    assert section.startswith(
        "2 requests · in 2,000 · out 200 · cache read 6,000 / write 0 · hit 75% · cost $0.0108"
    )  # 2 x (3,000 + 1,500 + 900) / 1e6
    assert "| # | model | input | output | cache read | cache write | hit | cost | prefix break |" in section
    assert "| 2 | anthropic/claude-sonnet-4-6 | 1,000 | 100 | 3,000 | 0 | 75% | $0.0054 | system: " in section
