"""BM25 and rank fusion, written once (#44) for both rankings of the app:

* a conversation's messages (``recall/lexical.Bm25`` over its retrieval units, fused with
  the embedder's cosine by :func:`standardised` z-scores, ``recall/retriever.py``);
* one owner's long-term memories (``memory/memory_index.py``: BM25 over the live slots of
  an index changed in place, fused with the cosine by :func:`reciprocal_ranks`).

BM25 is Lucene's variant (``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``, ``K1``, ``B``);
term counts may be fractional (a neighbour's words that count for less).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np

K1 = 1.2
B = 0.75
# Long-term memories' reciprocal-rank fusion (bench/memories.py).
RRF_K = 60
DEPTH = 200  # how deep each of their rankings goes into the fusion

Posting = tuple[np.ndarray, np.ndarray]  # (document indexes, counts)


def length_norm(lengths: np.ndarray, average: float) -> np.ndarray:
    """Each document's ``K1 * (1 - B + B * length / average)`` (``length + K1`` for an
    empty corpus, whose documents have no length)."""
    return K1 * (1 - B + B * lengths / average) if average else lengths + K1


def bm25(
    terms: Iterable[str],
    posting: Callable[[str], Posting | None],
    norm: np.ndarray,
    documents: int,
    alive: np.ndarray | None = None,
) -> np.ndarray:
    """One float32 score per document (0 where no term occurs): ``posting(term)`` gives a
    term's postings, ``norm`` is :func:`length_norm`'s, ``documents`` the N of the idf.
    ``alive``: only those documents count (a term's df is theirs), the others score 0."""
    out = np.zeros(len(norm), dtype=np.float32)
    for term in set(terms):
        found = posting(term)
        if found is None:
            continue
        idx, tf = found
        if alive is not None:
            live = alive[idx]
            idx, tf = idx[live], tf[live]
            if not len(idx):
                continue
        idf = math.log(1 + (documents - len(idx) + 0.5) / (len(idx) + 0.5))
        out[idx] += idf * tf * (K1 + 1) / (tf + norm[idx])
    return out


def standardised(scores: np.ndarray, among: np.ndarray) -> np.ndarray:
    """Each score's distance from the mean of ``among``'s, in standard deviations (0 where
    they are all alike, and outside ``among``): a signal's share of a CombSUM fusion."""
    out = np.zeros(len(scores), dtype=np.float64)
    chosen = scores[among]
    if len(chosen) < 2:
        return out
    spread = float(chosen.std())
    if spread > 0:
        out[among] = (chosen - float(chosen.mean())) / spread
    return out


def reciprocal_ranks(count: int, weight: float, k: int = RRF_K) -> np.ndarray:
    """``weight / (k + rank)`` for ranks 1…count: a ranking's share of a reciprocal-rank
    fusion, in its order."""
    return weight / (k + np.arange(1, count + 1))
