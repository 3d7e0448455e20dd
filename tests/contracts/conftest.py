"""Each storage contract's implementations, one fixture per contract: every test of a
contract is written once against its Protocol and runs on each implementation — the
in-process one, and the Redis one on a key prefix of its own (``redis_prefix``) — and the
write strategies on each database, built as the app builds them
(``write_paths.for_database``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest
import sqlalchemy as sa

from lumina_app.storage.live_bus import LiveBus
from lumina_app.storage.local.hot_window import LocalHotWindow
from lumina_app.storage.local.live_bus import LocalLiveBus
from lumina_app.storage.local.run_events import LocalRunEventLog
from lumina_app.storage.local.run_locks import LocalRunLocks
from lumina_app.storage.local.slots import LocalSlots
from lumina_app.storage.redis.circuit_breaker import CircuitBreaker
from lumina_app.storage.redis.client import create_redis_client
from lumina_app.storage.redis.hot_window import RedisHotWindow
from lumina_app.storage.redis.live_bus import RedisLiveBus
from lumina_app.storage.redis.run_events import RedisRunEventLog
from lumina_app.storage.redis.run_locks import RedisRunLocks
from lumina_app.storage.redis.slots import RedisSlots
from lumina_app.storage.run_events import RunEventLog
from lumina_app.storage.sql import write_paths
from lumina_app.storage.sql.cold_store import SQLColdStore
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.write_paths import TransactionWrites
from tests.conftest import SHARED_REDIS_URL

IMPLEMENTATIONS = ["local", "redis"]
WINDOW = 4  # messages a hot window keeps in these tests
RETENTION = 60  # seconds a finished run's events are kept


def _client(socket_timeout: float | None = 1.0):
    return create_redis_client(SHARED_REDIS_URL, socket_timeout=socket_timeout)


@pytest.fixture(params=IMPLEMENTATIONS)
async def hot_window(request: pytest.FixtureRequest) -> AsyncIterator:
    if request.param == "local":
        hot = LocalHotWindow(window=WINDOW, max_conversations=100)
    else:
        hot = RedisHotWindow(
            _client(),
            prefix=request.getfixturevalue("redis_prefix"),
            window=WINDOW,
            ttl_seconds=600,
            breaker=CircuitBreaker(cooldown=0.2),
        )
    yield hot
    await hot.close()


def _redis_locks(prefix: str) -> RedisRunLocks:
    return RedisRunLocks(_client(), _client(None), prefix=prefix, lease_ms=30_000)


async def _close_locks(locks) -> None:
    await locks.close()
    if isinstance(locks, RedisRunLocks):
        await locks.client.aclose()  # the hot window's, in the app: not closed by the locks


@pytest.fixture(params=IMPLEMENTATIONS)
async def run_locks(request: pytest.FixtureRequest) -> AsyncIterator:
    if request.param == "local":
        locks = LocalRunLocks()
    else:
        locks = _redis_locks(request.getfixturevalue("redis_prefix"))
    yield locks
    await _close_locks(locks)


@pytest.fixture
async def run_locks_elsewhere(run_locks) -> AsyncIterator:
    """Another instance's locks of the same kind (and, on Redis, the same prefix)."""
    locks = _redis_locks(run_locks.prefix) if run_locks.shared else LocalRunLocks()
    yield locks
    await _close_locks(locks)


@dataclass
class EventLogs:
    """The log a run publishes to, and the one a reader elsewhere follows it through: the
    same log in process; another instance's (its own empty in-process buffer) on Redis."""

    here: RunEventLog
    elsewhere: RunEventLog


def _redis_events(prefix: str) -> RedisRunEventLog:
    return RedisRunEventLog(
        local=LocalRunEventLog(retention=RETENTION),
        writer=_client(),
        reader=_client(3.0),
        prefix=prefix,
        retention=RETENTION,
        block_ms=500,
    )


@pytest.fixture(params=IMPLEMENTATIONS)
async def run_events(request: pytest.FixtureRequest) -> AsyncIterator[EventLogs]:
    if request.param == "local":
        log = LocalRunEventLog(retention=RETENTION)
        logs = EventLogs(log, log)
    else:
        prefix = request.getfixturevalue("redis_prefix")
        logs = EventLogs(_redis_events(prefix), _redis_events(prefix))
    yield logs
    for log in {id(logs.here): logs.here, id(logs.elsewhere): logs.elsewhere}.values():
        await log.close()
        if isinstance(log, RedisRunEventLog):
            await log.writer.aclose()  # the hot window's, in the app


@pytest.fixture(params=IMPLEMENTATIONS)
async def slots(request: pytest.FixtureRequest) -> AsyncIterator:
    if request.param == "local":
        counted = LocalSlots()
    else:
        counted = RedisSlots(_client(), prefix=request.getfixturevalue("redis_prefix"))
    yield counted
    await counted.close()


@pytest.fixture
async def slots_elsewhere(slots) -> AsyncIterator:
    """Another process's slots of the same kind (and, on Redis, the same prefix)."""
    counted = RedisSlots(_client(), prefix=slots.prefix) if slots.shared else LocalSlots()
    yield counted
    await counted.close()


@pytest.fixture(params=IMPLEMENTATIONS)
async def live_bus(request: pytest.FixtureRequest) -> AsyncIterator[LiveBus]:
    if request.param == "local":
        yield LocalLiveBus()
        return
    client, listener = _client(), _client(None)
    yield RedisLiveBus(client, listener, prefix=request.getfixturevalue("redis_prefix"))
    await client.aclose()
    await listener.aclose()


# -- write strategies ---------------------------------------------------------------------


@dataclass
class Sent:
    """What reached the database during a ``WriteSide.counting()`` block: each statement's
    SQL, the transactions begun (a BEGIN and a COMMIT round trip each beside the
    statements), and the commits (PostgreSQL's one-statement writes commit themselves,
    with no BEGIN: one each)."""

    statements: list[str] = field(default_factory=list)
    begins: int = 0
    commits: int = 0


@dataclass
class WriteSide:
    """One database as the app builds it (``composition``): the write strategy
    ``write_paths.for_database`` picks, and the cold store that writes through it."""

    backend: str  # SQLAlchemy's dialect name: sqlite, mysql (MariaDB), postgresql
    db: SQLDatabase
    strategy: TransactionWrites
    store: SQLColdStore

    @contextmanager
    def counting(self) -> Iterator[Sent]:
        """Counts at the statement events every path fires: SQLAlchemy's, and the ones
        the fast lanes below it fire themselves (``sqlite_raw`` on pysqlite's cursor,
        ``pg_raw`` on psycopg's connections), on every engine the database writes with."""
        sent = Sent()

        def on_statement(_conn, _cursor, statement: str, *_rest) -> None:
            sent.statements.append(statement)

        def on_begin(_conn) -> None:
            sent.begins += 1

        def on_commit(_conn) -> None:
            sent.commits += 1

        listeners = [
            ("before_cursor_execute", on_statement),
            ("begin", on_begin),
            ("commit", on_commit),
        ]
        for engine in self.db.engines:
            for name, listener in listeners:
                sa.event.listen(engine, name, listener)
        try:
            yield sent
        finally:
            for engine in self.db.engines:
                for name, listener in listeners:
                    sa.event.remove(engine, name, listener)


@pytest.fixture
async def write_side(engine) -> AsyncIterator[WriteSide]:
    """Runs once per database (``engine``: sqlite, mariadb, postgresql)."""
    db = SQLDatabase(engine)
    strategy = write_paths.for_database(db)
    yield WriteSide(engine.dialect.name, db, strategy, SQLColdStore(db, write_path=strategy))
    await db.close()
