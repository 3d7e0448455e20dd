"""Shared fixtures: real SQL databases (SQLite, MariaDB, PostgreSQL) and real Redis servers.

Each test run gets its own MariaDB/PostgreSQL databases and its own Redis key prefix, and
removes them afterwards. Tests that kill or pause Redis start their own ``redis-server``.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
import sqlalchemy as sa
from alembic import command

from lumina_app.composition import open_services
from lumina_app.settings import load_settings
from lumina_app.storage.sql.schema_state import alembic_config
from tests.fake_llm import FakeLLM
from tests.preflight import missing_services

ROOT = Path(__file__).resolve().parent.parent
RUN_ID = secrets.token_hex(3)
SHARED_REDIS_URL = os.environ.get("LUMINA_TEST_REDIS_URL", "redis://127.0.0.1:6379/13")
MARIADB_ADMIN_URL = os.environ.get(
    "LUMINA_TEST_MARIADB_URL", "mysql+pymysql://root@127.0.0.1:3306/test"
)
POSTGRES_ADMIN_URL = os.environ.get(
    "LUMINA_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
BACKENDS = ["sqlite", "mariadb", "postgresql"]


# -- SQL ---------------------------------------------------------------------------------


def _create_server_database(admin_url: str, name: str) -> str:
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        if admin.dialect.name == "mysql":
            conn.exec_driver_sql(f"CREATE DATABASE {name} CHARACTER SET utf8mb4")
        else:
            conn.exec_driver_sql(f"CREATE DATABASE {name}")
    admin.dispose()
    return str(sa.engine.make_url(admin_url).set(database=name).render_as_string(False))


def _drop_server_database(admin_url: str, name: str) -> None:
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        if admin.dialect.name == "postgresql":
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        else:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}")
    admin.dispose()


@dataclass
class Database:
    """A migrated, empty database for one backend; ``url`` is the sync (settings) form."""

    backend: str
    url: str

    def truncate(self) -> None:
        """Every table of the app emptied, children first (a stale row must not meet a
        reused id: SQLite hands out ids again once a table is empty)."""
        from lumina_app.storage.sql.models import metadata

        engine = sa.create_engine(self.url, poolclass=sa.pool.NullPool)
        with engine.begin() as conn:
            present = set(sa.inspect(conn).get_table_names())
            for table in reversed(metadata.sorted_tables):
                if table.name in present:
                    conn.execute(table.delete())
        engine.dispose()


def make_database(backend: str, tmp_dir: Path) -> tuple[Database, callable]:
    """Create and migrate a database; return it with its clean-up."""
    name = f"lumina_t_{RUN_ID}_{secrets.token_hex(2)}"
    if backend == "sqlite":
        url = f"sqlite:///{tmp_dir / (name + '.db')}"
        cleanup = lambda: None  # noqa: E731 - tmp dir goes away by itself
    elif backend == "mariadb":
        url = _create_server_database(MARIADB_ADMIN_URL, name)
        cleanup = lambda: _drop_server_database(MARIADB_ADMIN_URL, name)  # noqa: E731
    else:
        url = _create_server_database(POSTGRES_ADMIN_URL, name)
        cleanup = lambda: _drop_server_database(POSTGRES_ADMIN_URL, name)  # noqa: E731
    command.upgrade(alembic_config(url), "head")
    return Database(backend, url), cleanup


@pytest.fixture(scope="session")
def _databases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Database]]:
    made: dict[str, Database] = {}
    cleanups = []
    tmp = tmp_path_factory.mktemp("db")

    def get(backend: str) -> Database:
        if backend not in made:
            db, cleanup = make_database(backend, tmp)
            made[backend] = db
            cleanups.append(cleanup)
        return made[backend]

    yield get  # type: ignore[misc]
    for cleanup in cleanups:
        cleanup()


@pytest.fixture(params=BACKENDS)
def database(request: pytest.FixtureRequest, _databases) -> Database:
    """Each test using this runs once per backend, on an emptied database."""
    db = _databases(request.param)
    db.truncate()
    return db


@pytest.fixture
def sqlite_database(_databases) -> Database:
    db = _databases("sqlite")
    db.truncate()
    return db


@pytest.fixture
async def engine(database: Database) -> AsyncIterator:
    from lumina_app.settings import load_settings
    from lumina_app.storage.sql.engine import create_engine

    eng = create_engine(load_settings(database_url=database.url).async_database_url)
    yield eng
    await eng.dispose()


# -- Redis -------------------------------------------------------------------------------


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A key prefix unique to this test on the shared server's test DB; keys removed after."""
    prefix = f"lumina-test:{RUN_ID}:{secrets.token_hex(3)}"
    yield prefix
    client = redis.Redis.from_url(SHARED_REDIS_URL)
    keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


