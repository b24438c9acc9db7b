"""Built-in input schemas: generated from each tool's argument model, valid JSON Schema, exactly what
the plan carries (and what the roster spelled out before it stopped repeating them), the one source
the roster loader fills configured tools from, and cheap to load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Annotated, Literal

import jsonschema
import pytest
from pydantic import Field, StringConstraints

from core.builtins import builtin_names, builtin_tool
from core.builtins.schema import KEY_ORDER, input_schema
from core.builtins.shared import Args
from core.roster.loader import load_roster, parse_roster
from core.roster.models import WEBSITE_PROFILE_TOOLS, PlanInput
from core.roster.planner import plan_roster
from core.tokens import TokenEstimator

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "plan_production.json"
PRODUCTION_FILE = json.loads((resources.files("core.roster") / "rosters" / "production.json").read_text("utf-8"))
NAMES = builtin_names()
# The browser built-ins join only the chats of a website profile (ADR-0130), not the production roster.
ROSTER_NAMES = [n for n in NAMES if n not in WEBSITE_PROFILE_TOOLS]


def _tool(name: str):
    tool = builtin_tool(name)
    assert tool is not None, name
    return tool


# --- the production roster and its built-ins ---------------------------------------------------------


def test_every_configured_tool_in_the_production_roster_has_an_implementation():
    configured = [t["name"] for t in PRODUCTION_FILE["configured"]]
    assert len(configured) == len(set(configured)) == 27
    missing = [name for name in configured if builtin_tool(name) is None]
    assert missing == []
    assert sorted(configured) == ROSTER_NAMES  # and no built-in is left out of the roster


def test_the_production_roster_does_not_repeat_what_the_built_ins_say():
    for entry in PRODUCTION_FILE["configured"]:
        assert set(entry) == {"name", "side_effect"}, entry["name"]


@pytest.mark.parametrize("name", NAMES)
def test_generated_schema_is_valid_json_schema(name):
    schema = _tool(name).input_schema
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    model = _tool(name).args
    assert list(schema["properties"]) == list(model.model_fields)
    assert schema["required"] == [f for f, info in model.model_fields.items() if info.is_required()]
    for field, prop in schema["properties"].items():
        assert prop.get("description"), f"{name}.{field} has no description"


@pytest.fixture(scope="module")
def plan_tools() -> dict[str, dict]:
    """The production plan's tools, as ``deferchat plan --json`` prints them."""
    roster = load_roster("production")
    plan = plan_roster(
        PlanInput(agent=roster.agent, configured=roster.configured, discovered=roster.discovered), TokenEstimator()
    )
    return {t["name"]: t for t in json.loads(plan.to_json())["tools"]}


GOLDEN_TOOLS = {t["name"]: t for t in json.loads(GOLDEN.read_text("utf-8"))["tools"]}


@pytest.mark.parametrize("name", ROSTER_NAMES)
def test_the_plan_carries_the_generated_schema_and_description(plan_tools, name):
    tool = _tool(name)
    carried = plan_tools[name]
    assert carried["origin"] == "configured"
    # Key order is visible in the plan's JSON and in what providers receive: compare the text.
    assert json.dumps(carried["input_schema"]) == json.dumps(tool.input_schema)
    assert carried["description"] == tool.description


@pytest.mark.parametrize("name", ROSTER_NAMES)
def test_the_generated_schema_is_what_the_roster_spelled_out_before(name):
    # The golden plan was taken while production.json still wrote every schema out by hand.
    stored = GOLDEN_TOOLS[name]
    assert json.dumps(_tool(name).input_schema) == json.dumps(stored["input_schema"])
    assert _tool(name).description == stored["description"]


def test_input_schema_is_a_fresh_copy():
    first = _tool("schedule.create").input_schema
    first["properties"]["days"]["items"]["enum"].append("someday")
    first["required"].clear()
    again = _tool("schedule.create").input_schema
    assert "someday" not in again["properties"]["days"]["items"]["enum"]
    assert again["required"] == ["title", "time"]


def test_schedule_weekdays_follow_the_tables():
    from core.builtins.data import WEEKDAYS as STORED
    from core.builtins.schedule import WEEKDAYS

    assert WEEKDAYS == STORED


# --- the house style of the generator ------------------------------------------------------------------


