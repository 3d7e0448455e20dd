"""Archive benchmark: export and import of one large conversation, next to plain anchors.

    .venv/bin/python bench/archive.py [--messages 10000] [--repeat 5] [--dir SCRATCH]

Creates a throw-away SQLite database in a temp folder, migrates it with Alembic and fills
one conversation with ``--messages`` messages (question/answer turns, mixed English and
Chinese text). Then, each ``--repeat`` times, measures what the CLI does:

* export  ``ArchiveService.export_all(root, conversation_id=...)``: one SQL query, render
          meta.json + history.json + one messages.log per turn, atomic writes
          (``python -m lumina_app export --conversation ID --out DIR``);
* import  ``ArchiveService.import_path(folder)`` into an empty database: parse and check
          history.json, then one transaction with one executemany
          (``python -m lumina_app import DIR``).

Anchors, same data, same run: ``json.dump`` of the same history list to one file (what
an export needs at the very least), and a plain stdlib ``sqlite3`` ``executemany`` INSERT
of the same rows in one transaction (what an import needs at the very least).
Also timed: a re-export over the folder just written (unchanged files are compared and
left alone), next to the plain write of the same files (mkdir + write, no temp, no rename).
Times are wall-clock (``time.perf_counter``), best and median of the repeats; ``os.sync()``
runs untimed before each timed operation so none pays for an earlier one's writeback.
The script always exits 0: it is a report, the PASS/FAIL lines are for reading.
"""

from __future__ import annotations

import argparse
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
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(ROOT), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from _common import fmt_ratio, table  # noqa: E402
from alembic import command  # noqa: E402
from alembic.config import Config  # noqa: E402

from lumina_app.archive import format as files  # noqa: E402
from lumina_app.archive.service import ArchiveService  # noqa: E402
from lumina_app.domain import ConversationInfo, Msg  # noqa: E402
from lumina_app.memory import MemoryManager  # noqa: E402
from lumina_app.settings import load_settings  # noqa: E402
from lumina_app.storage.local.hot_window import LocalHotWindow  # noqa: E402
from lumina_app.storage.sql.cold_store import ColdStore  # noqa: E402
from lumina_app.storage.sql.database import SQLDatabase  # noqa: E402
from lumina_app.storage.sql.engine import create_engine  # noqa: E402

BUDGET_S = 5.0
QUESTION = "How do I rotate the API keys for staging without downtime? 请简要说明步骤。"
ANSWER = (
    "Create the new key first, deploy it alongside the old one, switch the clients over, "
    "watch the error rate and only then revoke the old key.\n\n"
    "先创建新密钥,与旧密钥并行部署,切换客户端,观察错误率,最后再吊销旧密钥。"
)


def migrate(url: str) -> None:
    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "alembic"))
    cfg.set_main_option("sqlalchemy.url", url)
    cfg.attributes["configure_logger"] = False
    command.upgrade(cfg, "head")


async def seed(archive: ArchiveService, count: int) -> ConversationInfo:
    """One conversation of ``count`` messages, with distinct millisecond timestamps."""
    cold = archive.memory.cold
    start = datetime(2026, 3, 23, 10, 0, tzinfo=UTC)
    conv = await cold.create_conversation(
        agent_id="bench", title="基准 benchmark", created_at=start
    )
    batch: list[Msg] = []
    for i in range(count):
        turn = f"msg-bench-{i // 2:06d}"
        stamp = start + timedelta(milliseconds=1500 * i + 7)
        text = f"{QUESTION} #{i // 2}" if i % 2 == 0 else f"{ANSWER} #{i // 2}"
        make = Msg.user if i % 2 == 0 else Msg.assistant
        batch.append(make(text, turn_id=turn, created_at=stamp))
        if len(batch) == 1000:
            await cold.append_messages(conv.id, batch)
            batch = []
    await cold.append_messages(conv.id, batch)
    return await cold.get_conversation(conv.uuid)


async def timed(op: Callable[[], Awaitable[object]]) -> float:
    os.sync()  # untimed: earlier writes are not billed to this operation
    t0 = time.perf_counter()
    await op()
    return time.perf_counter() - t0


def timed_sync(op: Callable[[], object]) -> float:
    os.sync()
    t0 = time.perf_counter()
    op()
    return time.perf_counter() - t0


def anchor_json(history: list[dict], path: Path) -> None:
    with path.open("w", encoding="utf-8") as handle:
        json.dump(history, handle, ensure_ascii=False, indent=2)


def anchor_files(root: Path, rendered: dict) -> None:
    """The same files, written plainly: mkdir + write, no temp file, no rename."""
    for rel, data in rendered.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def anchor_insert(db_file: Path, rows: list[tuple]) -> float:
    """A bare conversation row plus ``executemany`` of the messages, one transaction."""
    conn = sqlite3.connect(db_file)
    try:
        os.sync()
        t0 = time.perf_counter()
        with conn:
            cur = conn.execute(
                "INSERT INTO lumina_conversation (uuid, agent_id, title, status, message_count,"
                " tool_call_count, last_seq, owner, created_at, updated_at)"
                " VALUES ('anchor', 'bench', '', 'completed', ?, 0, ?, '', ?, ?)",
                (len(rows), len(rows), rows[0][4], rows[-1][4]),
            )
            conv_id = cur.lastrowid
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


