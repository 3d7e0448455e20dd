"""Recall on conversations of different shapes (#42): does the evidence come back in the top k?

One table, every corpus side by side, each run through the real server over HTTP
(``GET /api/v1/conversations/{uuid}/recall?q=&limit=10``) after an archive import and the
CLI's embedding, with the anchors computed in this process on the same messages and
questions:

* LoCoMo (short chit-chat turns; ``../shared/data/locomo``, the development half; give
  the upstream ``locomo10.json`` or a folder with ``--locomo`` and ``--locomo-only`` /
  ``--locomo-skip`` to measure the held-out half);
* long technical chats between a person and an assistant (bench/_longchat_data.py, a
  generated corpus: development seeds 1-12, held-out seeds 101-112; 100K tokens a chat on
  average), with knowledge updates: "updated@10" counts the newest statement of a changed
  fact in the top 10.

Anchors: plain BM25 (``bm25s``, English stopwords, one message a document), the shipped
embedder alone (the cosine of each message's own text), and the equal-weight reciprocal-
rank fusion of the two. Then the latency targets: recall p50 over HTTP on one conversation
of 2,000 long messages, and the first recall after its import, before any vector exists.
"""

from __future__ import annotations

import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _longchat_data
import httpx
import numpy as np
from _common import ROOT, header, note, parse_args, table
from _locomo_data import load
from _servers import app_server

from bench import _app

K = 10
RRF_K = 60


def options(parser) -> None:
    parser.add_argument("--locomo", default=str(ROOT.parent / "shared/data/locomo"),
                        help="LoCoMo: a folder of conversation files or locomo10.json")  # fmt: skip
    parser.add_argument("--locomo-only", default="", help="LoCoMo sample ids (comma list)")
    parser.add_argument("--locomo-skip", default="", help="LoCoMo sample ids to leave out")
    parser.add_argument("--dev-seeds", default="1-12", help="long chats, development seeds")
    parser.add_argument("--held-seeds", default="101-112", help="long chats, held-out seeds")
    parser.add_argument("--turns", default="80,160,320", help="long chats' exchanges, cycled")
    parser.add_argument("--latency-messages", type=int, default=2000,
                        help="the latency conversation's messages (0: skip)")  # fmt: skip


class Score:
    """any@5, any@10, all@10 and updated@10 of one system on one corpus."""

    def __init__(self) -> None:
        self.n = self.any5 = self.any10 = self.all10 = self.updates = self.updated = 0
        self.ms: list[float] = []

    def add(self, evidence: set[str], ranked: list[str], updated: str = "") -> None:
        self.n += 1
        self.any5 += bool(evidence & set(ranked[:5]))
        self.any10 += bool(evidence & set(ranked[:K]))
        self.all10 += evidence <= set(ranked[:K])
        if updated:
            self.updates += 1
            self.updated += updated in ranked[:K]

    def cells(self) -> list[str]:
        if not self.n:
            return ["-"] * 4
        upd = f"{self.updated / self.updates:.3f}" if self.updates else "-"
        return [f"{self.any5 / self.n:.3f}", f"{self.any10 / self.n:.3f}",
                f"{self.all10 / self.n:.3f}", upd]  # fmt: skip


def _seeds(spec: str) -> list[int]:
    out: list[int] = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def _ids(listed: str) -> set[str]:
    return {i.strip() for i in listed.split(",") if i.strip()}


def corpora(args) -> dict[str, list[dict]]:
    """Each corpus: conversations of ``messages`` (id, from user?, text, time) and
    ``questions`` (text, evidence ids, updated id or "")."""
    found: dict[str, list[dict]] = {}
    locomo = load(Path(args.locomo), only=_ids(args.locomo_only), skip=_ids(args.locomo_skip))
    found["LoCoMo"] = [
        {"name": f"LoCoMo {c['name']}", "messages": c["turns"],
         "questions": [(q, ev, "") for q, ev in c["questions"]]}
        for c in locomo
    ]  # fmt: skip
    turns = [int(t) for t in args.turns.split(",")]
    for label, spec in (
        ("long chats (dev)", args.dev_seeds),
        ("long chats (held-out)", args.held_seeds),
    ):
        convs = _longchat_data.conversations(_seeds(spec), turns) if spec else []
        found[label] = [
            {"name": c.name, "messages": [(m.id, m.user, m.text, m.when) for m in c.messages],
             "questions": [(q.text, q.evidence, q.updated) for q in c.questions]}
            for c in convs
        ]  # fmt: skip
    return {k: v for k, v in found.items() if v}


