"""The async SQL engine: one per process, tuned per backend."""

from __future__ import annotations

import time
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from lumina_app.storage.sql.sqlite_inline import inline_creator

# A server connection back in the pool for less than this is used without a ping first.
PING_AFTER_IDLE_SECONDS = 1.0
CONNECT_TIMEOUT_SECONDS = 5  # a server that does not answer: unavailable (503), not a hang


def create_engine(async_url: str, *, pool_size: int = 10) -> AsyncEngine:
    """Create the engine. SQLite gets WAL, enforced foreign keys and statements run on the
    loop's thread (``sqlite_inline``: a lock held by another process is waited for on
    aiosqlite's thread, so the inline busy timeout is 0)."""
    url = make_url(async_url)
    backend = url.get_backend_name()
    kwargs: dict = {}
    if backend == "sqlite":
        database = url.database or ""
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        kwargs.update(
            pool_size=pool_size, max_overflow=20, pool_timeout=30, async_creator=inline_creator(url)
        )
    else:
        kwargs.update(pool_size=pool_size, max_overflow=20, pool_timeout=10, pool_recycle=1800)
    if backend == "mysql" or backend == "postgresql":
        kwargs["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT_SECONDS}
    engine = create_async_engine(url, **kwargs)
    if backend == "sqlite":
        sa.event.listen(engine.sync_engine, "connect", _sqlite_on_connect)
    else:
        _ping_when_idle(engine.sync_engine)
    return engine


def _ping_when_idle(engine: sa.Engine) -> None:
    """Ping a pooled server connection at checkout only when it sat idle for
    ``PING_AFTER_IDLE_SECONDS`` or more (SQLAlchemy's ``pool_pre_ping`` pings at every
    checkout: a round trip before each statement of a turn's writes). A connection used
    within the last second is live but for a server gone in that second, and then the
    statement fails as unavailable, the pool is invalidated, and the next checkout
    reconnects. A dead one found by the ping is replaced at once, as with pre-ping."""
    dialect = engine.dialect

    def fresh(_dbapi_connection, record) -> None:
        record.info["lumina_idle_since"] = time.monotonic()

    def checkout(dbapi_connection, record, _proxy) -> None:
        since = record.info.get("lumina_idle_since")
        if since is not None and time.monotonic() - since < PING_AFTER_IDLE_SECONDS:
            return
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as exc:
            if dialect.is_disconnect(exc, dbapi_connection, None):
                raise sa.exc.DisconnectionError(str(exc)) from exc
            raise

    sa.event.listen(engine.pool, "connect", fresh)
    sa.event.listen(engine.pool, "checkin", fresh)
    sa.event.listen(engine.pool, "checkout", checkout)


def create_sync_sqlite_engine(engine: AsyncEngine) -> sa.Engine:
    """A plain pysqlite engine on an async SQLite engine's file, same pragmas, for the
    write path's transactions and for reads run whole on a worker thread
    (``sqlite_inline.SyncSQLite``). The cold store's write gate lets one transaction at a
    time through; the reads are as many as the worker threads (asyncio's default executor:
    at most 32), so the pool lets as many open; it keeps four (the one held for inline
    writes, a few for reads: a new connection starts with an empty page cache)."""
    url = engine.url.set(drivername="sqlite")
    sync = sa.create_engine(
        url, connect_args={"check_same_thread": False}, pool_size=4, max_overflow=29
    )
    sa.event.listen(sync, "connect", _sqlite_on_connect)
    sa.event.listen(sync, "connect", _mapped)
    return sync


# Reads on the worker thread (search) go through rows scattered over the file (one
# conversation's, among others' written at the same time): mapped, SQLite reads those pages
# from the OS's cache without a copy each (760 such rows: 1.05 ms against 1.55 ms).
MMAP_BYTES = 1 << 30


def _mapped(dbapi_connection, _record) -> None:
    dbapi_connection.execute(f"PRAGMA mmap_size={MMAP_BYTES}")


def _sqlite_on_connect(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=0")
    # No checkpoint inside a commit: statements run on the event loop's thread, and an
    # automatic checkpoint (every 1,000 WAL pages) stalled it 10-25 ms. The cold store
    # checkpoints from a worker thread instead; the last connection to close does too.
    cursor.execute("PRAGMA wal_autocheckpoint=0")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