class _Sample(Args):
    name: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=50)] = Field(
        description="A name."
    )
    count: int = Field(3, ge=1, le=9, description="How many.")
    mode: Literal["fast", "slow"] = Field("fast", description="Which way.")
    tags: list[Literal["a", "b"]] | None = Field(None, description="Tags.")
    note: str | None = Field(None, description="A note.")
    at: Annotated[str, Field(pattern=r"^\d\d$")] | None = Field(None, description="Two digits.")
    force: bool = Field(False, description="Force it.")
    keep: bool = Field(True, description="Keep it.")


def test_the_generator_writes_plain_tool_schemas():
    schema = input_schema(_Sample)
    assert json.dumps(schema) == json.dumps(
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "A name."},
                "count": {"type": "integer", "description": "How many.", "minimum": 1, "maximum": 9, "default": 3},
                "mode": {"type": "string", "description": "Which way.", "enum": ["fast", "slow"], "default": "fast"},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "description": "Tags."},
                "note": {"type": "string", "description": "A note."},
                "at": {"type": "string", "description": "Two digits.", "pattern": "^\\d\\d$"},
                "force": {"type": "boolean", "description": "Force it."},
                "keep": {"type": "boolean", "description": "Keep it.", "default": True},
            },
            "required": ["name"],
            "additionalProperties": False,
        }
    )
    jsonschema.Draft202012Validator.check_schema(schema)


def test_every_key_of_every_built_in_schema_has_a_place_in_the_order():
    def keys(value, parent=None):
        if isinstance(value, dict):
            for key, inner in value.items():
                if parent != "properties":
                    yield key
                yield from keys(inner, key)

    used = {k for name in NAMES for k in keys(_tool(name).input_schema)}
    assert used <= set(KEY_ORDER)


# --- the roster loader takes from the built-in what an entry leaves out --------------------------------

_OWN_SCHEMA = {"type": "object", "properties": {"zone": {"type": "string"}}}


def _configured(*entries: dict) -> dict:
    return {t.name: t for t in parse_roster({"configured": list(entries)}, "test").configured}


def test_a_user_roster_naming_a_built_in_gets_its_description_and_schema():
    tool = _configured({"name": "time.now", "side_effect": "NONE"})["time.now"]
    assert tool.input_schema == _tool("time.now").input_schema
    assert tool.description == _tool("time.now").description


def test_what_a_user_roster_gives_wins():
    tools = _configured(
        {"name": "time.now", "description": "Mine.", "input_schema": _OWN_SCHEMA},
        {"name": "tasks.list", "description": "Only the description is mine."},
        {"name": "notes.search", "input_schema": _OWN_SCHEMA},
        {"name": "memory.save", "description": ""},
    )
    assert (tools["time.now"].description, tools["time.now"].input_schema) == ("Mine.", _OWN_SCHEMA)
    assert tools["tasks.list"].description == "Only the description is mine."
    assert tools["tasks.list"].input_schema == _tool("tasks.list").input_schema
    assert tools["notes.search"].description == _tool("notes.search").description
    assert tools["notes.search"].input_schema == _OWN_SCHEMA
    assert tools["memory.save"].description == ""


def test_a_configured_tool_that_is_no_built_in_takes_any_object():
    tool = _configured({"name": "my.tool"})["my.tool"]
    assert (tool.description, tool.input_schema) == ("", {"type": "object", "properties": {}})


# --- start-up cost ---------------------------------------------------------------------------------


def _fresh_python(code: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_roster_loader_imports_the_built_ins_only_when_a_roster_needs_them():
    seen = _fresh_python(
        "import json, sys\n"
        "from core.roster.loader import parse_roster\n"
        "parse_roster({'configured': [{'name': 'time.now', 'description': 'd', 'input_schema': {}}]})\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('core.builtins.'))))\n"
    )
    assert "core.builtins.clock" not in seen


def test_loading_the_production_roster_imports_no_heavy_modules():
    new = _fresh_python(
        "import json, sys\n"
        "import core.roster.loader\n"
        "before = set(sys.modules)\n"
        "core.roster.loader.load_roster('production')\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    # the built-ins' descriptions and schemas come from the shipped catalog (core.builtins.catalog);
    # their modules are imported when one is called
    assert "core.builtins.catalog" in new
    assert not [m for m in new if m.startswith("core.builtins.") and m != "core.builtins.catalog"]
    heavy = [m for m in new if m.split(".")[0] in {"httpx", "httpcore", "asyncio", "sqlite_utils", "sqlite3"}]
    assert heavy == []
