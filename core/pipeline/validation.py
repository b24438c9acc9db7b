"""Arguments against a tool's input schema (ADR-0123 decision 10), and what the model reads
when they do not match.

Validation is total: a schema that cannot validate never raises; it is then checked leniently.
It is bounded: a schema's regular expressions run through :mod:`core.pipeline.patterns` (the
``regex`` package, with a time budget for the whole validation; one that runs out is a problem
of the call, never a frozen process), arguments nested deeper than
:data:`core.limits.MAX_JSON_DEPTH` are refused before any schema sees them, and the pipeline
validates off the event loop (:func:`check_arguments`). :func:`schema_problem` is the same check
for any schema and value (an MCP tool's result against its ``outputSchema``).
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
    fetched (jsonschema's default would download a remote ``$ref``). Its keywords run their
    regular expressions bounded (:func:`core.pipeline.patterns.bounded_keywords`).
    """
    import warnings

    from jsonschema import validators
    from jsonschema_specifications import REGISTRY  # type: ignore[import-untyped]

    from core.pipeline.patterns import bounded_keywords

    try:
        schema = json.loads(schema_json)
        with warnings.catch_warnings():  # an unknown $schema dialect warns; the default draft is used
            warnings.simplefilter("ignore")
            cls = validators.validator_for(schema, default=validators.Draft202012Validator)
            cls.check_schema(schema)
            bounded = validators.extend(cls, bounded_keywords(cls))
            return bounded(schema, registry=REGISTRY)
    except Exception as exc:  # a broken schema from a server: only the object shape is checked
        log.info(
            "input schema not usable for validation (%s: %s); checking the object shape only",
            type(exc).__name__,
            str(exc)[:200],
        )
        return None


def schema_problem(schema: Any, instance: Any, *, what: str = "the schema") -> str | None:
    """The first problem of ``instance`` against ``schema``, or None. Total and bounded (see the
    module): a schema that gives out is lenient, a pattern that runs out of time is a problem."""
    from core.limits import MAX_JSON_DEPTH, is_too_deep
    from core.pipeline.patterns import PatternTimeout, deadline

    if is_too_deep(instance):
        return f"the value nests deeper than {MAX_JSON_DEPTH} levels, more than deferchat reads"
    try:
        validator = _validator(canonical_json(schema))
    except Exception:  # a schema that does not even serialise (too deep)
        return None
    if validator is None:
        return None
    from jsonschema.exceptions import best_match

    found: list[Any] = []
    try:
        with deadline():
            found.extend(validator.iter_errors(instance))
    except PatternTimeout as exc:
        return f"it could not be checked against {what}: {exc}"
    except Exception as exc:  # unresolvable $ref, recursion, a keyword jsonschema cannot apply
        log.info("%s gave out while validating (%s: %s)", what, type(exc).__name__, str(exc)[:200])
    try:
        error = best_match(found)
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        return f"{error.message} (at {where})"
    except Exception:
        return None


def validation_error(spec: ToolSpec, arguments: Any) -> str | None:
    """The first problem of ``arguments`` against the tool's input schema, or None.

    Total: a schema that cannot validate (an unresolvable or remote ``$ref``, a reference cycle,
    invalid keywords) never raises. Validation is then lenient: the object shape, and any problem
    found before the schema gave out, are all that is checked. Bounded: see the module.
    """
    if not isinstance(arguments, dict):
        return "arguments must be a JSON object"
    return schema_problem(spec.input_schema, arguments, what="its input schema")


async def check_arguments(spec: ToolSpec, arguments: Any) -> str | None:
    """:func:`validation_error` in a worker thread: the event loop (a provider's stream, other
    servers, the screen) goes on while a schema's patterns run, each bounded."""
    import asyncio

    return await asyncio.to_thread(validation_error, spec, arguments)


async def check_value(schema: Any, instance: Any, *, what: str) -> str | None:
    """:func:`schema_problem` in a worker thread (see :func:`check_arguments`)."""
    import asyncio

    return await asyncio.to_thread(schema_problem, schema, instance, what=what)


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
