"""Arguments against a tool's input schema (ADR-0123 decision 10), and what the model reads
when they do not match.

Validation is total: a schema that cannot validate never raises; it is then checked leniently.
"""

from __future__ import annotations

import json
import logging
from functools import lru_cache
from typing import Any

from core.context import envelope
from core.pipeline import codes
from core.tools import ToolSpec, canonical_json

log = logging.getLogger("deferchat.pipeline")


@lru_cache(maxsize=512)
def _validator(schema_json: str) -> Any:
    """A validator for one input schema, or None when the schema cannot be used to validate.

    References resolve only within the schema and the JSON Schema metaschemas: nothing is ever
    fetched (jsonschema's default would download a remote ``$ref``).
    """
    import warnings

    from jsonschema import validators
    from jsonschema_specifications import REGISTRY  # type: ignore[import-untyped]

    try:
        schema = json.loads(schema_json)
        with warnings.catch_warnings():  # an unknown $schema dialect warns; the default draft is used
            warnings.simplefilter("ignore")
            cls = validators.validator_for(schema, default=validators.Draft202012Validator)
            cls.check_schema(schema)
            return cls(schema, registry=REGISTRY)
    except Exception as exc:  # a broken schema from a server: only the object shape is checked
        log.info(
            "input schema not usable for validation (%s: %s); checking the object shape only",
            type(exc).__name__,
            str(exc)[:200],
        )
        return None


def validation_error(spec: ToolSpec, arguments: Any) -> str | None:
    """The first problem of ``arguments`` against the tool's input schema, or None.

    Total: a schema that cannot validate (an unresolvable or remote ``$ref``, a reference cycle,
    invalid keywords) never raises. Validation is then lenient: the object shape, and any problem
    found before the schema gave out, are all that is checked.
    """
    if not isinstance(arguments, dict):
        return "arguments must be a JSON object"
    try:
        validator = _validator(canonical_json(spec.input_schema))
    except Exception:  # a schema that does not even serialise (too deep)
        return None
    if validator is None:
        return None
    from jsonschema.exceptions import best_match

    found: list[Any] = []
    try:
        found.extend(validator.iter_errors(arguments))
    except Exception as exc:  # unresolvable $ref, recursion, a keyword jsonschema cannot apply
        log.info("input schema of %s gave out while validating (%s: %s)", spec.name, type(exc).__name__, str(exc)[:200])
    try:
        error = best_match(found)
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        return f"{error.message} (at {where})"
    except Exception:
        return None


def schema_for_model(spec: ToolSpec) -> str:
    """The input schema returned with an invalid call (decision 10): untrusted data stays enveloped."""
    return envelope.fence(json.dumps(spec.input_schema, indent=1, ensure_ascii=False), spec.envelope_source)


def invalid_arguments_text(spec: ToolSpec, name: str, problem: str) -> str:
    """What the model reads for arguments that do not match (decision 10): the problem and the
    schema. The problem quotes the schema (its ``enum``, ``const``), so for an untrusted tool both
    travel in the tool's one envelope."""
    head = f"{codes.ARGUMENTS_INVALID}: arguments for {name} do not match its input schema"
    schema = json.dumps(spec.input_schema, indent=1, ensure_ascii=False)
    if spec.envelope_source is None:
        return f"{head}: {problem}\nIts input schema:\n{schema}"
    return f"{head}:\n" + envelope.fence(f"{problem}\nIts input schema:\n{schema}", spec.envelope_source)
