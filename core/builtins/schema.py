"""A built-in's input schema, generated from its argument model.

Pydantic writes the JSON Schema; :class:`ToolSchema` only sets the house style a model reads
tool schemas in:

* no titles (the property names say it);
* an optional argument (``X | None = None``) is shown as ``X``: leaving it out is how a caller
  says "none";
* a default is shown when it tells the caller something (``10``, ``"active"``); ``None`` and
  ``False`` mean "not given" and are not shown;
* string length limits stay validation limits and are not shown (the description says what
  to write); patterns, enums and number ranges are shown;
* ``required`` is always present, ``additionalProperties`` is ``false`` (extra arguments are
  refused);
* keys in one fixed order: ``type``, ``properties``, ``required``, ``additionalProperties``,
  ``items``, ``description``, ``enum``, ``pattern``, ``minimum``, ``maximum``, ``default``
  (properties keep the order of the model's fields).
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

KEY_ORDER = (
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "description",
    "enum",
    "pattern",
    "minimum",
    "maximum",
    "default",
)
_RANK = {key: rank for rank, key in enumerate(KEY_ORDER)}
_UNSHOWN_DEFAULTS = (None, False)


class ToolSchema(GenerateJsonSchema):
    """Pydantic's JSON Schema in the style tool schemas are offered in (see the module doc)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        if "default" in schema and any(schema["default"] is unshown for unshown in _UNSHOWN_DEFAULTS):
            return self.generate_inner(schema["schema"])
        return super().default_schema(schema)

    def str_schema(self, schema: core_schema.StringSchema) -> JsonSchemaValue:
        shown = super().str_schema(schema)
        shown.pop("minLength", None)
        shown.pop("maxLength", None)
        return shown

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        generated = super().model_schema(schema)
        return {
            "type": "object",
            "properties": generated.get("properties", {}),
            "required": generated.get("required", []),
            "additionalProperties": generated.get("additionalProperties", True),
        }

    def sort(self, value: JsonSchemaValue, parent_key: str | None = None) -> JsonSchemaValue:
        return _ordered(value, parent_key)


def _ordered(value: Any, parent_key: str | None = None) -> Any:
    if isinstance(value, list):
        return [_ordered(item, parent_key) for item in value]
    if not isinstance(value, dict) or parent_key == "default":
        return value
    keys = list(value)
    if parent_key != "properties":  # property names keep the order of the fields
        keys.sort(key=lambda k: _RANK.get(k, len(_RANK)))
    return {k: _ordered(value[k], k) for k in keys}


@cache
def _generated(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema(schema_generator=ToolSchema)


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The input schema for arguments parsed with ``model`` (a fresh copy: callers may keep it)."""
    return copy.deepcopy(_generated(model))
