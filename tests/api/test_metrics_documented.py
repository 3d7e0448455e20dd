"""Every metric docs/OPERATIONS.md documents, on a real multi-worker server (Reflex's state in
Redis, so granian starts several workers; Prometheus's multi-process mode merges them):

- exported before any traffic, every known label value at 0 (the values the table lists,
  each agent in the agents folder, each built-in tool);
- moved by the events it counts, after turns with Redis: a stream, resumed turns on an agent
  with summaries, a window Redis forgot, a tool call, a model error, a memory extracted and
  an extraction that failed, Redis killed.

The list is read from the table, so a newly documented metric is held to both at once.
Before, ``lumina_hot_window_reads_total`` was missing after several turns with Redis: warm
sessions read no window, and a labelled counter shows nothing until its first increment.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from lumina_app.agents.tools.builtin import BUILTINS
from lumina_app.agents.tools.recall import NAME as RECALL
from tests.api.test_metrics import scrape, value
from tests.conftest import ROOT, RedisServer, write_agent
from tests.fake_llm import Call, FakeLLM, Reply
from tests.server import AppServer

pytestmark = pytest.mark.slow

OPERATIONS = ROOT / "docs" / "OPERATIONS.md"
Samples = dict[tuple[str, tuple], float]


@dataclass(frozen=True)
class Documented:
    name: str  # as exported (``lumina_runs_total``; a histogram's base name)
    kind: str  # counter, gauge or histogram
    labels: dict[str, tuple[str, ...] | None]  # None: an open set (agents, tools)

    @property
    def sample(self) -> str:
        """The sample that exists once the series does."""
        return f"{self.name}_count" if self.kind == "histogram" else self.name


def documented() -> list[Documented]:
    """The metrics table: ``| `name` | type | `label`, `label` = `v1`, `v2` | ... |``."""
    metrics = []
    for line in OPERATIONS.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `lumina_"):
            continue
        name, kind, labels = (cell.strip() for cell in line.strip("|").split("|")[:3])
        names_part, _, values_part = labels.partition("=")
        names = re.findall(r"`([^`]+)`", names_part)
        parsed: dict[str, tuple[str, ...] | None] = dict.fromkeys(names)
        if values_part:
            parsed[names[-1]] = tuple(re.findall(r"`([^`]+)`", values_part))
        metrics.append(Documented(name.strip("`"), kind.split()[0], parsed))
    assert len(metrics) >= 12, "the metrics table of docs/OPERATIONS.md was not found"
    return metrics


def series(metric: Documented, open_sets: dict[str, list[str]]) -> list[tuple[str, tuple]]:
    """Every (sample, labels) the metric has for its known label values."""
    names = list(metric.labels)
    choices = []
    for label in names:
        known = metric.labels[label]
        if known is None:
            assert label in open_sets, f"{metric.name}: no known values for {label!r}"
            known = tuple(open_sets[label])
        choices.append(known)
    return [
        (metric.sample, tuple(sorted(zip(names, combo, strict=True))))
        for combo in itertools.product(*choices)
    ]


def of(samples: Samples, metric: Documented) -> dict[tuple, float]:
    """The metric's samples (a histogram's counts), by labels."""
    return {labels: v for (name, labels), v in samples.items() if name == metric.sample}


@dataclass
class Served:
    app: AppServer
    lumina_redis: RedisServer


@pytest.fixture
def served(tmp_path: Path, fake_llm: FakeLLM) -> Iterator[Served]:
    lumina_redis, reflex_redis = RedisServer(tmp_path), RedisServer(tmp_path / "reflex")
    (tmp_path / "reflex").mkdir()
    lumina_redis.start()
    reflex_redis.start()
    app = AppServer(
        tmp_path / "server",
        backend_only=True,
        env={
            "LUMINA_REDIS_URL": lumina_redis.url,
            "REFLEX_REDIS_URL": reflex_redis.url,  # several workers
            "LUMINA_REDIS_BREAKER_COOLDOWN": "30",
            "LUMINA_CONTEXT_WINDOW": "4",  # summaries after a few turns
            "LUMINA_SESSION_IDLE_SECONDS": "0.001",  # every later turn resumes: a window read
            "LUMINA_DEMO_DELAY_MS": "0",
        },
    )
    app.prepare()
    model = {"provider": "openai", "base_url": fake_llm.base_url, "model": "fake-1"}
    agents = app.data_dir / "agents"
    write_agent(agents, "echo", model)
    write_agent(agents, "calc", {**model, "tools": ["calculator"]})
    write_agent(agents, "keeper", {"name": "Keeper", "memory": {"summary": True}})
    # Long-term memory: the demo extractor writes; the fake LLM's plain reply is a failure.
    write_agent(agents, "rememberer", {"memory": {"longTerm": True}})
    write_agent(agents, "mindful", {**model, "memory": {"longTerm": True}})
    try:
        app.start()
        yield Served(app, lumina_redis)
    finally:
        app.stop()
        lumina_redis.kill()
        reflex_redis.kill()


def workers(app: AppServer) -> int:
    """Processes in the server's group besides the one ``reflex run`` started."""
    assert app.proc is not None
    group = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        group += int(stat.rsplit(")", 1)[1].split()[2]) == app.proc.pid
    return group - 1


