"""BM25 (Lucene's variant) over a fixed set of documents, each a list of terms."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Sequence

import numpy as np

K1 = 1.2
B = 0.75


class Bm25:
    """Postings built once; a query costs its terms' postings, not the corpus."""

    def __init__(self, docs: Sequence[Sequence[str]], only: Collection[str] | None = None) -> None:
        """``only``: the terms that will be asked for (one query's): postings for those
        alone, the same scores for a fraction of the cost."""
        self.size = len(docs)
        lengths = np.array([len(d) for d in docs], dtype=np.float32)
        average = float(lengths.mean()) if self.size else 0.0
        self._norm = K1 * (1 - B + B * lengths / average) if average else lengths + K1
        postings: dict[str, tuple[list[int], list[int]]] = {}
        if only is not None:
            for term in set(only):
                counts = [(i, n) for i, doc in enumerate(docs) if (n := doc.count(term))]
                if counts:
                    postings[term] = ([i for i, _ in counts], [n for _, n in counts])
        for i, doc in enumerate(docs if only is None else ()):
            for term, count in Counter(doc).items():
                idx, tfs = postings.setdefault(term, ([], []))
                idx.append(i)
                tfs.append(count)
        self._postings = {
            t: (np.array(i, dtype=np.int32), np.array(f, dtype=np.float32))
            for t, (i, f) in postings.items()
        }

    def scores(self, query: Sequence[str]) -> np.ndarray:
        """One score per document (0 where no query term occurs)."""
        out = np.zeros(self.size, dtype=np.float32)
        for term in set(query):
            found = self._postings.get(term)
            if found is None:
                continue
            idx, tf = found
            idf = math.log(1 + (self.size - len(idx) + 0.5) / (len(idx) + 0.5))
            out[idx] += idf * tf * (K1 + 1) / (tf + self._norm[idx])
        return out
