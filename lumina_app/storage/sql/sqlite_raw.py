"""The write path's own statements on SQLite, sent straight to the pysqlite cursor.

A chat turn's writes are six short statements and two commits (``writes``). On SQLite each
takes tens of µs in the library itself, while SQLAlchemy's ``Connection.execute`` spends
several times that around it: cache-key lookup, an execution context, parameter
processing, a result object (``bench/memory.py``, docs/PERFORMANCE.md). These statements are
fixed, module-level constants, so all of that can be done once: :func:`fast` marks one,
and on the first execution with a given set of parameter names it is compiled for
SQLite into SQL text, the order of its parameters, their type processors (dates, JSON) and
the literal values it binds itself. Later executions only build a tuple and run the cursor.

Everything else stays SQLAlchemy's: :class:`RawWrites` wraps the transaction's
``Connection`` and hands any statement not marked :func:`fast` (or one this module cannot
compile plainly: Python-side defaults to compute, RETURNING columns that need a result
type) to it. The transaction is the same pysqlite connection either way. The statement
events (``before/after_cursor_execute``: the SQL timing metric, statement counts in tests
and ``bench/_probe.py``) still fire, and driver errors are raised as SQLAlchemy's own
(``OperationalError``, ``IntegrityError``), so busy-lock retries and error translation work
as before. The SQLAlchemy internals that takes are read through
``platform/sqlalchemy_private`` (version-guarded: on another release nothing is compiled
here and every statement goes to SQLAlchemy).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.dml import UpdateBase

from lumina_app.platform import sqlalchemy_private as private

S = TypeVar("S", bound=UpdateBase)

MAX_ROWS = 64  # rows of one multi-row INSERT (SQLite binds at most 32,766 values)
_FAST: set[int] = set()  # id()s of statements kept alive by their module: constants only
_PLANS: dict[tuple[int, tuple[str, ...], int], _Plan | None] = {}


def fast(statement: S) -> S:
    """Mark a module-level INSERT/UPDATE/DELETE constant to run on SQLite's cursor directly.
    Only for statements that live as long as the process (their id is the cache key)."""
    _FAST.add(id(statement))
    return statement


@dataclass(frozen=True, slots=True)
class _Plan:
    """One statement compiled for one set of parameter names (and, for a multi-row
    INSERT, one number of rows)."""

    sql: str
    names: tuple[str, ...]  # parameter names in the order of the ``?`` marks, per row
    processors: tuple[Callable[[Any], Any] | None, ...]
    literals: Mapping[str, Any]  # values the statement binds itself (``status_1``)
    returns: bool

    def values(self, params: Sequence[Mapping[str, Any]]) -> list[Any]:
        out: list[Any] = []
        literals = self.literals
        for row in params:
            for name, process in zip(self.names, self.processors, strict=True):
                value = row[name] if name in row else literals[name]
                out.append(value if process is None else process(value))  # JSON: None → 'null'
        return out


class _Result:
    """The part of a ``CursorResult`` the write path reads."""

    __slots__ = ("_lastrowid", "_rows", "rowcount")

    def __init__(self, rowcount: int, rows: list[tuple], lastrowid: int | None) -> None:
        self.rowcount = rowcount
        self._rows = rows
        self._lastrowid = lastrowid

    @property
    def inserted_primary_key(self) -> tuple[int | None]:
        return (self._lastrowid,)

    def __iter__(self):
        return iter(self._rows)

    def scalar(self) -> Any:
        return self._rows[0][0] if self._rows else None

    def scalar_one_or_none(self) -> Any:
        if len(self._rows) > 1:
            raise sa.exc.MultipleResultsFound("more than one row")
        return self.scalar()


class RawWrites:
    """A transaction's ``Connection`` whose :func:`fast` statements run on the cursor."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._driver: sqlite3.Connection = conn.connection.driver_connection
        self.dialect = conn.dialect

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def execute(self, statement: Any, params: Any = None) -> Any:
        if id(statement) not in _FAST or not params:
            return self._conn.execute(statement, params)
        rows = [params] if isinstance(params, Mapping) else list(params)
        if len(rows) > MAX_ROWS:
            return self._conn.execute(statement, params)
        plan = self._plan(statement, rows)
        if plan is None:
            return self._conn.execute(statement, params)
        return self._run(plan, rows)

    def _plan(self, statement: UpdateBase, rows: list[Mapping[str, Any]]) -> _Plan | None:
        keys = tuple(sorted(rows[0]))
        key = (id(statement), keys, len(rows))
        try:
            return _PLANS[key]
        except KeyError:
            plan = _PLANS[key] = _compile(statement, keys, len(rows), self.dialect)
            return plan

    def _run(self, plan: _Plan, rows: list[Mapping[str, Any]]) -> _Result:
        values = plan.values(rows)
        conn = self._conn
        cursor = self._driver.cursor()
        sql: str = plan.sql
        events = private.has_events(conn)
        try:
            if events:
                for fn in private.listeners(conn, "before_cursor_execute"):
                    sql, values = fn(conn, cursor, sql, values, None, False)
            try:
                cursor.execute(sql, values)
            except sqlite3.Error as exc:
                raise private.driver_error(sql, values, exc, sqlite3.Error) from exc
            if events:
                for fn in private.listeners(conn, "after_cursor_execute"):
                    fn(conn, cursor, sql, values, None, False)
            fetched = cursor.fetchall() if plan.returns else []
            return _Result(cursor.rowcount, fetched, cursor.lastrowid)
        finally:
            cursor.close()


def _compile(statement: UpdateBase, keys: tuple[str, ...], rows: int, dialect) -> _Plan | None:
    """The plan, or None where SQLAlchemy must run it: defaults to compute in Python, or
    RETURNING columns whose values need converting, or SQLAlchemy's internals unavailable."""
    compiled = statement.compile(dialect=dialect, column_keys=list(keys), for_executemany=rows > 1)
    if compiled.insert_prefetch or compiled.update_prefetch or compiled.positiontup is None:
        return None
    returning = compiled.effective_returning or []
    if any(not isinstance(c.type, sa.Integer) for c in returning):
        return None
    names = tuple(compiled.positiontup)
    sql = compiled.string
    if rows > 1:
        values_group = private.single_values(compiled)
        if values_group is None:
            return None
        single = f"({values_group})"
        if sql.count(single) != 1:
            return None
        sql = sql.replace(single, ", ".join([single] * rows))
    binds = compiled.binds
    own = {n: binds[n] for n in names if n not in keys}
    if any(bind.required for bind in own.values()):  # a value missing: SQLAlchemy says which
        return None
    literals = {n: bind.effective_value for n, bind in own.items()}
    processors = private.bind_processors(compiled)
    if processors is None:
        return None
    return _Plan(
        sql=sql,
        names=names,
        processors=tuple(processors.get(n) for n in names),
        literals=literals,
        returns=bool(returning),
    )
