"""`deferchat plan --roster production --json` is byte-stable: the same bytes as the stored
golden file, from the real binary in a fresh home (no token cache) and again warm."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import subprocess_env

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "plan_production.json"
ROOT = Path(__file__).resolve().parents[2]


def _plan(home: Path) -> bytes:
    proc = subprocess.run(
        [sys.executable, "-m", "tui.main", "plan", "--roster", "production", "--json"],
        env=subprocess_env(home),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout


def test_plan_production_json_is_byte_identical_to_the_golden_file(tmp_path):
    golden = GOLDEN.read_bytes()
    cold = _plan(tmp_path / "home")
    assert cold == golden
    warm = _plan(tmp_path / "home")  # the token cache is now filled: the same bytes
    assert warm == golden
