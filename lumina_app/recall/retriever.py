"""The one retrieval path: a query's most relevant earlier messages, best first.

Two signals, each standardised over the rows being ranked and added with equal weight
(CombSUM of z-scores): BM25 over retrieval units, and the cosine of the query's embedding
with each message's stored vector. A signal whose best rows stand far above the rest
(names in chit-chat, lexically) therefore counts for more than one that barely separates
them, per query, with no weight chosen for a corpus. A unit is a message with what gives
it meaning: the date it was said (people ask "when") and the message before it, whose
words count at most as much as the message's own (a person's one-line fact after a
3,000-character answer is not buried by it; a short reply after a short question is read
with it). Measured on LoCoMo and on long technical chats (bench/recall.py,
docs/PERFORMANCE.md); what was tried and dropped is in the note of #42.

One conversation's index (terms, postings, vectors) is built from one indexed read and
kept while the conversation's last seq and vector count stay the same, so a question asked
again costs a version check. After a turn, only what changed is read and indexed: the
rows after the seq the index's rows were fingerprinted through (``recall_rows.said``:
counted by the database, nothing fetched) and the vectors embedded since; a change below
it (a row deleted, replaced, made final) reads the conversation whole again.

Across conversations, candidates come from the full-text index: each query word's newest
matches (a prefix of its stem; a bounded window, ``storage/sql/recall_candidates.py``),
ranked the same way.
"""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import logging
import operator
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

import numpy as np

from lumina_app.domain import MsgRole
from lumina_app.domain.ids import ConversationPk
from lumina_app.recall import text
from lumina_app.recall.embedders import Embedder, EmbedderChoice, query_vector
from lumina_app.recall.lexical import Bm25
from lumina_app.recall.ranking import standardised
from lumina_app.storage.sql import recall_candidates, recall_rows
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.recall_rows import RecallRow, Said

log = logging.getLogger(__name__)

# Messages: each signal's z-score, added with these weights (equal: see the docstring).
FUSION_WEIGHTS = (1.0, 1.0)
# Long-term memories' reciprocal-rank fusion (memory/memory_index.py; bench/memories.py):
# its k and depth are ranking.RRF_K and ranking.DEPTH.
LEXICAL_WEIGHT = 1.0
SEMANTIC_WEIGHT = 0.1
RANKED_CANDIDATES = 300  # across conversations: rows fetched and ranked, at most
VECTOR_DTYPE = np.float16
# Rows the cached conversation indexes may hold in all, besides at most ``cache_size``
# conversations: ~4 KB a row (its vector, text, terms, postings), so ~200 MB at most.
CACHE_ROWS = 50_000
# And the characters of their rows' text: 50,000 rows of long messages (a 256 KB question)
# would have held gigabytes within CACHE_ROWS. Text, terms and postings grow with it.
CACHE_CHARS = 50_000_000
# A conversation's index over more rows than this is built on a worker thread.
BUILD_IN_THREAD_ROWS = 2_000
# A cached index lacking more vectors than this (an import being embedded) is read again whole.
MAX_VECTORS_LOOKED_UP = 500
PREFIXES = 8  # words a question asks the full-text index for, across conversations


@dataclass(frozen=True, slots=True)
class Units:
    """What a retrieval unit carries besides its message."""

    previous: bool = True
    date: bool = True


@dataclass(frozen=True, slots=True)
class Recalled:
    message_id: int
    conversation_pk: ConversationPk
    seq: int
    role: MsgRole
    content: str
    created_at: datetime
    score: float


