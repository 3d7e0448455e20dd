"""The async SQL engine: one per process, tuned per backend."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


def create_engine(async_url: str, *, pool_size: int = 10) -> AsyncEngine:
    """Create the engine; SQLite gets WAL, a busy timeout and enforced foreign keys."""
    url = make_url(async_url)
    backend = url.get_backend_name()
    kwargs: dict = {"pool_pre_ping": backend != "sqlite"}
    if backend == "sqlite":
        database = url.database or ""
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        kwargs.update(pool_size=pool_size, max_overflow=20, pool_timeout=30)
    else:
        kwargs.update(pool_size=pool_size, max_overflow=20, pool_timeout=10, pool_recycle=1800)
    if backend == "mysql" or backend == "postgresql":
        kwargs["connect_args"] = {"connect_timeout": 5}
    engine = create_async_engine(url, **kwargs)
    if backend == "sqlite":
        sa.event.listen(engine.sync_engine, "connect", _sqlite_on_connect)
    return engine


def _sqlite_on_connect(dbapi_connection, _record) -> None:  # noqa: ANN001 - DBAPI types
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
