"""Memory benchmark: MemoryManager's hot read, turn save and rebuild, next to two anchors.

    .venv/bin/python bench/memory.py [--db sqlite|mariadb|postgresql] [--iterations N]

Starts its own ``redis-server`` on a free port (no persistence) so FLUSHALL and
``INFO commandstats`` only see this run, creates a throw-away database on the chosen
backend (a temp SQLite file by default) and migrates it with Alembic, then measures, at
10 and at 10,000 stored messages in one conversation:

* hot read   ``MemoryManager.load(conv)`` with a current window (one Redis round trip);
* turn save  ``MemoryManager.save_turn(conv, user, assistant)``;
* rebuild    FLUSHALL (untimed), then ``MemoryManager.load(conv)`` (one indexed query).

Anchors, same Redis server (other key prefix) and same database: langchain_community's
``RedisChatMessageHistory`` and ``SQLChatMessageHistory`` (sync, timed directly, outside
the event loop). Read = ``.messages`` then the last 20; save = ``add_messages([H, AI])``.
The anchors have no rebuild; their full read is shown in that row instead.

Latencies come from ``time.perf_counter_ns``. Command counts come from a separate, untimed
pass: ``INFO commandstats`` deltas (Lua's inner commands included), packed sends on the
redis-py connection (round trips), and SQLAlchemy cursor / commit / pre-ping events.
The script always exits 0: it is a report, the PASS/FAIL lines are for reading.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import platform
import re
import secrets
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(ROOT), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

warnings.filterwarnings("ignore", category=DeprecationWarning)

import redis  # noqa: E402
import redis.asyncio.connection as aio_conn  # noqa: E402
import redis.connection as sync_conn  # noqa: E402
import sqlalchemy as sa  # noqa: E402
from _common import (  # noqa: E402
    Samples,
    fmt_ratio,
    fmt_us,
    machine_line,
    migrate,
    server_database,
    table,
    time_async,
    time_sync,
)
from langchain_community.chat_message_histories import (  # noqa: E402
    RedisChatMessageHistory,
    SQLChatMessageHistory,
)
from langchain_core.messages import AIMessage, HumanMessage, message_to_dict  # noqa: E402

from lumina_app.domain import ConversationInfo, ConversationStatus, Msg, new_turn_id  # noqa: E402
from lumina_app.memory import MemoryManager  # noqa: E402
from lumina_app.settings import load_settings  # noqa: E402
from lumina_app.storage.redis.circuit_breaker import CircuitBreaker  # noqa: E402
from lumina_app.storage.redis.client import create_redis_client  # noqa: E402
from lumina_app.storage.redis.hot_window import RedisHotWindow  # noqa: E402
from lumina_app.storage.sql.cold_store import ColdStore  # noqa: E402
from lumina_app.storage.sql.database import SQLDatabase  # noqa: E402
from lumina_app.storage.sql.engine import create_engine  # noqa: E402
from tests.conftest import RedisServer  # noqa: E402 - the same private server the tests use

WINDOW = 20
USER_TEXT = "How do I rotate the API keys for the staging environment without downtime?"
ASSISTANT_TEXT = (
    "Create the new key first, deploy it alongside the old one, switch the clients over, "
    "watch the error rate for a while and only then revoke the old key. Keep both valid "
    "for at least one full deploy cycle so nothing that is mid-rollout loses access. "
    "Record the rotation in the change log."
)
OPS = ("hot read (last 20)", "turn save", "rebuild after FLUSHALL")
READ, SAVE, REBUILD = OPS

# Targets (printed as PASS/FAIL; the script still exits 0).
HOT_READ_P50_US = 200.0
REBUILD_P50_US = 5000.0
SCALING_MAX = 1.2


# -- infrastructure ------------------------------------------------------------------------


def make_database(backend: str, tmp: Path) -> tuple[str, Callable[[], None]]:
    """A migrated throw-away database: a temp SQLite file, or one on the local server."""
    if backend == "sqlite":
        url = f"sqlite:///{tmp / 'bench.db'}"
        migrate(url)
        return url, lambda: None  # the tmp dir is removed anyway
    return server_database(backend)


def anchor_sql_engine(sync_url: str) -> sa.Engine:
    """The anchor's sync engine on the same database, with the same SQLite pragmas as Lumina."""
    url = sa.engine.make_url(sync_url)
    if url.get_backend_name() == "mysql" and "charset" not in url.query:
        url = url.update_query_dict({"charset": "utf8mb4"})
    engine = sa.create_engine(url)
    if url.get_backend_name() == "sqlite":

        @sa.event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection, _record) -> None:  # noqa: ANN001
            cur = dbapi_connection.cursor()
            for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "busy_timeout=10000"):
                cur.execute(f"PRAGMA {pragma}")
            cur.close()

    return engine