class UnitIndex:
    """Retrieval units of a fixed set of rows: their BM25 postings and vectors."""

    def __init__(
        self,
        rows: Sequence[RecallRow],
        units: Units,
        previous: Sequence[str] | None = None,
        query: str | None = None,
        reuse: UnitIndex | None = None,
    ) -> None:
        """``previous``: the text said before each row (default: the row before it here);
        ``query``: the one query this index will rank for (its terms alone are indexed);
        ``reuse``: an earlier index of the same conversation. Its leading rows that are
        still said the same (id, text, date) keep their terms and postings, and only the
        rows after them are indexed (a turn adds two rows to a conversation of thousands);
        a later row that is unchanged keeps its terms (stemming was most of a rebuild)."""
        self.rows = list(rows)
        self.seqs = [r.seq for r in self.rows]
        self.units = units
        self._whole = previous is None and query is None  # every term, rows in order
        kept = reuse._same_start(self.rows) if reuse and reuse._extends(self) else 0
        self.own_terms = _own_terms(self.rows, reuse, kept)
        if previous is None:  # the row before it here (a conversation's first has none)
            before_terms = [[], *self.own_terms[:-1]][: len(self.rows)]
        else:
            before_terms = [text.terms(before) if before else [] for before in previous]
        docs = [
            _unit(own, text.date_terms(row.created_at) if units.date else (),
                  before if units.previous else ())
            for row, own, before in zip(
                self.rows[kept:], self.own_terms[kept:], before_terms[kept:], strict=True
            )
        ]  # fmt: skip
        if kept:
            self.bm25 = reuse.bm25.extended(kept, docs)  # type: ignore[union-attr]
        else:
            self.bm25 = Bm25(docs, None if query is None else text.query_terms(query))
        if not (kept and reuse is not None and self._take_vectors(reuse, kept)):
            self._stack_vectors()

    @cached_property
    def chars(self) -> int:
        """The characters of its rows' text (what a cache of indexes is bounded by too)."""
        return sum(len(r.content) for r in self.rows)

    def _stack_vectors(self) -> None:
        """The vectors of the most common size, one matrix (never mix models' sizes)."""
        sizes = Counter(len(r.vector) for r in self.rows if r.vector)
        self._sizes = len(sizes)
        size = sizes.most_common(1)[0][0] if sizes else 0
        with_vector = [i for i, r in enumerate(self.rows) if r.vector and len(r.vector) == size]
        self.vector_rows = np.array(with_vector, dtype=np.int64)
        self.vectors = _matrix(self.rows, with_vector) if with_vector else None

    def _take_vectors(self, earlier: UnitIndex, kept: int) -> bool:
        """Take ``earlier``'s matrix rows for its first ``kept`` rows, which still carry the
        same vectors, and add the rest: the matrix :meth:`_stack_vectors` would make (a
        conversation of 10,000 turned 10,000 buffers into one matrix again per turn).
        False where it cannot be sure to (mixed sizes, a vector gone or replaced)."""
        if earlier.vectors is None or earlier._sizes != 1:
            return False
        size = earlier.vectors.shape[1] * np.dtype(VECTOR_DTYPE).itemsize
        taken = int(np.searchsorted(earlier.vector_rows, kept))
        mine, theirs = self.rows, earlier.rows
        if any(
            (a := mine[i].vector) is not (b := theirs[i].vector) and a != b
            for i in earlier.vector_rows[:taken].tolist()
        ):
            return False
        had = set(earlier.vector_rows[:taken].tolist())
        added = [i for i in range(kept) if mine[i].vector and i not in had]
        added += [i for i in range(kept, len(mine)) if mine[i].vector]
        if any(len(mine[i].vector) != size for i in added):  # type: ignore[arg-type]
            return False
        self._sizes = 1
        if not added:
            self.vector_rows = earlier.vector_rows[:taken]
            self.vectors = earlier.vectors[:taken]
            return True
        fresh = _matrix(mine, added)
        rows = np.concatenate([earlier.vector_rows[:taken], np.array(added, dtype=np.int64)])
        order = np.argsort(rows, kind="stable")
        self.vector_rows = rows[order]
        self.vectors = np.concatenate([earlier.vectors[:taken], fresh])[order]
        return True

    def _extends(self, later: UnitIndex) -> bool:
        """Whether ``later`` may take this index's leading documents as they are: both
        index every term of a conversation's rows in order, each unit made the same way."""
        return self._whole and later._whole and self.units == later.units

    def _same_start(self, rows: Sequence[RecallRow]) -> int:
        """How many leading ``rows`` are this index's, said the same (id, text, date): a
        row's unit holds its own words, its date and the words of the row before it."""
        n = min(len(rows), len(self.rows))
        if list(map(_said_as, rows[:n])) == list(map(_said_as, self.rows[:n])):
            return n
        return next(i for i in range(n) if _said_as(rows[i]) != _said_as(self.rows[i]))

    def ranked(
        self,
        query: str,
        vector: np.ndarray | None,
        weights: tuple[float, float],
        allowed: np.ndarray,
        min_similarity: float = 0.0,
    ) -> list[tuple[int, float]]:
        """(row index, fused score) of the allowed rows that share a word with the query
        or are close to it in meaning (cosine ≥ ``min_similarity``), best first."""
        lexical = self.bm25.scores(text.query_terms(query)).astype(np.float64)
        lexical[~allowed] = 0
        eligible = allowed & (lexical > 0)
        fused = weights[0] * standardised(lexical, allowed)
        if vector is not None and self.vectors is not None and weights[1] > 0:
            usable = allowed[self.vector_rows]
            rows = self.vector_rows[usable]
            if len(rows) and self.vectors.shape[1] == vector.shape[0]:
                # all allowed (a memory search): no copy of the whole matrix per query
                vectors = self.vectors if len(rows) == len(usable) else self.vectors[usable]
                cosine = (vectors @ vector).astype(np.float64)
                eligible[rows[cosine >= min_similarity]] = True
                # a row without a vector (not embedded yet) stands at the mean: z = 0
                semantic = np.zeros(len(self.rows), dtype=np.float64)
                semantic[rows] = standardised(cosine, np.ones(len(rows), dtype=bool))
                fused += weights[1] * semantic
        found = np.flatnonzero(eligible)
        best_first = found[np.argsort(-fused[found], kind="stable")]
        return [(int(i), float(fused[i])) for i in best_first]


