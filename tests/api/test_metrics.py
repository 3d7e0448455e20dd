"""``GET /metrics`` on a running server (granian worker processes, Prometheus's
multi-process mode), read with prometheus-client's own text parser: the counters move as
runs end, tools are called, the model fails and Redis is killed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import RedisServer, write_agent
from tests.fake_llm import Call, FakeLLM, Reply
from tests.server import AppServer
from tests.waits import wait_until_sync


def scrape(server: AppServer) -> dict[tuple[str, tuple], float]:
    """Every sample by (name, sorted labels), worker pid labels left out."""
    resp = httpx.get(server.url + "/metrics", timeout=10)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/plain")
    samples: dict[tuple[str, tuple], float] = {}
    for family in text_string_to_metric_families(resp.text):
        for sample in family.samples:
            labels = tuple(sorted((k, v) for k, v in sample.labels.items() if k != "pid"))
            key = (sample.name, labels)
            samples[key] = samples.get(key, 0.0) + sample.value
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def total(samples: dict, name: str) -> float:
    return sum(v for (n, _labels), v in samples.items() if n == name)


@pytest.fixture
def server(tmp_path: Path, fake_llm: FakeLLM, redis_server: RedisServer) -> Iterator[AppServer]:
    app = AppServer(
        tmp_path / "metrics",
        backend_only=True,
        env={"LUMINA_REDIS_URL": redis_server.url, "LUMINA_REDIS_BREAKER_COOLDOWN": "30"},
    )
    app.prepare()
    model = {"provider": "openai", "base_url": fake_llm.base_url, "model": "fake-1"}
    write_agent(app.data_dir / "agents", "echo", model)
    write_agent(app.data_dir / "agents", "calc", {**model, "tools": ["calculator"]})
    # Long-term memory: the demo model's extractor (by rule), and the fake LLM's (whose
    # plain-text reply is no list of operations: a failed extraction).
    write_agent(app.data_dir / "agents", "rememberer", {"memory": {"longTerm": True}})
    write_agent(app.data_dir / "agents", "mindful", {**model, "memory": {"longTerm": True}})
    app.start()
    yield app
    app.stop()


def chat(server: AppServer, agent: str, text: str) -> httpx.Response:
    body = {"model": agent, "messages": [{"role": "user", "content": text}]}
    return httpx.post(server.url + "/v1/chat/completions", json=body, timeout=30)


def test_counters_move_with_runs_tools_failures_and_redis_faults(
    server: AppServer, fake_llm: FakeLLM, redis_server: RedisServer
) -> None:
    before = scrape(server)
    assert chat(server, "echo", "hello").status_code == 200
    fake_llm.script.replies = [
        Reply(calls=[Call("c1", "calculator", '{"expression": "6 * 7"}')]),
        Reply(calls=[Call("c2", "calculator", '{"expression": "nonsense("}')]),
    ]
    assert chat(server, "calc", "what is 6 * 7?").status_code == 200
    fake_llm.script.error_status = 500
    assert chat(server, "echo", "fail please").status_code == 502
    fake_llm.script.error_status = None
    after = scrape(server)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("lumina_runs_total", agent="echo", status="complete") == 1
    assert moved("lumina_runs_total", agent="calc", status="complete") == 1
    assert moved("lumina_runs_total", agent="echo", status="failed") == 1
    assert moved("lumina_provider_errors_total", agent="echo") == 1
    assert moved("lumina_tool_calls_total", tool="calculator", status="ok") == 1
    assert moved("lumina_tool_calls_total", tool="calculator", status="error") == 1
    assert moved("lumina_time_to_first_token_seconds_count", agent="echo") >= 1
    assert moved("lumina_run_duration_seconds_count", agent="echo") == 2
    assert moved("lumina_gateway_requests_total", conversation="new") == 3
    assert total(after, "lumina_sql_statement_seconds_count") > total(
        before, "lumina_sql_statement_seconds_count"
    )
    assert value(after, "lumina_redis_breaker_open") == 0

    # Redis killed: the breaker opens, reads fall back to SQL, the run still completes.
    reads_before = value(after, "lumina_hot_window_reads_total", result="fallback")
    redis_server.kill()
    first = chat(server, "echo", "before the next one")
    conversation = first.headers["x-lumina-conversation-id"]
    resp = httpx.post(
        server.url + "/v1/chat/completions",
        json={"model": "echo", "messages": [{"role": "user", "content": "Redis is gone"}]},
        headers={"X-Lumina-Conversation-Id": conversation},
        timeout=30,
    )
    assert resp.status_code == 200, resp.text
    faulted = scrape(server)
    assert value(faulted, "lumina_redis_breaker_open") == 1
    assert value(faulted, "lumina_redis_breaker_trips_total") >= 1
    assert value(faulted, "lumina_hot_window_reads_total", result="fallback") > reads_before


def test_streams_are_counted_while_open(server: AppServer, fake_llm: FakeLLM) -> None:
    fake_llm.script.delay = 0.5
    body = {"model": "echo", "messages": [{"role": "user", "content": "slow"}], "stream": True}
    with httpx.stream("POST", server.url + "/v1/chat/completions", json=body, timeout=30) as resp:
        lines = resp.iter_lines()
        assert next(lines).startswith("data: ")
        assert value(scrape(server), "lumina_active_streams") == 1
        rest = list(lines)
    assert "data: [DONE]" in rest
    wait_until_sync(
        lambda: value(scrape(server), "lumina_active_streams") == 0,
        "lumina_active_streams back to 0",
        within=5,
        interval=0.1,
    )


def test_metrics_need_a_key_when_keys_are_set(tmp_path: Path) -> None:
    app = AppServer(
        tmp_path / "keys",
        backend_only=True,
        env={"LUMINA_REDIS_URL": "", "LUMINA_API_KEYS": "ops:metrics-key-123"},
    )
    app.start()
    try:
        assert httpx.get(app.url + "/metrics").status_code == 401
        ok = httpx.get(app.url + "/metrics", headers={"Authorization": "Bearer metrics-key-123"})
        assert ok.status_code == 200
        assert "lumina_active_streams" in ok.text
    finally:
        app.stop()


def test_memory_changes_and_extraction_failures_are_counted(server: AppServer) -> None:
    before = scrape(server)
    for change in ("written", "updated", "superseded"):  # exported at 0 before any
        assert ("lumina_memories_total", (("change", change),)) in before
    assert ("lumina_memory_extraction_failures_total", (("agent", "mindful"),)) in before

    def moved(samples: dict, name: str, **labels: str) -> float:
        return value(samples, name, **labels) - value(before, name, **labels)

    def memories_moved(change: str, by: float):
        return lambda: moved(scrape(server), "lumina_memories_total", change=change) >= by

    said = "My name is Ada and I work on graph databases"
    assert chat(server, "rememberer", said).status_code == 200
    wait_until_sync(memories_moved("written", 2), "two memories written")  # two facts
    assert chat(server, "rememberer", "actually call me Ada L.").status_code == 200
    wait_until_sync(memories_moved("superseded", 1), "the name superseded")
    listed = httpx.get(server.url + "/api/v1/memories", params={"agentId": "rememberer"})
    assert listed.status_code == 200, listed.text
    work = next(m for m in listed.json()["items"] if "graph" in m["text"])
    resp = httpx.patch(
        f"{server.url}/api/v1/memories/{work['id']}",
        json={"text": "The user works on graph engines."},
    )
    assert resp.status_code == 200, resp.text
    wait_until_sync(memories_moved("updated", 1), "the edit counted")

    assert chat(server, "mindful", "hello").status_code == 200
    failures = "lumina_memory_extraction_failures_total"
    wait_until_sync(
        lambda: moved(scrape(server), failures, agent="mindful") >= 1, "the failure counted"
    )
    after = scrape(server)
    assert moved(after, "lumina_memories_total", change="written") == 2
    assert moved(after, "lumina_memories_total", change="superseded") == 1
    assert moved(after, "lumina_memories_total", change="updated") == 1
    assert moved(after, failures, agent="mindful") == 1  # an unusable reply: not retried
    assert moved(after, failures, agent="rememberer") == 0
