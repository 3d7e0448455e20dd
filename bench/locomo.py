"""LoCoMo recall benchmark: do the turns that answer a question come back in the top k?

Each LoCoMo conversation (README in the data folder; either a folder of one-conversation
files or the upstream ``locomo10.json``, chosen by ``--only``/``--skip`` sample ids:
bench/_locomo_data.py) is imported through the archive import
as one Lumina conversation: speaker A is the user, B the assistant, one message per turn
("<speaker>: <text>"), each session's date and time kept as its messages' timestamps (a
minute apart within a session). The stored messages are embedded as ``python -m lumina_app
embed`` does. Then every question of categories 1-4 is asked of the real server over HTTP
(``GET /api/v1/conversations/{uuid}/recall?q=&limit=10``) and counted: any@k (one evidence
turn in the top k), all@k (every one), and the latency of each request.

Anchors, in this process, on the same turns and questions: plain BM25 (``bm25s``, English
stopwords, no stemming; the issue's anchor), the embedded model alone (cosine), and
Lumina's lexical ranking with and without the units' context (the turn before, the date).
"""

from __future__ import annotations

import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _locomo_sessions
import httpx
from _common import ROOT, header, parse_args, table
from _locomo_data import load
from _servers import app_server

from bench import _app

KS = (5, 10)
FUSION_WEIGHTS = (0.1, 0.25, 0.5, 1.0)


def options(parser) -> None:
    parser.add_argument(
        "path",
        nargs="?",
        default=str(ROOT.parent / "shared/data/locomo"),
        help="a folder of one-conversation files, or the upstream locomo10.json",
    )
    parser.add_argument("--limit", type=int, default=0, help="only the first N conversations")
    parser.add_argument("--only", default="", help="sample ids to measure (comma list)")
    parser.add_argument("--skip", default="", help="sample ids to leave out (comma list)")
    parser.add_argument("--sessions", action="store_true",
                        help="also: sessions as conversations, asked from a new one")  # fmt: skip


class Score:
    def __init__(self) -> None:
        self.counts = {f"{m}@{k}": 0 for k in KS for m in ("any", "all")}
        self.n = 0
        self.ms: list[float] = []

    def add(self, evidence: set[str], ranked: list[str]) -> None:
        self.n += 1
        for k in KS:
            top = set(ranked[:k])
            self.counts[f"any@{k}"] += bool(evidence & top)
            self.counts[f"all@{k}"] += evidence <= top

    def row(self, name: str) -> list[str]:
        cells = [name] + [
            f"{self.counts[c] / self.n:.3f}" for c in ("any@5", "all@5", "any@10", "all@10")
        ]
        if self.ms:
            cells += [f"{statistics.median(self.ms):.1f}", f"{_p99(self.ms):.1f}"]
        else:
            cells += ["-", "-"]
        return cells


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def anchors(conversations: list[dict], scores: dict[str, Score]) -> None:
    import bm25s
    import numpy as np

    embedder = _app.LocalEmbedder()
    for conv in conversations:
        ids = [t[0] for t in conv["turns"]]
        texts = [t[2] for t in conv["turns"]]
        bm = bm25s.BM25()
        bm.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
        vectors = embedder.embed_now(texts)
        previous = ["", *texts[:-1]]
        units = _app.unit_vectors(
            vectors,
            embedder.embed_now(
                [f"{p}\n{t}" if p else t for p, t in zip(previous, texts, strict=True)]
            ),
        ).astype(np.float16)
        rows = [
            _app.RecallRow(i, 0, i + 1, _app.MsgRole.USER, t[2], t[3], units[i].tobytes())
            for i, t in enumerate(conv["turns"])
        ]
        plain = _app.UnitIndex(rows, _app.Units(previous=False, date=False))
        with_turn = _app.UnitIndex(rows, _app.Units(previous=True, date=False))
        dated = _app.UnitIndex(rows, _app.Units(previous=False, date=True))
        context = _app.UnitIndex(rows, _app.Units())
        everything = np.ones(len(rows), dtype=bool)
        for question, evidence in conv["questions"]:
            t0 = time.perf_counter()
            found, _ = bm.retrieve(
                bm25s.tokenize([question], stopwords="en", show_progress=False),
                k=10,
                show_progress=False,
            )
            scores["BM25 (bm25s)"].ms.append((time.perf_counter() - t0) * 1000)
            scores["BM25 (bm25s)"].add(evidence, [ids[i] for i in found[0]])
            t0 = time.perf_counter()
            cosine = vectors @ embedder.embed_now([question])[0]
            scores["embedded model alone"].ms.append((time.perf_counter() - t0) * 1000)
            scores["embedded model alone"].add(evidence, [ids[i] for i in np.argsort(-cosine)[:10]])
            for name, index in (
                ("lexical, message only", plain),
                ("lexical, + turn before", with_turn),
                ("lexical, + date", dated),
                ("lexical, + turn before + date", context),
            ):
                ranked = index.ranked(question, None, (1.0, 0.0), everything)[:10]
                scores[name].add(evidence, [ids[i] for i, _ in ranked])
            query = embedder.embed_now([question])[0]
            for weight in FUSION_WEIGHTS:
                ranked = context.ranked(question, query, (1.0, weight), everything, 0.2)[:10]
                scores[f"fused, semantic weight {weight}"].add(
                    evidence, [ids[i] for i, _ in ranked]
                )


