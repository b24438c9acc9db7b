"""What an approval shows: the action in words, built from the values the tool will run with.

The pipeline builds an :class:`ActionPreview` for every call it asks about, after the arguments
are in canonical form (:meth:`core.pipeline.policy.Policy.canonical_arguments`), from those same
values: what the person reads is what runs. A preview has

* a one-line ``summary`` in words ("Unsubscribe from *Metrics Weekly* (Metrics Bot
  <news@metricsbot.example>)");
* its fields, each a :class:`PreviewField`, in three groups the presentations keep in this
  order: the **decisive** ones (where the action goes: recipients, accounts, paths, URLs, phone
  numbers, ids with what they name), always shown whole; the **changes**, ``before → after``;
  then the **details**, which a presentation may fold;
* ``problems``: what the person must know before answering, in words (the target no longer
  exists, so the call will fail);
* for a tool of an MCP server or device, ``server``: the server's name, its own title for the
  tool and its annotations, shown as that server's claims (it is untrusted).

A built-in describes its own calls (a hook beside its tool in :mod:`core.builtins`, resolving
the ids it names in the tool's database); an MCP tool's arguments become a field list
(:func:`argument_fields`) whose decisive fields are told by the arguments a hardline rule checks,
by their schema's ``format``, by their names and by their values. :func:`finish` then makes sure
every argument the tool receives is shown (a hook that forgets one cannot hide it).

Values are kept as they are: untrusted text is made safe where it is shown, by
:func:`shown_value` (:func:`core.display.safe`, with ``identifier=True`` for decisive fields).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.display import mixed_scripts, safe
from core.tools import EFFECT_MEANING, Origin, ToolSpec

FieldKind = Literal["email", "phone", "url", "path", "id", "account", "target", "text"]
DECISIVE_KINDS: frozenset[str] = frozenset({"email", "phone", "url", "path", "id", "account", "target"})

NONE_SHOWN = "(none)"
FOLD_CHARS = 160  # a detail longer than this is folded ...
FOLD_LINES = 3  # ... or one of more lines than this


class PreviewField(BaseModel):
    """One thing the approval shows: a label in words and the value as it will run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str
    value: str
    kind: FieldKind = "text"
    decisive: bool = False
    before: str | None = Field(default=None, description="set: the field changes from this to value")
    note: str = Field(default="", description="what the value names, in trusted words, or a warning")
    argument: str | None = Field(default=None, description="the argument the value is (or comes from)")

    @property
    def is_change(self) -> bool:
        return self.before is not None


