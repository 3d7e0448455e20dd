"""Two real app processes over one PostgreSQL database and one Redis: a stream started on
instance 1 resumes on instance 2, a stop sent to 2 stops a run on 1, the one-active-run
rule holds across them, and a run of a killed instance is closed by the survivor."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.faults.realserver import two_instances
from tests.waits import wait_until_sync

pytestmark = pytest.mark.slow


def frames(lines: list[str]) -> list[tuple[int, dict]]:
    out, event_id = [], None
    for line in lines:
        if line.startswith("id: "):
            event_id = int(line[4:])
        elif line.startswith("data: "):
            out.append((event_id, json.loads(line[6:])))
    return out


@pytest.fixture
def cluster(tmp_path, _databases):
    database = _databases("postgresql")
    database.truncate()
    env = {
        "LUMINA_RUN_LEASE_SECONDS": "2",
        "LUMINA_DEMO_DELAY_MS": "40",
        "LUMINA_FLUSH_INTERVAL_MS": "100",
    }
    with two_instances(tmp_path, database.url, **env) as servers:
        yield servers


def answer_text(client: httpx.Client, conv: str) -> str:
    """The last message's text if it is an answer (flushed while it streams)."""
    items = client.get(f"/api/v1/conversations/{conv}/messages").json()["items"]
    return items[-1]["content"] if items and items[-1]["role"] == "ASSISTANT" else ""


def test_stream_resumes_stop_crosses_and_lock_holds(cluster) -> None:
    one, two = cluster
    with (
        httpx.Client(base_url=one.url, timeout=30) as c1,
        httpx.Client(base_url=two.url, timeout=30) as c2,
    ):
        head: list[tuple[int, dict]] = []
        with c1.stream(
            "POST", "/api/v1/agents/assistant/execute/stream", json={"task": "tell me a lot /long"}
        ) as response:
            lines = []
            for line in response.iter_lines():
                lines.append(line)
                head = frames(lines)
                if sum("chunk" in data for _, data in head) >= 5:
                    break
        first = head[0][1]
        run_id, conv = first["runId"], first["conversationId"]

        busy = c2.post(
            "/api/v1/agents/assistant/execute/sync", json={"task": "me too", "conversationId": conv}
        )
        assert busy.status_code == 409
        assert busy.json()["error"]["runId"] == run_id

        last_id = head[-1][0]
        with c2.stream(
            "GET",
            f"/api/v1/runs/{run_id}/stream",
            params={"format": "v1"},
            headers={"Last-Event-ID": str(last_id)},
        ) as response:
            tail = frames(list(response.iter_lines()))
        assert tail[0][0] == last_id + 1
        ids = [i for i, _ in head] + [i for i, _ in tail]
        assert ids == sorted(set(ids))  # no duplicate
        assert tail[-1][1].get("done") is True
        text = "".join(d["chunk"] for _, d in head + tail if "chunk" in d)
        stored = c2.get(f"/api/v1/conversations/{conv}/messages").json()["items"]
        assert stored[-1]["content"] == text and stored[-1]["status"] == "complete"

        # A stop sent to instance 2 stops a run that lives on instance 1.
        started = c1.post(
            "/api/v1/agents/assistant/execute", json={"task": "again /long", "conversationId": conv}
        )
        assert started.status_code == 202
        run_id = started.json()["runId"]
        wait_until_sync(lambda: answer_text(c1, conv), "the answer's first words")
        stopped = c2.post(f"/api/v1/runs/{run_id}/stop")
        assert stopped.status_code == 200 and stopped.json()["status"] == "stopped"
        assert c1.get(f"/api/v1/runs/{run_id}").json()["status"] == "stopped"

        # Warm on instance 1, resumed on instance 2: scenario resume.
        resumed = c2.post(
            "/api/v1/agents/assistant/execute/sync",
            json={"task": "and now?", "conversationId": conv},
        )
        assert resumed.json()["scenario"] == "resume"


def test_killed_instance_run_is_interrupted_by_the_survivor(cluster) -> None:
    one, two = cluster
    with httpx.Client(base_url=one.url, timeout=30) as c1:
        started = c1.post("/api/v1/agents/assistant/execute", json={"task": "long /long"})
        run_id, conv = started.json()["runId"], started.json()["conversationId"]
        wait_until_sync(lambda: answer_text(c1, conv), "the answer's first words")
    one.kill()  # kill -9: no clean shutdown, the lease stops being renewed
    killed_at = time.monotonic()
    with httpx.Client(base_url=two.url, timeout=30) as c2:
        while time.monotonic() - killed_at < 15:
            run = c2.get(f"/api/v1/runs/{run_id}").json()
            if run["status"] != "running":
                break
            time.sleep(0.2)
        took = time.monotonic() - killed_at
        assert run["status"] == "interrupted", run
        assert took < 6, f"survivor needed {took:.1f}s"  # lease 2 s + sweep every 1 s
        msgs = c2.get(f"/api/v1/conversations/{conv}/messages").json()["items"]
        assert msgs[0]["content"] == "long /long"
        assert msgs[1]["status"] == "interrupted" and msgs[1]["content"]
        after = c2.post(
            "/api/v1/agents/assistant/execute/sync",
            json={"task": "hello again", "conversationId": conv},
        )
        assert after.status_code == 200 and after.json()["scenario"] == "resume"
