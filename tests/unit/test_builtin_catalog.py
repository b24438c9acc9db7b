"""The shipped built-in catalog (core/builtins/catalog.json): it is current (regenerated, it
equals the shipped file, byte for byte); a roster reads every built-in's description and schema
from it without importing one built-in module, and gets what the built-ins themselves generate;
and a catalog that does not match the code (a built-in changed, the catalog not regenerated) is
never read: the built-ins are imported and generate their own, as they did before."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

import core.builtins.catalog as catalog
from core.builtins import builtin_names, builtin_tool
from core.roster.loader import load_roster
from tests.helpers import script_module, subprocess_env

# the built-in domains: one module each, imported only when one of its tools is looked up
DOMAINS = ("browser", "calendar_events", "clock", "mail", "memory", "notes", "notify", "people", "schedule")


def test_the_shipped_catalog_is_current() -> None:
    fresh = catalog.rendered(catalog.generated())
    assert catalog.CATALOG.read_text(encoding="utf-8") == fresh, (
        "core/builtins/catalog.json is stale (a built-in's description or schema changed, or pydantic's "
        "version): run `python scripts/builtin_catalog.py`"
    )
    assert script_module("builtin_catalog").CATALOG == catalog.CATALOG  # the script writes the file the roster reads


def test_every_builtin_is_in_it_as_it_generates_itself() -> None:
    shipped = json.loads(catalog.CATALOG.read_text(encoding="utf-8"))["tools"]
    assert sorted(shipped) == builtin_names()
    for name in builtin_names():
        tool = builtin_tool(name)
        assert tool is not None
        assert catalog.described(name) == (tool.description, tool.input_schema)
    assert catalog.described("no.such.builtin") is None


def test_described_hands_out_copies() -> None:
    name = builtin_names()[0]
    first = catalog.described(name)
    assert first is not None
    first[1]["properties"]["mutated"] = {"type": "string"}
    again = catalog.described(name)
    assert again is not None and "mutated" not in again[1]["properties"]


def test_the_roster_lists_builtins_without_importing_one(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import json, sys
        from core.roster.loader import load_roster
        roster = load_roster("production")
        domains = sorted(m for m in sys.modules if m.startswith("core.builtins.") and m.split(".")[2] in DOMAINS)
        print(json.dumps({"domains": domains, "configured": [s.name for s in roster.configured]}))
        """
    ).replace("DOMAINS", repr(DOMAINS))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(tmp_path), timeout=60
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["configured"], "the production roster lists configured tools"
    assert seen["domains"] == [], f"listing the roster imported built-in modules: {seen['domains']}"


def test_the_roster_gets_what_the_builtins_generate() -> None:
    roster = load_roster("production")
    for spec in roster.configured:
        tool = builtin_tool(spec.name)
        if tool is None:
            continue
        assert spec.input_schema == tool.input_schema, spec.name


def _stale(shipped: str) -> bytes:
    stale = json.loads(shipped)
    name = next(iter(stale["tools"]))
    stale["tools"][name]["description"] = "a description the code no longer has"
    stale["key"] = "0" * 64  # made from other sources
    return json.dumps(stale).encode()


@pytest.mark.parametrize(
    "content", [_stale, lambda _: b"\xff{not json", lambda _: b"[]"], ids=["stale", "unreadable", "not-a-catalog"]
)
def test_a_catalog_that_does_not_match_is_never_read(
    content: Callable[[str], bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "catalog.json"
    path.write_bytes(content(catalog.CATALOG.read_text(encoding="utf-8")))
    monkeypatch.setattr(catalog, "CATALOG", path)
    catalog._shipped.cache_clear()
    try:
        for name in builtin_names():
            tool = builtin_tool(name)
            assert tool is not None
            assert catalog.described(name) == (tool.description, tool.input_schema)
    finally:
        catalog._shipped.cache_clear()


def test_the_key_moves_with_any_source_of_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "builtins"
    copy.mkdir()
    for source in catalog.HERE.glob("*.py"):
        (copy / source.name).write_bytes(source.read_bytes())
    monkeypatch.setattr(catalog, "HERE", copy)
    before = catalog.source_key()
    assert before == catalog.source_key()  # stable
    shared = copy / "shared.py"
    shared.write_bytes(shared.read_bytes() + b"\n# a change\n")
    assert catalog.source_key() != before