# -- counting (an untimed pass) ------------------------------------------------------------


@dataclass
class OpCounts:
    ops: int = 0
    round_trips: int = 0
    commands: Counter = field(default_factory=Counter)
    statements: Counter = field(default_factory=Counter)
    commits: int = 0
    pings: int = 0

    def per_op(self, value: float) -> float:
        return value / self.ops if self.ops else float("nan")

    @property
    def rt(self) -> float:
        return self.per_op(self.round_trips)

    @property
    def cmds(self) -> float:
        return self.per_op(sum(self.commands.values()))

    @property
    def stmts(self) -> float:
        return self.per_op(sum(self.statements.values()))

    @property
    def txns(self) -> float:
        return self.per_op(self.commits)

    def describe_redis(self) -> str:
        return (
            ", ".join(f"{k} {fmt_n(self.per_op(v))}" for k, v in sorted(self.commands.items()))
            or "-"
        )

    def describe_sql(self) -> str:
        parts = [f"{k} {fmt_n(self.per_op(v))}" for k, v in sorted(self.statements.items())]
        if self.commits:
            parts.append(f"COMMIT {fmt_n(self.txns)}")
        if self.pings:
            parts.append(f"pre-ping {fmt_n(self.per_op(self.pings))}")
        return ", ".join(parts) or "-"


def fmt_n(value: float) -> str:
    if value != value:
        return "-"
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


_STMT = re.compile(r"^\s*(\w+).*?\b(?:FROM|INTO|UPDATE)\s+[`\"]?(\w+)", re.S | re.I)
_UPDATE = re.compile(r"^\s*UPDATE\s+[`\"]?(\w+)", re.I)


def _label(statement: str) -> str:
    m = _UPDATE.match(statement)
    if m:
        return f"UPDATE {m.group(1)}"
    m = _STMT.match(statement)
    if m:
        return f"{m.group(1).upper()} {m.group(2)}"
    return statement.split(None, 1)[0].upper() if statement.strip() else "?"


class Probe:
    """Counts what one operation costs while ``active``; patches are removed on exit."""

    IGNORED = {"info", "flushall"}

    def __init__(self, admin: redis.Redis, engines: list[sa.Engine]) -> None:
        self.admin = admin
        self.engines = engines
        self.active = False
        self.counts = OpCounts()

    def _commandstats(self) -> dict[str, int]:
        stats = self.admin.info("commandstats")
        return {k.removeprefix("cmdstat_"): v["calls"] for k, v in stats.items()}

    def __enter__(self) -> Probe:
        probe = self
        self._aio_orig = aio_conn.AbstractConnection.send_packed_command
        self._sync_orig = sync_conn.AbstractConnection.send_packed_command
        aio_orig, sync_orig = self._aio_orig, self._sync_orig

        async def aio_send(conn, command, check_health=True):  # noqa: ANN001
            if probe.active:
                probe.counts.round_trips += 1
            return await aio_orig(conn, command, check_health)

        def sync_send(conn, command, check_health=True):  # noqa: ANN001
            if probe.active:
                probe.counts.round_trips += 1
            return sync_orig(conn, command, check_health)

        aio_conn.AbstractConnection.send_packed_command = aio_send
        sync_conn.AbstractConnection.send_packed_command = sync_send

        def on_execute(_conn, _cursor, statement, _params, _context, executemany) -> None:  # noqa: ANN001
            if probe.active:
                probe.counts.statements[_label(statement) + (" (many)" if executemany else "")] += 1

        def on_commit(_conn) -> None:  # noqa: ANN001
            if probe.active:
                probe.counts.commits += 1

        self._listeners = [("before_cursor_execute", on_execute), ("commit", on_commit)]
        for engine in self.engines:
            for name, fn in self._listeners:
                sa.event.listen(engine, name, fn)
            ping_orig = engine.dialect.do_ping

            def do_ping(dbapi_connection, ping_orig=ping_orig) -> bool:  # noqa: ANN001
                if probe.active:
                    probe.counts.pings += 1
                return ping_orig(dbapi_connection)

            engine.dialect.do_ping = do_ping
        self._before = self._commandstats()
        return self

    def __exit__(self, *exc: object) -> None:
        after = self._commandstats()
        for name, calls in after.items():
            delta = calls - self._before.get(name, 0)
            if delta and name not in self.IGNORED:
                self.counts.commands[name] += delta
        aio_conn.AbstractConnection.send_packed_command = self._aio_orig
        sync_conn.AbstractConnection.send_packed_command = self._sync_orig
        for engine in self.engines:
            for name, fn in self._listeners:
                sa.event.remove(engine, name, fn)
            del engine.dialect.do_ping


