"""The demo prompt sets' fixtures: one demo home and one chat per module (tests/demo/harness.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from core.engine import ChatOptions, Engine
from core.pipeline.approvals import Decision, FixedApprover
from core.store import Store
from tests.demo.harness import NOW
from tests.helpers import DEVELOPER_ENV


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The shared ``home`` fixture, for the whole module: one chat serves every case."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DEFERCHAT_HOME", str(home))
        mp.setenv("TZ", "UTC")
        mp.setenv("DEFERCHAT_DEMO_NOW", NOW)  # one Wednesday morning, whatever the machine's clock says
        for var in DEVELOPER_ENV:
            mp.delenv(var, raising=False)
        yield home


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def chat(demo_home: Path) -> Any:
    events: list[Any] = []
    engine = Engine(Store(demo_home / "deferchat.db"))
    session = await engine.open_chat(
        None,
        ChatOptions(roster="production", provider="demo", start_demo_servers=True),
        approver=FixedApprover(Decision.ALLOW_ONCE),
        subscribers=[events.append],
    )
    assert {s.server: s.status for s in session.server_status.values()} == dict.fromkeys(
        ("bland_call", "bland_read", "gmail_personal", "gmail_work"), "ready"
    )
    yield session, events
    await session.close()
