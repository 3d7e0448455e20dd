"""A wave of streams cannot leave more Redis connections open than the pools' cap
(``LUMINA_REDIS_MAX_CONNECTIONS``, per client): past it commands wait for a connection
and every stream still completes (#31)."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from tests.api.helpers import parse_sse
from tests.conftest import BACKENDS, SHARED_REDIS_URL

WAVE = 30
CLIENTS = 5  # hot window, run-event reader, live listener, run locks, slots


async def _named(admin: aioredis.Redis, name: str) -> int:
    return sum(1 for c in await admin.client_list() if c.get("name") == name)


async def _wave(api, admin: aioredis.Redis, name: str) -> tuple[int, int, list[str]]:
    """WAVE streams at once: (most connections seen open, open after, how each ended)."""
    most = 0
    stop = asyncio.Event()

    async def watch() -> None:
        nonlocal most
        while not stop.is_set():
            most = max(most, await _named(admin, name))
            await asyncio.sleep(0.005)  # a sampling interval, not a wait for an outcome

    async def one(i: int) -> str:
        resp = await api.post(
            "/api/v1/agents/demo/execute/stream", params={"task": f"hello number {i}"}
        )
        assert resp.status_code == 200, resp.text
        return "done" if parse_sse(resp.content)[-1].json.get("done") else resp.text

    watcher = asyncio.create_task(watch())
    try:
        ends = await asyncio.gather(*(one(i) for i in range(WAVE)))
    finally:
        stop.set()
        await watcher
    return max(most, await _named(admin, name)), await _named(admin, name), ends


async def _wave_on(api_factory, name: str, **overrides) -> tuple[int, int, list[str]]:
    """_wave on an app made with ``overrides`` (an owner may hold the whole wave)."""
    _services, api = await api_factory(
        demo_delay_ms=5,
        max_streams_per_owner=WAVE,
        max_active_runs_per_owner=WAVE,
        max_requests_per_address=0,
        **overrides,
    )
    admin = aioredis.Redis.from_url(SHARED_REDIS_URL, decode_responses=True)
    try:
        return await _wave(api, admin, name)
    finally:
        await admin.aclose()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_wave_of_streams_opens_no_more_redis_connections_than_the_cap(
    api_factory, redis_prefix, _databases, backend
):
    cap = 2
    database = _databases(backend)
    database.truncate()
    most, after, ends = await _wave_on(
        api_factory, redis_prefix, database_url=database.url, redis_max_connections=cap
    )
    assert ends == ["done"] * WAVE  # waiting for a connection failed no stream
    assert 0 < most <= CLIENTS * cap, most
    assert after <= CLIENTS * cap


async def test_without_a_tight_cap_the_same_wave_opens_more(api_factory, redis_prefix):
    """The check above can fail: the same wave under the default cap opens more than
    the tight cap's ceiling."""
    most, _after, ends = await _wave_on(api_factory, redis_prefix)
    assert ends == ["done"] * WAVE
    assert most > CLIENTS * 2, most