class ServerFacts(BaseModel):
    """An MCP server's (or device's) own words about its tool: claims, never checked facts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    server: str
    kind: Literal["mcp", "device"] = "mcp"
    title: str | None = None
    claims: dict[str, bool] = Field(default_factory=dict)  # read_only, destructive, idempotent, open_world


class ActionPreview(BaseModel):
    """What will run, for the person who approves it (see the module's docstring)."""

    model_config = ConfigDict(extra="forbid")

    summary: str
    fields: list[PreviewField] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    server: ServerFacts | None = None

    @property
    def decisive(self) -> list[PreviewField]:
        return [f for f in self.fields if f.decisive and not f.is_change]

    @property
    def changes(self) -> list[PreviewField]:
        return [f for f in self.fields if f.is_change]

    @property
    def details(self) -> list[PreviewField]:
        return [f for f in self.fields if not f.decisive and not f.is_change]

    def ordered(self) -> list[PreviewField]:
        """The fields in the order they are shown: decisive, changes, details."""
        return [*self.decisive, *self.changes, *self.details]

    def covers(self, argument: str) -> bool:
        return any(f.argument == argument for f in self.fields)


# --- values in words ------------------------------------------------------------------------------


def value_text(value: Any) -> str:
    """A JSON value as it is shown: a string as it is, a list of plain strings joined with
    ``", "``, anything else as compact JSON (what the tool receives, nothing left out)."""
    if value is None:
        return NONE_SHOWN
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value == [] or value == {}:
        return NONE_SHOWN
    if isinstance(value, list) and value and all(isinstance(v, str) and "," not in v and v for v in value):
        return ", ".join(value)
    try:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    except (TypeError, ValueError):
        return repr(value)


def is_identifier(f: PreviewField) -> bool:
    """Whether a field's value decides where the action goes (shown in identifier mode)."""
    return f.decisive or f.kind in DECISIVE_KINDS


def shown_value(f: PreviewField, *, max_len: int | None = None, before: bool = False) -> str:
    """A field's value (or, ``before``, what it was) safe for a terminal: a decisive value in
    identifier mode (every character outside printable ASCII that can deceive shown escaped, on
    one line), any other as prose that may span lines."""
    text = (f.before or "") if before else f.value
    if is_identifier(f):
        return safe(text, identifier=True, max_len=max_len)
    return safe(text, multiline=True, max_len=max_len)


# --- building a preview (for the hooks beside each built-in) --------------------------------------


def decisive(
    label: str, value: str, *, kind: FieldKind = "id", note: str = "", argument: str | None = None
) -> PreviewField:
    """A field that decides where the action goes: shown first and whole."""
    return PreviewField(label=label, value=value, kind=kind, decisive=True, note=note, argument=argument)


def change(
    label: str,
    before: Any,
    after: Any,
    *,
    kind: FieldKind = "text",
    note: str = "",
    argument: str | None = None,
) -> PreviewField:
    """A field that changes: shown ``before → after``, always whole."""
    return PreviewField(
        label=label, value=value_text(after), before=value_text(before), kind=kind, note=note, argument=argument
    )


def detail(label: str, value: Any, *, note: str = "", argument: str | None = None) -> PreviewField:
    """Any other field: shown after the decisive ones and the changes, folded when long."""
    return PreviewField(label=label, value=value_text(value), note=note, argument=argument)


def folded(text: str, *, chars: int = FOLD_CHARS, lines: int = FOLD_LINES) -> tuple[str, str]:
    """``(shown, what is left out)``: ``text`` cut to ``lines`` lines and ``chars`` characters,
    and a note in words of how much more there is ("", when nothing was cut)."""
    all_lines = text.split("\n")
    head = "\n".join(all_lines[:lines])
    cut = head if len(head) <= chars else head[:chars]
    if cut == text:
        return text, ""
    more_lines = len(all_lines) - len(cut.split("\n"))
    more_chars = len(text) - len(cut)
    parts = [f"{more_chars:,} more character{'s' if more_chars != 1 else ''}"]
    if more_lines > 0:
        parts.append(f"{more_lines:,} more line{'s' if more_lines != 1 else ''}")
    return cut.rstrip() + "\u2026", ", ".join(parts)


def scripts_note(value: str) -> str:
    """A warning when a value mixes Latin with a look-alike script (``p\\u0430ypal``)."""
    scripts = mixed_scripts(value)
    return f"mixes {' and '.join(scripts)} letters: look-alikes?" if scripts else ""


# --- MCP arguments as fields ----------------------------------------------------------------------

_EMAIL_WORDS = frozenset({"to", "cc", "bcc", "recipient", "recipients", "email", "emails", "mail", "sender", "from"})
_PHONE_WORDS = frozenset({"phone", "tel", "telephone", "mobile", "sms", "msisdn"})
_URL_WORDS = frozenset({"url", "uri", "urls", "link", "href", "endpoint", "webhook", "website", "domain", "host"})
_PATH_WORDS = frozenset({"path", "paths", "file", "filename", "filepath", "dir", "directory", "folder", "dest"})
_ACCOUNT_WORDS = frozenset(
    {"account", "user", "username", "owner", "org", "organization", "channel", "repo", "repository", "mailbox"}
)
_FORMATS: dict[str, FieldKind] = {
    "email": "email",
    "idn-email": "email",
    "uri": "url",
    "iri": "url",
    "uri-reference": "url",
    "iri-reference": "url",
    "url": "url",
    "hostname": "target",
    "idn-hostname": "target",
    "ipv4": "target",
    "ipv6": "target",
}
_LOOKS_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://\S")
_LOOKS_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_LOOKS_PHONE = re.compile(r"\+[\d\s().-]{6,}")


def _words(key: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def _sniff(value: Any) -> FieldKind | None:
    texts = value if isinstance(value, list) else [value]
    texts = [t for t in texts if isinstance(t, str)]
    if not texts:
        return None
    if all(_LOOKS_URL.match(t.strip()) for t in texts):
        return "url"
    if all(_LOOKS_EMAIL.fullmatch(t.strip()) for t in texts):
        return "email"
    if all(_LOOKS_PHONE.fullmatch(t.strip()) and sum(c.isdigit() for c in t) >= 7 for t in texts):
        return "phone"
    return None


def argument_kind(key: str, value: Any, schema: Mapping[str, Any] | None = None) -> FieldKind:
    """What an argument is: a decisive kind (an address, a phone number, a URL, a path, an
    account, an id) or plain ``text``, from its schema's ``format``, its name and its value."""
    prop = schema if isinstance(schema, Mapping) else {}
    items = prop.get("items")
    fmt = prop.get("format") or (items.get("format") if isinstance(items, Mapping) else None)
    if isinstance(fmt, str) and fmt in _FORMATS:
        return _FORMATS[fmt]
    sniffed = _sniff(value)
    if sniffed:
        return sniffed
    words = _words(key)
    if not words:
        return "text"
    if set(words) & _PHONE_WORDS:
        return "phone"
    if set(words) & _EMAIL_WORDS or (words[-1] in ("address", "addresses") and "email" in words):
        return "email"
    if set(words) & _URL_WORDS:
        return "url"
    if set(words) & _PATH_WORDS:
        return "path"
    if words[-1] in ("id", "ids") or key.endswith(("Id", "ID", "Ids", "IDs")):
        return "id"
    if set(words) & _ACCOUNT_WORDS:
        return "account"
    return "text"


def _properties(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return dict(props) if isinstance(props, Mapping) else {}


def argument_order(arguments: Mapping[str, Any], schema: Mapping[str, Any] | None) -> list[str]:
    """The arguments in the schema's order, then any others by name: never the order the model
    wrote them in (a long body first cannot push a recipient out of sight)."""
    props = _properties(schema)
    return [k for k in props if k in arguments] + sorted(k for k in arguments if k not in props)


def _checked_kind(kind: str) -> FieldKind:
    """The field kind of a hardline rule's kind (``text`` rules check a target too)."""
    return kind if kind in DECISIVE_KINDS else "target"  # type: ignore[return-value]


def argument_field(
    key: str, value: Any, schema: Mapping[str, Any] | None = None, kind: str | None = None
) -> PreviewField:
    """One argument as a field, labelled with its own name (what the tool receives). ``kind``: the
    kind a hardline rule gives it (then it is decisive: a rule checks where the action goes)."""
    shown_kind = _checked_kind(kind) if kind is not None else argument_kind(key, value, schema)
    text = value_text(value)
    decisive = shown_kind in DECISIVE_KINDS
    return PreviewField(
        label=key,
        value=text,
        kind=shown_kind,
        decisive=decisive,
        argument=key,
        note=scripts_note(text) if decisive else "",
    )


def argument_fields(
    arguments: Any,
    schema: Mapping[str, Any] | None,
    *,
    kinds: Mapping[str, str] | None = None,
    skip: Iterable[str] = (),
) -> list[PreviewField]:
    """Every argument as a field, in :func:`argument_order`; ``kinds`` are the kinds hardline
    rules give arguments (those are decisive whatever their names say)."""
    if not isinstance(arguments, Mapping):
        return [] if arguments is None else [PreviewField(label="arguments", value=value_text(arguments))]
    props = _properties(schema)
    left_out = set(skip)
    kinds = kinds or {}
    return [
        argument_field(k, arguments[k], props.get(k), kinds.get(k))
        for k in argument_order(arguments, schema)
        if k not in left_out
    ]


def server_summary(remote: str, server: str, title: str | None, kind: str = "mcp") -> str:
    """``Run send_message on the MCP server gmail_work`` (with the server's title, quoted)."""
    what = f"\u201c{title}\u201d ({remote})" if title and title != remote else remote
    where = "the MCP server" if kind == "mcp" else "the device"
    return f"Run {what} on {where} {server}"


def finish(
    preview: ActionPreview,
    arguments: Any,
    schema: Mapping[str, Any] | None,
    *,
    kinds: Mapping[str, str] | None = None,
    server: ServerFacts | None = None,
) -> ActionPreview:
    """The preview as the person gets it: every argument the tool receives shown (one a hook
    did not describe is added as it is), an argument a hardline rule checks shown as decisive,
    and the server's facts for a server's tool."""
    kinds = kinds or {}
    fields = []
    for f in preview.fields:
        kind = kinds.get(f.argument or "")
        if kind is not None and not f.decisive:
            f = f.model_copy(update={"decisive": True, "kind": _checked_kind(kind)})
        fields.append(f)
    out = preview.model_copy(update={"fields": fields, "server": server or preview.server})
    if isinstance(arguments, Mapping):
        missing = [k for k in argument_order(arguments, schema) if not out.covers(k)]
        props = _properties(schema)
        out.fields.extend(argument_field(k, arguments[k], props.get(k), kinds.get(k)) for k in missing)
    return out


def claims_text(claims: Mapping[str, bool]) -> str:
    """A server's annotations in words: ``read-only: no, destructive: no, open world: yes``."""
    names = (
        ("read_only", "read-only"),
        ("destructive", "destructive"),
        ("idempotent", "idempotent"),
        ("open_world", "open world"),
    )
    return ", ".join(f"{label}: {'yes' if claims[key] else 'no'}" for key, label in names if key in claims)


# --- a tool's preview when nothing describes it ---------------------------------------------------


def server_facts(spec: ToolSpec) -> ServerFacts | None:
    """The facts an MCP server's (or device's) tool is shown with; None for a trusted tool."""
    if spec.origin not in (Origin.DISCOVERED, Origin.DEVICE) and not spec.untrusted:
        return None
    return ServerFacts(
        server=spec.server or "unknown",
        kind="device" if spec.origin is Origin.DEVICE else "mcp",
        title=spec.title,
        claims=dict(spec.hints),
    )


def spec_preview(spec: ToolSpec, arguments: Any, *, kinds: Mapping[str, str] | None = None) -> ActionPreview:
    """The preview of a call nothing describes: a server's tool named with its server and title,
    any other by its name; its arguments as fields."""
    facts = server_facts(spec)
    if facts is not None:
        summary = server_summary(spec.remote_name or spec.name, facts.server, facts.title, facts.kind)
    else:
        summary = f"Run {spec.name}"
    return ActionPreview(summary=summary, fields=argument_fields(arguments, spec.input_schema, kinds=kinds))


def stored_preview(stored: str | None) -> ActionPreview | None:
    """The preview a stored approval showed; None when it has none this version can read."""
    if not stored:
        return None
    try:
        return ActionPreview.model_validate_json(stored)
    except ValueError:
        return None


def spec_preview_of(tool: str, arguments: Any) -> ActionPreview:
    """The preview of an approval stored without one (made before previews existed): the tool's
    name and its arguments as fields, in name order."""
    return ActionPreview(summary=f"Run {tool}", fields=argument_fields(arguments, None))


# --- the preview as lines, for the presentations (the CLI's prompt, the TUI's bar) ---------------

SIDE_EFFECT_WORDS: dict[str, str] = EFFECT_MEANING  # what each class does, said whole (core.tools)

Section = Literal["summary", "problem", "decisive", "change", "detail", "server"]


class PreviewLine(BaseModel):
    """One line of a preview as shown, every part already safe for a terminal."""

    model_config = ConfigDict(frozen=True)

    section: Section
    label: str = ""
    text: str = ""
    note: str = ""
    folded: str = ""  # what a folded detail leaves out, in words ("4,840 more characters")


def server_line(facts: ServerFacts) -> str:
    """The server a tool comes from, named as untrusted, with its own claims about the tool."""
    where = "MCP server" if facts.kind == "mcp" else "device"
    parts = [f"from the {where} {safe(facts.server)}, untrusted"]
    if facts.title:
        parts.append(f"its title for the tool: \u201c{safe(facts.title)}\u201d")
    if facts.claims:
        parts.append(f"it says: {claims_text(facts.claims)}")
    return "; ".join(parts)


def layout(preview: ActionPreview, *, expanded: bool = False) -> list[PreviewLine]:
    """The preview as the person reads it: the summary, the problems, the decisive fields whole,
    the changes ``before → after`` whole, then the details (folded unless ``expanded``) and the
    server's facts. Decisive values are shown in identifier mode (:func:`shown_value`)."""
    lines = [PreviewLine(section="summary", text=safe(preview.summary))]
    lines += [PreviewLine(section="problem", text=safe(p)) for p in preview.problems]
    for f in preview.decisive:
        lines.append(PreviewLine(section="decisive", label=safe(f.label), text=shown_value(f), note=safe(f.note)))
    for f in preview.changes:
        text = f"{shown_value(f, before=True)} \u2192 {shown_value(f)}"
        lines.append(PreviewLine(section="change", label=safe(f.label), text=text, note=safe(f.note)))
    for f in preview.details:
        text, more = shown_value(f), ""
        if not expanded:
            text, more = folded(text)
        lines.append(PreviewLine(section="detail", label=safe(f.label), text=text, note=safe(f.note), folded=more))
    if preview.server is not None:
        lines.append(PreviewLine(section="server", text=server_line(preview.server)))
    return lines
