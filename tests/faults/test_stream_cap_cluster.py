"""The per-owner stream cap (LUMINA_MAX_STREAMS_PER_OWNER) holds across two real app
processes over one Redis (#31): streams open on one count on the other, one closed frees
its slot for both, and a killed instance's slots free themselves once their lease runs
out."""

from __future__ import annotations

import contextlib
import time

import httpx
import pytest

from tests.faults.realserver import two_instances
from tests.server import AppServer
from tests.waits import wait_until_sync

pytestmark = pytest.mark.slow

CAP = 3
LEASE_S = 1.0  # a stream slot lives 3 leases unless renewed
STREAM = "/api/v1/agents/assistant/execute/stream"


@pytest.fixture
def cluster(tmp_path, _databases):
    database = _databases("postgresql")
    database.truncate()
    env = {
        "LUMINA_RUN_LEASE_SECONDS": str(LEASE_S),
        "LUMINA_DEMO_DELAY_MS": "600000",  # runs never pass their first event: streams stay
        "LUMINA_MAX_STREAMS_PER_OWNER": str(CAP),
        "LUMINA_MAX_ACTIVE_RUNS_PER_OWNER": "100",
    }
    with two_instances(tmp_path, database.url, **env) as servers:
        yield servers


@contextlib.contextmanager
def clients(one: AppServer, two: AppServer):
    """A client of each instance, and a stack holding the streams opened meanwhile."""
    with (
        httpx.Client(base_url=one.url, timeout=30) as c1,
        httpx.Client(base_url=two.url, timeout=30) as c2,
        contextlib.ExitStack() as held,
    ):
        yield c1, c2, held


def open_stream(stack: contextlib.ExitStack, client: httpx.Client, n: int) -> httpx.Response:
    """A stream held open until ``stack`` closes (its first line read, its reader kept: a
    dropped one would close the stream); a refused one comes back read whole."""
    response = stack.enter_context(client.stream("POST", STREAM, json={"task": f"q {n}"}))
    if response.status_code == 200:
        lines = response.iter_lines()
        assert next(lines).startswith("id: ")
        stack.callback(lines.close)
    else:
        response.read()
    return response


def refused(response: httpx.Response) -> bool:
    return (
        response.status_code == 429
        and response.json()["error"]["code"] == "too_many_streams"
        and response.headers["retry-after"] == "5"
    )


def test_the_stream_cap_is_shared_by_two_instances(cluster) -> None:
    one, two = cluster
    with clients(one, two) as (c1, c2, held):
        assert open_stream(held, c1, 1).status_code == 200
        assert open_stream(held, c1, 2).status_code == 200
        with contextlib.ExitStack() as third:
            assert open_stream(third, c2, 3).status_code == 200
            # CAP open across both: the next is refused on either, and starts nothing
            assert refused(open_stream(held, c2, 4))
            assert refused(open_stream(held, c1, 5))
            before = c2.get("/api/v1/conversations").json()["items"]
        # the stream on instance 2 closed: its slot is free for instance 1 too
        wait_until_sync(
            lambda: open_stream(held, c1, 6).status_code == 200,
            within=10,
            what="a freed slot taken on the other instance",
        )
        assert len(before) == 3  # the refused requests created no conversation


def test_a_killed_instances_stream_slots_expire(cluster) -> None:
    one, two = cluster
    with clients(one, two) as (c1, c2, held):
        for n in range(CAP):
            assert open_stream(held, c1, n).status_code == 200
        time.sleep(4 * LEASE_S)  # the point: held longer than a slot's unrenewed life
        assert refused(open_stream(held, c2, 10))  # renewed, so still held
        one.kill()
        started = time.monotonic()
        wait_until_sync(
            lambda: open_stream(held, c2, 11).status_code == 200,
            within=30,
            what="the killed instance's stream slots expiring",
        )
        assert time.monotonic() - started <= 3 * LEASE_S + 5