def anchors(conversations: list[dict], scores: dict[str, Score]) -> None:
    import bm25s

    embedder = _app.LocalEmbedder()
    for conv in conversations:
        ids = [m[0] for m in conv["messages"]]
        texts = [m[2] for m in conv["messages"]]
        bm = bm25s.BM25()
        bm.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
        vectors = embedder.embed_now(texts)
        for question, evidence, updated in conv["questions"]:
            found, _ = bm.retrieve(bm25s.tokenize([question], stopwords="en", show_progress=False),
                                   k=min(len(ids), 100), show_progress=False)  # fmt: skip
            lexical = [int(i) for i in found[0]]
            semantic = [int(i) for i in np.argsort(-(vectors @ embedder.embed_now([question])[0]))]
            fused: dict[int, float] = {}
            for ranking in (lexical, semantic[:100]):
                for rank, i in enumerate(ranking, start=1):
                    fused[i] = fused.get(i, 0.0) + 1 / (RRF_K + rank)
            both = sorted(fused, key=lambda i: -fused[i])
            for name, ranked in (("BM25 (bm25s), one message a document", lexical),
                                 ("the shipped embedder alone", semantic),
                                 ("equal-weight RRF of the two", both)):  # fmt: skip
                scores[name].add(evidence, [ids[i] for i in ranked[:K]], updated)


ROUTE = "Lumina recall route (HTTP)"
ACROSS = "Lumina across all (GET /recall; elsewhere = a miss)"
NAMES = [ROUTE, ACROSS, "BM25 (bm25s), one message a document", "the shipped embedder alone",
         "equal-weight RRF of the two"]  # fmt: skip


def measure(
    label: str, conversations: list[dict], workdir: Path, *, across: bool
) -> dict[str, Score]:
    """``across``: also ask ``GET /recall`` (all the owner's conversations; an answer from
    another one is a miss). Not for the generated chats: each plants the same kinds of
    facts ("when does my first sprint end?"), so every chat holds a true answer."""
    scores = {n: Score() for n in NAMES}
    root = workdir / "archive"
    for conv in conversations:
        conv["uuid"] = _app.write_archive(
            root, conv["name"], [(user, text, when) for _, user, text, when in conv["messages"]]
        )
    imported: list[tuple[int, int, float]] = []
    with app_server(
        workdir / "server", seed=lambda url: imported.append(_app.import_and_embed(url, root))
    ) as server:
        note(f"{label}: imported {imported[0][0]} messages, embedded {imported[0][1]}")
        with httpx.Client(base_url=server.url, timeout=60) as client:
            for conv in conversations:
                ids = [m[0] for m in conv["messages"]]
                url = f"/api/v1/conversations/{conv['uuid']}/recall"
                client.get(url, params={"q": "warm up", "limit": K}).raise_for_status()
                for question, evidence, updated in conv["questions"]:
                    t0 = time.perf_counter()
                    response = client.get(url, params={"q": question[:2000], "limit": K})
                    scores[ROUTE].ms.append((time.perf_counter() - t0) * 1000)
                    response.raise_for_status()
                    ranked = [ids[item["seq"] - 1] for item in response.json()["items"]]
                    scores[ROUTE].add(evidence, ranked, updated)
                    if not across:
                        continue
                    t0 = time.perf_counter()
                    response = client.get(
                        "/api/v1/recall", params={"q": question[:2000], "limit": K}
                    )
                    scores[ACROSS].ms.append((time.perf_counter() - t0) * 1000)
                    response.raise_for_status()
                    ranked = [ids[i["seq"] - 1] if i["conversationId"] == conv["uuid"] else ""
                              for i in response.json()["items"]]  # fmt: skip
                    scores[ACROSS].add(evidence, ranked, updated)
    anchors(conversations, scores)
    return scores


