"""Tool search: SQLite FTS5 BM25 over tool names, descriptions and parameters, with a small re-rank.

One engine serves the ``tool.search`` control tool, the ``active-tools`` strategy and
``deferchat search``. It is lexical and offline: no embeddings, no network.

How a tool is indexed (one FTS5 row, five weighted columns, ``porter unicode61`` tokenizer):

- ``name``: the name split on ``.``, ``_``, ``-``, camelCase and letter/digit boundaries
  (``mcp.gmail_work.sendMessage`` -> ``mcp gmail work send Message``);
- ``lead``: the description's opening clause (:func:`lead`, its first sentence, at most twelve
  words), where a tool says what it does ("Send an email from ..."), so a word there counts
  again over the same word deeper in the text ("The list stops sending");
- ``description``: the description, identifiers in it split the same way;
- ``param_names``: every parameter name, split, nested object/array properties included;
- ``param_text``: parameter descriptions and ``enum`` values (the vocabulary a tool accepts).

How a query is answered:

1. The query is split into words exactly like the indexed text; English stop words,
   conversational filler ("please", "help", "want"...) and bare numbers (argument values,
   not intent) are dropped. What is left is ORed, each word a quoted FTS5 string, so no
   user text is ever parsed as FTS5 syntax. A hyphenated word made of stop words is one word
   (``to-do``), on both sides.
2. FTS5 ``bm25()`` with column weights ranks every matching tool. Each query word also brings
   its related words from a small everyday vocabulary (:mod:`core.deferral.search_vocab`:
   "mail" for "email", "reschedule" for "update"); tools that have only a related word join
   the pool without BM25 credit.
3. The best ``pool`` tools are re-ranked by
   ``bm25 / best bm25 + coverage_weight * coverage + name_weight * name_coverage
   + action_weight * action``, where ``coverage`` is the IDF-weighted share of query words the
   tool mentions anywhere (BM25 alone lets one rare word dominate an OR query; a related word
   covers at :data:`~core.deferral.search_vocab.RELATED_CREDIT`), ``name_coverage`` is the
   IDF-weighted share of the tool's own name words that the query mentions (a name the query
   explains is the tool asked for; the last dotted part counts fully, the server or domain
   before it half, ``mcp`` not at all: ``email.unsubscribe`` is about unsubscribing, not about
   email in general), and ``action`` whether the query's first word is the tool's verb (the
   first word of its own name or of its description: "send email" asks for the tool that
   sends). Tools beyond the pool keep BM25 order.
4. Before all of that, tools the query *names* come first (:meth:`ToolSearchIndex.exact`):
   the internal name, the wire name, the server plus tool or the bare tool name, in any case
   and with any separator, as the whole query, a ``select:`` list, a quoted string or an
   identifier-shaped mention. A model that names a deferred tool always gets it.
5. When BM25 runs out before ``k``, a fallback tier follows, scored below every plain match:
   the chat filler of step 1 put back, each stem as a prefix, and near spellings of words no
   tool has. So ``search(q, k)`` is always a prefix of ``search(q, k + n)``.

Loading the evaluation data and measuring recall live in :mod:`core.deferral.search_eval`.

This module imports neither Textual nor any provider SDK; ``sqlite_utils`` and ``pydantic``
are imported on first use so ``import core.deferral.search`` stays cheap.
"""

from __future__ import annotations

import math
import re
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.deferral.search_names import (
    EDGE,
    SELECT,
    WORD,
    mentions,
    name_forms,
    name_key,
    name_phrases,
    spelling_rank,
    within,
)
from core.deferral.search_vocab import RELATED_CREDIT, related

__all__ = [
    "SearchDoc",
    "SearchHit",
    "SearchQuery",
    "SearchTuning",
    "ToolSearchIndex",
    "identifier_words",
    "name_forms",
    "name_key",
    "query_words",
    "schema_text",
]

