"""Bulk imports pause the cyclic collector and freeze what they made (core.imports): collection is
off inside, back on after the outermost block however it ends, nested blocks and blocks in other
threads share one pause, and a collector the caller had turned off stays off. The entry point,
the adapters' SDK imports and the app's Textual import use it; none leaves collection off."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.imports import bulk_import
from tests.helpers import ROOT, subprocess_env


@pytest.fixture(autouse=True)
def collector() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    gc.unfreeze()
    if was:
        gc.enable()
    else:  # pragma: no cover
        gc.disable()


def test_collection_is_paused_inside_and_what_was_made_is_frozen_after() -> None:
    before = gc.get_freeze_count()
    with bulk_import():
        assert not gc.isenabled()
        made = [[i] for i in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + len(made)


def test_nested_blocks_share_the_outermost_pause() -> None:
    with bulk_import():
        with bulk_import():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block's end does not turn it back on
    assert gc.isenabled()


def test_an_exception_still_turns_collection_back_on() -> None:
    with pytest.raises(ImportError), bulk_import():
        raise ImportError("no such module")
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off() -> None:
    gc.disable()
    with bulk_import():
        pass
    assert not gc.isenabled()


def test_overlapping_blocks_in_two_threads_end_with_collection_on() -> None:
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with bulk_import():
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=other)
    with bulk_import():
        thread.start()
        assert inside.wait(5)
    assert not gc.isenabled()  # the other thread's block still runs
    release.set()
    thread.join(5)
    assert gc.isenabled()


def test_the_entry_point_leaves_collection_on(tmp_path: Path) -> None:
    code = (
        "import gc, json, sys\n"
        "from tui.main import build_parser, main\n"
        "code = main(['plan', '--json'])\n"
        "print(json.dumps({'enabled': gc.isenabled(), 'frozen': gc.get_freeze_count()}), file=sys.stderr)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env=subprocess_env(tmp_path),
    )
    seen = json.loads(out.stderr.strip().splitlines()[-1])
    assert seen["enabled"] is True and seen["frozen"] > 10_000