def _matrix(rows: Sequence[RecallRow], indexes: Sequence[int]) -> np.ndarray:
    """These rows' stored vectors, one float32 matrix (each row has a vector)."""
    stored = [np.frombuffer(rows[i].vector, dtype=VECTOR_DTYPE) for i in indexes]  # type: ignore[arg-type]
    return np.vstack(stored).astype(np.float32)


def _unit(own: Sequence[str], date: Sequence[str], before: Sequence[str]) -> dict[str, float]:
    """A retrieval unit's weighted terms: its own and its date's, and the message before
    it scaled so that it weighs at most as much as the message's own words."""
    unit: dict[str, float] = dict(Counter(own))
    for term in date:
        unit[term] = unit.get(term, 0.0) + 1.0
    if before:
        share = min(1.0, max(len(own), 1) / len(before))
        for term, count in Counter(before).items():
            unit[term] = unit.get(term, 0.0) + share * count
    return unit


class Retriever:
    """Ranked recall over the cold store, with an embedder for the semantic half."""

    def __init__(
        self,
        db: SQLDatabase,
        embedder: Embedder | None,
        *,
        units: Units | None = None,
        weights: tuple[float, float] = FUSION_WEIGHTS,
        cache_size: int = 256,
        cache_rows: int = CACHE_ROWS,
        cache_chars: int = CACHE_CHARS,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.units = units or Units()
        self.weights = weights
        # a conversation's index, under its version, and what its rows were fingerprinted as
        self._cache: OrderedDict[int, tuple[tuple[object, ...], UnitIndex, Said]] = OrderedDict()
        self._cache_size = cache_size
        self._cache_rows = cache_rows
        self._cached_rows = 0  # rows held by the cached indexes, all together
        self._cache_chars = cache_chars
        self._cached_chars = 0  # and the characters of their text
        self._agents: OrderedDict[ConversationPk, str] = OrderedDict()  # a conversation's agent
        # told of a conversation read with rows lacking vectors (imported, forked, failed)
        self.on_missing: Callable[[ConversationPk], None] | None = None
        # the agents' own embedders (config.json "embeddings"); None: self.embedder for all
        self.choice: EmbedderChoice | None = None

    @property
    def model(self) -> str:
        """The server's embedder (an agent may have its own: :meth:`embedder_of`)."""
        return self.embedder.name if self.embedder else ""

    async def in_conversation(
        self,
        conversation_pk: ConversationPk,
        query: str,
        *,
        limit: int = 10,
        before_seq: int | None = None,
        exclude_seqs: Collection[int] = (),
    ) -> list[Recalled]:
        """The conversation's ``limit`` messages most relevant to ``query``, best first;
        only rows before ``before_seq`` and not in ``exclude_seqs`` when given."""
        embedder = await self.embedder_of(conversation_pk)
        vector = await self._query_vector(query, embedder)  # first: it may learn the size
        index = await self._index(conversation_pk, embedder)
        if not index.rows:
            return []
        seqs = np.array(index.seqs)
        allowed = ~np.isin(seqs, np.fromiter(exclude_seqs, dtype=np.int64))
        if before_seq is not None:
            allowed &= seqs < before_seq
        ranked = index.ranked(query, vector, self.weights, allowed, _minimum(embedder))[:limit]
        return [_recalled(index.rows[i], score) for i, score in ranked]

    async def across(
        self, owner: str, query: str, *, agent_id: str | None = None, limit: int = 10
    ) -> list[tuple[str, str, Recalled]]:
        """(conversation uuid, title, message) of an owner's most relevant messages. The
        query is embedded by the agent's embedder if one is named, else the server's: a
        vector another embedder made is not compared (its row ranks by its words)."""
        embedder = self._for_agent(agent_id) if agent_id is not None else self.embedder
        # the query is embedded (in a thread) while the index is read (in another)
        embedding = asyncio.ensure_future(self._query_vector(query, embedder))
        try:
            windows = await recall_candidates.newest_matches(
                self.db,
                prefixes(query),
                owner=owner,
                agent_id=agent_id,
                window=recall_candidates.CANDIDATE_WINDOW,
            )
        finally:
            vector = await embedding
        likeliest = _likeliest(windows, RANKED_CANDIDATES)
        found = await recall_rows.candidates(self.db, likeliest, _name(embedder))
        if not found:
            return []
        rows = [c.row for c in found]
        index = UnitIndex(rows, self.units, [c.previous for c in found], query)
        allowed = np.ones(len(rows), dtype=bool)
        ranked = index.ranked(query, vector, self.weights, allowed, _minimum(embedder))[:limit]
        return [
            (found[i].conversation_uuid, found[i].conversation_title, _recalled(rows[i], score))
            for i, score in ranked
        ]

    async def embedder_of(self, conversation_pk: ConversationPk) -> Embedder | None:
        """The embedder that makes and reads this conversation's vectors (its agent's)."""
        if self.choice is None:
            return self.embedder
        agent_id = self._agents.get(conversation_pk)
        if agent_id is None:
            agent_id = await recall_rows.agent_of(self.db, conversation_pk)
            self._agents[conversation_pk] = agent_id  # a conversation never changes agent
            while len(self._agents) > 16 * self._cache_size:
                self._agents.popitem(last=False)
        return self._for_agent(agent_id)

    def _for_agent(self, agent_id: str) -> Embedder | None:
        return self.embedder if self.choice is None else self.choice.for_agent(agent_id)

    async def _query_vector(self, query: str, embedder: Embedder | None) -> np.ndarray | None:
        return None if self.weights[1] <= 0 else await query_vector(embedder, query, "recall")

    async def _index(self, conversation_pk: ConversationPk, embedder: Embedder | None) -> UnitIndex:
        model = _name(embedder)
        key = (model, *await recall_rows.version(self.db, conversation_pk, model))
        cached = self._cache.get(conversation_pk)
        if cached and cached[0] == key:
            self._cache.move_to_end(conversation_pk)
            return cached[1]
        last_seq = int(key[1]) if len(key) > 1 else 0  # type: ignore[call-overload]
        rows, said = None, None
        if cached is not None and cached[0][0] == model:
            rows, said = await self._changed_rows(
                conversation_pk, model, cached[1], cached[2], last_seq
            )
        if rows is None:  # read whole; what it reads is fingerprinted first (it may change)
            if said is None:
                said = (await recall_rows.said(self.db, conversation_pk, last_seq))[0]
            rows = await recall_rows.conversation_rows(self.db, conversation_pk, model)
        reuse = cached[1] if cached else None
        if len(rows) > BUILD_IN_THREAD_ROWS:  # seconds of work at 10,000: not on the loop
            index = await asyncio.to_thread(UnitIndex, rows, self.units, reuse=reuse)
        else:
            index = UnitIndex(rows, self.units, reuse=reuse)
        if self.on_missing and embedder is not None and len(index.vector_rows) < len(rows):
            self.on_missing(conversation_pk)
        self._keep(conversation_pk, key, index, said)
        return index

    async def _changed_rows(
        self,
        conversation_pk: ConversationPk,
        model: str,
        earlier: UnitIndex,
        said: Said,
        last_seq: int,
    ) -> tuple[list[RecallRow] | None, Said]:
        """The conversation's rows now, read as what changed since ``earlier`` was read:
        the rows after the seq it was fingerprinted through, and the vectors its rows
        lacked (embedded since). None if anything up to that seq changed (a row replaced,
        deleted or made final), or too many vectors are missing: then it is read whole.
        A turn at 10,000 messages read all 10,000 rows again to add two."""
        fresh, now = await recall_rows.said(self.db, conversation_pk, last_seq, said.through)
        if now != said:
            return None, fresh
        kept = earlier.rows[: bisect.bisect_right(earlier.seqs, said.through)]
        lacking = [r.message_id for r in kept if r.vector is None]
        if len(lacking) > MAX_VECTORS_LOOKED_UP:
            return None, fresh
        added = await recall_rows.vectors_of(self.db, lacking, model)
        after = await recall_rows.rows_after(self.db, conversation_pk, model, said.through)
        if added:
            kept = [
                dataclasses.replace(r, vector=added[r.message_id]) if r.message_id in added else r
                for r in kept
            ]
        return [*kept, *after], fresh

    def _keep(
        self, conversation_pk: ConversationPk, key: tuple, index: UnitIndex, said: Said
    ) -> None:
        """Cache ``index``, then drop the least recently used until every bound holds: a
        count of conversations alone let the cache grow with its conversations' length."""
        replaced = self._cache.pop(conversation_pk, None)
        if replaced is not None:
            self._cached_rows -= len(replaced[1].rows)
            self._cached_chars -= replaced[1].chars
        if len(index.rows) > self._cache_rows or index.chars > self._cache_chars:
            return  # alone over a budget: built for this read only
        self._cache[conversation_pk] = (key, index, said)
        self._cached_rows += len(index.rows)
        self._cached_chars += index.chars
        while (
            len(self._cache) > self._cache_size
            or self._cached_rows > self._cache_rows
            or self._cached_chars > self._cache_chars
        ):
            _pk, (_key, dropped, _print) = self._cache.popitem(last=False)
            self._cached_rows -= len(dropped.rows)
            self._cached_chars -= dropped.chars


def _own_terms(rows: Sequence[RecallRow], reuse: UnitIndex | None, kept: int) -> list[list[str]]:
    """Each row's own terms: the first ``kept`` as ``reuse`` has them, a later row's taken
    from it where its text is unchanged, the rest stemmed."""
    if reuse is None:
        return [text.terms(r.content) for r in rows]
    # each later row's text and its own terms, by message id
    later = zip(reuse.rows[kept:], reuse.own_terms[kept:], strict=True)
    known = {r.message_id: (r.content, t) for r, t in later}
    out = reuse.own_terms[:kept]
    for r in rows[kept:]:
        found = known.get(r.message_id)
        out.append(found[1] if found and found[0] == r.content else text.terms(r.content))
    return out


_said_as = operator.attrgetter("message_id", "content", "created_at")


def _name(embedder: Embedder | None) -> str:
    return embedder.name if embedder else ""


def _minimum(embedder: Embedder | None) -> float:
    return embedder.min_similarity if embedder else 0.0


def _likeliest(windows: Sequence[Sequence[int]], keep: int) -> list[int]:
    """The ``keep`` ids most worth ranking, from each word's newest matches: a match of a
    rarer word (a shorter list) weighs more, one of several words adds up; newer first
    among equals. A rare word's matches are all kept; a frequent word's fill what is left."""
    weight: dict[int, float] = {}
    for ids in windows:
        share = 1.0 / len(ids) if ids else 0.0
        for i in ids:
            weight[i] = weight.get(i, 0.0) + share
    return sorted(weight, key=lambda i: (-weight[i], -i))[:keep]


def _recalled(row: RecallRow, score: float) -> Recalled:
    return Recalled(row.message_id, row.conversation_pk, row.seq, row.role, row.content,
                    row.created_at, round(score, 6))  # fmt: skip


def prefixes(query: str) -> list[str]:
    """What the full-text index is asked for: each content word cut to what it shares with
    its stem ("happiness" → "happi" → "happ"), so the index's prefix match finds its forms.
    At most ``PREFIXES``: a longer question's longest words (the likelier to be rare; a
    long question's first words are often its preamble)."""
    said = text.words(query)
    words = list(dict.fromkeys(w for w in said if w not in text.STOPWORDS)) or said[:PREFIXES]
    if len(words) > PREFIXES:
        longest = set(sorted(words, key=len, reverse=True)[:PREFIXES])
        words = [w for w in words if w in longest][:PREFIXES]
    out = []
    for word in words:
        stem = text.stem(word)
        shared = 0
        while shared < min(len(word), len(stem)) and word[shared] == stem[shared]:
            shared += 1
        common = word[:shared]
        out.append(common if len(common) >= 3 else word)
    return list(dict.fromkeys(out))[:PREFIXES]