# -- records -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchDoc:
    """A searchable tool. Any object with these three attributes will do (ToolSpec has them)."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchHit:
    name: str
    score: float


@dataclass(frozen=True)
class SearchQuery:
    """One labelled query (``queries.jsonl``): the tools in ``relevant`` answer it."""

    id: str
    query: str
    relevant: tuple[str, ...] = ()
    category: str = ""


@dataclass(frozen=True)
class SearchTuning:
    """Weights of the ranking. The defaults are what the benchmark and the tools use."""

    name: float = 2.0
    lead: float = 2.0  # the description's opening clause, where a tool says what it does
    description: float = 2.0
    param_names: float = 1.0
    param_text: float = 1.0
    coverage_weight: float = 1.5
    name_weight: float = 0.6
    action_weight: float = 0.15  # the query's first word is the tool's verb (its name's or description's first)
    pool: int = 40  # how many BM25 leaders are re-ranked
    max_query_words: int = 64  # longer queries keep their first 64 distinct words


DEFAULT_TUNING = SearchTuning()

# -- text ----------------------------------------------------------------------------------

# Boundaries inside one word: fooBar | HTTPServer | abc123 | 123abc
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])")


# A general English stop list plus the filler of requests made in chat. Chosen a priori,
# not from the evaluation queries; tool vocabulary ("find", "get", "show", "list") stays.
def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOP_WORDS = _word_set(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can cannot could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not of off on once only or other ought our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t d ll m o re ve y don doesn didn isn aren wasn weren hasn haven hadn won wouldn couldn
    shouldn mustn let us
    """
)
# Chat filler: dropped from the query, but content words for some tools (``dartfx_help``), so
# the fallback tier (below) puts them back when the query's own words run out.
_CHAT_FILLER = _word_set(
    """
    please kindly help want wanna need like may might tell know hi hello hey thanks thank
    looking something anything also sure ok okay
    """
)
_STOP_WORDS = _STOP_WORDS | _CHAT_FILLER


def identifier_words(text: str) -> list[str]:
    """Split text into words on non-alphanumerics, camelCase and letter/digit boundaries.

    ``"mcp.gmail_work.sendHTTPRequest2"`` -> ``["mcp", "gmail", "work", "send", "HTTP",
    "Request", "2"]``. Case is kept; the tokenizer folds it.
    """
    out: list[str] = []
    for word in WORD.findall(text):
        if word.isalpha() and (word.islower() or word.isupper() or word[1:].islower()):
            out.append(word)  # the common case: no boundary inside
        else:
            out.extend(part for part in _CAMEL.split(word) if part)
    return out


_LEAD_END = re.compile(r"(?<=[.!?;:])\s|\n")
_LEAD_WORDS = 12


def lead(description: str) -> str:
    """A description's opening clause: its first sentence, at most twelve words. Tools say
    what they do there ("Send an email from ..."); what follows qualifies it ("The list stops
    sending ..."), so a query word in the lead says more than the same word further on."""
    first = _LEAD_END.split(description.strip(), maxsplit=1)[0]
    return " ".join(first.split()[:_LEAD_WORDS])


_COMPOUND = re.compile(r"\b([^\W\d_]+)-([^\W\d_]+)\b")


def _join_compounds(text: str) -> str:
    """A hyphenated word made only of stop words is one word: ``to-do`` is ``todo`` (split, both
    halves would be dropped as stop words); ``e-mail`` and ``car-rental`` stay as they are."""
    return _COMPOUND.sub(
        lambda m: m.group(1) + m.group(2) if {m.group(1).lower(), m.group(2).lower()} <= _STOP_WORDS else m.group(0),
        text,
    )


def _split_text(text: str) -> str:
    return " ".join(identifier_words(_join_compounds(text)))


def query_words(query: str, max_words: int = DEFAULT_TUNING.max_query_words) -> list[str]:
    """The distinct lower-cased words of a query that carry intent, in order."""
    seen: dict[str, None] = {}
    for word in identifier_words(_join_compounds(query)):
        w = word.lower()
        if w in seen or _is_filler(w):
            continue
        seen[w] = None
        if len(seen) >= max_words:
            break
    return list(seen)


def _walk_schema(schema: Any, depth: int = 0) -> Iterator[tuple[str, str]]:
    """(parameter name, its description and enum values) for every property, nested ones too."""
    if not isinstance(schema, Mapping) or depth > 4:
        return
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for pname, prop in props.items():
            texts: list[str] = []
            if isinstance(prop, Mapping):
                if isinstance(prop.get("description"), str):
                    texts.append(prop["description"])
                if isinstance(prop.get("enum"), list):
                    texts.extend(str(v) for v in prop["enum"] if isinstance(v, (str, int, float)))
            yield str(pname), " ".join(texts)
            yield from _walk_schema(prop, depth + 1)
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from _walk_schema(items, depth + 1)