def chat(app: AppServer, agent: str, text: str, conversation: str | None = None) -> httpx.Response:
    headers = {"X-Lumina-Conversation-Id": conversation} if conversation else {}
    body = {"model": agent, "messages": [{"role": "user", "content": text}]}
    return httpx.post(app.url + "/v1/chat/completions", json=body, headers=headers, timeout=30)


def wait_for_scrape(app: AppServer, done, within: float, what: str) -> Samples:
    deadline = time.monotonic() + within
    while not done(samples := scrape(app)):
        assert time.monotonic() < deadline, what
        time.sleep(0.2)
    return samples


def test_every_documented_metric_is_exported_at_start_and_moves(
    served: Served, fake_llm: FakeLLM
) -> None:
    app = served.app
    metrics = documented()
    agents = sorted(
        p.name for p in (app.data_dir / "agents").iterdir() if (p / "config.json").is_file()
    )
    open_sets = {"agent": agents, "tool": [*BUILTINS, RECALL]}
    count = workers(app)
    assert count >= 2, "not a multi-worker server"

    before = scrape(app)
    expected = [key for metric in metrics for key in series(metric, open_sets)]
    missing = [key for key in expected if key not in before]
    assert not missing, f"{len(missing)} series not exported before any traffic: {missing[:8]}"
    print(f"metrics: {count} workers, {len(metrics)} metrics, {len(expected)} series at start")
    # Nothing has run yet (start-up's own SQL statements are counted, rightly).
    assert value(before, "lumina_runs_total", agent="echo", status="complete") == 0

    seen: list[Samples] = []
    fake_llm.script.delay = 0.3
    body = {"model": "echo", "messages": [{"role": "user", "content": "slow"}], "stream": True}
    with httpx.stream("POST", app.url + "/v1/chat/completions", json=body, timeout=30) as resp:
        lines = resp.iter_lines()
        assert next(lines).startswith("data: ")
        seen.append(scrape(app))  # while the stream is open
        assert "data: [DONE]" in list(lines)
    fake_llm.script.delay = 0.0

    conversation = None
    for n in range(8):  # 16 messages through a window of 4: a summary falls due
        resp = chat(app, "keeper", f"turn {n}: remember the number {n}", conversation)
        assert resp.status_code == 200, resp.text
        conversation = resp.headers["x-lumina-conversation-id"]
    redis = served.lumina_redis.client()
    forgotten = list(redis.scan_iter(f"*{conversation}*win*"))
    assert forgotten and redis.delete(*forgotten)  # Redis lost the window: a rebuild
    assert chat(app, "keeper", "after the window went", conversation).status_code == 200
    fake_llm.script.replies = [Reply(calls=[Call("c1", "calculator", '{"expression": "6 * 7"}')])]
    assert chat(app, "calc", "what is 6 * 7?").status_code == 200
    fake_llm.script.error_status = 500
    assert chat(app, "echo", "fail please").status_code == 502
    fake_llm.script.error_status = None
    assert chat(app, "rememberer", "My name is Ada").status_code == 200
    assert chat(app, "mindful", "hello").status_code == 200
    seen.append(
        wait_for_scrape(
            app,
            lambda s: (
                value(s, "lumina_summaries_written_total", agent="keeper") > 0
                and value(s, "lumina_memories_total", change="written") > 0
                and value(s, "lumina_memory_extraction_failures_total", agent="mindful") > 0
            ),
            within=30,
            what="no summary, memory or extraction failure in the background",
        )
    )

    served.lumina_redis.kill()  # the breaker opens; reads fall back to SQL
    assert chat(app, "keeper", "Redis is gone", conversation).status_code == 200
    seen.append(scrape(app))

    still = [m.name for m in metrics if not any(of(s, m) != of(before, m) for s in seen)]
    assert not still, f"did not move with their events: {still}"
    reads = "lumina_hot_window_reads_total"
    for result in ("hit", "rebuild", "fallback"):
        assert value(seen[-1], reads, result=result) > value(before, reads, result=result), result