async def count_async(probe: Probe, op, k: int, before=None) -> OpCounts:  # noqa: ANN001
    with probe:
        for _ in range(k):
            if before:
                before()
            probe.active = True
            await op()
            probe.active = False
    probe.counts.ops = k
    return probe.counts


def count_sync(probe: Probe, op, k: int) -> OpCounts:  # noqa: ANN001
    with probe:
        for _ in range(k):
            probe.active = True
            op()
            probe.active = False
    probe.counts.ops = k
    return probe.counts


# -- the measured systems ------------------------------------------------------------------


@dataclass
class Result:
    samples: Samples
    counts: OpCounts | None = None


@dataclass
class Plan:
    reads: int
    saves: int
    rebuilds: int
    count_ops: int
    anchor_budget_s: float


def lumina_pairs(n: int) -> Iterator[tuple[Msg, Msg]]:
    for _ in range(n):
        turn = new_turn_id()
        yield Msg.user(USER_TEXT, turn_id=turn), Msg.assistant(ASSISTANT_TEXT, turn_id=turn)


def anchor_pairs(n: int) -> Iterator[list]:
    for _ in range(n):
        yield [HumanMessage(USER_TEXT), AIMessage(ASSISTANT_TEXT)]


class Lumina:
    def __init__(self, sync_url: str, redis_url: str, admin: redis.Redis) -> None:
        settings = load_settings(database_url=sync_url)
        self.engine = create_engine(settings.async_database_url)
        self.hot = RedisHotWindow(
            create_redis_client(redis_url, socket_timeout=settings.redis_socket_timeout),
            prefix="lumina-bench",
            window=WINDOW,
            ttl_seconds=3600,
            breaker=CircuitBreaker(cooldown=settings.redis_breaker_cooldown),
        )
        self.memory = MemoryManager(ColdStore(SQLDatabase(self.engine)), self.hot, window=WINDOW)
        self.admin = admin

    async def fill(self, size: int) -> ConversationInfo:
        """``size`` messages through ColdStore.append_messages, 1,000 per transaction."""
        memory = self.memory
        conv = await memory.create_conversation(agent_id="bench", title=f"bench {size}")
        done = 0
        while done < size:
            chunk = []
            for i in range(done, min(size, done + 1000)):
                turn = f"fill-{i // 2}"
                chunk.append(
                    Msg.user(USER_TEXT, turn_id=turn)
                    if i % 2 == 0
                    else Msg.assistant(ASSISTANT_TEXT, turn_id=turn)
                )
            await memory.cold.append_messages(conv.id, chunk, status=ConversationStatus.COMPLETED)
            done += len(chunk)
        fresh = await memory.get_conversation(conv.uuid)
        assert fresh.message_count == size, fresh
        await memory.rebuild(fresh)
        return fresh

    def _flushall(self) -> None:
        self.admin.flushall()

    def _probe(self) -> Probe:
        return Probe(self.admin, self.memory.cold.db.engines)

    async def run(self, size: int, plan: Plan) -> dict[str, Result]:
        memory, stats = self.memory, self.memory.stats
        conv = await self.fill(size)
        expect = min(WINDOW, size)
        loaded = await memory.load(conv)
        assert len(loaded) == expect and loaded[-1].seq == conv.last_seq, (len(loaded), conv)
        out: dict[str, Result] = {}

        # hot read: the window is current, so every load must be a hit
        hits = stats.hits
        op = lambda: memory.load(conv)  # noqa: E731
        out[READ] = Result(await time_async(op, n=plan.reads, warmup=min(200, plan.reads)))
        out[READ].counts = await count_async(self._probe(), op, plan.count_ops)
        served = stats.hits - hits
        want = min(200, plan.reads) + out[READ].samples.n + plan.count_ops
        assert served == want, f"hot reads were not all hits ({served}/{want}): {stats}"

        # rebuild: FLUSHALL untimed, then load() finds no window and rebuilds it from SQL
        rebuilds = stats.rebuilds
        out[REBUILD] = Result(
            await time_async(
                op, n=plan.rebuilds, warmup=min(10, plan.rebuilds), before=self._flushall
            )
        )
        out[REBUILD].counts = await count_async(
            self._probe(), op, plan.count_ops, before=self._flushall
        )
        want = min(10, plan.rebuilds) + out[REBUILD].samples.n + plan.count_ops
        assert stats.rebuilds - rebuilds == want, f"not every load rebuilt: {stats}"
        assert len(await memory.load(conv)) == expect

        # turn save: one transaction, then one EVALSHA appending to the window
        warm = min(20, plan.saves)
        pairs = lumina_pairs(warm + plan.saves + plan.count_ops)
        op = lambda: memory.save_turn(conv, *next(pairs))  # noqa: E731
        out[SAVE] = Result(await time_async(op, n=plan.saves, warmup=warm))
        out[SAVE].counts = await count_async(self._probe(), op, plan.count_ops)
        fresh = await memory.get_conversation(conv.uuid)
        hits = stats.hits
        loaded = await memory.load(fresh)
        assert stats.hits == hits + 1 and loaded[-1].seq == fresh.last_seq, "window fell behind"
        assert stats.fallbacks == 0, f"the hot tier fell back to SQL during the run: {stats}"
        return out

    async def window_control(self, size: int, plan: Plan) -> dict[str, Samples]:
        """Control: hot read and rebuild for a conversation of ``size`` messages (timing only)."""
        memory, stats = self.memory, self.memory.stats
        conv = await self.fill(size)
        op = lambda: memory.load(conv)  # noqa: E731
        hits, rebuilds = stats.hits, stats.rebuilds
        warm_read, warm_rebuild = min(200, plan.reads), min(10, plan.rebuilds)
        out = {READ: await time_async(op, n=plan.reads, warmup=warm_read)}
        assert stats.hits - hits == warm_read + out[READ].n
        out[REBUILD] = await time_async(
            op, n=plan.rebuilds, warmup=warm_rebuild, before=self._flushall
        )
        assert stats.rebuilds - rebuilds == warm_rebuild + out[REBUILD].n
        return out

    async def close(self) -> None:
        await self.hot.close()
        await self.engine.dispose()