def _ids(listed: str) -> set[str]:
    return {i.strip() for i in listed.split(",") if i.strip()}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__, options, {"limit": 1}, argv)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    header("locomo.py", args, f"httpx {httpx.__version__}")
    conversations = load(Path(args.path), only=_ids(args.only), skip=_ids(args.skip))
    if args.limit:
        conversations = conversations[: args.limit]
    questions = sum(len(c["questions"]) for c in conversations)
    turns = sum(len(c["turns"]) for c in conversations)
    print(
        f"{len(conversations)} conversations ({', '.join(c['name'] for c in conversations)}), "
        f"{turns} turns, {questions} questions (categories 1-4)"
    )
    names = ["Lumina recall route (HTTP)", "Lumina recall across all (HTTP, GET /recall)",
             "BM25 (bm25s)", "embedded model alone",
             "lexical, message only", "lexical, + turn before", "lexical, + date",
             "lexical, + turn before + date"]  # fmt: skip
    names += [f"fused, semantic weight {w}" for w in FUSION_WEIGHTS]
    scores = {n: Score() for n in names}
    with tempfile.TemporaryDirectory(prefix="lumina-locomo-") as tmp:
        root = Path(tmp) / "archive"
        for conv in conversations:
            conv["uuid"] = _app.write_archive(
                root,
                f"LoCoMo {conv['name']}",
                [(u, text, when) for _, u, text, when in conv["turns"]],
            )
        imported: list[tuple[int, int, float]] = []

        def seed(url: str) -> None:
            imported.append(_app.import_and_embed(url, root))

        with app_server(Path(tmp) / "server", seed=seed) as server:
            added, vectors, cpu = imported[0]
            per_message = cpu / max(vectors, 1) * 1000
            print(f"imported {added} messages; embedded {vectors} ({per_message:.2f} ms CPU "
                  "per message, 684 bytes per stored vector: 256 float16, base64)")  # fmt: skip
            with httpx.Client(base_url=server.url, timeout=30) as client:
                for conv in conversations:
                    ids = [t[0] for t in conv["turns"]]
                    url = f"/api/v1/conversations/{conv['uuid']}/recall"
                    client.get(url, params={"q": "warm up", "limit": 10}).raise_for_status()
                    for question, evidence in conv["questions"]:
                        t0 = time.perf_counter()
                        response = client.get(url, params={"q": question[:200], "limit": 10})
                        scores[names[0]].ms.append((time.perf_counter() - t0) * 1000)
                        response.raise_for_status()
                        ranked = [ids[item["seq"] - 1] for item in response.json()["items"]]
                        scores[names[0]].add(evidence, ranked)
                        t0 = time.perf_counter()
                        response = client.get(
                            "/api/v1/recall", params={"q": question[:200], "limit": 10}
                        )
                        scores[names[1]].ms.append((time.perf_counter() - t0) * 1000)
                        response.raise_for_status()
                        items = response.json()["items"]
                        ranked = [ids[i["seq"] - 1] if i["conversationId"] == conv["uuid"] else ""
                                  for i in items]  # fmt: skip
                        scores[names[1]].add(evidence, ranked)
    anchors(conversations, scores)
    print(table(["system (same turns, same questions)", "any@5", "all@5", "any@10", "all@10",
           "p50 ms", "p99 ms"], [scores[n].row(n) for n in names]))  # fmt: skip
    if args.sessions:
        _locomo_sessions.report(conversations, scores, Score)
    return 0


if __name__ == "__main__":
    sys.exit(main())
