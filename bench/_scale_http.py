"""``scale.py --http``: the search rows again over HTTP, the real app (``reflex run --env
prod``, backend only) serving the loaded database, with the service call measured in the
same run as the anchor (what HTTP, auth, the conversation's lookup and the snippets add).

Each sample picks the next of the loaded conversations (one conversation's search: any of
them, not one warmed one), so the cache holds what a user's conversations would."""

from __future__ import annotations

import itertools
import random
import tempfile
from pathlib import Path

import httpx
from _common import Loop, Samples, time_async, time_sync
from _scale_data import OWNER
from _servers import app_server

V1 = "/api/v1"


async def http_search_ops(
    store, loader, sync_url: str, queries: dict, more: dict, n: int, budget: float
):
    """{row name: Samples} for each query: the service call, then the same over HTTP, across
    all conversations and in one (a different one each time); for ``more``, in one only."""
    rng = random.Random(44)
    sample = rng.sample(loader.uuids, min(len(loader.uuids), 400))
    infos = {u: await store.reads.lookup.get_conversation(u) for u in sample}
    out: dict[str, Samples] = {}
    for kind, words in (queries | more).items():
        nxt = itertools.cycle(sample).__next__
        out[f"service, one conversation: {kind}"] = await time_async(
            lambda w=words, nxt=nxt: store.reads.search.search(
                w, owner=OWNER, conversation=infos[nxt()], limit=20
            ),
            Loop(n, 5, budget_s=budget, min_n=5),
        )
    with (
        tempfile.TemporaryDirectory(prefix="lumina-scale-http-") as tmp,
        app_server(Path(tmp), database_url=sync_url) as server,
        httpx.Client(base_url=server.url, timeout=30) as client,
    ):
        for kind, words in (queries | more).items():
            q = " ".join(words)

            def everywhere(q=q) -> None:
                client.get(f"{V1}/search", params={"q": q}).raise_for_status()

            nxt = itertools.cycle(sample).__next__

            def one(q=q, nxt=nxt) -> None:
                r = client.get(f"{V1}/conversations/{nxt()}/search", params={"q": q})
                r.raise_for_status()

            if kind not in more:
                out[f"HTTP, all conversations: {kind}"] = time_sync(
                    everywhere, Loop(n, 5, budget_s=budget, min_n=5)
                )
            out[f"HTTP, one conversation: {kind}"] = time_sync(
                one, Loop(n, 5, budget_s=budget, min_n=5)
            )
    return out
