"""The shipped token seed (core/roster/token_seed.json): planning the embedded default on a fresh
home counts every token from it and never loads the tokenizer, with the plans the tokenizer
gives; it is current (regenerated here with the tokenizer, it equals the shipped file); and it
is a read-only layer: a text it does not hold is tokenized as before, and nothing it answers is
written to the store's cache."""

from __future__ import annotations

import json
from collections import ChainMap
from pathlib import Path
from types import ModuleType

import pytest

import core.tokens
from core.deferral.names import STRATEGY_NAMES
from core.engine import ChatOptions, Engine
from core.roster.loader import load_roster
from core.roster.models import PolicyConfig
from core.store import open_token_cache
from core.tokens import TokenEstimator, _encoding, content_key, definition_text, shipped_seed
from tests.helpers import ROOT, script_module

POLICIES = ("overflow", "threshold")
CHOICES = [(s, p) for s in (None, *STRATEGY_NAMES) for p in POLICIES]  # None: the settings' (auto)


def seed_script() -> ModuleType:
    return script_module("token_seed")


def tokenized(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def no_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> None:
        raise AssertionError(
            "the tokenizer was loaded: planning the embedded default counted a text the seed does not "
            "hold (a built-in, the roster or a demo server changed?): run `python scripts/token_seed.py`"
        )

    monkeypatch.setattr(core.tokens, "_encoding", refuse)


def options(strategy: str | None, policy: str) -> ChatOptions:
    return ChatOptions(strategy=strategy, policy=PolicyConfig(name=policy))


def test_the_shipped_seed_is_current() -> None:
    script = seed_script()
    fresh = script.build_seed()  # every count made with the tokenizer
    text = script.SEED_PATH.read_text(encoding="utf-8")
    shipped = json.loads(text)["counts"]
    new, gone = fresh.keys() - shipped.keys(), shipped.keys() - fresh.keys()
    wrong = [k for k in fresh.keys() & shipped.keys() if fresh[k] != shipped[k]]
    if new or gone or wrong or text != script.render(fresh):
        pytest.fail(
            f"{script.SEED_PATH.relative_to(ROOT)} is stale ({len(new)} texts new, {len(gone)} gone, "
            f"{len(wrong)} counts wrong): run `{script.REGENERATE}` and commit it"
        )
    assert 50 < len(shipped) < 1000  # the embedded default's texts, and only those


def test_the_seed_holds_every_definition_of_the_production_roster() -> None:
    roster = load_roster("production")
    seed = shipped_seed()
    for spec in (*roster.configured, *roster.discovered):
        held = seed.get(content_key(definition_text(spec)))
        assert held == tokenized(definition_text(spec)), f"{spec.name}: run `python scripts/token_seed.py`"


@pytest.mark.parametrize(("strategy", "policy"), CHOICES)
def test_a_new_chats_preview_on_a_fresh_home_needs_no_tokenizer(
    home: Path, monkeypatch: pytest.MonkeyPatch, strategy: str | None, policy: str
) -> None:
    engine = Engine()
    with_tokenizer = engine.preview_plan(options(strategy, policy), TokenEstimator({}, seed={})).to_json()
    assert len(engine.store.token_cache) == 0
    no_tokenizer(monkeypatch)
    preview = TokenEstimator(ChainMap({}, engine.store.token_cache))  # as the TUI builds its preview's
    assert engine.preview_plan(options(strategy, policy), preview).to_json() == with_tokenizer
    assert engine.preview_plan(options(strategy, policy)).to_json() == with_tokenizer  # the engine's own
    assert preview.misses == engine.estimator.misses == 0 and preview.seeded > 0
    assert preview.cache == {} and len(engine.store.token_cache) == 0  # seed hits are not cached


async def open_plans(engine: Engine) -> dict[tuple[str | None, str], str]:
    plans: dict[tuple[str | None, str], str] = {}
    for strategy, policy in CHOICES:
        session = await engine.open_chat(None, options(strategy, policy))
        assert {s.status for s in session.server_status.values()} == {"ready"}  # listed live
        assert len(session.server_status) == 4
        plans[strategy, policy] = session.plan.to_json()
        await session.close()
    return plans


async def test_opening_chats_with_the_demo_servers_on_a_fresh_home_needs_no_tokenizer(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_tokenizer = await open_plans(Engine(estimator=TokenEstimator({}, seed={})))
    home = home.parent / "fresh"  # a fresh home again: no chat, an empty token cache
    home.mkdir()
    monkeypatch.setenv("DEFERCHAT_HOME", str(home))
    with monkeypatch.context() as patch:
        no_tokenizer(patch)
        engine = Engine()
        assert len(engine.store.token_cache) == 0
        assert await open_plans(engine) == with_tokenizer
    assert engine.estimator.misses == 0 and engine.estimator.seeded > 0
    assert len(open_token_cache(home / "deferchat.db")) == 0  # flushed at each open: nothing to write


def test_a_text_the_seed_does_not_hold_is_tokenized_as_before() -> None:
    text = "a sentence no plan of the embedded default counts"
    assert content_key(text) not in shipped_seed()
    est = TokenEstimator({})
    n = est.count(text)
    assert n == tokenized(text) == TokenEstimator({}, seed={}).count(text)
    assert (est.misses, est.seeded, est.hits) == (1, 0, 0) and est.cache == {content_key(text): n}
    assert est.count(text) == n and est.hits == 1  # and cached


def test_a_seed_hit_is_exact_and_never_stored_in_the_persistent_cache(tmp_path: Path) -> None:
    spec = load_roster("production").configured[0]
    text = definition_text(spec)
    assert content_key(text) in shipped_seed(), "the seed is stale: run `python scripts/token_seed.py`"
    cache = open_token_cache(tmp_path / "t.db")
    est = TokenEstimator(cache)
    assert est.definition(spec) == tokenized(text)
    assert (est.misses, est.seeded, est.hits) == (0, 1, 0)
    est.flush()
    assert len(cache) == 0 and len(open_token_cache(tmp_path / "t.db")) == 0
    cached = TokenEstimator({content_key(text): 7})  # the cache is asked first
    assert cached.definition(spec) == 7 and (cached.hits, cached.seeded) == (1, 0)


def test_the_seed_is_read_only_once_a_cache_misses() -> None:
    shipped_seed.cache_clear()
    try:
        est = TokenEstimator({content_key("x"): 1})
        est.count("x")
        assert shipped_seed.cache_info().currsize == 0  # every count from the cache: the file unread
        est.count("y")
        first = shipped_seed()
        assert TokenEstimator({}).seed is first and shipped_seed.cache_info().misses == 1
        with pytest.raises(TypeError):
            first["x"] = 1  # type: ignore[index]
    finally:
        shipped_seed.cache_clear()
