"""Name and value rules match the whole text: no ``$`` that lets a final newline through.

Python's ``$`` matches at the end *and* just before a final ``"\\n"``, so ``re.match(r"^[a-z]+$",
"evil\\n")`` succeeds. Every validation pattern in the project is matched whole (``fullmatch``)
or anchored with ``\\Z``. The ast scan below finds any pattern handed to ``re``/``regex`` that
ends in an unescaped ``$`` so the class cannot come back; the properties feed every rule names
with line ends, Unicode line separators and NUL around them.
"""

from __future__ import annotations

import ast
import datetime as dt
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.builtins.shared import ToolError, check_email, parse_date
from core.mcp.convert import listed_tool_problem
from core.mcp.entries import McpConfigError, parse_config_document
from core.providers.anthropic import wire_id
from core.providers.profiles.base import dated_base
from core.providers.wirenames import is_legal
from core.roster.loader import RosterError, parse_roster

ROOT = Path(__file__).resolve().parents[2]
RE_MODULES = {"re", "regex"}
RE_FUNCTIONS = {"compile", "match", "search", "fullmatch", "sub", "subn", "split", "findall", "finditer"}

# What slips past a ``$``-anchored rule, or is otherwise not part of a name.
ENDINGS = ["\n", "\r", "\r\n", "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x00", " ", "\t"]
NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", min_size=1, max_size=40)


def _ends_with_dollar(pattern: str) -> bool:
    if not pattern.endswith("$"):
        return False
    backslashes = len(pattern[:-1]) - len(pattern[:-1].rstrip("\\"))
    return backslashes % 2 == 0  # an escaped \$ is a literal dollar sign


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "literal"`` assignments (a pattern may be named before it is compiled)."""
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node.value.value
    return out


def _pattern_text(node: ast.AST, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
        value = node.value
        return value if isinstance(value, str) else value.decode("latin-1")
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.JoinedStr) and node.values:  # an f-string: its end is what matters
        return _pattern_text(node.values[-1], constants)
    return None


def dollar_anchored_patterns() -> list[str]:
    found: list[str] = []
    for path in sorted([*(ROOT / "core").rglob("*.py"), *(ROOT / "tui").rglob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        constants = _constants(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            owner = node.func.value
            if not (isinstance(owner, ast.Name) and owner.id in RE_MODULES and node.func.attr in RE_FUNCTIONS):
                continue
            arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "pattern"), None)
            text = None if arg is None else _pattern_text(arg, constants)
            if text is not None and _ends_with_dollar(text):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {text!r}")
    return found


def test_no_validation_pattern_in_the_project_is_anchored_with_a_dollar():
    assert dollar_anchored_patterns() == [], "use fullmatch or \\Z (a $ lets a final newline through)"


def test_the_scan_finds_what_it_looks_for(tmp_path, monkeypatch):
    """The scan itself can fail: a module holding the old spelling is reported."""
    fake = tmp_path / "core"
    fake.mkdir()
    (fake / "bad.py").write_text(
        'import re\nNAME = r"^[a-z]+$"\nA = re.compile(NAME)\nB = re.match(r"^x$", "x")\nC = re.compile(r"a\\$")\n'
    )
    (tmp_path / "tui").mkdir()
    monkeypatch.setattr(__import__(__name__, fromlist=["ROOT"]), "ROOT", tmp_path)
    found = dollar_anchored_patterns()
    assert len(found) == 2 and all("bad.py" in f for f in found)


def _config(name: str) -> dict:
    return {"mcpServers": {name: {"command": "true"}}}


def test_a_server_key_with_a_final_newline_is_refused():
    with pytest.raises(McpConfigError):
        parse_config_document(_config("evil\n"), source="mcp.json")
    parse_config_document(_config("evil"), source="mcp.json")


@settings(max_examples=80, deadline=None)
@given(
    name=NAME.filter(lambda n: len(n) <= 60), ending=st.sampled_from(ENDINGS), where=st.sampled_from(["end", "start"])
)
def test_every_name_rule_refuses_a_name_with_a_line_end_or_nul(name, ending, where):
    bad = name + ending if where == "end" else ending + name
    # mcpServers keys
    with pytest.raises(McpConfigError):
        parse_config_document(_config(bad), source="mcp.json")
    # a roster's server names
    with pytest.raises(RosterError):
        parse_roster({"agent": {"name": "a", "version": "1"}, "servers": [{"name": bad, "tools": []}]})
    # MCP tool names as listed
    assert listed_tool_problem({"name": bad, "inputSchema": {"type": "object"}}) is not None
    # provider wire names and Anthropic call ids
    assert not is_legal(bad)
    assert wire_id(bad) != bad
    # the same names without the ending pass every rule
    parse_config_document(_config(name), source="mcp.json")
    assert listed_tool_problem({"name": name, "inputSchema": {"type": "object"}}) is None
    assert is_legal(name)
    assert wire_id(name) == name


@settings(max_examples=60, deadline=None)
@given(day=st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2999, 12, 31)), ending=st.sampled_from(ENDINGS))
def test_value_rules_match_the_whole_value(day, ending):
    text = day.isoformat()
    assert parse_date(text, "date") == day
    # parse_date strips surrounding whitespace on purpose; what it matches must still be whole
    if ending.strip():
        with pytest.raises(ToolError):
            parse_date(text + ending, "date")
    with pytest.raises(ToolError):
        parse_date(text + ending + "x", "date")
    assert check_email("ann@example.com") == "ann@example.com"
    for address in ("ann@example.com" + ending + "x", "ann" + ending + "x@example.com"):
        with pytest.raises(ToolError):
            check_email(address)
    assert dated_base("claude-sonnet-4-5-20250929" + ending) == "claude-sonnet-4-5-20250929" + ending
