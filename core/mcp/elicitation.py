"""Elicitation: an MCP server asks the person for input in the middle of a call.

The server sends ``elicitation/create``: a message and either a form (a flat JSON schema of
simple fields) or, in URL mode, an address for the person to open. deferchat turns it into an
:class:`ElicitationRequest` and hands it to the session's :class:`Elicitor` (the app's form, the
CLI's terminal questions); the person answers (``accept`` with the values), declines, or
cancels. Nothing a server asks ever reaches the model, and the model fills nothing in.

* The request is untrusted text from the server: presentations name the server as its author and
  show every string through :func:`core.display.safe`. Titles, descriptions and the message are
  clipped here (:data:`MAX_TEXT`) so no form can bury the buttons.
* The schema is read defensively (:func:`parse_form`): an object of at most :data:`MAX_FIELDS`
  properties, each a string (optionally with a format, length bounds or an enum), a number, an
  integer, a boolean, or an array of enum strings (a multiple choice). Anything else (nesting,
  ``$ref``, a property that is not a schema, an enum of thousands) is refused as a whole with the
  reason, and the server gets an error instead of a half-built form.
* An answer is checked (:func:`check_answer`) against a schema rebuilt from the parsed fields,
  never against the server's own document, so nothing the server wrote is evaluated.
* No answer within the timeout is ``cancel``.
"""

from __future__ import annotations

import itertools
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from core.questions import AnswerQueue

MAX_FIELDS = 20
MAX_OPTIONS = 100
MAX_TEXT = 2_000  # characters of a message, title or description kept for display
MAX_NAME = 64
ELICITATION_TIMEOUT = 300.0  # seconds the person has to answer; then the answer is "cancel"

Kind = Literal["string", "number", "integer", "boolean", "choice", "choices"]
Action = Literal["accept", "decline", "cancel"]
FORMATS = ("email", "uri", "date", "date-time")

_ids = itertools.count(1)


class UnusableForm(ValueError):
    """The server's requested schema is not a form deferchat can show."""


class Option(BaseModel):
    value: str
    label: str


class ElicitField(BaseModel):
    """One field of a form, as parsed (its texts clipped; show them through ``safe``)."""

    name: str
    kind: Kind
    title: str = ""
    description: str = ""
    required: bool = False
    default: Any = None
    options: list[Option] = Field(default_factory=list, description="choice and choices")
    format: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_items: int | None = None
    max_items: int | None = None

    @property
    def label(self) -> str:
        return self.title or self.name

    def json_schema(self) -> dict[str, Any]:
        """This field's JSON schema, rebuilt from what was parsed."""
        if self.kind == "choice":
            return {"type": "string", "enum": [o.value for o in self.options]}
        if self.kind == "choices":
            items = {"type": "string", "enum": [o.value for o in self.options]}
            out: dict[str, Any] = {"type": "array", "items": items}
            if self.min_items is not None:
                out["minItems"] = self.min_items
            if self.max_items is not None:
                out["maxItems"] = self.max_items
            return out
        out = {"type": self.kind}
        for key, value in (
            ("minLength", self.min_length),
            ("maxLength", self.max_length),
            ("minimum", self.minimum),
            ("maximum", self.maximum),
            ("format", self.format),
        ):
            if value is not None:
                out[key] = value
        return out


class ElicitationRequest(BaseModel):
    """What a server asks. ``message``, titles and descriptions are the server's words (untrusted)."""

    id: str
    server: str
    mode: Literal["form", "url"] = "form"
    message: str = ""
    fields: list[ElicitField] = Field(default_factory=list)
    url: str | None = Field(default=None, description="URL mode: the address the person is asked to open")

    def summary(self) -> list[dict[str, Any]]:
        """The fields for an event: names, titles, kinds, whether required (no values)."""
        return [{"name": f.name, "title": f.title, "kind": f.kind, "required": f.required} for f in self.fields]


class ElicitationAnswer(BaseModel):
    action: Action
    content: dict[str, Any] | None = None
    reason: str = Field("", description="why it was answered so without the person (timeout, no terminal)")


@runtime_checkable
class Elicitor(Protocol):
    """Who answers a server's request for input: a person, through a presentation."""

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer: ...


