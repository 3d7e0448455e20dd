"""``/healthz`` (ok / degraded / down) and the API's own documentation."""

from __future__ import annotations

from lumina_app.storage.sql.engine import create_engine
from tests.api.helpers import messages, new_conversation, say


async def test_healthz_is_ok_with_redis(api) -> None:
    resp = await api.get("/healthz")
    assert resp.status_code == 200
    health = resp.json()
    assert health["status"] == "ok"
    assert health["database"] == "ok" and health["hotWindow"] == "ok"
    assert health["hotWindowBackend"] == "redis"
    assert health["version"].startswith("lumina ")


async def test_healthz_is_ok_with_the_in_process_window(api_factory) -> None:
    _services, api = await api_factory(redis_url=None)
    health = (await api.get("/healthz")).json()
    assert health["status"] == "ok" and health["hotWindowBackend"] != "redis"


async def test_dead_redis_is_degraded_and_the_api_still_works(api_factory) -> None:
    _services, api = await api_factory(redis_url="redis://127.0.0.1:1/0")
    resp = await api.get("/healthz")
    assert resp.status_code == 200
    health = resp.json()
    assert (health["status"], health["database"], health["hotWindow"]) == (
        "degraded",
        "ok",
        "degraded",
    )
    conv = await new_conversation(api)
    await say(api, "one", conv["uuid"])
    second = await say(api, "two", conv["uuid"])
    assert "one" in second["answer"]  # history came from SQL
    assert len(await messages(api, conv["uuid"])) == 4


async def test_dead_database_is_down_503(api_factory) -> None:
    services, api = await api_factory()
    await services.db.engine.dispose()
    services.db.engine = create_engine("postgresql+psycopg://lumina@127.0.0.1:1/none")
    resp = await api.get("/healthz")
    assert resp.status_code == 503
    assert resp.json()["status"] == "down" and resp.json()["database"] == "down"


async def test_openapi_lists_both_families(api) -> None:
    resp = await api.get("/openapi.json")
    assert resp.status_code == 200
    paths = resp.json()["paths"]
    for path in (
        "/api/v1/conversations",
        "/api/v1/conversations/{conversation_id}/messages",
        "/api/v1/agents/{agent_id}/execute/stream",
        "/api/v1/agents/{agent_id}/execute",
        "/api/v1/agents/{agent_id}/execute/sync",
        "/api/agent/list",
        "/api/agent/{agent_id}/chat",
        "/api/v1/runs/{run_id}/stop",
        "/healthz",
    ):
        assert path in paths
    stream = paths["/api/v1/agents/{agent_id}/execute/stream"]["post"]
    assert "text/event-stream" in stream["responses"]["200"]["content"]


async def test_docs_page_is_served(api) -> None:
    resp = await api.get("/docs")
    assert resp.status_code == 200
    assert "text/html" in resp.headers["content-type"]
    assert "/openapi.json" in resp.text
