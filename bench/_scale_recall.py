"""bench/scale.py's ranked-recall rows (issue #26): ``GET /api/v1/recall``'s service call
across the owner's conversations for natural questions, beside the candidate step it
replaced (one full-text search per query word, the best 100 of each) in the same run.

Both rank their candidates the same way (BM25 over units fused with the embedded model's
cosine, the query embedded as the route does); only where the candidates come from
differs. The bulk-loaded rows have no vectors, so the semantic half ranks nothing here:
docs/PERFORMANCE.md measures the vector side apart.
"""

from __future__ import annotations

import numpy as np
from _common import Loop, Samples, time_async
from _scale_data import AGENTS, OWNER

from bench import _app

QUESTIONS = {  # kind -> question (words of _scale_data.Texts: ranks 20-40, ~300, ~4,900)
    "frequent words": "How does the server handle the user data and the error?",
    "middling word": "What did we say about w0300 last time?",
    "rare word": "Did anyone mention w4900?",
    "mixed": "How do I deploy the key with w0300 and w4900?",
}
OLD_PER_WORD = 100  # the replaced step: the best this many of a search for each word


async def old_across(retriever, owner: str, query: str, agent_id: str | None, limit: int):
    """The replaced candidate step: a full ranked search per word, then the same ranking."""
    ids: dict[int, None] = {}
    for word in _app.retriever.prefixes(query):
        hits, _in_files = await _app.search.search_messages(
            retriever.db, [word], owner=owner, agent_id=agent_id, limit=OLD_PER_WORD
        )
        ids |= dict.fromkeys(h.message_id for h in hits)
    found = await _app.recall_rows.candidates(retriever.db, list(ids), retriever.model)
    if not found:
        return []
    rows = [c.row for c in found]
    index = _app.UnitIndex(rows, retriever.units, [c.previous for c in found])
    vector = await retriever._query_vector(query, retriever.embedder)
    allowed = np.ones(len(rows), dtype=bool)
    return index.ranked(
        query, vector, retriever.weights, allowed, _app.retriever._minimum(retriever.embedder)
    )[:limit]


async def recall_ops(store, n: int, budget: float, out: dict[str, Samples], hits: dict) -> None:
    """``recall across: <kind>`` (the route's service) and ``recall across, before: <kind>``."""
    embedder = _app.LocalEmbedder()
    await embedder.warm()
    retriever = _app.Retriever(store.db, embedder)
    service = _app.RecallService(store.reads.lookup, retriever, _app.FilePassages(store.db))
    loop = Loop(n, 2, budget_s=budget, min_n=5)
    cases = [(kind, q, None) for kind, q in QUESTIONS.items()]
    cases.append(("frequent words, one agent", QUESTIONS["frequent words"], AGENTS[3]))
    for kind, question, agent in cases:

        async def now(q=question, a=agent):
            return await service.everywhere(_app.LOCAL, q, agent_id=a, limit=10)

        async def before(q=question, a=agent):
            return await old_across(retriever, OWNER, q, a, 10)

        hits[f"recall across: {kind}"] = len(await now())
        out[f"recall across: {kind}"] = await time_async(now, loop)
        hits[f"recall across, before: {kind}"] = len(await before())
        out[f"recall across, before: {kind}"] = await time_async(before, loop)
    await embedder.close()
