"""Archive benchmark: export and import of one large conversation, next to plain anchors.

    python bench/archive.py [--messages 10000] [--repeat 5] [--dir SCRATCH] [--quick]

A throw-away migrated SQLite database in a temp folder (under ``--dir`` if given) holds
one conversation of ``--messages`` messages (question/answer turns, English and Chinese).
Each repeat times what the CLI does:

* export     ``python -m lumina_app export --conversation ID --out DIR``: one query, then
             meta.json + history.json + one messages.log per turn, atomic writes;
* re-export  the same over the folder just written (unchanged files are left alone);
* import     ``python -m lumina_app import DIR`` into a database without it: parse and
             check history.json, one transaction.

Anchors, same data, same run: ``json.dump`` of the same history list (the least an export
must do), the same files written plainly (mkdir + write, no temp, no rename), and a stdlib
``sqlite3`` ``executemany`` of the same rows in one transaction (the least an import must
do). Wall-clock seconds, best / median; ``os.sync()`` runs untimed before each timed
operation and every repeat writes to fresh folders, so none pays for an earlier one's
writeback.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _common import Checks, fmt_ratio, header, parse_args, table
from _servers import database, database_version

from bench import _app

BUDGET_S = 5.0
QUESTION = "How do I rotate the API keys for staging without downtime? 请简要说明步骤。"
ANSWER = (
    "Create the new key first, deploy it alongside the old one, switch the clients over, "
    "watch the error rate and only then revoke the old key.\n\n"
    "先创建新密钥,与旧密钥并行部署,切换客户端,观察错误率,最后再吊销旧密钥。"
)


def synced(op: Callable[[], object]) -> float:
    """Seconds for ``op()`` after an untimed ``os.sync()``."""
    os.sync()
    t0 = time.perf_counter()
    op()
    return time.perf_counter() - t0


def json_dump(history: list, path: Path) -> None:
    with path.open("w", encoding="utf-8") as handle:
        json.dump(history, handle, ensure_ascii=False, indent=2)


def plain_files(root: Path, files: dict[Path, bytes]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def executemany(db_file: Path, rows: list[tuple]) -> float:
    """A bare conversation row plus ``executemany`` of the messages, one transaction;
    removed again afterwards (untimed)."""
    conn = sqlite3.connect(db_file)
    try:
        os.sync()
        t0 = time.perf_counter()
        with conn:
            conv_id = conn.execute(
                "INSERT INTO lumina_conversation (uuid, agent_id, title, status, message_count,"
                " tool_call_count, last_seq, owner, created_at, updated_at)"
                " VALUES ('anchor', 'bench', '', 'completed', ?, 0, ?, '', ?, ?)",
                (len(rows), len(rows), rows[0][4], rows[-1][4]),
            ).lastrowid
            conn.executemany(
                "INSERT INTO lumina_message (conversation_id, seq, turn_id, role, content,"
                " status, created_at, updated_at, meta) VALUES (?, ?, ?, ?, ?, 'complete', ?, ?,"
                " '{}')",
                [(conv_id, *row, row[4]) for row in rows],
            )
        elapsed = time.perf_counter() - t0
        with conn:
            conn.execute("DELETE FROM lumina_message WHERE conversation_id = ?", (conv_id,))
            conn.execute("DELETE FROM lumina_conversation WHERE id = ?", (conv_id,))
        return elapsed
    finally:
        conn.close()


def comparable(msgs: list) -> list[tuple]:
    """What must survive a round trip: role, text, turn and the time to the millisecond."""
    return [(m.role, m.content, m.turn_id, m.created_at.isoformat(timespec="milliseconds"))
            for m in msgs]  # fmt: skip


async def run(count: int, repeat: int, work: Path, sync_url: str) -> tuple[dict, bool, int]:
    archive = _app.Archive(sync_url, work / "data")
    start = datetime(2026, 3, 23, 10, 0, tzinfo=UTC)
    texts = [f"{QUESTION} #{i // 2}" if i % 2 == 0 else f"{ANSWER} #{i // 2}" for i in range(count)]
    stamps = [start + timedelta(milliseconds=1500 * i + 7) for i in range(count)]
    conv = await _app.seed(archive.memory, texts, title="基准 benchmark", stamps=stamps)
    before = await archive.store.reads.archive.final_messages(conv)
    history, files = await archive.rendered(conv)
    rows = [
        (m.seq, m.turn_id, m.role.value, m.content, m.created_at.strftime("%Y-%m-%d %H:%M:%S.%f"))
        for m in before
    ]
    t: dict[str, list[float]] = defaultdict(list)
    db_file = Path(sync_url.removeprefix("sqlite:///"))
    for n in range(repeat):
        # Fresh folders each time, removed only at the end: deleting thousands of files
        # (and the discards that follow) would otherwise be billed to the next write.
        out = work / f"out-{n}"
        os.sync()
        t0 = time.perf_counter()
        folder = await archive.export(conv, out)
        t["export"].append(time.perf_counter() - t0)
        os.sync()
        t0 = time.perf_counter()
        await archive.export(conv, out)
        t["re-export"].append(time.perf_counter() - t0)
        t["json.dump"].append(synced(lambda: json_dump(history, work / "anchor.json")))
        t["plain files"].append(synced(lambda n=n: plain_files(work / f"plain-{n}", files)))
        await archive.delete(conv)
        os.sync()
        t0 = time.perf_counter()
        added, errors = await archive.import_folder(folder)
        t["import"].append(time.perf_counter() - t0)
        assert errors == [] and added == count, (added, errors)
        conv = await archive.lookup.get_conversation(conv.uuid)
        t["executemany"].append(executemany(db_file, rows))
    same = comparable(await archive.store.reads.archive.final_messages(conv)) == comparable(before)
    await archive.close()
    return t, same, len(files)


def options(parser) -> None:
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None, help="scratch folder (default: tmp)")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__, options, {"messages": 1000, "repeat": 1}, argv)
    logging.basicConfig(level=logging.WARNING)
    started = time.perf_counter()
    with (
        tempfile.TemporaryDirectory(prefix="lumina-bench-archive-", dir=args.dir) as tmp,
        database("sqlite", Path(tmp)) as sync_url,
    ):
        header("archive.py", args, database_version(sync_url))
        t, same, n_files = asyncio.run(run(args.messages, args.repeat, Path(tmp), sync_url))

    def cell(key: str) -> str:
        return f"{min(t[key]):.3f} / {statistics.median(t[key]):.3f}"

    rows = [
        [ours, cell(ours), anchor, cell(anchor),
         fmt_ratio(statistics.median(t[ours]) / statistics.median(t[anchor]))]
        for ours, anchor in (("export", "json.dump"), ("export", "plain files"),
                             ("re-export", "plain files"), ("import", "executemany"))
    ]  # fmt: skip
    print(f"\n{args.messages:,} messages in one conversation; {n_files:,} files per export.")
    print("Seconds, best / median; ratio = Lumina median / anchor median.\n")
    print(table(["operation", "lumina (s)", "anchor", "anchor (s)", "ratio"], rows))
    checks = Checks()
    for key in ("export", "import"):
        median = statistics.median(t[key])
        checks.add(
            median < BUDGET_S,
            f"{key} of {args.messages:,} messages under {BUDGET_S:.0f} s (median): {median:.3f} s",
        )
    checks.add(same, "import gives back the exported messages (role, text, turn, ms)")
    checks.print()
    print(f"\n(total {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
