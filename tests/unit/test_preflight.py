"""``make test`` with a server down: one line naming it and how to start it."""

from __future__ import annotations

import socket

import pytest

from tests.preflight import missing_services

pytestmark = pytest.mark.unit


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again once the socket is


def test_every_missing_server_is_named_with_how_to_start_it() -> None:
    redis_port, maria_port, pg_port = closed_port(), closed_port(), closed_port()
    line = missing_services(
        redis_url=f"redis://127.0.0.1:{redis_port}/13",
        mariadb_url=f"mysql+pymysql://root@127.0.0.1:{maria_port}/test",
        postgres_url=f"postgresql+psycopg://postgres@127.0.0.1:{pg_port}/postgres",
    )
    assert line is not None and "\n" not in line
    assert f"Redis on 127.0.0.1:{redis_port}" in line
    assert f"MariaDB on 127.0.0.1:{maria_port}" in line
    assert f"PostgreSQL on 127.0.0.1:{pg_port}" in line
    assert "redis-server" in line and "mariadbd" in line and "pg_ctlcluster" in line
    assert "bash .ci/run" in line


def test_the_fast_tier_runs_with_no_server_reachable() -> None:
    """``make test-unit`` (``-m unit``) over files that also hold server tests: the check
    waits for ``-m`` to deselect them, so no server is asked for (it once ran first)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "LUMINA_TEST_REDIS_URL": f"redis://127.0.0.1:{closed_port()}/13",
        "LUMINA_TEST_MARIADB_URL": f"mysql+pymysql://root@127.0.0.1:{closed_port()}/test",
    }
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "unit", "-q", "-p", "no:cacheprovider",
         "tests/unit/test_cold_store.py", "tests/unit/test_ids.py"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert "passed" in ran.stdout and "do not answer" not in ran.stdout
