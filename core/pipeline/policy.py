"""Tool policy (a TOML file): allow, ask or deny by side-effect class, server and tool glob;
hardline rules that deny even an approved call. See ``default_policy.toml``.

Hardline rules match canonical values (:mod:`core.pipeline.canonical`): each argument a rule
names is put into the canonical form of its kind (phone, email, url, path, text) before its glob
is matched, and :meth:`Policy.canonical_arguments` gives the tool those same values.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.errors import parse_toml_model, read_text
from core.pipeline.canonical import (
    CanonicalError,
    Kind,
    PathBase,
    canonical,
    canonical_argument,
    canonical_pattern,
    match_forms,
    path_glob_matches,
    rewrites,
    split_values,
)
from core.tools import EFFECT_MEANING, SideEffect, ToolSpec

Action = Literal["allow", "ask", "deny"]
_VERB: dict[str, str] = {"allow": "allows it", "ask": "asks first", "deny": "refuses it"}  # a reason, in words


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    tool: str | None = None  # glob over the internal name
    server: str | None = None
    side_effect: SideEffect | None = Field(None, alias="class")
    action: Action
    reason: str = ""

    def matches(self, spec: ToolSpec) -> bool:
        if self.tool is not None and not fnmatch.fnmatchcase(spec.name, self.tool):
            return False
        if self.server is not None and spec.server != self.server:
            return False
        return self.side_effect is None or spec.side_effect is self.side_effect

    @property
    def specificity(self) -> int:
        return 3 if self.tool is not None else 2 if self.server is not None else 1


_PHONE_PATTERN = re.compile(r"(\+|00)[\d\s().*?\[\]-]*")


def infer_kind(pattern: str) -> Kind:
    """The kind of value a glob is about, when its rule does not say (``kinds``)."""
    text = pattern.strip()
    if "://" in text:
        return "url"
    if "@" in text:
        return "email"
    if _PHONE_PATTERN.fullmatch(text) and any(ch.isdigit() for ch in text):
        return "phone"
    if text.startswith(("/", "~")):
        return "path"
    return "text"


def _as_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)  # 19005550100 is a number to some schemas and a phone number to a phone
    return None


class Hardline(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    tool: str = "*"
    server: str | None = None
    side_effect: SideEffect | None = Field(None, alias="class")
    args: dict[str, str] = Field(default_factory=dict)  # argument name -> glob
    # argument name -> the kind of its value (phone | email | url | path | text); inferred from the glob if absent
    kinds: dict[str, Kind] = Field(default_factory=dict)
    reason: str

    def kind_of(self, key: str, paths: Mapping[str, PathBase] | None = None) -> Kind:
        """The kind of ``key``'s values: a path for an argument the tool resolves in a folder
        (whatever the rule says: ``./private`` must not dodge a rule written as text), else
        what the rule names, else what its glob looks like."""
        if paths and key in paths:
            return "path"
        return self.kinds.get(key) or infer_kind(self.args.get(key, ""))

    def applies_to(self, spec: ToolSpec) -> bool:
        """Whether the rule is about this tool (its arguments decide whether it denies the call)."""
        if not fnmatch.fnmatchcase(spec.name, self.tool):
            return False
        if self.server is not None and spec.server != self.server:
            return False
        return self.side_effect is None or spec.side_effect is self.side_effect

    def matches(self, spec: ToolSpec, arguments: Any, paths: Mapping[str, PathBase] | None = None) -> bool:
        """Whether the call is denied: every named argument has a value whose canonical form
        matches the rule's glob. A value with no canonical form matches (it cannot be cleared).
        ``paths`` names the arguments the tool resolves in a folder, and the folder."""
        if not self.applies_to(spec):
            return False
        for key, pattern in self.args.items():
            kind = self.kind_of(key, paths)
            base = paths.get(key) if paths else None
            glob = canonical_pattern(kind, pattern, base)
            value = arguments.get(key) if isinstance(arguments, dict) else None
            values = value if isinstance(value, list) else [value]
            if not any(self._value_matches(kind, v, glob, base) for v in values):
                return False
        return True

    @staticmethod
    def _value_matches(kind: Kind, value: Any, glob: str, base: PathBase | None) -> bool:
        if value is None:
            return False
        text = _as_text(value)
        if text is None:
            return True  # an object where a rule expects a value: refused rather than guessed at
        matches = path_glob_matches if kind == "path" else fnmatch.fnmatchcase
        try:
            return any(
                matches(form, glob)
                for part in split_values(kind, text)
                for form in match_forms(kind, canonical(kind, part, base), base)
            )
        except CanonicalError:
            return True


class Policy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    default: Action = "ask"
    classes: dict[SideEffect, Action] = Field(default_factory=dict)
    rules: list[Rule] = Field(default_factory=list)
    hardline: list[Hardline] = Field(default_factory=list)
    # Servers whose MCP annotations are not believed: their tools count as NETWORK_WRITE.
    distrust_annotations: list[str] = Field(default_factory=list)
    source: str = "default"

    def decide(self, spec: ToolSpec) -> tuple[Action, str]:
        """The action for one call, and why (which rule decided)."""
        matching = [r for r in self.rules if r.matches(spec)]
        if matching:
            best = max(matching, key=lambda r: r.specificity)  # max keeps the first among equals
            what = (
                f"for {best.tool}"
                if best.tool
                else f"for the server {best.server}"
                if best.server
                else f"for every tool that {EFFECT_MEANING[best.side_effect]}"
                if best.side_effect
                else "for every tool"
            )
            return best.action, best.reason or f"a rule of your policy {what}: {_VERB[best.action]}"
        if spec.side_effect in self.classes:
            action = self.classes[spec.side_effect]
            return action, f"your policy {_VERB[action]} for every tool that {EFFECT_MEANING[spec.side_effect]}"
        return self.default, f"your policy's default: {_VERB[self.default]}"

    def hardline_for(
        self, spec: ToolSpec, arguments: Any, paths: Mapping[str, PathBase] | None = None
    ) -> Hardline | None:
        return next((h for h in self.hardline if h.matches(spec, arguments, paths)), None)

    def checked_kinds(self, spec: ToolSpec, paths: Mapping[str, PathBase] | None = None) -> dict[str, Kind]:
        """The arguments of ``spec`` a hardline rule checks, each with the kind of its value, and
        every path the tool resolves in a folder (``paths``: argument name -> folder), rule or none."""
        kinds: dict[str, Kind] = {key: "path" for key in paths or {}}
        for line in self.hardline:
            if line.applies_to(spec):
                for key in line.args:
                    kinds.setdefault(key, line.kind_of(key, paths))
        return kinds

    def canonical_arguments(self, spec: ToolSpec, arguments: Any, paths: Mapping[str, PathBase] | None = None) -> Any:
        """``arguments`` with every value a hardline rule for this tool names in canonical form,
        and every path the tool resolves in a folder (``paths``: argument name -> folder) as the
        file it names there, rule or none: what the rules match is what the approval shows and
        the tool receives.

        Raises :class:`CanonicalError` (naming the argument) for a value with no canonical form.
        Plain text (kind ``text``) is compared case-insensitively and passed on unchanged.
        """
        if not isinstance(arguments, dict):
            return arguments
        kinds = self.checked_kinds(spec, paths)
        out = dict(arguments)
        for key, kind in kinds.items():
            if key not in out or out[key] is None:
                continue
            value = out[key]
            base = paths.get(key) if paths else None
            if isinstance(value, list):
                out[key] = [self._canonical_value(key, kind, v, base) for v in value]
            else:
                out[key] = self._canonical_value(key, kind, value, base)
        return out

    @staticmethod
    def _canonical_value(key: str, kind: Kind, value: Any, base: PathBase | None = None) -> Any:
        text = _as_text(value)
        if text is None:
            raise CanonicalError(
                f"{key} must be a {kind if kind != 'text' else 'string'} value, not "
                f"{type(value).__name__}: a hardline rule checks it"
            )
        try:
            result = canonical_argument(kind, text, base)
        except CanonicalError as exc:
            raise CanonicalError(f"{key}: {exc}") from None
        return result if rewrites(kind) else value


def parse_policy(text: str, source: str) -> Policy:
    return parse_toml_model(text, Policy, f"policy {source}", source=source)


def default_policy() -> Policy:
    text = (resources.files("core.pipeline") / "default_policy.toml").read_text(encoding="utf-8")
    return parse_policy(text, "default")


def load_policy(path: str | Path | None = None) -> Policy:
    """The policy file at ``path``; else ``<config dir>/policy.toml`` if present; else the default."""
    if path is None:
        from core.config import config_dir

        candidate = config_dir() / "policy.toml"
        if not candidate.exists():
            return default_policy()
        path = candidate
    p = Path(path)
    return parse_policy(read_text(p, f"policy file {p}", missing=f"policy file {p} does not exist"), str(p))
