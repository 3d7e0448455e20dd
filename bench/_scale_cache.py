"""A loaded scale database kept between runs (``bench/scale.py --cache``): a million rows
take minutes to load, the search figures seconds to take.

SQLite: a file under ``/tmp/lumina-scale-cache``; PostgreSQL: a database of its own on the
local server (``lumina_scale_<messages>_<per conversation>``). Both are migrated to the
current head on every use (a new migration runs over the loaded rows, as it would in
production) and reused once they hold the stage's messages.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa
from _common import note
from _servers import ADMIN_URLS, migrate

CACHE = Path("/tmp/lumina-scale-cache")


@contextlib.contextmanager
def cached_database(backend: str, messages: int, per: int, tag: str = "") -> Iterator[str]:
    """The sync URL of the kept database for ``messages`` stored ``per`` a conversation,
    created empty (and migrated) the first time."""
    if backend == "sqlite":
        CACHE.mkdir(exist_ok=True)
        url = f"sqlite:///{CACHE / f'sqlite-{messages}-{per}{tag}.db'}"
    else:
        name = f"lumina_scale_{messages}_{per}{tag}"
        admin = sa.create_engine(
            ADMIN_URLS[backend], isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool
        )
        with admin.connect() as conn:
            known = conn.exec_driver_sql(
                "SELECT 1 FROM pg_database WHERE datname = %s", (name,)
            ).scalar()
            if not known:
                conn.exec_driver_sql(f"CREATE DATABASE {name}")
        admin.dispose()
        url = sa.engine.make_url(ADMIN_URLS[backend]).set(database=name).render_as_string(False)
    migrate(url)
    note(f"cached database {url}")
    yield url


def stored(sync_url: str) -> tuple[int, int, list[str]]:
    """(messages, conversations, conversation uuids in id order) already loaded."""
    engine = sa.create_engine(sync_url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        messages = int(conn.exec_driver_sql("SELECT count(*) FROM lumina_message").scalar())
        uuids = [
            r[0] for r in conn.exec_driver_sql("SELECT uuid FROM lumina_conversation ORDER BY id")
        ]
    engine.dispose()
    return messages, len(uuids), uuids
