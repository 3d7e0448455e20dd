"""Lumina's Prometheus metrics and their exposition.

Correct with several worker processes: when ``PROMETHEUS_MULTIPROC_DIR`` is set (``make
run`` sets it, ``multiproc.py``) every process writes its values to files there and
``/metrics`` merges them, whichever worker answers. Gauges say how they merge."""

from __future__ import annotations

import os
from collections.abc import Iterable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client import multiprocess as _multiprocess

from lumina_app.observability.multiproc import MULTIPROC_ENV

# Buckets for what a person waits on: a first token, a whole answer.
_WAIT = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
# A statement on a healthy database takes microseconds to milliseconds.
_SQL = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5)

RUNS = Counter("lumina_runs", "Runs ended, by agent and final status", ["agent", "status"])
RUN_DURATION = Histogram(
    "lumina_run_duration_seconds", "From acceptance to the final write", ["agent"], buckets=_WAIT
)
TTFT = Histogram(
    "lumina_time_to_first_token_seconds",
    "From acceptance to the first answer text",
    ["agent"],
    buckets=_WAIT,
)
ACTIVE_STREAMS = Gauge(
    "lumina_active_streams", "Open SSE streams (all route families)", multiprocess_mode="livesum"
)
HOT_WINDOW_READS = Counter(
    "lumina_hot_window_reads", "Hot-window reads by result: hit, rebuild, fallback", ["result"]
)
BREAKER_OPEN = Gauge(
    "lumina_redis_breaker_open",
    "1 while the Redis circuit breaker is open (Redis skipped), else 0",
    multiprocess_mode="livemax",
)
BREAKER_TRIPS = Counter("lumina_redis_breaker_trips", "Times the Redis circuit breaker opened")
SQL_STATEMENTS = Histogram(
    "lumina_sql_statement_seconds", "SQL statement latency", ["operation"], buckets=_SQL
)
PROVIDER_ERRORS = Counter(
    "lumina_provider_errors", "Runs that failed with a model (provider) error", ["agent"]
)
TOOL_CALLS = Counter("lumina_tool_calls", "Tool calls by tool and status", ["tool", "status"])
SUMMARIES = Counter("lumina_summaries_written", "Rolling summaries written", ["agent"])
GATEWAY_REQUESTS = Counter(
    "lumina_gateway_requests",
    "OpenAI-compatible chat completions by how the conversation was found",
    ["conversation"],
)
MEMORIES = Counter(
    "lumina_memories",
    "Long-term memory changes (extractor, memory tools, REST): written, updated, superseded",
    ["change"],
)
MEMORY_EXTRACTION_FAILURES = Counter(
    "lumina_memory_extraction_failures",
    "Memory extraction attempts that failed (model error, unusable reply, store down)",
    ["agent"],
)

# Every metric above, in the order they are defined (not hand-listed: one added is in it).
EXPORTED = tuple(m for m in list(globals().values()) if isinstance(m, Counter | Gauge | Histogram))

# A labelled series is exported only once some value of it is set: until the first hot-window
# fallback (or failed run, or tool error...) a dashboard or an alert on it saw no series at
# all. So every label value known at start is set to 0 then (docs/OPERATIONS.md).
RUN_STATUSES = ("complete", "stopped", "interrupted", "failed")
WINDOW_READ_RESULTS = ("hit", "rebuild", "fallback")
SQL_OPERATIONS = ("select", "insert", "update", "delete", "other")
TOOL_STATUSES = ("ok", "error")
GATEWAY_LOOKUPS = ("named", "matched", "created", "new")
MEMORY_CHANGES = ("written", "updated", "superseded")


def initialise(*, agents: Iterable[str], tools: Iterable[str]) -> None:
    """Every series of the known label values, at 0: the agents and tools there are at
    start, and each closed set above. Idempotent; each worker process does it, so the
    merged exposition has them whichever worker answers."""
    for agent in agents:
        for status in RUN_STATUSES:
            RUNS.labels(agent, status)
        for per_agent in (RUN_DURATION, TTFT, PROVIDER_ERRORS, SUMMARIES,
                          MEMORY_EXTRACTION_FAILURES):  # fmt: skip
            per_agent.labels(agent)
    for tool in tools:
        for status in TOOL_STATUSES:
            TOOL_CALLS.labels(tool, status)
    for result in WINDOW_READ_RESULTS:
        HOT_WINDOW_READS.labels(result)
    for operation in SQL_OPERATIONS:
        SQL_STATEMENTS.labels(operation)
    for lookup in GATEWAY_LOOKUPS:
        GATEWAY_REQUESTS.labels(lookup)
    for change in MEMORY_CHANGES:
        MEMORIES.labels(change)


def exposition() -> tuple[bytes, str]:
    """The text format of every metric of every worker process, and its content type."""
    if os.environ.get(MULTIPROC_ENV):  # a multi-process server: its shared directory
        registry = CollectorRegistry()
        _multiprocess.MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    return generate_latest(registry), CONTENT_TYPE_LATEST
