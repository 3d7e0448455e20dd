"""One SQL database as the stores use it: the async engine, SQLite's write gate and its
inline write path, and the ways to run a write transaction (which one a turn's writes
take is ``write_paths``' choice).

SQLite has one writer at a time; writers of this process queue at the write gate, so an
inline statement finds the lock free (only another process's lock sends it to a thread).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from lumina_app.storage.sql.engine import create_sync_sqlite_engine
from lumina_app.storage.sql.errors import translated_errors
from lumina_app.storage.sql.pg_raw import OneStatement, PgWrites
from lumina_app.storage.sql.sqlite_inline import SyncSQLite, runs_inline

T = TypeVar("T")


class SQLDatabase:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.is_sqlite = engine.dialect.name == "sqlite"
        self._write_gate: contextlib.AbstractAsyncContextManager = (
            asyncio.Lock() if self.is_sqlite else contextlib.nullcontext()
        )
        self._sqlite = SyncSQLite(create_sync_sqlite_engine(engine)) if self.is_sqlite else None
        self._pg = PgWrites(engine) if engine.dialect.name == "postgresql" else None
        # PostgreSQL reads in autocommit: at READ COMMITTED every statement takes its own
        # snapshot inside a transaction too, so a read-only BEGIN and the ROLLBACK at
        # check-in were two round trips (~0.2 ms) that changed nothing. Writes go through
        # begin(); MariaDB's REPEATABLE READ gives a transaction one snapshot: kept.
        self._reads = engine.execution_options(isolation_level="AUTOCOMMIT") if self._pg else engine

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def engines(self) -> list[sa.Engine]:
        """Every engine statements run on (for instrumentation): the async engine's sync
        core, plus on SQLite the write path's own pysqlite engine."""
        extra = [self._sqlite.engine] if self._sqlite is not None else []
        return [self.engine.sync_engine, *extra]

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[AsyncConnection]:
        """A write transaction (behind the SQLite write gate); errors translated."""
        if not self.is_sqlite:
            async with translated_errors(), self.engine.begin() as conn:
                yield conn
            return
        async with self._write_gate, self.connect() as conn, conn.begin():
            yield conn

    async def write(self, statement: sa.Executable, params: Any = None) -> sa.CursorResult:
        """One statement as a write transaction of its own (``begin``)."""
        async with self.begin() as conn:
            return await conn.execute(statement, params)

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[AsyncConnection]:
        """A read connection; errors translated.

        SQLAlchemy's own exit closes the connection in a task of its own behind a shield,
        so that a cancelled caller cannot abandon the close halfway: three turns of the
        event loop and a task for every use, each turn a wait behind every other ready
        task under load. On SQLite, inline (``sqlite_inline``), the close (a rollback and
        the pool's check-in) never suspends, so there is nothing to abandon: it is awaited
        in place. Elsewhere, or offloaded to aiosqlite's thread, SQLAlchemy's exit runs."""
        async with translated_errors():
            if not (self.is_sqlite and runs_inline()):
                async with self._reads.connect() as conn:
                    yield conn
                return
            conn = await self.engine.connect()
            try:
                yield conn
            finally:
                await conn.close()

    async def rows(self, query: sa.Executable, params: Any = None) -> Sequence[sa.Row]:
        """The rows of one read statement, on a connection of its own (``connect``)."""
        async with self.connect() as conn:
            return (await conn.execute(query, params)).all()

    async def first(self, query: sa.Executable, params: Any = None) -> sa.Row | None:
        """The first row of one read statement, or None."""
        async with self.connect() as conn:
            return (await conn.execute(query, params)).first()

    async def scalar(self, query: sa.Executable, params: Any = None) -> Any:
        """The first column of the first row of one read statement, or None."""
        async with self.connect() as conn:
            return (await conn.execute(query, params)).scalar()

    async def read(self, body: Callable[[sa.Connection], T]) -> T:
        """A read of several statements written as one sync function of a ``Connection``
        (search): on SQLite the whole of it on a worker thread, on a plain pysqlite
        connection, so it costs one hand-off to a thread, not one per statement (~0.5-1 ms
        each through aiosqlite); elsewhere through the async driver (``run_sync``)."""
        async with translated_errors():
            if self._sqlite is not None:
                return await asyncio.to_thread(self._sqlite.read, body)
            async with self._reads.connect() as conn:
                return await conn.run_sync(body)

    async def transact_inline(self, body: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """SQLite: a transaction written as one sync function of a ``Connection``
        (``writes``) on the write path's own pysqlite connection, behind the write gate:
        inline, or on a worker thread when another process holds the lock."""
        if self._sqlite is None:
            raise RuntimeError(f"inline transactions are SQLite's, not {self.dialect}'s")
        async with translated_errors(), self._write_gate:
            return await self._sqlite.transact(body, *args, **kwargs)

    async def one_statement(self, one: OneStatement[T]) -> T:
        """PostgreSQL: one statement of the write path, in autocommit (it commits itself, as
        durably as a COMMIT: no BEGIN/COMMIT round trips) on the write connections
        (``pg_raw``); errors translated."""
        if self._pg is None:
            raise RuntimeError(f"one-statement writes are PostgreSQL's, not {self.dialect}'s")
        async with translated_errors():
            return await self._pg.run(one)

    async def ping(self) -> None:
        await self.scalar(sa.text("SELECT 1"))

    async def checkpoint(self) -> None:
        """SQLite: move the write-ahead log into the database file, on a worker thread
        (commits on the loop never do it themselves). A no-op on other backends."""
        if self._sqlite is not None:
            async with translated_errors():
                await asyncio.to_thread(self._sqlite.checkpoint)

    async def close(self) -> None:
        """Disposes the write paths' own connections and the async engine."""
        if self._sqlite is not None:
            self._sqlite.dispose()
        if self._pg is not None:
            await self._pg.close()
        await self.engine.dispose()
