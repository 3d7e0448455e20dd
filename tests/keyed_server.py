"""A real backend-only server with two owners' keys (alice, bob), on one backend's
database: what the MCP server's and the Python client's tests drive from outside."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import SHARED_REDIS_URL, Database
from tests.server import AppServer

KEYS = {"alice": "key-alice", "bob": "key-bob"}


@contextmanager
def keyed_server(database: Database, workdir: Path) -> Iterator[AppServer]:
    database.truncate()
    env = {
        "LUMINA_API_KEYS": ",".join(f"{owner}:{key}" for owner, key in KEYS.items()),
        "LUMINA_REDIS_URL": SHARED_REDIS_URL,
        "LUMINA_REDIS_PREFIX": "keyed-" + secrets.token_hex(4),
        "LUMINA_DEMO_DELAY_MS": "0",
    }
    up = AppServer(workdir, backend_only=True, env=env, database_url=database.url)
    up.start()
    try:
        yield up
    finally:
        up.stop()
