"""The database becomes unreachable (a proxy in front of PostgreSQL is cut): the API says
503 with a clear message, acknowledges nothing, Redis never runs ahead of SQL, and normal
service resumes when the database returns."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tests.conftest import SHARED_REDIS_URL
from tests.tcp_proxy import TcpProxy

pytestmark = pytest.mark.slow


@pytest.fixture
def proxied_postgres(_databases):
    database = _databases("postgresql")
    database.truncate()
    url = sa.engine.make_url(database.url)
    proxy = TcpProxy(url.host, url.port)
    proxy.start()
    yield database, url.set(port=proxy.port).render_as_string(False), proxy
    proxy.close()


async def test_database_down_is_503_and_nothing_is_acknowledged(
    api_factory, proxied_postgres, redis_prefix
) -> None:
    database, url, proxy = proxied_postgres
    services, api = await api_factory(database_url=url, redis_url=SHARED_REDIS_URL)
    try:
        ok = await api.post("/api/v1/agents/demo/execute/sync", json={"task": "first"})
        assert ok.status_code == 200, ok.text
        conv = ok.json()["conversationId"]
        window_before = await services.memory.hot.read(conv)
        assert window_before.high_water == 2

        proxy.stop()
        for method, path, body in [
            ("POST", "/api/v1/agents/demo/execute/sync", {"task": "lost?", "conversationId": conv}),
            (
                "POST",
                "/api/v1/agents/demo/execute/stream",
                {"task": "lost?", "conversationId": conv},
            ),
            ("POST", "/api/v1/conversations", {"agentId": "demo"}),
            ("GET", f"/api/v1/conversations/{conv}/messages", None),
            ("GET", "/api/v1/conversations", None),
        ]:
            resp = await api.request(method, path, json=body)
            assert resp.status_code == 503, (path, resp.status_code, resp.text)
            error = resp.json()["error"]
            assert error["code"] == "store_unavailable" and "database" in error["message"]
        health = await api.get("/healthz")
        assert health.status_code == 503 and health.json()["database"] == "down"
        window_during = await services.memory.hot.read(conv)
        assert window_during.high_water == 2  # Redis did not run ahead of SQL

        proxy.start()
        again = await api.post(
            "/api/v1/agents/demo/execute/sync", json={"task": "second", "conversationId": conv}
        )
        assert again.status_code == 200, again.text
        engine = sa.create_engine(database.url, poolclass=sa.pool.NullPool)
        with engine.connect() as conn:
            contents = (
                conn.exec_driver_sql("SELECT content FROM lumina_message ORDER BY id")
                .scalars()
                .all()
            )
        engine.dispose()
        assert contents[0] == "first" and contents[2] == "second" and len(contents) == 4
        assert "lost?" not in contents
        assert (await api.get("/healthz")).json()["database"] == "ok"
    finally:
        await api.aclose()
        await services.close()
