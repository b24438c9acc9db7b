"""The token cache is kept between runs: a second ``deferchat search`` (and a second chat opened
on the same home) counts every token from the store and never loads the tokenizer. Both run on a
roster the shipped token seed does not hold: on the production roster the seed spares the
tokenizer even on a fresh home (tests/unit/test_token_seed.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from core.store import open_token_cache
from core.tokens import TokenEstimator, content_key
from tests.helpers import ROOT, subprocess_env

REPORT = (
    "import sys; from tui.main import main; rc = main(sys.argv[1:]);"
    "sys.stderr.write('\\ntiktoken loaded: %s' % ('tiktoken' in sys.modules)); sys.exit(rc)"
)

OPEN = """
import asyncio, sys
from core.engine import ChatOptions, Engine
async def main():
    engine = Engine()
    session = await engine.open_chat(None, ChatOptions(roster=sys.argv[1], start_demo_servers=False))
    await session.close()
    print(engine.estimator.misses, engine.estimator.hits, 'tiktoken' in sys.modules)
asyncio.run(main())
"""


def python(home: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -c code args`` on ``home``, a process of its own as each run of deferchat is."""
    run = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=subprocess_env(home),
        cwd=ROOT,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    return run


def unseeded_roster(home: Path) -> Path:
    """The production roster with its server tools' descriptions changed: texts the shipped token
    seed does not hold, so only the store's cache can spare the tokenizer."""
    roster = json.loads((ROOT / "core" / "roster" / "rosters" / "production.json").read_text())
    for server in roster["servers"]:
        for tool in server["tools"]:
            tool["description"] = "Changed: " + tool["description"]
    path = home.parent / "unseeded.json"
    path.write_text(json.dumps(roster))
    return path


def search(home: Path, *args: str) -> tuple[dict, bool]:
    run = python(home, REPORT, "search", "send an email", "--json", "--roster", str(unseeded_roster(home)), *args)
    loaded = run.stderr.rsplit("tiktoken loaded: ", 1)[1].strip()
    return json.loads(run.stdout), loaded == "True"


def test_a_second_search_counts_from_the_cache_and_loads_no_tokenizer(home: Path) -> None:
    first, loaded_first = search(home)
    assert loaded_first  # a fresh home: every count is new
    assert len(open_token_cache(home / "deferchat.db")) > 0  # and kept
    second, loaded_second = search(home)
    assert not loaded_second
    assert second == first and second["hits"]
    everything, loaded = search(home, "--all")  # the defined tools were counted too: still none
    assert not loaded and everything["scope"].endswith(f"pinned tools of roster {unseeded_roster(home)}")


def test_a_second_chat_opened_on_the_same_home_loads_no_tokenizer(home: Path) -> None:
    roster = str(unseeded_roster(home))
    misses, _, loaded = python(home, OPEN, roster).stdout.split()
    assert int(misses) > 0 and loaded == "True"
    misses, hits, loaded = python(home, OPEN, roster).stdout.split()  # the plan's and system prompt's counts kept
    assert (misses, loaded) == ("0", "False") and int(hits) > 0


def test_flush_writes_a_persistent_cache_and_leaves_a_plain_one(tmp_path: Path) -> None:
    cache = open_token_cache(tmp_path / "t.db")
    est = TokenEstimator(cache)
    n = est.count("hello there")
    assert len(open_token_cache(tmp_path / "t.db")) == 0  # counted, not yet written
    est.flush()
    assert open_token_cache(tmp_path / "t.db")[content_key("hello there")] == n
    plain: dict[str, int] = {}
    TokenEstimator(plain).flush()  # nothing to write to: a no-op
    assert plain == {}