async def forget_prefix(client, prefix: str) -> None:
    """What FLUSHDB does, for one test only: delete the keys under its ``redis_prefix``
    (the shared test DB holds other runs' keys too)."""
    for attempt in range(3):  # the app's client connects within 0.2 s: a loaded CI may not
        try:
            keys = [key async for key in client.scan_iter(match=f"{prefix}:*", count=1000)]
            if keys:
                await client.delete(*keys)
            return
        except redis.exceptions.TimeoutError:
            if attempt == 2:
                raise


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """A private ``redis-server`` a test may kill, pause, flush and restart."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.proc = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:  # a bare TCP probe: redis-py's own retries would add seconds here
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
        client = self.client()
        client.ping()
        client.close()

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def pause(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path)
    server.start()
    yield server
    if server.proc and server.proc.poll() is None:
        server.resume()
    server.kill()


# -- runtime: agents, a fake LLM, opened services ---------------------------------------

SYSTEM_PROMPT_PARTS = {
    "agent.md": "You are Tester.",
    "soul.md": "Be brief.",
    "tools.md": "No tools.",
}


def write_agent(
    agents_dir: Path, agent_id: str, config: dict, prompts: dict[str, str] | None = None
) -> None:
    folder = agents_dir / agent_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    for name, text in (prompts or {}).items():
        (folder / name).write_text(text, encoding="utf-8")


@pytest.fixture
def fake_llm():
    with FakeLLM() as server:
        yield server


@pytest.fixture
def data_dir(tmp_path: Path, fake_llm: FakeLLM) -> Path:
    agents = tmp_path / "agents"
    write_agent(
        agents,
        "tester",
        {"name": "Tester", "provider": "openai", "base_url": fake_llm.base_url, "model": "fake-1"},
        SYSTEM_PROMPT_PARTS,
    )
    write_agent(agents, "demo", {"name": "Demo"})
    return tmp_path


@pytest.fixture
def settings_factory(sqlite_database, data_dir, redis_prefix):
    def make(**overrides):
        values = {
            "database_url": sqlite_database.url,
            "redis_url": SHARED_REDIS_URL,
            "redis_prefix": redis_prefix,
            "data_dir": data_dir,
            "demo_delay_ms": 0,
            "flush_interval_ms": 20,
            "allowed_hosts": "testserver",  # httpx's in-process client names this host
        }
        values.update(overrides)
        return load_settings(**values)

    return make


@pytest.fixture
async def services(settings_factory):
    opened = await open_services(settings_factory())
    yield opened
    await opened.close()


async def crashed_run(services, run_id: str, partial: str):
    """A turn whose process died mid-answer: question stored, answer left ``streaming``
    with ``partial`` flushed, run recorded as running. Returns (conversation, record)."""
    from lumina_app.domain import Msg, RunRecord

    conv = await services.memory.create_conversation(agent_id="tester")
    record = RunRecord(
        run_id=run_id,
        conversation_pk=conv.id,
        agent_id="tester",
        owner="",
        scenario="new",
        provider="openai",
        model="m",
    )
    await services.memory.begin_turn(
        conv, Msg.user("q", turn_id="t"), Msg.assistant("", turn_id="t"), record
    )
    await services.memory.flush_answer(record.assistant_message_id, partial)
    return conv, record


# -- hygiene -----------------------------------------------------------------------------

# What a `make test-unit` test may not use: anything that needs a server or a process.
SERVER_FIXTURES = {
    "_databases",
    "database",
    "sqlite_database",
    "engine",
    "redis_prefix",
    "redis_server",
    "fake_llm",
    "data_dir",
    "settings_factory",
    "services",
    "api",
    "api_factory",
    "app_server",
    "page",
}


@pytest.hookimpl(trylast=True)  # after ``-m`` has deselected: ``-m unit`` needs no server
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A run with any test beyond the fast tier first checks that the servers answer."""
    if config.option.collectonly or all(item.get_closest_marker("unit") for item in items):
        return
    problem = missing_services(
        redis_url=SHARED_REDIS_URL, mariadb_url=MARIADB_ADMIN_URL, postgres_url=POSTGRES_ADMIN_URL
    )
    if problem:
        pytest.exit(problem, returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.fixture(autouse=True)
def _unit_tests_need_no_server(request: pytest.FixtureRequest) -> None:
    """A test marked ``unit`` runs in the fast tier, with no server at all."""
    if request.node.get_closest_marker("unit"):
        used = SERVER_FIXTURES & set(request.fixturenames)
        assert not used, f"a unit test may not use {sorted(used)}"


@pytest.fixture(autouse=True)
def _fail_on_app_errors(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """An ERROR log record from the app fails the test (STYLE habit 9)."""
    caplog.set_level(logging.WARNING, logger="lumina_app")
    yield
    errors = [
        r
        for r in caplog.get_records("call")
        if r.levelno >= logging.ERROR
        and r.name.startswith("lumina_app")
        and not getattr(r, "expected_in_test", False)
    ]
    assert not errors, f"app logged errors: {[r.getMessage() for r in errors]}"
