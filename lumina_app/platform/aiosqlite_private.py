"""aiosqlite's connection with its worker-thread hand-off made optional (#44).

aiosqlite runs each call of a connection on the connection's worker thread by queueing it
in ``Connection._execute``; ``storage/sql/sqlite_inline`` runs most of them on the event
loop's thread instead (docs/PERFORMANCE.md: ~300 µs of CPU saved per statement). That
takes aiosqlite's internals, all here: ``_execute`` (overridden), ``_running`` and
``_connection`` (is it open), ``_conn`` (the sqlite3 connection, for a call sent to the
thread after all) and ``_thread`` (made a daemon, as SQLAlchemy does, so it never blocks
exit).

Tested on aiosqlite 0.22 (:data:`TESTED`); another release, or a name gone, and
:func:`connector` gives a plain ``aiosqlite.Connection`` (every call on the worker thread;
logged once). Canaries: ``tests/unit/test_fast_lane_canaries.py``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import aiosqlite

from lumina_app.platform.versions import tested

TESTED = "0.22"
NAMES = ("_execute", "_running", "_connection", "_conn", "_thread")

Inline = Callable[[], bool]  # whether this call may run on the loop's thread
Busy = Callable[[sqlite3.OperationalError], bool]  # another process holds the lock
Waiting = Callable[..., Any]  # (sqlite3 connection, fn, args, kwargs) on the worker thread


def _names_present() -> bool:
    probe = aiosqlite.Connection(lambda: sqlite3.connect(":memory:"), 64)
    found = all(hasattr(probe, n) for n in ("_running", "_connection", "_thread"))
    return found and all(hasattr(aiosqlite.Connection, n) for n in ("_execute", "_conn"))


AVAILABLE = tested("aiosqlite", TESTED, __name__) and _names_present()


class InlineConnection(aiosqlite.Connection):
    """An aiosqlite connection whose calls run inline when ``inline()`` says so; one that
    finds the database ``busy`` runs again on the worker thread, through ``waiting``."""

    def __init__(
        self,
        connector: Callable[[], sqlite3.Connection],
        iter_chunk_size: int,
        hooks: tuple[Inline, Busy, Waiting],
    ) -> None:
        super().__init__(connector, iter_chunk_size)
        self._thread.daemon = True
        self._inline, self._busy, self._waiting = hooks

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self._inline():
            return await super()._execute(fn, *args, **kwargs)
        if not self._running or not self._connection:
            raise ValueError("Connection closed")
        try:
            return fn(*args, **kwargs)
        except sqlite3.OperationalError as exc:
            if not self._busy(exc):
                raise
        return await super()._execute(self._waiting, self._conn, fn, args, kwargs)


def connector(
    connect: Callable[[], sqlite3.Connection],
    iter_chunk_size: int,
    hooks: tuple[Inline, Busy, Waiting],
) -> Callable[[], aiosqlite.Connection]:
    """What ``create_async_engine(async_creator=…)`` calls: an :class:`InlineConnection`,
    or, where aiosqlite is not the release tested, a plain one."""
    if not AVAILABLE:
        return lambda: aiosqlite.Connection(connect, iter_chunk_size)
    return lambda: InlineConnection(connect, iter_chunk_size, hooks)