async def run(count: int, repeat: int, work: Path) -> tuple[list[list[str]], list[str]]:
    db_file = work / "bench.db"
    url = f"sqlite:///{db_file}"
    migrate(url)
    engine = create_engine(load_settings(database_url=url).async_database_url)
    hot = LocalHotWindow(window=20, max_conversations=10)
    archive = ArchiveService(
        MemoryManager(ColdStore(SQLDatabase(engine)), hot, window=20), work / "data"
    )
    conv = await seed(archive, count)
    uuid = conv.uuid
    msgs = await archive.memory.final_messages(conv)
    history = files.archive_history(msgs)
    rendered = files.conversation_files(conv, msgs)
    rows = [
        (m.seq, m.turn_id, m.role.value, m.content, m.created_at.strftime("%Y-%m-%d %H:%M:%S.%f"))
        for m in msgs
    ]
    t: dict[str, list[float]] = defaultdict(list)
    report = None

    for n in range(repeat):
        # Fresh folders each time, removed only at the end: deleting thousands of files
        # (and the discards that follow) would otherwise be billed to the next write.
        out, plain = work / f"out-{n}", work / f"plain-{n}"
        folder = files.conversation_dir(out, conv.agent_id, uuid)

        async def do_import(folder: Path = folder) -> None:
            nonlocal report
            report = await archive.import_path(folder)

        def do_export(out: Path = out) -> Awaitable[object]:
            return archive.export_all(out, conversation_id=uuid)

        t["export"].append(await timed(do_export))
        t["re-export"].append(await timed(do_export))
        t["json.dump"].append(timed_sync(lambda: anchor_json(history, work / "anchor.json")))
        t["plain files"].append(timed_sync(lambda plain=plain: anchor_files(plain, rendered)))
        await archive.memory.cold.delete_conversation(conv.id)
        t["import"].append(await timed(do_import))
        assert report is not None and report.errors == [] and report.messages_added == count
        conv = await archive.memory.cold.get_conversation(uuid)
        t["executemany"].append(anchor_insert(db_file, rows))

    stored = await archive.memory.final_messages(conv)
    await engine.dispose()
    same = [(m.role, m.content, m.turn_id, files.iso_ms(m.created_at)) for m in stored] == [
        (m.role, m.content, m.turn_id, files.iso_ms(m.created_at)) for m in msgs
    ]
    return _rows(t), _targets(count, t, same, len(rendered))


def _rows(t: dict[str, list[float]]) -> list[list[str]]:
    def cell(values: list[float]) -> str:
        return f"{min(values):.3f} / {statistics.median(values):.3f}"

    def ratio(ours: str, anchor: str) -> str:
        return fmt_ratio(statistics.median(t[ours]) / statistics.median(t[anchor]))

    return [
        ["export (new folder)", cell(t["export"]), "json.dump(history)", cell(t["json.dump"]),
         ratio("export", "json.dump")],
        ["export (new folder)", cell(t["export"]), "plain write, same files",
         cell(t["plain files"]), ratio("export", "plain files")],
        ["re-export (unchanged)", cell(t["re-export"]), "plain write, same files",
         cell(t["plain files"]), ratio("re-export", "plain files")],
        ["import (empty db)", cell(t["import"]), "sqlite3 executemany", cell(t["executemany"]),
         ratio("import", "executemany")],
    ]  # fmt: skip


def _targets(count: int, t: dict[str, list[float]], same: bool, n_files: int) -> list[str]:
    checks = [
        (statistics.median(t["export"]) < BUDGET_S, f"export of {count:,} messages"),
        (statistics.median(t["import"]) < BUDGET_S, f"import of {count:,} messages"),
    ]
    lines = [
        f"  {'PASS' if ok else 'FAIL'}  {text} under {BUDGET_S:.0f} s (median)"
        for ok, text in checks
    ]
    verdict = "PASS" if same else "FAIL"
    lines.append(f"  {verdict}  import gives back the exported messages (role, text, turn, ms)")
    lines.append(f"  (export writes {n_files:,} files: meta.json, history.json, one log per turn)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None, help="scratch folder (default: tmp)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="lumina-bench-archive-", dir=args.dir) as tmp:
        rows, targets = asyncio.run(run(args.messages, args.repeat, Path(tmp)))
    print(f"== bench/archive.py --messages {args.messages} --repeat {args.repeat}")
    print(f"{args.messages:,} messages in one conversation on SQLite, {args.repeat} repeats.")
    print("Seconds, best / median; ratio = Lumina median / anchor median.\n")
    print(table(["operation", "lumina (s)", "anchor", "anchor (s)", "ratio"], rows))
    print("\nTargets:")
    print("\n".join(targets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
