"""Fixtures every test may use. The one isolated deferchat home lives here."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import DEVELOPER_ENV


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty deferchat home of the test's own (``tmp_path / "home"``, created).

    ``DEFERCHAT_HOME`` points at it, so the config, the database, the token cache and the demo's
    data all land there; ``TZ`` is UTC; and nothing of :data:`tests.helpers.DEVELOPER_ENV`
    (provider keys and endpoints) reaches the test from the developer's environment. A test
    that starts ``deferchat`` in a subprocess builds its environment with
    :func:`tests.helpers.subprocess_env`.
    """
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("DEFERCHAT_HOME", str(path))
    monkeypatch.setenv("TZ", "UTC")
    for var in DEVELOPER_ENV:
        monkeypatch.delenv(var, raising=False)
    return path
