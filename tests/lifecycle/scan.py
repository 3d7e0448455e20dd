"""Looking everywhere for what should be gone: every table of the database, every Redis key
under a test's prefix (names and values), every file under a folder (names and bytes)."""

from __future__ import annotations

from pathlib import Path

import redis
import sqlalchemy as sa

from tests.conftest import SHARED_REDIS_URL

SKIPPED_TABLES = {"alembic_version"}


def scan_sql(url: str, needles: list[str], *, skip: dict[str, set[str]] | None = None) -> list[str]:
    """``table: needle`` for each table (the app's and any other, FTS shadow tables too)
    holding a needle in any column; ``skip`` maps a table to needles allowed there."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    found = []
    try:
        with engine.connect() as conn:
            for table in sa.inspect(conn).get_table_names():
                if table in SKIPPED_TABLES:
                    continue
                allowed = (skip or {}).get(table, set())
                rows = conn.execute(sa.select(sa.text("*")).select_from(sa.table(table)))
                for row in rows:
                    blob = " ".join(_text(v) for v in row)
                    found += [f"{table}: {n}" for n in needles if n not in allowed and n in blob]
    finally:
        engine.dispose()
    return sorted(set(found))


def _text(value: object) -> str:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def scan_redis(prefix: str, needles: list[str]) -> list[str]:
    client = redis.Redis.from_url(SHARED_REDIS_URL)
    found = []
    try:
        for key in client.scan_iter(match=f"{prefix}:*", count=1000):
            kind = client.type(key).decode()
            if kind == "string":
                value = [client.get(key)]
            elif kind == "list":
                value = client.lrange(key, 0, -1)
            elif kind == "hash":
                value = [b" ".join(pair) for pair in client.hgetall(key).items()]
            elif kind == "zset":
                value = client.zrange(key, 0, -1)
            elif kind == "stream":
                value = [repr(entry).encode() for entry in client.xrange(key)]
            elif kind == "set":
                value = list(client.smembers(key))
            else:
                value = []
            blob = key.decode() + " " + " ".join(_text(v) for v in value if v is not None)
            found += [f"redis {key.decode()}: {n}" for n in needles if n in blob]
    finally:
        client.close()
    return sorted(set(found))


def redis_keys(prefix: str) -> list[str]:
    client = redis.Redis.from_url(SHARED_REDIS_URL)
    try:
        return sorted(k.decode() for k in client.scan_iter(match=f"{prefix}:*", count=1000))
    finally:
        client.close()


def scan_files(root: Path, needles: list[str]) -> list[str]:
    found = []
    for path in root.rglob("*"):
        name = str(path.relative_to(root))
        data = path.read_bytes().decode("utf-8", "replace") if path.is_file() else ""
        found += [f"file {name}: {n}" for n in needles if n in name or n in data]
    return sorted(set(found))
