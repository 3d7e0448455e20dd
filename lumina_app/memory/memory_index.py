"""One owner's active memories, searchable, changed in place as memories change (#27).

A memory is one retrieval unit: BM25 over its own words (no previous message, no date)
fused by reciprocal rank with the embedder's cosine (both written once, for recall too, in
``recall/ranking.py``). Unlike a conversation's index, which is rebuilt when the conversation grows,
this one takes a change (add, edit, pin, supersede, forget) as a slot appended or marked
dead, so a lookup after a change at 10,000 memories costs the change, not the owner's whole
history. Dead slots are compacted away once they outnumber the live ones.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

import numpy as np
import Stemmer

from lumina_app.domain.memories import Memory, MemoryStatus
from lumina_app.recall import text
from lumina_app.recall.ranking import DEPTH, bm25, length_norm, reciprocal_ranks
from lumina_app.recall.retriever import VECTOR_DTYPE

_MIN_CAPACITY = 64


class MemoryIndex:
    """The live memories of one (owner, agent) scope in slots: postings, lengths, vectors."""

    def __init__(
        self,
        found: Iterable[tuple[Memory, bytes | None]] = (),
        terms: Callable[[str], list[str]] = text.terms,
    ) -> None:
        """``terms``: how a memory's text is split (:func:`thread_terms` off the loop)."""
        self._slots: list[Memory | None] = []
        self._docs: list[Counter[str] | None] = []
        self._slot_of: dict[int, int] = {}
        self._postings: dict[str, tuple[list[int], list[int]]] = {}
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._alive = np.zeros(_MIN_CAPACITY, dtype=bool)
        self._lengths = np.zeros(_MIN_CAPACITY, dtype=np.float32)
        self._has_vector = np.zeros(_MIN_CAPACITY, dtype=bool)
        self._vectors: np.ndarray | None = None
        self._order: list[Memory] | None = None  # pinned first, then newest first
        self._rank: np.ndarray | None = None  # each slot's place in that order (ties)
        self.newest: datetime | None = None  # the latest ``updated_at`` taken in
        for memory, vector in found:
            self._append(memory, Counter(terms(memory.text)), _decoded(vector))
            self._seen(memory.updated_at)

    def __len__(self) -> int:
        return len(self._slot_of)

    @property
    def dead(self) -> int:
        return len(self._slots) - len(self._slot_of)

    def holds(self, memory_id: int, status: MemoryStatus, updated_at: datetime) -> bool:
        """Whether the index is already as a row of that status and time says."""
        slot = self._slot_of.get(memory_id)
        if status is not MemoryStatus.ACTIVE:
            return slot is None
        known = self._slots[slot] if slot is not None else None
        return known is not None and known.updated_at == updated_at

    # -- changes ------------------------------------------------------------------------

    def apply(self, changed: Sequence[tuple[Memory, bytes | None]]) -> None:
        """Take rows read since the last change: active ones in, any other status out."""
        for memory, vector in changed:
            if memory.status is MemoryStatus.ACTIVE:
                self.put(memory, vector)
            else:
                self.drop(memory.id)
                self._seen(memory.updated_at)
        if self.dead > max(len(self), _MIN_CAPACITY):
            self._compact()

    def put(self, memory: Memory, vector: bytes | None) -> None:
        """Add a memory or replace the one with its id (same text: only its pin and time)."""
        self._seen(memory.updated_at)
        slot = self._slot_of.get(memory.id)
        if slot is not None:
            known = self._slots[slot]
            if known == memory:
                return
            if known is not None and known.text == memory.text:
                self._slots[slot] = memory
                self._order = self._rank = None
                return
            self.drop(memory.id)
        self._append(memory, Counter(text.terms(memory.text)), _decoded(vector))

    def drop(self, memory_id: int) -> None:
        slot = self._slot_of.pop(memory_id, None)
        if slot is None:
            return
        self._slots[slot] = None
        self._docs[slot] = None
        self._alive[slot] = False
        self._order = self._rank = None

    def _seen(self, when: datetime) -> None:
        if self.newest is None or when > self.newest:
            self.newest = when

    def _append(self, memory: Memory, doc: Counter[str], vector: np.ndarray | None) -> None:
        slot = len(self._slots)
        self._grow(slot + 1)
        self._slots.append(memory)
        self._docs.append(doc)
        self._slot_of[memory.id] = slot
        self._alive[slot] = True
        self._lengths[slot] = sum(doc.values())
        for term, count in doc.items():
            idx, tfs = self._postings.setdefault(term, ([], []))
            idx.append(slot)
            tfs.append(count)
            self._arrays.pop(term, None)
        self._has_vector[slot] = self._store_vector(slot, vector)
        self._order = self._rank = None

    def _store_vector(self, slot: int, values: np.ndarray | None) -> bool:
        if values is None:
            return False
        if self._vectors is None:
            self._vectors = np.zeros((len(self._alive), len(values)), dtype=np.float32)
        if self._vectors.shape[1] != len(values):
            return False  # another embedder's vector: found by its words alone
        self._vectors[slot] = values
        return True

    def _grow(self, size: int) -> None:
        if size <= len(self._alive):
            return
        capacity = max(size, 2 * len(self._alive))
        extra = capacity - len(self._alive)
        self._alive = np.concatenate([self._alive, np.zeros(extra, dtype=bool)])
        self._lengths = np.concatenate([self._lengths, np.zeros(extra, dtype=np.float32)])
        self._has_vector = np.concatenate([self._has_vector, np.zeros(extra, dtype=bool)])
        if self._vectors is not None:
            pad = np.zeros((extra, self._vectors.shape[1]), dtype=np.float32)
            self._vectors = np.concatenate([self._vectors, pad])

    def _compact(self) -> None:
        """The live slots again, in order, without re-reading or re-tokenising them."""
        vectors = self._vectors
        live = [
            (m, d, vectors[s].copy() if vectors is not None and self._has_vector[s] else None)
            for s, (m, d) in enumerate(zip(self._slots, self._docs, strict=True))
            if m is not None and d is not None
        ]
        newest = self.newest
        self.__init__()
        for memory, doc, vector in live:
            self._append(memory, doc, vector)
        self.newest = newest

    # -- reads --------------------------------------------------------------------------

    def ordered(self) -> list[Memory]:
        """The live memories, pinned first, then the most recently changed, then by id."""
        if self._order is None:
            live = [m for m in self._slots if m is not None]
            live.sort(key=lambda m: (m.pinned, m.updated_at, m.id), reverse=True)
            self._order = live
            rank = np.full(len(self._slots), len(live), dtype=np.int64)
            for place, memory in enumerate(live):
                rank[self._slot_of[memory.id]] = place
            self._rank = rank
        return self._order

    def pinned(self) -> list[Memory]:
        return [m for m in self.ordered() if m.pinned]

    def ranked(
        self, query: str, vector: np.ndarray | None, weights: tuple[float, float], minimum: float
    ) -> list[tuple[Memory, float]]:
        """(memory, fused score) of the live memories matching ``query``, best first; equal
        scores keep the order of :meth:`ordered`, as a rebuilt index would."""
        self.ordered()
        size = len(self._slots)
        if not self._slot_of or not query.strip():
            return []
        alive = self._alive[:size]
        fused = np.zeros(size, dtype=np.float64)
        lexical = self._bm25(text.query_terms(query), alive)
        hits = np.flatnonzero(lexical > 0)
        order = self._best(hits, lexical[hits])
        fused[order] += reciprocal_ranks(len(order), weights[0])
        vectors = self._vectors
        if vector is not None and vectors is not None and vectors.shape[1] == vector.shape[0]:
            rows = np.flatnonzero(alive & self._has_vector[:size])
            # all live with a vector (the usual case): no copy of the matrix per query
            cosine = (vectors[:size] if len(rows) == size else vectors[rows]) @ vector
            close = cosine >= minimum
            best = self._best(rows[close], cosine[close])
            fused[best] += reciprocal_ranks(len(best), weights[1])
        found = np.flatnonzero(fused > 0)
        best_first = self._best(found, fused[found], depth=None)
        slots = self._slots
        return [(slots[i], round(float(fused[i]), 6)) for i in best_first]  # type: ignore[misc]

    def _best(self, slots: np.ndarray, scores: np.ndarray, depth: int | None = DEPTH) -> np.ndarray:
        """``slots`` by score, highest first, ties in the memories' order, cut to ``depth``."""
        assert self._rank is not None
        picked = slots[np.lexsort((self._rank[slots], -scores))]
        return picked[:depth] if depth is not None else picked

    def _bm25(self, terms: Sequence[str], alive: np.ndarray) -> np.ndarray:
        """Lucene's BM25 over the live slots (``recall/ranking.bm25``, as recall scores a
        conversation): the dead ones count for nothing, not even in a term's df."""
        count = len(self._slot_of)
        lengths = self._lengths[: len(alive)]
        average = float(lengths[alive].mean()) if count else 0.0
        return bm25(terms, self._posting, length_norm(lengths, average), count, alive)

    def _posting(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        cached = self._arrays.get(term)
        if cached is None:
            lists = self._postings.get(term)
            if lists is None:
                return None
            cached = (np.array(lists[0], dtype=np.int64), np.array(lists[1], dtype=np.float32))
            self._arrays[term] = cached
        return cached


def _decoded(vector: bytes | None) -> np.ndarray | None:
    return np.frombuffer(vector, dtype=VECTOR_DTYPE).astype(np.float32) if vector else None


_local = threading.local()


def thread_terms(value: str) -> list[str]:
    """``recall.text.terms`` with this thread's own stemmer (one is not safe to share)."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer.stemWords([w for w in text.words(value) if w not in text.STOPWORDS])