def schema_text(input_schema: Any) -> tuple[str, str]:
    """The two parameter columns of a schema: (parameter names, parameter descriptions + enums)."""
    names: list[str] = []
    texts: list[str] = []
    for pname, text in _walk_schema(input_schema):
        names.append(_split_text(pname))
        if text:
            texts.append(_split_text(text))
    return " ".join(names), " ".join(texts)


def _as_doc(obj: Any) -> SearchDoc:
    if isinstance(obj, SearchDoc):
        return obj
    if isinstance(obj, Mapping):
        name = obj.get("name")
        description = obj.get("description") or ""
        schema = obj.get("input_schema", obj.get("inputSchema")) or {}
    else:
        name = getattr(obj, "name", None)
        description = getattr(obj, "description", "") or ""
        schema = getattr(obj, "input_schema", None) or {}
    if not isinstance(name, str) or not name:
        raise ValueError(f"a searchable tool needs a non-empty string name, got {name!r}")
    return SearchDoc(name=name, description=str(description), input_schema=schema)


# -- the index -----------------------------------------------------------------------------

_TOKENIZE = "porter unicode61 remove_diacritics 2"
_COLUMNS = ("name_words", "lead", "description", "param_names", "param_text")


class ToolSearchIndex:
    """An in-memory FTS5 index of tools. Build once, search many times; ``add`` upserts.

    Safe to share between threads (one lock around the connection).
    """

    def __init__(self, docs: Iterable[Any] = (), tuning: SearchTuning = DEFAULT_TUNING) -> None:
        import sqlite_utils  # deferred: ~90 ms, only paid by whoever builds an index

        self.tuning = tuning
        self._lock = threading.Lock()
        self._db = sqlite_utils.Database(sqlite3.connect(":memory:", check_same_thread=False))
        self._table = self._db.table("tools")
        self._table.create({"name": str, **{c: str for c in _COLUMNS}}, pk="name")
        self._table.enable_fts(_COLUMNS, fts_version="FTS5", tokenize=_TOKENIZE, create_triggers=True)
        # The same tokenizer on a scratch table: how we learn the stems of any text.
        self._db.execute(f"CREATE VIRTUAL TABLE probe USING fts5(text, tokenize='{_TOKENIZE}')")
        self._db.execute("CREATE VIRTUAL TABLE probe_terms USING fts5vocab(probe, instance)")
        self._weights = (tuning.name, tuning.lead, tuning.description, tuning.param_names, tuning.param_text)
        self._stem_cache: dict[str, tuple[str, ...]] = {}
        self._names: dict[int, str] = {}  # FTS rowid -> tool name
        self._terms: dict[str, frozenset[str]] = {}  # tool -> every stem it contains
        self._name_terms: dict[str, dict[str, float]] = {}  # tool -> stems of its name words, weighted
        self._df: Counter[str] = Counter()
        self._idf_cache: dict[str, float] = {}
        self._name_mass: dict[str, float] = {}  # tool -> sum of the IDF of its name stems
        self._verbs: dict[str, frozenset[str]] = {}  # tool -> stems of the words that say its action
        # name_key of a name form -> {tool: [(tier, form), ...]}
        self._exact: dict[str, dict[str, list[tuple[int, str]]]] = {}
        self._vocab: dict[tuple[str, int], list[str]] = {}  # (first letter, length) -> stems
        self.add(docs)

    # -- building --------------------------------------------------------------------------

    def add(self, docs: Iterable[Any]) -> None:
        """Add tools; a tool whose name is already indexed is replaced."""
        batch = {d.name: d for d in map(_as_doc, docs)}  # last one wins within a batch
        if not batch:
            return
        rows = []
        for doc in batch.values():
            param_names, param_text = schema_text(doc.input_schema)
            rows.append(
                {
                    "name": doc.name,
                    "name_words": _split_text(doc.name),
                    "lead": _split_text(lead(doc.description)),
                    "description": _split_text(doc.description),
                    "param_names": param_names,
                    "param_text": param_text,
                }
            )
        own, context = zip(*(_name_parts(r["name"]) for r in rows), strict=True)
        all_text = [" ".join(r[c] for c in _COLUMNS) for r in rows]
        n = len(rows)
        with self._lock:
            self._table.insert_all(rows, pk="name", replace=True)  # triggers keep tools_fts in step
            self._names = dict(self._db.execute("SELECT rowid, name FROM tools").fetchall())
            # A tool's verb: the first word of its own name (send_message) and of its description.
            verbs = [" ".join([*o.split()[:1], *r["lead"].split()[:1]]) for o, r in zip(own, rows, strict=True)]
            stems = self._analyze([*own, *context, *all_text, *verbs])
            for i, row in enumerate(rows):
                name = row["name"]
                self._df.subtract(self._terms.get(name, ()))
                self._terms[name] = frozenset(stems[2 * n + i])
                weights = dict.fromkeys(stems[n + i], _CONTEXT_NAME_WEIGHT)
                weights.update(dict.fromkeys(stems[i], 1.0))
                self._name_terms[name] = weights
                self._verbs[name] = frozenset(stems[3 * n + i])
                self._df.update(self._terms[name])
                for tier, form in name_forms(name):
                    key = name_key(form)
                    if key:
                        forms = self._exact.setdefault(key, {}).setdefault(name, [])
                        if (tier, form) not in forms:
                            forms.append((tier, form))
            self._df = +self._df  # drop the terms no tool has any more
            self._idf_cache.clear()
            self._name_mass.clear()
            self._vocab.clear()

    def _analyze(self, texts: Sequence[str]) -> list[list[str]]:
        """Stems of each text, as the index's own tokenizer makes them. Caller holds the lock."""
        conn = self._db.conn
        out: list[list[str]] = [[] for _ in texts]
        with conn:
            conn.executemany("INSERT INTO probe(rowid, text) VALUES (?, ?)", enumerate(texts))
            sql = "SELECT doc, group_concat(term, ' ') FROM probe_terms GROUP BY doc"
            for doc, terms in conn.execute(sql):
                out[doc] = terms.split(" ")
            conn.execute("DELETE FROM probe")
        return out

    def _stems(self, words: Sequence[str]) -> dict[str, tuple[str, ...]]:
        missing = [w for w in words if w not in self._stem_cache]
        if missing:
            if len(self._stem_cache) > 100_000:
                self._stem_cache.clear()
            for word, stems in zip(missing, self._analyze(missing), strict=True):
                self._stem_cache[word] = tuple(stems)
        return {w: self._stem_cache[w] for w in words}

    def _idf(self, term: str) -> float:
        idf = self._idf_cache.get(term)
        if idf is None:
            n, df = len(self._terms), self._df.get(term, 0)
            idf = self._idf_cache[term] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        return idf

    # -- reading ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._terms)

    def __contains__(self, name: object) -> bool:
        return name in self._terms

    def names(self) -> list[str]:
        return sorted(self._terms)

    def search(self, query: str, k: int = 5) -> list[SearchHit]:
        """The ``k`` best tools for a free-text query, best first. Never raises on odd input.

        Tools the query names exactly (:meth:`exact`) come first; then the BM25 ranking; then,
        when that runs out before ``k``, the fallback tier (chat filler put back, prefixes of
        the query's stems, near spellings of words no tool has).
        """
        if k <= 0 or not isinstance(query, str):
            return []
        return [SearchHit(name, round(score, 6)) for name, score in self._rank(query, k)]

    def exact(self, query: str) -> list[str]:
        """The tools a query names, best first: ``[]`` when it names none.

        A name is matched case-insensitively and whatever separates its words (``.``, ``_``,
        ``__``, ``-``, ``/``, ``:``, spaces, camelCase), in any of its forms (:func:`name_forms`):
        the internal name, its wire name, the server plus tool, the bare tool name. The query
        can be the name itself (``select:`` lists and quotes allowed, as Claude Code users
        write them), or mention it as a quoted string or an identifier-shaped word
        (``use gmail_work/send_message for this``). Order: where the query names the tool;
        then how closely it is spelt (as written, then but for case, then but for separators:
        ``calculate_final_velocity`` before ``calculateFinalVelocity``); then how fully (whole
        name, server plus tool, bare name: ``send_message`` puts a tool of that very name
        before ``mcp.x.send_message``); then the tool name, so the order is stable.
        """
        if not isinstance(query, str):
            return []
        with self._lock:
            return self._exact_hits(query[:_MAX_QUERY_CHARS])

    def _exact_hits(self, query: str) -> list[str]:
        if not self._exact:
            return []
        found: dict[str, tuple[int, int, int, str]] = {}
        phrases = name_phrases(query)
        if not SELECT.match(query):
            phrases += mentions(query, self._exact.__contains__)
        for place, phrase in enumerate(phrases):
            phrase = phrase.strip().strip(EDGE)
            for name, forms in self._exact.get(name_key(phrase), {}).items():
                spelling, tier = min((spelling_rank(phrase, form), tier) for tier, form in forms)
                found.setdefault(name, (place, spelling, tier, name))
        return sorted(found, key=found.__getitem__)

    def _rank(self, query: str, limit: int) -> list[tuple[str, float]]:
        query = query[:_MAX_QUERY_CHARS]
        with self._lock:
            exact = self._exact_hits(query)
        selected = SELECT.match(query)
        text = selected.group(1).replace(",", " ") if selected else query
        words = query_words(text, self.tuning.max_query_words)
        ranked = self._ranked(text, words, limit + len(exact), set(exact))
        if exact:
            top = 1.0 + self.tuning.coverage_weight + self.tuning.name_weight  # no BM25 score reaches it
            ranked = [(name, top + len(exact) - i) for i, name in enumerate(exact)] + ranked
        return ranked[:limit]

    def _ranked(self, text: str, words: list[str], limit: int, skip: set[str]) -> list[tuple[str, float]]:
        """BM25 plus re-rank, then the fallback tier; ``skip`` (the exact hits) left out."""
        pool = self.tuning.pool
        with self._lock:
            alternatives = {w: [r for r in related(w) if r not in words] for w in words}
            stems = self._stems([*words, *(r for rs in alternatives.values() for r in rs)])
            words = [w for w in words if stems[w]]  # a word the tokenizer drops cannot match
            concepts = self._concepts(words, alternatives, stems)
            rows: list[Any] = []
            want = max(limit, pool)
            if words:
                match = " OR ".join(f'"{w}"' for w in words)  # bare words: never FTS5 syntax
                rows = self._db.conn.execute(_RANK_SQL, (*self._weights, match, want)).fetchall()
                related_words = dict.fromkeys(r for w in words for r in alternatives[w] if stems[r])
                if related_words:  # tools that use only a related word join the pool, without BM25 credit
                    match = " OR ".join(f'"{w}"' for w in related_words)
                    seen = {rowid for rowid, _ in rows}
                    more = self._db.conn.execute(_RANK_SQL, (*self._weights, match, pool)).fetchall()
                    rows += [(rowid, 0.0) for rowid, _ in more if rowid not in seen]
            head: list[tuple[str, float]] = []
            tail: list[tuple[str, float]] = []
            if rows:
                total = sum(weight for weight, _, _ in concepts) or 1.0
                credit: dict[str, float] = {}  # query stem -> how much it counts toward a name
                for _, own, alt in concepts:
                    credit.update(dict.fromkeys((t for t in alt if t not in credit), RELATED_CREDIT))
                    credit.update(dict.fromkeys(own, 1.0))
                best = -rows[0][1] or 1.0
                for rowid, bm25 in rows[:pool]:
                    name = self._names[rowid]
                    terms = self._terms[name]
                    coverage = sum(weight * _covers(terms, own, alt) for weight, own, alt in concepts) / total
                    name_cov = self._name_coverage(name, credit)
                    acts = self.tuning.action_weight * _covers(self._verbs[name], *concepts[0][1:]) if concepts else 0.0
                    score = (
                        -bm25 / best
                        + self.tuning.coverage_weight * coverage
                        + self.tuning.name_weight * name_cov
                        + acts
                    )
                    head.append((name, score))
                tail = [(self._names[rowid], -bm25 / best) for rowid, bm25 in rows[pool:want]]
            head.sort(key=lambda ns: (-ns[1], ns[0]))
            ranked = [ns for ns in head + tail if ns[0] not in skip]
            if len(rows) < want and len(ranked) < limit:  # BM25 ran out: the fallback tier
                floor = min((score for _, score in ranked), default=1.0)
                seen = skip | {name for name, _ in ranked}
                ranked += self._fallback(text, words, stems, floor, seen, limit - len(ranked))
        return ranked[:limit]

    def _fallback(
        self,
        text: str,
        words: Sequence[str],
        stems: Mapping[str, tuple[str, ...]],
        floor: float,
        seen: set[str],
        limit: int,
    ) -> list[tuple[str, float]]:
        """Tools the plain ranking missed, scored below ``floor``. Caller holds the lock.

        An OR of: the query's chat filler (``help`` is a content word for a help tool), every
        stem of four letters or more as a prefix (``multipl*``), and for a word no tool has
        (a typo, a rarer form) the indexed stems within one edit of it (two from eight letters).
        """
        terms: list[str] = []
        filler = [w for w in dict.fromkeys(x.lower() for x in identifier_words(text)) if w in _CHAT_FILLER]
        terms += [f'"{w}"' for w in filler]
        query_stems = list(dict.fromkeys(st for w in words for st in stems[w]))
        terms += [f'"{st}"*' for st in query_stems if len(st) >= 4]
        unknown = [st for st in query_stems if len(st) >= 4 and not self._df.get(st)]
        for st in unknown[:_MAX_FUZZY_WORDS]:
            terms += [f'"{v}"' for v in self._near(st)]
        if not terms:
            return []
        match = " OR ".join(dict.fromkeys(terms))
        rows = self._db.conn.execute(_RANK_SQL, (*self._weights, match, limit + len(seen))).fetchall()
        if not rows:
            return []
        best = -rows[0][1] or 1.0
        out = []
        for rowid, bm25 in rows:
            name = self._names[rowid]
            if name not in seen:
                out.append((name, 0.5 * floor * -bm25 / best))
        return out[:limit]

    def _near(self, stem: str) -> list[str]:
        """Indexed stems within a small edit distance of ``stem`` (the same first letter: a typo
        rarely hits it, and the search stays a few dictionary lookups). Caller holds the lock."""
        if not self._vocab:
            for term in self._df:
                if term.isalpha():
                    self._vocab.setdefault((term[0], len(term)), []).append(term)
        budget = 1 if len(stem) < 8 else 2
        found = []
        for length in range(len(stem) - budget, len(stem) + budget + 1):
            found += [t for t in self._vocab.get((stem[0], length), ()) if within(stem, t, budget)]
        return sorted(found)[:8]

    def _concepts(
        self,
        words: Sequence[str],
        alternatives: Mapping[str, Sequence[str]],
        stems: Mapping[str, tuple[str, ...]],
    ) -> list[tuple[float, frozenset[str], frozenset[str]]]:
        """Per query word: its weight (the IDF of its own stems, or of its related words' when no
        tool uses its own), its stems, and the stems of its related words that some tool has.
        Caller holds the lock."""
        out = []
        for w in words:
            own = frozenset(stems[w])
            alt = frozenset(t for r in alternatives.get(w, ()) for t in stems[r] if self._df.get(t) and t not in own)
            known = [self._idf(t) for t in own if self._df.get(t)]
            weight = max(known) if known else max((self._idf(t) for t in alt), default=0.0)
            out.append((weight or max(self._idf(t) for t in own), own, alt))
        return out

    def _name_coverage(self, name: str, credit: Mapping[str, float]) -> float:
        """IDF-weighted share of the tool's name stems that the query contains (a related word
        at its lower credit), the tool's own name (its last dotted part) counting fully and its
        namespace (server, domain) half."""
        name_terms = self._name_terms[name]
        mass = self._name_mass.get(name)
        if mass is None:
            mass = self._name_mass[name] = sum(self._idf(t) * w for t, w in name_terms.items())
        if not mass:
            return 0.0
        return sum(self._idf(t) * w * credit.get(t, 0.0) for t, w in name_terms.items()) / mass