def latency(messages: int, workdir: Path) -> list[str]:
    """Recall p50/p99 over HTTP on one conversation of ``messages`` long messages, and the
    first recall after its import (no vector written yet)."""
    conv = _longchat_data.conversation(7, messages // 2)
    root = workdir / "archive"
    uuid = _app.write_archive(root, conv.name, [(m.user, m.text, m.when) for m in conv.messages])
    questions = [q.text for q in conv.questions] * 10
    lines = []
    for embedded in (False, True):
        with (
            app_server(
                workdir / f"server-{embedded}",
                seed=lambda url, e=embedded: _app.import_and_embed(url, root, embed=e),
            ) as server,
            httpx.Client(base_url=server.url, timeout=60) as client,
        ):
            url = f"/api/v1/conversations/{uuid}/recall"
            t0 = time.perf_counter()
            client.get(url, params={"q": questions[0], "limit": K}).raise_for_status()
            first = (time.perf_counter() - t0) * 1000
            if not embedded:
                lines.append(f"first recall after importing {messages} messages, no vectors "
                             f"yet: {first:.0f} ms (target ≤ 2,000 ms)")  # fmt: skip
                continue
            ms = []
            for q in questions:
                t0 = time.perf_counter()
                client.get(url, params={"q": q, "limit": K}).raise_for_status()
                ms.append((time.perf_counter() - t0) * 1000)
            ordered = sorted(ms)
            chars = sum(len(m.text) for m in conv.messages) // len(conv.messages)
            lines.append(f"recall over HTTP, {messages} messages of {chars} characters on "
                         f"average, embedded: first {first:.0f} ms, then p50 "
                         f"{statistics.median(ms):.1f} ms, p99 "
                         f"{ordered[int(len(ordered) * 0.99)]:.1f} ms over {len(ms)} "
                         "(target p50 ≤ 50 ms)")  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__, options, {"dev_seeds": "1-2", "held_seeds": "", "turns": "40",
                                         "locomo_only": "26", "latency_messages": 200},
                      argv)  # fmt: skip
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    header("recall.py", args, f"httpx {httpx.__version__}")
    found = corpora(args)
    results: dict[str, dict[str, Score]] = {}
    with tempfile.TemporaryDirectory(prefix="lumina-recall-") as tmp:
        for i, (label, conversations) in enumerate(found.items()):
            results[label] = measure(
                label, conversations, Path(tmp) / f"corpus-{i}", across=label == "LoCoMo"
            )
        extra = (
            latency(args.latency_messages, Path(tmp) / "latency") if args.latency_messages else []
        )
    heads = ["system"]
    for label, conversations in found.items():
        n = sum(len(c["questions"]) for c in conversations)
        msgs = sum(len(c["messages"]) for c in conversations)
        heads += [f"{label} any@5", f"any@10 ({len(conversations)} chats, {msgs} msgs, {n} q)",
                  "all@10", "updated@10"]  # fmt: skip
    rows = [[name, *(c for label in found for c in results[label][name].cells())] for name in NAMES]
    print(table(heads, rows))
    for name in (ROUTE, ACROSS):
        ms = [s for label in found for s in results[label][name].ms]
        if ms:
            print(f"{name}, latency over all questions: p50 {statistics.median(ms):.1f} ms")
    for label in found:
        best = max(float(results[label][n].cells()[1]) for n in NAMES[2:])
        got = float(results[label][ROUTE].cells()[1])
        verdict = "PASS" if got >= best + 0.05 else "FAIL"
        print(f"{verdict}: {label}: any@10 {got:.3f} against the best anchor {best:.3f} + 0.05")
        if results[label][ROUTE].updates:
            ub = max(results[label][n].updated / results[label][n].updates for n in NAMES[2:])
            ug = results[label][ROUTE].updated / results[label][ROUTE].updates
            print(f"{'PASS' if ug >= ub else 'FAIL'}: {label}: updated@10 {ug:.3f} against "
                  f"the best anchor {ub:.3f}")  # fmt: skip
    for line in extra:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
