"""The per-owner cap on runs going at once, from outside: a burst of ``execute`` on new
conversations gets at most LUMINA_MAX_ACTIVE_RUNS_PER_OWNER accepted and 429 (with
Retry-After) for the rest; at the cap every other way to start a run is refused too,
another owner is not; once the runs end new ones are accepted again. With Redis, two
servers count one owner's runs together."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.conftest import SHARED_REDIS_URL, write_agent
from tests.fake_llm import FakeLLM
from tests.server import AppServer

pytestmark = pytest.mark.slow

CAP = 3
BURST = 12
ALICE = {"Authorization": "Bearer ka"}
BOB = {"Authorization": "Bearer kb"}


def capped_server(workdir: Path, fake_llm: FakeLLM, database_url: str | None = None, **env):
    server = AppServer(
        workdir,
        backend_only=True,
        database_url=database_url,
        env={
            "LUMINA_MAX_ACTIVE_RUNS_PER_OWNER": str(CAP),
            "LUMINA_API_KEYS": "alice:ka,bob:kb",
            "LUMINA_REDIS_URL": "",
            **env,
        },
    )
    server.prepare()
    model = {"provider": "openai", "base_url": fake_llm.base_url, "model": "fake-1"}
    write_agent(server.data_dir / "agents", "slow", model)
    return server


def slow_answers(fake_llm: FakeLLM) -> None:
    fake_llm.script.chunks = [f"w{i} " for i in range(400)]
    fake_llm.script.delay = 0.05  # 20 s: the runs are still going when the burst ends


async def execute_burst(urls: list[str]) -> list[httpx.Response]:
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=BURST)) as c:
        return await asyncio.gather(
            *(
                c.post(
                    urls[n % len(urls)] + "/api/v1/agents/slow/execute",
                    json={"task": f"task {n}"},
                    headers=ALICE,
                )
                for n in range(BURST)
            )
        )


def check_capped(answers: list[httpx.Response]) -> list[str]:
    """The accepted runs' ids, once the answers are checked."""
    statuses = Counter(r.status_code for r in answers)
    assert statuses == {202: CAP, 429: BURST - CAP}, statuses
    for answer in answers:
        if answer.status_code == 429:
            assert_refused(answer)
    return [r.json()["runId"] for r in answers if r.status_code == 202]


def assert_refused(answer: httpx.Response) -> None:
    assert answer.status_code == 429, answer.text
    assert int(answer.headers["retry-after"]) >= 1
    body = answer.json()
    message = body["error"]["message"] if "error" in body else body["message"]
    assert f"at most {CAP} runs may go at once" in message


def stop_all(client: httpx.Client, run_ids: list[str]) -> None:
    for run_id in run_ids:
        stopped = client.post(f"/api/v1/runs/{run_id}/stop", headers=ALICE)
        assert stopped.json()["status"] == "stopped", stopped.text


def test_the_cap_holds_for_every_way_in_and_frees_as_runs_end(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    server = capped_server(tmp_path, fake_llm)
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            done = client.post(
                "/api/v1/agents/slow/execute/sync", json={"task": "hi"}, headers=ALICE
            )
            assert done.status_code == 200, done.text
            finished = done.json()["conversationId"]
            slow_answers(fake_llm)
            running = check_capped(asyncio.run(execute_burst([server.url])))

            at_cap = [
                ("/api/v1/agents/slow/execute/sync", {"task": "x"}),
                ("/api/v1/agents/slow/execute/stream", {"task": "x"}),
                ("/api/v1/agents/slow/execute", {"task": "x", "conversationId": finished}),
                ("/api/agent/slow/chat", {"message": "x"}),
                (f"/api/v1/conversations/{finished}/regenerate", {"stream": False}),
                (
                    "/v1/chat/completions",
                    {"model": "slow", "messages": [{"role": "user", "content": "x"}]},
                ),
            ]
            for path, body in at_cap:
                assert_refused(client.post(path, json=body, headers=ALICE))
            other = client.post("/api/v1/agents/slow/execute", json={"task": "x"}, headers=BOB)
            assert other.status_code == 202  # another owner has its own cap
            client.post(f"/api/v1/runs/{other.json()['runId']}/stop", headers=BOB)

            stop_all(client, running)
            again = [
                client.post("/api/v1/agents/slow/execute", json={"task": "x"}, headers=ALICE)
                for _ in range(CAP)
            ]
            assert [r.status_code for r in again] == [202] * CAP
            assert_refused(
                client.post("/api/v1/agents/slow/execute", json={"task": "x"}, headers=ALICE)
            )
            stop_all(client, [r.json()["runId"] for r in again])
    finally:
        server.stop()


def test_two_servers_over_one_redis_count_one_owners_runs_together(
    tmp_path: Path, fake_llm: FakeLLM, redis_prefix: str
) -> None:
    env = {"LUMINA_REDIS_URL": SHARED_REDIS_URL, "LUMINA_REDIS_PREFIX": redis_prefix}
    database = f"sqlite:///{tmp_path / 'shared.db'}"
    servers = [capped_server(tmp_path / n, fake_llm, database, **env) for n in ("one", "two")]
    try:
        for server in servers:
            server.start()
        slow_answers(fake_llm)
        running = check_capped(asyncio.run(execute_burst([s.url for s in servers])))
        with httpx.Client(base_url=servers[1].url, timeout=30) as client:
            stop_all(client, running)  # a stop reaches the instance running it
            deadline = time.monotonic() + 10
            while True:  # a stopped run's slot is given back as the run ends
                resp = client.post("/api/v1/agents/slow/execute", json={"task": "x"}, headers=ALICE)
                if resp.status_code == 202:
                    break
                assert_refused(resp)
                assert time.monotonic() < deadline, "the slots were not given back"
                time.sleep(0.1)
            stop_all(client, [resp.json()["runId"]])
    finally:
        for server in servers:
            server.stop()
