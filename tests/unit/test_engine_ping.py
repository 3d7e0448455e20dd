"""Server connections are pinged at checkout only after sitting idle: a turn's statements
pay no ping round trip each, and a connection the server dropped while idle is still
replaced before a statement meets it (MariaDB and PostgreSQL)."""

import pytest
import sqlalchemy as sa

from lumina_app.settings import load_settings
from lumina_app.storage.sql import engine as engine_module
from lumina_app.storage.sql.engine import create_engine

SERVERS = ["mariadb", "postgresql"]


@pytest.fixture(params=SERVERS)
async def server_engine(request, _databases):
    db = _databases(request.param)
    eng = create_engine(load_settings(database_url=db.url).async_database_url, pool_size=1)
    yield eng
    await eng.dispose()


@pytest.fixture
def pings(monkeypatch, server_engine) -> list[int]:
    dialect = server_engine.sync_engine.dialect
    seen: list[int] = []
    original = dialect.do_ping

    def counting(dbapi_connection):
        seen.append(1)
        return original(dbapi_connection)

    monkeypatch.setattr(dialect, "do_ping", counting)
    return seen


async def _backend_id(conn) -> int:
    query = (
        "SELECT pg_backend_pid()" if conn.dialect.name == "postgresql" else "SELECT CONNECTION_ID()"
    )
    return int((await conn.exec_driver_sql(query)).scalar())


async def test_back_to_back_checkouts_send_no_ping(server_engine, pings) -> None:
    for _ in range(5):
        async with server_engine.connect() as conn:
            assert (await conn.execute(sa.text("SELECT 1"))).scalar() == 1
    assert pings == []


async def test_a_connection_dropped_while_idle_is_replaced_before_use(
    server_engine, pings, monkeypatch
) -> None:
    async with server_engine.connect() as conn:
        first = await _backend_id(conn)
    # The server drops the pooled connection while it sits idle (a restart, an idle timeout).
    kill = (
        "SELECT pg_terminate_backend(%s)"
        if server_engine.dialect.name == "postgresql"
        else "KILL %s"
    )
    admin = sa.create_engine(server_engine.url.set(drivername=_sync_driver(server_engine)))
    with admin.connect() as other:
        other.exec_driver_sql(kill % first)
        other.commit()
    admin.dispose()
    monkeypatch.setattr(engine_module, "PING_AFTER_IDLE_SECONDS", 0.0)  # it has been idle
    async with server_engine.connect() as conn:
        assert await _backend_id(conn) != first
    assert pings  # the ping found it dead (and the new one was pinged too: idle 0 s)


def _sync_driver(engine) -> str:
    return "postgresql+psycopg" if engine.dialect.name == "postgresql" else "mysql+pymysql"
