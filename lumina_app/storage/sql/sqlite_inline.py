"""SQLite statements run on the event loop's own thread instead of aiosqlite's worker thread.

aiosqlite runs every call on a per-connection worker thread: a queue hand-off, a thread
wake-up, a self-pipe write back to the loop and a GIL hand-over per statement. Measured
here (bench/api.py, docs/PERFORMANCE.md) that costs about 300 µs of CPU per statement,
more than the statement itself: SQLite is a library, and in WAL mode with
``synchronous=NORMAL`` a commit does no fsync, so a short statement takes tens of µs.
Running it inline is cheaper than handing it over, and the API stays async.

Two cases still use the worker thread, where blocking the loop would hurt:

* a statement that finds the database locked by another process (say the CLI importing
  while the server runs). Inline it fails at once (``busy_timeout=0``) and is re-run on
  the thread, which waits in SQLite's busy handler for up to ``BUSY_WAIT_MS`` as before.
  A busy statement has done nothing, so re-running it is safe; inside this process the
  cold store's write gate already keeps writers from meeting.
* work inside ``offloaded()``: reads that may scan (search over message text, exports).

``SyncSQLite`` goes one step further for the write path's short transactions
(``writes``, run so by ``write_paths.InlineSQLiteWrites``): the whole transaction is one
sync function on a plain pysqlite connection, so there is no greenlet switch or adapter
layer per statement either, and the write path's own statements skip SQLAlchemy's
execution machinery (``sqlite_raw``).

The connection that runs calls inline overrides aiosqlite internals, so it lives in
``platform/aiosqlite_private`` (version-guarded: on another aiosqlite release the engine
gets plain aiosqlite connections, every call on the worker thread).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from typing import Any

import aiosqlite
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.exc import OperationalError

from lumina_app.platform import aiosqlite_private
from lumina_app.storage.sql.sqlite_raw import RawWrites

BUSY_WAIT_MS = 10_000
_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6

_offloaded: ContextVar[bool] = ContextVar("lumina_sqlite_offloaded", default=False)


@contextmanager
def offloaded() -> Iterator[None]:
    """Run this task's SQLite calls on the worker thread (long reads)."""
    token = _offloaded.set(True)
    try:
        yield
    finally:
        _offloaded.reset(token)


def runs_inline() -> bool:
    """Whether this task's SQLite calls run on the loop's thread (not ``offloaded()``)."""
    return not _offloaded.get()


class SyncSQLite:
    """Runs a transaction body ``body(conn, *args)`` on a plain pysqlite engine: inline,
    or on a worker thread (waiting for the lock) when another process holds it.

    Inline transactions share one connection held for good: a body is one sync call, so
    two can never overlap on it, and checking a connection out of the pool and back in
    (with its reset) cost more than a short transaction's statements. The worker thread
    takes its own from the pool: a cancelled caller leaves that thread running. After a
    failed transaction the held connection goes back to the pool, whose reset rolls back
    whatever SQLite may still hold open (a COMMIT that failed can leave it so)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._held: Connection | None = None

    async def transact(self, body: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not _offloaded.get():
            try:
                return self._inline(body, args, kwargs)
            except OperationalError as exc:
                if not _busy(exc.orig):
                    raise
        return await asyncio.to_thread(self._waiting, body, args, kwargs)

    def _inline(self, body: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        if self._held is None:
            self._held = self.engine.connect()
        conn = self._held
        try:
            with conn.begin():
                return body(RawWrites(conn), *args, **kwargs)
        except BaseException:
            self._release()
            raise

    def _release(self) -> None:
        if self._held is not None:
            self._held.close()  # back to the pool (reset there; closed there on dispose)
            self._held = None

    def _waiting(self, body: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        with self.engine.begin() as conn:
            driver = conn.connection.driver_connection
            return _waiting(driver, partial(body, RawWrites(conn)), args, kwargs)

    def read(self, body: Callable[[Connection], Any]) -> Any:
        """On a worker thread: ``body(conn)``, reads only, on a connection of its own
        (waiting for a lock another process holds, as a write on the thread does)."""
        with self.engine.connect() as conn:
            return _waiting(conn.connection.driver_connection, body, (conn,), {})

    def checkpoint(self) -> None:
        """Copy the WAL into the database without waiting for anyone (PASSIVE); for a
        worker thread. A checkpoint already running elsewhere just makes this a no-op."""
        try:
            with self.engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")
        except OperationalError as exc:
            if not _busy(exc.orig):
                raise

    def dispose(self) -> None:
        self._release()
        self.engine.dispose()


def _busy(exc: BaseException | None) -> bool:
    """SQLITE_BUSY / SQLITE_LOCKED (any extended code): someone else holds the lock."""
    code = getattr(exc, "sqlite_errorcode", 0) or 0
    return isinstance(exc, sqlite3.OperationalError) and code & 0xFF in (
        _SQLITE_BUSY,
        _SQLITE_LOCKED,
    )


def _waiting(conn: sqlite3.Connection, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """On the worker thread: the call again, this time letting SQLite wait for the lock."""
    conn.execute(f"PRAGMA busy_timeout={BUSY_WAIT_MS}")
    try:
        return fn(*args, **kwargs)
    finally:
        conn.execute("PRAGMA busy_timeout=0")


def inline_creator(url: URL) -> Callable[[], aiosqlite.Connection]:
    """An ``async_creator`` for ``create_async_engine``: the connect arguments SQLAlchemy
    would have used for ``url``, on a connection whose calls run inline unless busy or
    ``offloaded()``."""
    args, kwargs = url.get_dialect()().create_connect_args(url)
    connect = partial(sqlite3.connect, *args, **kwargs)
    return aiosqlite_private.connector(connect, 64, (runs_inline, _busy, _waiting))
