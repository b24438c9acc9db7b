"""``[thinking]`` in config.toml: how much the models think, per API.

Its own small module: the settings read it before the app's first frame, and the provider
adapters' base module (their request and event models) is not needed then.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ThinkingSettings(BaseModel):
    """``[thinking]`` in config.toml: how much the models think, per API. Nothing set: each
    API's own default (Anthropic: no extended thinking)."""

    model_config = ConfigDict(extra="forbid")

    anthropic_budget_tokens: int = Field(0, ge=0)
    """Anthropic extended thinking's ``budget_tokens`` (0: off; at least 1024 when on). Sent
    only to models that can think, with interleaved thinking between tool calls; the request's
    ``max_tokens`` grows by the budget, so the answer keeps its own allowance."""
    openai_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"] | None = None
    """OpenAI Responses ``reasoning.effort`` for reasoning models (unset: the model's default)."""
    openai_summary: Literal["auto", "concise", "detailed"] | None = None
    """OpenAI Responses ``reasoning.summary``: ask for reasoning summaries to show (unset: none)."""

    @model_validator(mode="after")
    def _budget(self) -> ThinkingSettings:
        if 0 < self.anthropic_budget_tokens < MIN_THINKING_BUDGET:
            raise ValueError(f"anthropic_budget_tokens must be 0 (off) or at least {MIN_THINKING_BUDGET}")
        return self


MIN_THINKING_BUDGET = 1024  # Anthropic's smallest budget_tokens