class RedisAnchor:
    def __init__(self, redis_url: str, admin: redis.Redis) -> None:
        self.redis_url = redis_url
        self.admin = admin

    def run(self, size: int, plan: Plan, sql_engine: sa.Engine) -> dict[str, Result]:
        hist = RedisChatMessageHistory(
            session_id=f"s{size}-{secrets.token_hex(3)}", url=self.redis_url, key_prefix="anchor:"
        )
        client = hist.redis_client
        done = 0
        while done < size:  # same JSON and LPUSH order the class writes itself
            pipe = client.pipeline(transaction=False)
            for i in range(done, min(size, done + 1000)):
                msg = HumanMessage(USER_TEXT) if i % 2 == 0 else AIMessage(ASSISTANT_TEXT)
                pipe.lpush(hist.key, json.dumps(message_to_dict(msg)))
            pipe.execute()
            done = min(size, done + 1000)
        assert len(hist.messages) == size
        out: dict[str, Result] = {}
        big = size >= 1000
        op = lambda: hist.messages[-WINDOW:]  # noqa: E731
        out[READ] = Result(
            time_sync(
                op,
                n=plan.reads,
                warmup=3 if big else min(200, plan.reads),
                budget_s=plan.anchor_budget_s,
            )
        )
        out[READ].counts = count_sync(Probe(self.admin, [sql_engine]), op, min(plan.count_ops, 5))
        warm = min(20, plan.saves)
        pairs = anchor_pairs(warm + plan.saves + plan.count_ops)
        op = lambda: hist.add_messages(next(pairs))  # noqa: E731
        out[SAVE] = Result(time_sync(op, n=plan.saves, warmup=warm, budget_s=plan.anchor_budget_s))
        out[SAVE].counts = count_sync(Probe(self.admin, [sql_engine]), op, plan.count_ops)
        hist.redis_client.close()
        return out


