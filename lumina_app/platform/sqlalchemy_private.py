"""The SQLAlchemy internals the write path's fast lanes read, in one place (#44).

``storage/sql/sqlite_raw`` and ``storage/sql/pg_raw`` compile their fixed statements once
and send them to the driver's cursor themselves (docs/PERFORMANCE.md: several times less
CPU per statement than ``Connection.execute``). To send what the engine would send, and to
fire the same statement events, they read:

- ``SQLCompiler._bind_processors``: each bind parameter's type processor (dates, JSON);
- ``SQLCompiler._insertmanyvalues``: the ``VALUES (…)`` group of an INSERT, repeated for a
  multi-row INSERT;
- ``Connection._has_events`` / ``Engine._has_events``: whether any statement listener is
  set (skip the dispatch otherwise), and ``.dispatch.<event>``: the listeners, called as
  the engine calls them (``before_cursor_execute`` returns the statement and parameters);
- ``DBAPIError.instance``: a driver error raised as SQLAlchemy's own class.

Tested on SQLAlchemy 2.1 (:data:`TESTED`); another release, or a name gone, and
:data:`AVAILABLE` is False: the lanes compile no plan and every statement runs through
``Connection.execute`` (logged once; slower, the same rows). Canaries:
``tests/unit/test_fast_lane_canaries.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.sql.compiler import SQLCompiler

from lumina_app.platform.versions import tested

TESTED = "2.1"
NAMES = ("_bind_processors", "_insertmanyvalues", "_has_events")


def _names_present() -> bool:
    return (
        all(hasattr(SQLCompiler, n) for n in NAMES[:2])
        and hasattr(Connection, "_has_events")
        and hasattr(Engine, "_has_events")
        and callable(getattr(sa.exc.DBAPIError, "instance", None))
    )


AVAILABLE = tested("sqlalchemy", TESTED, __name__) and _names_present()


def bind_processors(compiled: SQLCompiler) -> Mapping[str, Callable[[Any], Any]] | None:
    """Bind parameter name → its type's processor (absent: sent as is); None: unavailable."""
    return compiled._bind_processors if AVAILABLE else None


def single_values(compiled: SQLCompiler) -> str | None:
    """A compiled multi-row INSERT's one ``VALUES`` group (without its parentheses); None
    where it has none or the name is unavailable."""
    many = compiled._insertmanyvalues if AVAILABLE else None
    return many.single_values_expr if many is not None and many.single_values_expr else None


def has_events(target: Connection | Engine) -> bool:
    """Whether statement listeners are set on ``target`` (a connection: or its engine)."""
    if isinstance(target, Connection):
        return target._has_events or target.engine._has_events
    return target._has_events


def listeners(target: Connection | Engine, event: str) -> Sequence[Callable[..., Any]]:
    """The listeners of ``event`` on ``target`` (its engine's too), in calling order."""
    return getattr(target.dispatch, event)


def driver_error(
    statement: str | None,
    params: Any,
    orig: BaseException,
    driver_base: type[Exception],
    *,
    invalidated: bool = False,
) -> BaseException:
    """``orig`` (a driver's exception) as SQLAlchemy raises it: ``IntegrityError``,
    ``OperationalError`` …, which error translation and busy-lock retries know."""
    return sa.exc.DBAPIError.instance(
        statement, params, orig, driver_base, connection_invalidated=invalidated
    )