class DecliningElicitor:
    """Nobody can answer (``ask`` without a terminal): every request is declined, saying why."""

    def __init__(self, reason: str = "nobody is at a terminal to answer"):
        self.reason = reason
        self.asked: list[ElicitationRequest] = []

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        self.asked.append(request)
        return ElicitationAnswer(action="decline", reason=self.reason)


class QueueElicitor(AnswerQueue[ElicitationRequest, ElicitationAnswer]):
    """Hands each request to whoever awaits :meth:`next_request` and waits for :meth:`answer` (the
    app's form, and tests), as :class:`core.pipeline.approvals.QueueApprover` does for approvals."""

    def __init__(self) -> None:
        super().__init__(lambda r: r.id)

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        return await self.ask(request)


def _text(value: Any) -> str:
    if not isinstance(value, str):
        return ""
    return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + "..."


def _int(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UnusableForm(f"{what} is not a count")
    return value


def _number(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise UnusableForm(f"{what} is not a number")
    return float(value)


def _options(values: Any, names: Any, where: str) -> list[Option]:
    if not isinstance(values, list) or not values:
        raise UnusableForm(f"{where}: its choices are not a list")
    if len(values) > MAX_OPTIONS:
        raise UnusableForm(f"{where}: {len(values)} choices (at most {MAX_OPTIONS})")
    if not all(isinstance(v, str) for v in values) or len(set(values)) != len(values):
        raise UnusableForm(f"{where}: its choices are not distinct strings")
    labels = names if isinstance(names, list) and len(names) == len(values) else values
    return [
        Option(value=v, label=_text(lab) if isinstance(lab, str) else v) for v, lab in zip(values, labels, strict=True)
    ]


def _titled_options(items: Any, where: str) -> list[Option] | None:
    """``oneOf``/``anyOf`` of ``{"const", "title"}``: choices with labels (the spec's titled enum)."""
    if not isinstance(items, list):
        return None
    values, labels = [], []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("const"), str):
            raise UnusableForm(f"{where}: a choice is not a titled constant")
        values.append(item["const"])
        labels.append(item.get("title") if isinstance(item.get("title"), str) else item["const"])
    return _options(values, labels, where)


def _field(name: str, prop: Any, required: bool) -> ElicitField:
    where = f"field {name[:MAX_NAME]!r}"
    if not isinstance(prop, dict):
        raise UnusableForm(f"{where} is not a schema")
    if "$ref" in prop:
        raise UnusableForm(f"{where} refers elsewhere ($ref); a form is flat")
    kind = prop.get("type")
    common: dict[str, Any] = {
        "name": name,
        "title": _text(prop.get("title")),
        "description": _text(prop.get("description")),
        "required": required,
    }
    default = prop.get("default")
    if kind == "string" and ("enum" in prop or "oneOf" in prop or "anyOf" in prop):
        options = (
            _options(prop["enum"], prop.get("enumNames"), where)
            if "enum" in prop
            else _titled_options(prop.get("oneOf", prop.get("anyOf")), where) or []
        )
        keep = default if isinstance(default, str) and default in {o.value for o in options} else None
        return ElicitField(kind="choice", options=options, default=keep, **common)
    if kind == "string":
        fmt = prop.get("format")
        return ElicitField(
            kind="string",
            format=fmt if fmt in FORMATS else None,
            min_length=_int(prop.get("minLength"), f"{where} minLength"),
            max_length=_int(prop.get("maxLength"), f"{where} maxLength"),
            default=_text(default) if isinstance(default, str) else None,
            **common,
        )
    if kind in ("number", "integer"):
        keep_num = default if isinstance(default, int | float) and not isinstance(default, bool) else None
        return ElicitField(
            kind=kind,
            minimum=_number(prop.get("minimum"), f"{where} minimum"),
            maximum=_number(prop.get("maximum"), f"{where} maximum"),
            default=keep_num,
            **common,
        )
    if kind == "boolean":
        return ElicitField(kind="boolean", default=default if isinstance(default, bool) else None, **common)
    if kind == "array":
        items = prop.get("items")
        if not isinstance(items, dict):
            raise UnusableForm(f"{where} is a list of something other than choices")
        picks = (
            _options(items.get("enum"), None, where)
            if "enum" in items
            else _titled_options(items.get("anyOf", items.get("oneOf")), where)
        )
        if not picks:
            raise UnusableForm(f"{where} is a list of something other than choices")
        allowed = {o.value for o in picks}
        keep_list = default if isinstance(default, list) and all(d in allowed for d in default) else None
        return ElicitField(
            kind="choices",
            options=picks,
            default=keep_list,
            min_items=_int(prop.get("minItems"), f"{where} minItems"),
            max_items=_int(prop.get("maxItems"), f"{where} maxItems"),
            **common,
        )
    raise UnusableForm(f"{where} has type {str(kind)[:40]!r}; a form field is a string, number, boolean or choice")


def parse_form(schema: Any) -> list[ElicitField]:
    """The fields of a requested schema, or :class:`UnusableForm` saying why it cannot be shown."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise UnusableForm("the requested schema is not an object of fields")
    props = schema.get("properties") or {}
    if not isinstance(props, dict):
        raise UnusableForm("its properties are not an object")
    if len(props) > MAX_FIELDS:
        raise UnusableForm(f"it asks for {len(props)} fields (at most {MAX_FIELDS})")
    required = schema.get("required") or []
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise UnusableForm("its required list is not a list of names")
    fields = []
    for name, prop in props.items():
        if not isinstance(name, str) or not name or len(name) > MAX_NAME:
            raise UnusableForm(f"a field name is empty or longer than {MAX_NAME} characters")
        fields.append(_field(name, prop, name in required))
    return fields


def form_schema(fields: list[ElicitField]) -> dict[str, Any]:
    """The schema an answer is checked against, rebuilt from the parsed fields."""
    return {
        "type": "object",
        "properties": {f.name: f.json_schema() for f in fields},
        "required": [f.name for f in fields if f.required],
        "additionalProperties": False,
    }


def check_answer(fields: list[ElicitField], content: dict[str, Any]) -> dict[str, Any]:
    """``content`` as it will be sent, or ValueError naming the first field that is wrong.
    Empty optional fields are left out; ``date``/``email``/``uri`` formats are checked loosely."""
    import jsonschema

    cleaned = {k: v for k, v in content.items() if v is not None and v != "" and v != []}
    by_name = {f.name: f for f in fields}
    unknown = sorted(set(cleaned) - set(by_name))
    if unknown:
        raise ValueError(f"{unknown[0]} is not a field of this form")
    checker = jsonschema.Draft202012Validator(form_schema(fields), format_checker=jsonschema.FormatChecker())
    for error in sorted(checker.iter_errors(cleaned), key=lambda e: list(e.path)):
        where = by_name[str(error.path[0])].label if error.path else "the form"
        if error.validator == "required":
            missing = next((f.label for f in fields if f.required and f.name not in cleaned), "a field")
            raise ValueError(f"{missing} is required")
        raise ValueError(f"{where}: {error.message}")
    return cleaned


def request_from(server: str, params: Any) -> ElicitationRequest:
    """The SDK's ``ElicitRequestParams`` as a request (:class:`UnusableForm` for a form that cannot be shown)."""
    message = _text(getattr(params, "message", ""))
    if getattr(params, "mode", "form") == "url":
        url = getattr(params, "url", "")
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            raise UnusableForm("URL mode asks to open something that is not an http(s) address")
        return ElicitationRequest(id=f"elicit-{next(_ids)}", server=server, mode="url", message=message, url=url)
    fields = parse_form(getattr(params, "requested_schema", None))
    return ElicitationRequest(id=f"elicit-{next(_ids)}", server=server, message=message, fields=fields)


def coerce(field: ElicitField, text: str) -> Any:
    """A typed value from what a person typed (ValueError when it is not one)."""
    text = text.strip()
    if field.kind == "boolean":
        low = text.lower()
        if low in ("y", "yes", "true", "1", "on"):
            return True
        if low in ("n", "no", "false", "0", "off"):
            return False
        raise ValueError(f"{field.label}: answer yes or no")
    if field.kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{field.label}: a whole number") from None
    if field.kind == "number":
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{field.label}: a number") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{field.label}: a number")
        return value
    if field.kind in ("choice", "choices"):
        picks = [p.strip() for p in text.split(",")] if field.kind == "choices" else [text]
        chosen = []
        for pick in picks:
            if pick.isdigit() and 1 <= int(pick) <= len(field.options):
                chosen.append(field.options[int(pick) - 1].value)
            elif pick in {o.value for o in field.options}:
                chosen.append(pick)
            else:
                raise ValueError(f"{field.label}: pick one of the numbers shown")
        return chosen if field.kind == "choices" else chosen[0]
    return text