class SQLAnchor:
    def __init__(self, engine: sa.Engine, admin: redis.Redis) -> None:
        self.engine = engine
        self.admin = admin

    def run(self, size: int, plan: Plan) -> dict[str, Result]:
        hist = SQLChatMessageHistory(
            session_id=f"s{size}-{secrets.token_hex(3)}",
            connection=self.engine,
            table_name="anchor_message_store",
        )
        done = 0
        while done < size:
            chunk = [
                HumanMessage(USER_TEXT) if i % 2 == 0 else AIMessage(ASSISTANT_TEXT)
                for i in range(done, min(size, done + 1000))
            ]
            hist.add_messages(chunk)
            done += len(chunk)
        assert len(hist.messages) == size
        out: dict[str, Result] = {}
        big = size >= 1000
        op = lambda: hist.messages[-WINDOW:]  # noqa: E731
        out[READ] = Result(
            time_sync(
                op,
                n=plan.reads,
                warmup=3 if big else min(200, plan.reads),
                budget_s=plan.anchor_budget_s,
            )
        )
        out[READ].counts = count_sync(Probe(self.admin, [self.engine]), op, min(plan.count_ops, 5))
        warm = min(20, plan.saves)
        pairs = anchor_pairs(warm + plan.saves + plan.count_ops)
        op = lambda: hist.add_messages(next(pairs))  # noqa: E731
        out[SAVE] = Result(time_sync(op, n=plan.saves, warmup=warm, budget_s=plan.anchor_budget_s))
        out[SAVE].counts = count_sync(Probe(self.admin, [self.engine]), op, plan.count_ops)
        hist.session_maker.remove()
        return out


# -- report --------------------------------------------------------------------------------


def p50_p99(result: Result | None, mark: str = "") -> str:
    if result is None:
        return "-"
    return f"{fmt_us(result.samples.p50)} / {fmt_us(result.samples.p99)}{mark}"


