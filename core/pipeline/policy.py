"""Tool policy (a TOML file): allow, ask or deny by side-effect class, server and tool glob;
hardline rules that deny even an approved call. See ``default_policy.toml``."""

from __future__ import annotations

import fnmatch
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.errors import UsageError, parse_toml_model
from core.tools import SideEffect, ToolSpec

Action = Literal["allow", "ask", "deny"]


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
        if self.side_effect is not None and spec.side_effect is not self.side_effect:
            return False
        return True

    @property
    def specificity(self) -> int:
        return 3 if self.tool is not None else 2 if self.server is not None else 1


class Hardline(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    tool: str = "*"
    server: str | None = None
    side_effect: SideEffect | None = Field(None, alias="class")
    args: dict[str, str] = Field(default_factory=dict)  # argument name -> glob
    reason: str

    def matches(self, spec: ToolSpec, arguments: Any) -> bool:
        if not fnmatch.fnmatchcase(spec.name, self.tool):
            return False
        if self.server is not None and spec.server != self.server:
            return False
        if self.side_effect is not None and spec.side_effect is not self.side_effect:
            return False
        for key, pattern in self.args.items():
            value = arguments.get(key) if isinstance(arguments, dict) else None
            values = value if isinstance(value, list) else [value]
            if not any(isinstance(v, str) and fnmatch.fnmatch(v.strip().lower(), pattern.lower()) for v in values):
                return False
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
            what = (f"tool {best.tool}" if best.tool else f"server {best.server}" if best.server
                    else f"class {best.side_effect.value if best.side_effect else '*'}")
            return best.action, best.reason or f"policy rule for {what}: {best.action}"
        if spec.side_effect in self.classes:
            action = self.classes[spec.side_effect]
            return action, f"policy for {spec.side_effect.value}: {action}"
        return self.default, f"policy default: {self.default}"

    def hardline_for(self, spec: ToolSpec, arguments: Any) -> Hardline | None:
        return next((h for h in self.hardline if h.matches(spec, arguments)), None)


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
    try:
        return parse_policy(p.read_text(encoding="utf-8"), str(p))
    except FileNotFoundError:
        raise UsageError(f"policy file {p} does not exist") from None
