"""A real Lumina server per backend for the client package's tests (``lumina_client`` is
installed from clients/python by requirements-dev.txt), shared by this folder's modules."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from tests.conftest import BACKENDS, SHARED_REDIS_URL
from tests.server import AppServer

KEYS = {"alice": "key-alice", "bob": "key-bob"}


@pytest.fixture(scope="package", params=BACKENDS)
def server(
    request: pytest.FixtureRequest, _databases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppServer]:
    database = _databases(request.param)
    database.truncate()
    env = {
        "LUMINA_API_KEYS": ",".join(f"{owner}:{key}" for owner, key in KEYS.items()),
        "LUMINA_REDIS_URL": SHARED_REDIS_URL,
        "LUMINA_REDIS_PREFIX": "client-" + secrets.token_hex(4),
        "LUMINA_DEMO_DELAY_MS": "0",
    }
    up = AppServer(
        tmp_path_factory.mktemp(f"client-{request.param}"),
        backend_only=True,
        env=env,
        database_url=database.url,
    )
    up.start()
    try:
        yield up
    finally:
        up.stop()
