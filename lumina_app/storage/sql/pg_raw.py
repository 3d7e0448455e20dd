"""PostgreSQL's one-statement writes (``writes_pg``) on psycopg connections of their own.

A turn writes twice on PostgreSQL, one statement each: the accept and the final write.
Sent through the async engine, each cost ~0.4 ms of CPU around a ~0.1 ms round trip: the
pool's checkout and return, the greenlet hand-off, an execution context, parameter
processing, a result object (``bench/memory.py``, docs/PERFORMANCE.md). The statements are
fixed, so that work is done once (:func:`_compile`: psycopg's SQL text, the statement's own
literal values and the bind processors, as the engine would send them) and each write is
one ``execute`` on a connection of a small pool held here (:class:`PgWrites`), in
autocommit: one statement commits itself.

What stays as through the engine: the same connection arguments (the dialect's, so the same
type adapters) and the same statements, values and rows; the statement events
(``before/after_cursor_execute``, ``commit``: the SQL timing metric, statement counts in
tests and ``bench/_probe.py``); driver errors raised as SQLAlchemy's, so
``translated_errors`` makes a lost server a 503; a connection idle for
``PING_AFTER_IDLE_SECONDS`` or more pinged before use and replaced if dead; one older than
the engine's recycle age replaced. A connection whose statement failed or was cancelled is
closed, never reused; a lost server (heard here or by the engine) closes the idle ones too,
as the engine's pool is invalidated. A statement this module cannot compile plainly runs
on the engine, and so does every statement where SQLAlchemy is not the release the
internals read here (``platform/sqlalchemy_private``) were tested on.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import psycopg
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from lumina_app.domain.tasks import keep
from lumina_app.platform import sqlalchemy_private as private
from lumina_app.storage.sql.engine import CONNECT_TIMEOUT_SECONDS, PING_AFTER_IDLE_SECONDS

T = TypeVar("T")

# Connections held for the write path, per process (beside the engine's pool): a write is
# one short statement, so a few carry many turns at once; more wait their turn.
CONNECTIONS = 4
# Plans kept (statements and parameter sets): the write path has a handful; past this a
# statement is compiled for each use rather than kept (one built per call would pile up).
MAX_PLANS = 256
RECYCLE_SECONDS = 1800.0  # as the engine's pool_recycle


@dataclass(frozen=True, slots=True)
class OneStatement(Generic[T]):
    """One statement of the write path with its parameters, and what its rows mean. The
    statement is compiled once and kept: a module-level constant (or one built once per
    shape and kept), never one built per call."""

    statement: sa.Executable
    params: dict[str, Any]
    apply: Callable[[list[tuple]], T]


@dataclass(frozen=True, slots=True)
class _Plan:
    """A statement compiled for psycopg: its SQL text, and for each parameter in it the
    caller's value (processed as the engine would) or the statement's own literal."""

    sql: str
    names: tuple[str, ...]
    processors: tuple[Callable[[Any], Any] | None, ...]
    literals: Mapping[str, Any]

    def values(self, params: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, process in zip(self.names, self.processors, strict=True):
            value = params[name] if name in params else self.literals[name]
            out[name] = value if process is None else process(value)
        return out


def _compile(statement: sa.Executable, keys: frozenset[str], dialect) -> _Plan | None:
    """The plan, or None where the engine must run it (a value to compute in Python, an
    expanding parameter, one the caller did not give)."""
    compiled = statement.compile(dialect=dialect, column_keys=sorted(keys))
    if (
        compiled.insert_prefetch
        or compiled.update_prefetch
        or compiled.literal_execute_params
        or compiled.post_compile_params
    ):
        return None
    names = tuple(dict.fromkeys(compiled.bind_names.values()))
    binds = compiled.binds
    own = {n: binds[n] for n in names if n not in keys}
    if any(bind.required or bind.callable is not None for bind in own.values()):
        return None
    processors = private.bind_processors(compiled)
    if processors is None:
        return None
    return _Plan(
        sql=compiled.string,
        names=names,
        processors=tuple(processors.get(n) for n in names),
        literals={n: bind.effective_value for n, bind in own.items()},
    )


@dataclass(slots=True)
class _Held:
    """A pooled connection, the time it was opened and since when it has been idle."""

    conn: psycopg.AsyncConnection
    opened: float
    idle_since: float
    info: dict = field(default_factory=dict)  # what statement listeners keep per connection


class _EventConnection:
    """What the engine's statement listeners are handed for a statement sent here: the
    engine, and the per-connection ``info`` dict they keep a start time in."""

    __slots__ = ("engine", "info")

    def __init__(self, engine: sa.Engine, info: dict) -> None:
        self.engine = engine
        self.info = info


class PgWrites:
    """Runs :class:`OneStatement` s on this process's few write connections."""

    def __init__(self, engine: AsyncEngine, *, size: int = CONNECTIONS) -> None:
        self.engine = engine
        self._events = engine.sync_engine
        self._dialect = engine.dialect
        cargs, cparams = engine.dialect.create_connect_args(engine.url)
        self._connect_args = (cargs, {"connect_timeout": CONNECT_TIMEOUT_SECONDS, **cparams})
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._plans: dict[tuple[int, frozenset[str]], tuple[sa.Executable, _Plan | None]] = {}
        self._idle: list[_Held] = []
        self._room = asyncio.Semaphore(size)
        self._closing: set[asyncio.Task] = set()
        self._lost_at = float("-inf")  # when the server was last found gone
        sa.event.listen(self._events, "handle_error", self._engine_failed)

    async def run(self, one: OneStatement[T]) -> T:
        """Send ``one``; what its ``apply`` makes of the rows. Driver errors are raised as
        SQLAlchemy's (``OperationalError`` for a lost server, ``IntegrityError`` ...)."""
        plan = self._plan(one)
        if plan is None:
            async with self._autocommit.begin() as conn:
                rows = list((await conn.execute(one.statement, one.params)).all())
            return one.apply(rows)
        values = plan.values(one.params)
        async with self._connection() as held:
            rows = await self._execute(held, plan.sql, values)
        return one.apply(rows)

    async def close(self) -> None:
        """Close the idle connections (the ones in use close when they come back)."""
        idle, self._idle = self._idle, []
        for held in idle:
            with contextlib.suppress(psycopg.Error, OSError):
                await held.conn.close()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)

    def _plan(self, one: OneStatement) -> _Plan | None:
        keys = frozenset(one.params)
        key = (id(one.statement), keys)
        kept = self._plans.get(key)
        if kept is not None and kept[0] is one.statement:  # the statement itself is kept,
            return kept[1]  # so its id cannot pass to another while its plan is here
        plan = _compile(one.statement, keys, self._dialect)
        if len(self._plans) < MAX_PLANS:
            self._plans[key] = (one.statement, plan)
        return plan

    async def _execute(self, held: _Held, sql: str, values: dict[str, Any]) -> list[tuple]:
        events = private.has_events(self._events)
        event_conn = _EventConnection(self._events, held.info) if events else None
        if events:
            for fn in private.listeners(self._events, "before_cursor_execute"):
                sql, values = fn(event_conn, None, sql, values, None, False)
        try:
            cursor = await held.conn.execute(sql, values)
            rows = await cursor.fetchall() if cursor.description is not None else []
        except psycopg.Error as exc:
            lost = held.conn.closed or held.conn.broken
            if lost:
                self._lost_at = time.monotonic()  # the idle ones are as dead as this one
            raise private.driver_error(sql, values, exc, psycopg.Error, invalidated=lost) from exc
        if events:
            for fn in private.listeners(self._events, "after_cursor_execute"):
                fn(event_conn, None, sql, values, None, False)
            for fn in private.listeners(self._events, "commit"):  # committed itself (autocommit)
                fn(event_conn)
        return rows

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[_Held]:
        async with self._room:
            held = await self._take()
            try:
                yield held
            except BaseException:
                self._discard(held)  # failed or cancelled mid-statement: state unknown
                raise
            held.idle_since = time.monotonic()
            self._idle.append(held)

    async def _take(self) -> _Held:
        """The most recently used idle connection that is still good, else a new one."""
        while self._idle:
            held = self._idle.pop()
            now = time.monotonic()
            if (
                held.conn.closed
                or held.conn.broken
                or held.idle_since <= self._lost_at
                or now - held.opened > RECYCLE_SECONDS
            ):
                self._discard(held)
                continue
            if now - held.idle_since < PING_AFTER_IDLE_SECONDS:
                return held
            try:
                await held.conn.execute("SELECT 1")
            except psycopg.Error:
                self._discard(held)  # dropped while idle: replaced, as the engine's pool does
                continue
            except BaseException:
                self._discard(held)
                raise
            return held
        return await self._open()

    async def _open(self) -> _Held:
        cargs, cparams = self._connect_args
        try:
            conn = await psycopg.AsyncConnection.connect(*cargs, autocommit=True, **cparams)
        except psycopg.Error as exc:
            raise private.driver_error(None, None, exc, psycopg.Error) from exc
        now = time.monotonic()
        return _Held(conn, opened=now, idle_since=now)

    def _engine_failed(self, context: sa.engine.ExceptionContext) -> None:
        """The engine lost the server (its pool is invalidated): so are the connections
        idle here since before (on whatever thread the engine ran: only a time is kept)."""
        if context.is_disconnect or isinstance(
            context.sqlalchemy_exception, sa.exc.OperationalError
        ):
            self._lost_at = time.monotonic()

    def _discard(self, held: _Held) -> None:
        """Close a connection in the background (closing awaits the server's goodbye)."""
        keep(self._closing, _close_quietly(held.conn))


async def _close_quietly(conn: psycopg.AsyncConnection) -> None:
    with contextlib.suppress(psycopg.Error, OSError):
        await conn.close()
