"""The SQLite fast lanes against their plain paths (#44), CPU per call, in one process.

    python bench/fast_lanes.py [--batches 15] [--calls 200] [--quick]

* a write-path transaction (``writes.append_messages`` + ``writes.update_message``) through
  ``sqlite_raw.RawWrites`` on a pysqlite connection: the lane (statements compiled once and
  sent to the cursor) against SQLAlchemy's ``Connection.execute`` (what it takes when
  ``platform/sqlalchemy_private`` finds an untested SQLAlchemy);
* one ``SELECT 1`` on the async engine: aiosqlite calls run inline on the loop's thread
  against aiosqlite's worker thread (``platform/aiosqlite_private`` on an untested release).

Process CPU time (``time.process_time``), the median of batches after three of warm-up: on
a shared machine CPU moves less than wall time. Exits non-zero when a lane is not at least
1.5x cheaper than its plain path (a lane that stopped paying, or stopped being taken).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa
from _common import header, parse_args, table
from sqlalchemy.ext.asyncio import create_async_engine

from lumina_app.domain import ConversationInfo, Msg
from lumina_app.platform import aiosqlite_private, sqlalchemy_private
from lumina_app.storage.sql import sqlite_raw, writes
from lumina_app.storage.sql.models import metadata
from lumina_app.storage.sql.sqlite_inline import inline_creator

MIN_RATIO = 1.5


def options(parser) -> None:
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument("--calls", type=int, default=200, help="calls per batch")


def cpu_us(batches: list[float]) -> float:
    return statistics.median(batches[3:] or batches)


def transactions(args) -> float:
    """CPU µs per write-path transaction (append one row, update it)."""
    engine = sa.create_engine("sqlite://")
    metadata.create_all(engine)
    sqlite_raw._PLANS.clear()  # plans made with the other setting
    conv = ConversationInfo.new(owner="o", agent_id="a", title="t")
    with engine.begin() as conn:
        writes.insert_conversation(sqlite_raw.RawWrites(conn), conv)
    now = conv.updated_at
    bump = {"_cid": conv.id, "_n": 1, "_tools": 0, "updated_at": now}
    batches = []
    with engine.connect() as conn:
        for _ in range(args.batches):
            start = time.process_time()
            for _ in range(args.calls):
                with conn.begin():
                    raw = sqlite_raw.RawWrites(conn)
                    msgs = [Msg.user("hello " * 20, turn_id="t")]
                    writes.append_messages(raw, conv.id, msgs, bump, None)
                    values = {"_mid": msgs[0].id, "content": "x" * 50, "updated_at": now}
                    writes.update_message(raw, values, only_streaming=False, settle=None, run=None)
            batches.append((time.process_time() - start) / args.calls * 1e6)
    engine.dispose()
    return cpu_us(batches)


async def statements(args, folder: Path) -> float:
    """CPU µs per ``SELECT 1`` on the async engine."""
    url = sa.engine.make_url(f"sqlite+aiosqlite:///{folder / 'lanes.db'}")
    engine = create_async_engine(url, async_creator=inline_creator(url))
    batches = []
    async with engine.connect() as conn:
        for _ in range(args.batches):
            start = time.process_time()
            for _ in range(args.calls):
                await conn.exec_driver_sql("SELECT 1")
            batches.append((time.process_time() - start) / args.calls * 1e6)
    await engine.dispose()
    return cpu_us(batches)


def measure(args, lanes: bool, folder: Path) -> tuple[float, float]:
    sqlalchemy_private.AVAILABLE = aiosqlite_private.AVAILABLE = lanes
    return transactions(args), asyncio.run(statements(args, folder))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__, options, {"batches": 5, "calls": 50}, argv)
    header("fast_lanes.py", args, f"SQLAlchemy {sa.__version__}")
    tested = sqlalchemy_private.AVAILABLE and aiosqlite_private.AVAILABLE
    with tempfile.TemporaryDirectory() as tmp:
        lane = measure(args, True, Path(tmp))
        plain = measure(args, False, Path(tmp))
    rows = [
        [name, f"{a:,.0f}", f"{b:,.0f}", f"{b / a:.2f}x"]
        for name, a, b in zip(
            ("write-path transaction", "inline statement"), lane, plain, strict=True
        )
    ]
    print(table(["CPU µs per call", "fast lane", "plain path", "plain/lane"], rows))
    ok = tested and all(b / a >= MIN_RATIO for a, b in zip(lane, plain, strict=True))
    print(
        f"{'PASS' if ok else 'FAIL'}: each lane at least {MIN_RATIO}x cheaper than its plain path"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
