"""bench/scale.py's data: deterministic Zipf-drawn message texts, and the bulk loader that
fills a migrated database with conversations of them (``executemany`` on SQLite with the
full-text triggers on, ``COPY`` on PostgreSQL with the GIN index rebuilt afterwards)."""

from __future__ import annotations

import bisect
import importlib.util
import itertools
import random
import time
import uuid as uuidlib
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from _common import ROOT

OWNER = ""  # the loopback principal's owner (LOCAL)
AGENTS = [f"agent-{i}" for i in range(10)]
WORDS = 5000

BASE = [
    "the",
    "a",
    "to",
    "and",
    "of",
    "in",
    "is",
    "it",
    "you",
    "that",
    "for",
    "on",
    "with",
    "this",
    "be",
    "are",
    "as",
    "can",
    "not",
    "have",
    "but",
    "key",
    "deploy",
    "server",
    "error",
    "user",
    "data",
    "file",
    "config",
    "run",
    "test",
    "build",
    "api",
    "token",
    "model",
    "memory",
    "agent",
    "query",
    "cache",
    "index",
    "rotate",
    "staging",
    "database",
    "redis",
    "window",
    "summary",
    "budget",
    "stream",
    "client",
]


def vocabulary() -> list[str]:
    """Real words first (the frequent ones), then made-up words ``w0123``."""
    return BASE + [f"w{i:04d}" for i in range(WORDS - len(BASE))]


class Texts:
    """Deterministic message texts: 8-40 words, Zipf(1.1) over the vocabulary."""

    def __init__(self, seed: int = 7) -> None:
        self.words = vocabulary()
        weights = [1 / (rank + 1) ** 1.1 for rank in range(len(self.words))]
        self.cum = list(itertools.accumulate(weights))
        self.rng = random.Random(seed)

    def next(self) -> str:
        n = self.rng.randint(8, 40)
        picks = self.rng.choices(self.words, cum_weights=self.cum, k=n)
        return " ".join(picks).capitalize() + "."

    def rank_of(self, share: float) -> str:
        """The word whose rank has about ``share`` of the total weight before it."""
        return self.words[bisect.bisect_left(self.cum, share * self.cum[-1])]


