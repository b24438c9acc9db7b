"""How much history one request may carry: the model's context window, less the output reserve
and the prefix (tools and system prompt), held with a margin for the server's own tokenizer.

deferchat counts with cl100k (:mod:`core.tokens`); a server counts with its own tokenizer and adds
prompts of its own. The margin was measured on the recorded traffic (``tests/fixtures/providers``:
each request's cl100k count beside the ``input_tokens`` the API reported for it,
``tests/unit/test_budget.py::test_the_margin_covers_the_recorded_traffic`` holds it):

* Anthropic with its tool search: 702 tokens reported for a request cl100k counts as 156, 1,007
  for 420: 1.155 tokens per cl100k token, plus ~520 of its own (the tool-use system prompt and the
  search tool's definition);
* OpenAI Responses with hosted ``tool_search``: 600 for 148, 496 for 365 (~450 of its own);
  with a client search: 234 for 375, 429 for 576, 477 for 707 (cl100k counts more there: the JSON
  escapes the request is measured in).

So a request is held to ``MARGIN_RATIO`` (1.2) times its cl100k count plus ``MARGIN_FIXED``
(1,024 tokens: twice the largest prompt of a server's own seen) plus ``PER_MESSAGE`` (8) tokens a
message for the chat template's framing. Counting is lazy: a message's UTF-8 size is an upper
bound on its cl100k tokens (every token is at least one byte), so while the sizes fit the tokenizer
is never loaded; past that each message is counted once (:class:`core.chat.history.Entry`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from core.providers.window import ContextWindow

MARGIN_RATIO = 1.2
MARGIN_FIXED = 1024
PER_MESSAGE = 8
DEFAULT_OUTPUT_TOKENS = 4096  # a request's max_tokens when config.toml sets none for the model


@dataclass(frozen=True)
class Budget:
    """One request's limits: ``window`` (where it came from in ``window.source``) and the output
    ``reserve`` the request asks for (its ``max_tokens``, and an Anthropic thinking budget)."""

    window: ContextWindow
    reserve: int

    @property
    def room(self) -> int:
        """The tokens the server lets the prompt have."""
        room = self.window.tokens - self.reserve
        if self.window.max_input is not None:
            room = min(room, self.window.max_input)
        return room

    def counted(self, tokens: int) -> int:
        """What a server may count for a prompt cl100k counts as ``tokens`` (the margin applied)."""
        return math.ceil(tokens * MARGIN_RATIO) + MARGIN_FIXED

    def history_room(self, prefix_tokens: int) -> int:
        """The cl100k tokens left for the history (its messages' framing included) once the
        prefix is in, within the margin; negative when the prefix alone does not fit."""
        return math.floor((self.room - MARGIN_FIXED) / MARGIN_RATIO) - prefix_tokens

    def describe(self) -> str:
        """For people: the window, where it came from, and the reserve."""
        return f"{self.window.tokens:,}-token window ({self.window.source}), {self.reserve:,} kept for the answer"
