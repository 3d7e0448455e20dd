"""BM25 (Lucene's variant, scored by ``recall/ranking.py``) over a fixed set of documents,
each a list of terms or a mapping of terms to weights (a term's count may be fractional: a
neighbour's words that count for less than the document's own)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence

import numpy as np

from lumina_app.recall.ranking import K1, B, bm25, length_norm

__all__ = ["K1", "B", "Bm25"]

Postings = dict[str, tuple[np.ndarray, np.ndarray]]  # term -> (document indexes, counts)
Doc = Sequence[str] | Mapping[str, float]  # terms in order, or each term's weighted count


def _counts(doc: Doc) -> Mapping[str, float]:
    return doc if isinstance(doc, Mapping) else Counter(doc)


def _length(doc: Doc) -> float:
    return float(sum(doc.values())) if isinstance(doc, Mapping) else float(len(doc))


class Bm25:
    """Postings built once; a query costs its terms' postings, not the corpus."""

    def __init__(self, docs: Sequence[Doc], only: Collection[str] | None = None) -> None:
        """``only``: the terms that will be asked for (one query's): postings for those
        alone, the same scores for a fraction of the cost."""
        postings = _postings(docs, 0, None if only is None else set(only))
        self._set(np.array([_length(d) for d in docs], dtype=np.float32), postings)

    def _set(self, lengths: np.ndarray, postings: Postings) -> None:
        self.size = len(lengths)
        self._lengths = lengths
        average = float(lengths.mean()) if self.size else 0.0
        self._norm = length_norm(lengths, average)
        self._postings = postings

    def extended(self, keep: int, docs: Sequence[Doc]) -> Bm25:
        """A new index of this one's first ``keep`` documents followed by ``docs``, scoring
        exactly as one built from them all. Only the added documents are counted: a
        conversation's next turn adds two, and rebuilding the postings of 10,000 took
        most of a second. This index is left as it was (a query may still be reading it)."""
        postings = dict(self._postings)
        if keep < self.size:  # documents dropped from the end (a replaced or deleted row)
            for term, (idx, tf) in self._postings.items():
                if idx[-1] >= keep:
                    cut = int(np.searchsorted(idx, keep))
                    if cut:
                        postings[term] = (idx[:cut], tf[:cut])
                    else:
                        del postings[term]
        for term, (idx, tf) in _postings(docs, keep).items():
            before = postings.get(term)
            postings[term] = (
                (idx, tf)
                if before is None
                else (np.concatenate([before[0], idx]), np.concatenate([before[1], tf]))
            )
        lengths = np.concatenate(
            [self._lengths[:keep], np.array([_length(d) for d in docs], dtype=np.float32)]
        )
        out = Bm25.__new__(Bm25)
        out._set(lengths, postings)
        return out

    def scores(self, query: Sequence[str]) -> np.ndarray:
        """One score per document (0 where no query term occurs)."""
        return bm25(query, self._postings.get, self._norm, self.size)


def _postings(docs: Sequence[Doc], first: int, only: set[str] | None = None) -> Postings:
    """Each term's (document index, count) pairs, the documents numbered from ``first``;
    with ``only``, those terms' alone."""
    found: dict[str, tuple[list[int], list[float]]] = {}
    for i, doc in enumerate(docs, start=first):
        for term, count in _counts(doc).items():
            if only is not None and term not in only:
                continue
            idx, tfs = found.setdefault(term, ([], []))
            idx.append(i)
            tfs.append(count)
    return {
        t: (np.array(i, dtype=np.int32), np.array(f, dtype=np.float32))
        for t, (i, f) in found.items()
    }