class Loader:
    """Bulk-loads conversations of ``per`` messages, continuing where it stopped."""

    def __init__(self, sync_url: str, per: int, interleave: bool = False) -> None:
        self.engine = sa.create_engine(sync_url)
        self.dialect = self.engine.dialect.name
        self.per = per
        # A batch's conversations written side by side (their messages' ids alternate), as
        # a live service writes them, rather than one after the other.
        self.interleave = interleave
        self.texts = Texts()
        self.conversations = 0
        self.messages = 0
        self.uuids: list[str] = []
        self.start = datetime(2026, 1, 1, tzinfo=UTC)

    def load_to(self, total: int) -> float:
        """Load conversations until ``total`` messages are stored; seconds taken."""
        t0 = time.perf_counter()
        if self.messages >= total:  # a kept database (--cache) already holds them
            return 0.0
        with self.engine.connect() as conn:  # the timed turns added rows since
            self.next_id = int(
                conn.exec_driver_sql("SELECT max(id) FROM lumina_message").scalar() or 0
            )
        if self.dialect == "postgresql":
            self._pg_drop_fts()
        while self.messages < total:
            batch = min(20_000 // self.per or 1, (total - self.messages) // self.per or 1)
            convs, msgs = self._batch(batch)
            if self.dialect == "postgresql":
                self._copy(convs, msgs)
            else:
                self._executemany(convs, msgs)
        if self.dialect == "postgresql":
            self._pg_create_fts()
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("ANALYZE")
        return time.perf_counter() - t0

    def _batch(self, n: int) -> tuple[list[tuple], list[tuple]]:
        convs, msgs = [], []
        for _ in range(n):
            self.conversations += 1
            cid = self.conversations
            created = self.start + timedelta(seconds=cid * 60)
            updated = created + timedelta(seconds=self.per * 5)
            uuid = str(uuidlib.uuid4())
            self.uuids.append(uuid)
            agent = AGENTS[cid % len(AGENTS)]
            convs.append(
                (
                    cid,
                    uuid,
                    agent,
                    f"conversation {cid}",
                    "completed",
                    self.per,
                    0,
                    self.per,
                    OWNER,
                    created,
                    updated,
                )
            )
            for seq in range(1, self.per + 1):
                self.messages += 1
                self.next_id += 1
                role = "USER" if seq % 2 else "ASSISTANT"
                stamp = created + timedelta(seconds=seq * 5)
                turn = f"msg-{cid:07d}-{(seq + 1) // 2:05d}"
                msgs.append(
                    (
                        self.next_id,
                        cid,
                        seq,
                        turn,
                        role,
                        self.texts.next(),
                        "complete",
                        stamp,
                        stamp,
                        "{}",
                    )
                )
        if self.interleave:
            first = msgs[0][0]
            msgs.sort(key=lambda m: (m[2], m[1]))  # by seq, then conversation
            msgs = [(first + i, *m[1:]) for i, m in enumerate(msgs)]
        return convs, msgs

    CONV_COLS = (
        "id, uuid, agent_id, title, status, message_count, tool_call_count, last_seq, "
        "owner, created_at, updated_at"
    )
    MSG_COLS = (
        "id, conversation_id, seq, turn_id, role, content, status, created_at, updated_at, meta"
    )

    def _executemany(self, convs: list[tuple], msgs: list[tuple]) -> None:
        def stamp(row: tuple, at: tuple[int, ...]) -> tuple:  # SQLAlchemy's SQLite format
            return tuple(
                v.strftime("%Y-%m-%d %H:%M:%S.%f") if i in at else v for i, v in enumerate(row)
            )

        raw = self.engine.raw_connection()
        try:
            cur = raw.cursor()
            cur.executemany(
                f"INSERT INTO lumina_conversation ({self.CONV_COLS}) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [stamp(c, (9, 10)) for c in convs],
            )
            cur.executemany(
                f"INSERT INTO lumina_message ({self.MSG_COLS}) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [stamp(m, (7, 8)) for m in msgs],
            )
            raw.commit()
        finally:
            raw.close()

    def _copy(self, convs: list[tuple], msgs: list[tuple]) -> None:
        raw = self.engine.raw_connection()
        try:
            cur = raw.driver_connection.cursor()
            with cur.copy(f"COPY lumina_conversation ({self.CONV_COLS}) FROM STDIN") as copy:
                for row in convs:
                    copy.write_row(row)
            with cur.copy(f"COPY lumina_message ({self.MSG_COLS}) FROM STDIN") as copy:
                for row in msgs:
                    copy.write_row(row)
            raw.driver_connection.commit()
        finally:
            raw.close()

    def _pg_drop_fts(self) -> None:
        with self.engine.begin() as conn:
            conn.exec_driver_sql("DROP INDEX IF EXISTS ix_lumina_message_fts")

    def _pg_create_fts(self) -> None:
        """The GIN index exactly as migration 0014 leaves it; the id sequences moved on."""
        path = ROOT / "alembic" / "versions" / "0014_search_vector.py"
        spec = importlib.util.spec_from_file_location("migration_0014", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        with self.engine.begin() as conn:
            for statement in module._POSTGRES_FTS:
                conn.exec_driver_sql(statement)
            for table in ("lumina_conversation", "lumina_message"):
                conn.exec_driver_sql(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"(SELECT max(id) FROM {table}))"
                )

    def database_bytes(self) -> int:
        with self.engine.connect() as conn:
            if self.dialect == "sqlite":
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
                pages = conn.exec_driver_sql("PRAGMA page_count").scalar()
                size = conn.exec_driver_sql("PRAGMA page_size").scalar()
                return int(pages) * int(size)
            return int(conn.exec_driver_sql("SELECT pg_database_size(current_database())").scalar())
