"""LoCoMo across sessions (#27, ``bench/locomo.py --sessions``): each session of a LoCoMo
conversation is imported as its own Lumina conversation of one owner, and each question is
asked in a NEW conversation, so its evidence can only come from the owner's other
conversations. Counted, on a real server, by the two paths a run in a new conversation has:

* ``GET /api/v1/recall?agentId=assistant`` (recall across the owner's conversations, what
  the ``recall`` tool uses): a hit counts when it is an evidence turn of the question's own
  LoCoMo conversation (another dialogue's turn is a miss, as in the single-conversation
  table's "across all" row);
* the memories the new conversation's run was given (``GET /runs/{id}/context``'s
  ``memories``, each traced to the turn it was learnt from, ``conversationId`` + ``seq``).
  An import writes no memories and the demo extractor only keeps a few sentence shapes, so
  this row says how much the long-term memory path finds on its own in this set-up.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
from _servers import app_server

from bench import _app

AGENT = "assistant"


def _sessions(conv: dict) -> dict[str, list[tuple]]:
    """The conversation's turns by session (``D<session>:<n>`` ids), in order."""
    found: dict[str, list[tuple]] = {}
    for turn in conv["turns"]:
        found.setdefault(turn[0].split(":")[0], []).append(turn)
    return found


def measure(conversations: list[dict], workdir: Path, make_score: Callable[[], object]) -> dict:
    """The cross-session scores (``Score`` objects of bench/locomo.py) by row name."""
    names = ("across sessions: GET /recall?agentId= from a new conversation",
             "across sessions: memories in the new conversation's context")  # fmt: skip
    scores = {n: make_score() for n in names}
    root = workdir / "archive"
    where: dict[tuple[str, int], tuple[str, str]] = {}  # (uuid, seq) → (LoCoMo name, dia id)
    count = 0
    for conv in conversations:
        for session, turns in _sessions(conv).items():
            uuid = _app.write_archive(
                root,
                f"LoCoMo {conv['name']} {session}",
                [(user, text, when) for _, user, text, when in turns],
            )
            count += 1
            for seq, turn in enumerate(turns, start=1):
                where[(uuid, seq)] = (conv["name"], turn[0])
    imported: list[tuple[int, int, float]] = []
    with app_server(
        workdir / "server", seed=lambda url: imported.append(_app.import_and_embed(url, root))
    ) as server:
        print(f"across sessions: {count} session conversations, {imported[0][0]} messages "
              f"imported, {imported[0][1]} embedded")  # fmt: skip
        with httpx.Client(base_url=server.url, timeout=60) as client:
            for conv in conversations:
                for question, evidence in conv["questions"]:
                    _ask(client, conv["name"], question, evidence, where, scores, names)
    return scores


def _ask(client, name, question, evidence, where, scores, names) -> None:
    def mine(uuid: str | None, seq: int | None) -> str:
        found = where.get((uuid or "", seq or 0))
        return found[1] if found and found[0] == name else ""

    t0 = time.perf_counter()
    response = client.get(
        "/api/v1/recall", params={"q": question[:200], "agentId": AGENT, "limit": 10}
    )
    scores[names[0]].ms.append((time.perf_counter() - t0) * 1000)
    response.raise_for_status()
    ranked = [mine(i["conversationId"], i["seq"]) for i in response.json()["items"]]
    scores[names[0]].add(evidence, ranked)

    made = client.post("/api/v1/conversations", json={"agentId": AGENT})
    made.raise_for_status()
    t0 = time.perf_counter()
    run = client.post(
        f"/api/v1/agents/{AGENT}/execute/sync",
        json={"task": question[:2000], "conversationId": made.json()["uuid"]},
    )
    scores[names[1]].ms.append((time.perf_counter() - t0) * 1000)
    run.raise_for_status()
    context = client.get(f"/api/v1/runs/{run.json()['runId']}/context")
    context.raise_for_status()
    sources = []
    for memory_id in context.json().get("memories", []):
        found = client.get(f"/api/v1/memories/{memory_id}")
        if found.status_code == 200:
            sources.append(mine(found.json()["conversationId"], found.json()["seq"]))
    scores[names[1]].add(evidence, sources)
    client.delete(f"/api/v1/conversations/{made.json()['uuid']}")


def report(conversations: list[dict], single: dict, make_score: Callable[[], object]) -> None:
    """Measure across sessions and print it beside this run's single-conversation rows."""
    import tempfile

    from _common import table

    with tempfile.TemporaryDirectory(prefix="lumina-locomo-sessions-") as tmp:
        across = measure(conversations, Path(tmp), make_score)
    beside = ("Lumina recall route (HTTP)", "BM25 (bm25s)")
    rows = [single[n].row(n) for n in beside if n in single]
    rows += [score.row(name) for name, score in across.items()]
    print(table(["system (same questions; sessions as separate conversations below)",
                 "any@5", "all@5", "any@10", "all@10", "p50 ms", "p99 ms"], rows))  # fmt: skip