_MAX_QUERY_CHARS = 20_000
_MAX_FUZZY_WORDS = 8  # unknown words the fallback looks up near spellings for
_RANK_SQL = (
    "SELECT rowid, bm25(tools_fts, ?, ?, ?, ?, ?) AS score FROM tools_fts "
    "WHERE tools_fts MATCH ? ORDER BY score, rowid LIMIT ?"
)


_CONTEXT_NAME_WEIGHT = 0.5
_NAMESPACE_WORDS = frozenset({"mcp"})  # the prefix every MCP tool's internal name carries


def _name_parts(name: str) -> tuple[str, str]:
    """A tool name's own words (its last dotted part: ``send_message``) and its context (the
    dotted parts before it: server, domain), fillers and the ``mcp`` prefix left out."""
    head, _, own = name.rpartition(".")

    def kept(text: str) -> str:
        return " ".join(w for w in identifier_words(text) if not _is_filler(w) and w.lower() not in _NAMESPACE_WORDS)

    return kept(own), kept(head)


def _covers(terms: frozenset[str], own: frozenset[str], alt: frozenset[str]) -> float:
    """How fully a tool with ``terms`` covers one query word: 1 by its own stems, less by a related word's."""
    if own & terms:
        return 1.0
    return RELATED_CREDIT if alt & terms else 0.0


def _is_filler(word: str) -> bool:
    """Stop words, chat filler and bare numbers: words that say nothing about which tool."""
    w = word.lower()
    return w in _STOP_WORDS or w.isdigit()