def report(
    sizes: list[int],
    lumina: dict[int, dict[str, Result]],
    anchor_redis: dict[int, dict[str, Result]],
    anchor_sql: dict[int, dict[str, Result]],
    control: dict[str, Samples] | None = None,
) -> None:
    def anchor(results: dict[str, Result], op: str) -> Result:
        # The anchors have no rebuild: their full read is the comparison.
        return results[READ if op == REBUILD else op]

    rows = []
    for op in OPS:
        for size in sizes:
            lum, ar, asq = (
                lumina[size][op],
                anchor(anchor_redis[size], op),
                anchor(anchor_sql[size], op),
            )
            mark = "*" if op == REBUILD else ""
            c = lum.counts
            rows.append(
                [
                    op,
                    f"{size:,}",
                    fmt_us(lum.samples.p50),
                    fmt_us(lum.samples.p99),
                    p50_p99(ar, mark),
                    p50_p99(asq, mark),
                    f"redis {fmt_ratio(ar.samples.p50 / lum.samples.p50)} / "
                    f"sql {fmt_ratio(asq.samples.p50 / lum.samples.p50)}",
                    fmt_n(c.rt),
                    fmt_n(c.cmds),
                    f"{fmt_n(c.stmts)} ({fmt_n(c.txns)} txn)",
                    f"{lum.samples.n}/{ar.samples.n}/{asq.samples.n}",
                ]
            )
    print("Latency in microseconds (p50 / p99). Counts are per operation.")
    print("* anchors have no rebuild: their full read (.messages, then last 20) is shown.\n")
    print(
        table(
            [
                "operation",
                "size",
                "lumina p50",
                "lumina p99",
                "anchor(redis) p50/p99",
                "anchor(sql) p50/p99",
                "ratio anchor/lumina p50",
                "redis round trips/op",
                "redis cmds/op",
                "sql stmts/op",
                "n lumina/redis/sql",
            ],
            rows,
        )
    )

    print("\nWhat one operation sends (untimed counting pass; Lua's inner commands included):\n")
    rows = []
    for op in OPS:
        for size in sizes:
            c = lumina[size][op].counts
            rows.append(
                [op, f"{size:,}", "lumina", fmt_n(c.rt), c.describe_redis(), c.describe_sql()]
            )
    for name, results in (("anchor(redis)", anchor_redis), ("anchor(sql)", anchor_sql)):
        for op in (READ, SAVE):
            for size in sizes:
                c = results[size][op].counts
                rows.append(
                    [op, f"{size:,}", name, fmt_n(c.rt), c.describe_redis(), c.describe_sql()]
                )
    print(
        table(
            [
                "operation",
                "size",
                "system",
                "redis round trips",
                "redis commands",
                "sql statements",
            ],
            rows,
        )
    )

    small, large = sizes[0], sizes[-1]
    print(f"\nScaling (lumina cost at {large:,} / cost at {small:,}):\n")
    rows = []
    scaling: dict[str, float] = {}
    for op in OPS:
        a, b = lumina[small][op].samples, lumina[large][op].samples
        scaling[op] = b.p50 / a.p50
        rows.append([op, fmt_ratio(b.p50 / a.p50), fmt_ratio(b.p99 / a.p99)])
    print(table(["operation", "p50 ratio", "p99 ratio"], rows))
    if control is not None:
        print(
            f"\nControl: the same operations at {WINDOW} stored messages. At {small:,} the window "
            f"holds only {min(small, WINDOW)} messages, so the {small:,}-vs-{large:,} ratio also "
            f"measures a {WINDOW // min(small, WINDOW)}x bigger payload; {WINDOW} stored messages "
            f"give the same full {WINDOW}-message window as {large:,}:\n"
        )
        rows = []
        for op in (READ, REBUILD):
            ctl, big = control[op], lumina[large][op].samples
            rows.append(
                [
                    op,
                    fmt_us(ctl.p50),
                    fmt_us(ctl.p99),
                    str(ctl.n),
                    fmt_ratio(big.p50 / ctl.p50),
                    fmt_ratio(big.p99 / ctl.p99),
                ]
            )
        print(
            table(
                [
                    "operation",
                    f"p50 at {WINDOW}",
                    f"p99 at {WINDOW}",
                    "n",
                    f"p50 {large:,} / {WINDOW}",
                    f"p99 {large:,} / {WINDOW}",
                ],
                rows,
            )
        )

    print("\nTargets:\n")
    checks: list[tuple[bool, str]] = []
    for size in sizes:
        r = lumina[size][READ]
        checks.append(
            (
                r.samples.p50 <= HOT_READ_P50_US,
                f"hot read p50 <= {HOT_READ_P50_US:.0f} us at {size:,}: {fmt_us(r.samples.p50)} us",
            )
        )
        checks.append(
            (r.counts.rt == 1, f"hot read = 1 round trip at {size:,}: {fmt_n(r.counts.rt)}")
        )
    for size in sizes:
        c = lumina[size][SAVE].counts
        checks.append(
            (
                c.txns == 1 and c.rt == 1,
                f"turn save = 1 SQL transaction + 1 Redis round trip at {size:,}: "
                f"{fmt_n(c.txns)} txn ({fmt_n(c.stmts)} statements), {fmt_n(c.rt)} round trip",
            )
        )
    for size in sizes:
        r = lumina[size][REBUILD]
        checks.append(
            (
                r.samples.p50 <= REBUILD_P50_US,
                f"rebuild p50 <= {REBUILD_P50_US / 1000:.0f} ms at {size:,}: "
                f"{fmt_us(r.samples.p50)} us",
            )
        )
    for op in OPS:
        checks.append(
            (
                scaling[op] <= SCALING_MAX,
                f"{op}: cost at {large:,} <= {SCALING_MAX}x cost at {small:,}: "
                f"{fmt_ratio(scaling[op])}",
            )
        )
    for op in OPS:
        for size in sizes:
            lum = lumina[size][op].samples.p50
            ar, asq = (
                anchor(anchor_redis[size], op).samples.p50,
                anchor(anchor_sql[size], op).samples.p50,
            )
            checks.append(
                (
                    lum < ar and lum < asq,
                    f"{op} at {size:,} faster than both anchors (p50): lumina {fmt_us(lum)}, "
                    f"redis {fmt_us(ar)}, sql {fmt_us(asq)}",
                )
            )
    for ok, text in checks:
        print(f"  {'PASS' if ok else 'FAIL'}  {text}")
    passed = sum(ok for ok, _ in checks)
    print(f"\n{passed}/{len(checks)} targets met.")


def describe_machine(backend: str, sync_url: str, redis_url: str) -> list[str]:
    engine = sa.create_engine(sa.engine.make_url(sync_url), poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        query = "select sqlite_version()" if backend == "sqlite" else "select version()"
        db_version = conn.exec_driver_sql(query).scalar()
    engine.dispose()
    redis_version = redis.Redis.from_url(redis_url).info("server")["redis_version"]
    return [
        f"date: {date.today().isoformat()}   machine: {machine_line()}",
        f"python {platform.python_version()}, SQLAlchemy {sa.__version__}, redis-py "
        f"{redis.__version__}, redis-server {redis_version}, {backend} {db_version}",
    ]


async def _noop() -> None:
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["sqlite", "mariadb", "postgresql"], default="sqlite")
    parser.add_argument(
        "--iterations",
        type=int,
        default=2000,
        help="hot reads per size; saves = N/4, rebuilds = N/10 (default 2000)",
    )
    parser.add_argument(
        "--sizes",
        default="10,10000",
        help="stored messages per conversation, comma-separated (default 10,10000)",
    )
    parser.add_argument(
        "--count-ops",
        type=int,
        default=20,
        help="operations in the untimed counting pass (default 20)",
    )
    parser.add_argument(
        "--anchor-budget",
        type=float,
        default=3.0,
        help="max seconds per anchor measurement (at least 20 samples)",
    )
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    n = max(args.iterations, 10)
    plan = Plan(
        reads=n,
        saves=max(n // 4, 10),
        rebuilds=max(n // 10, 10),
        count_ops=args.count_ops,
        anchor_budget_s=args.anchor_budget,
    )
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lumina-bench-") as tmp_name:
        tmp = Path(tmp_name)
        server = RedisServer(tmp)
        server.start()
        cleanup: Callable[[], None] = lambda: None  # noqa: E731
        try:
            sync_url, cleanup = make_database(args.db, tmp)
            admin = redis.Redis.from_url(server.url)
            print(f"== bench/memory.py --db {args.db} --iterations {n}")
            for line in describe_machine(args.db, sync_url, server.url):
                print(line)
            print(
                f"plan: {plan.reads} hot reads, {plan.saves} saves, {plan.rebuilds} rebuilds per "
                f"size (after warm-up); anchors capped at {plan.anchor_budget_s:.0f} s per "
                f"measurement; window N={WINDOW}\n"
            )

            lumina_res: dict[int, dict[str, Result]] = {}
            redis_res: dict[int, dict[str, Result]] = {}
            sql_res: dict[int, dict[str, Result]] = {}
            anchor_engine = anchor_sql_engine(sync_url)
            with asyncio.Runner() as runner:
                lumina = Lumina(sync_url, server.url, admin)
                try:
                    for size in sizes:
                        t0 = time.perf_counter()
                        lumina_res[size] = runner.run(lumina.run(size, plan))
                        t1 = time.perf_counter()
                        # Anchors run after Lumina's FLUSHALLs, outside the event loop.
                        redis_res[size] = RedisAnchor(server.url, admin).run(
                            size, plan, anchor_engine
                        )
                        t2 = time.perf_counter()
                        sql_res[size] = SQLAnchor(anchor_engine, admin).run(size, plan)
                        t3 = time.perf_counter()
                        print(
                            f"  size {size:,}: lumina {t1 - t0:.1f} s, "
                            f"anchor(redis) {t2 - t1:.1f} s, anchor(sql) {t3 - t2:.1f} s",
                            file=sys.stderr,
                        )
                    control = None
                    if WINDOW not in sizes and sizes[0] < WINDOW < sizes[-1]:
                        control = runner.run(lumina.window_control(WINDOW, plan))
                finally:
                    runner.run(lumina.close())
            anchor_engine.dispose()
            report(sizes, lumina_res, redis_res, sql_res, control)
            admin.close()
        finally:
            try:
                cleanup()
            finally:
                server.kill()
    print(f"\n(total {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
