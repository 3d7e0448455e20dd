"""Attaching the metrics to the parts that know what happened, through the plain callbacks
they offer (a run's events, the hot window's read results, the breaker's state, summaries
written, SQLAlchemy's statement events). Called once by the composition root."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import sqlalchemy as sa

from lumina_app.domain import (
    AnswerChunk,
    RunFailed,
    RunFinished,
    SessionStarted,
    ToolCallFinished,
)
from lumina_app.observability import metrics

_STATEMENT_START = "lumina_statement_started"
# The one ``tool`` label of calls to a tool the run was not offered: the model names them,
# so each would be a new series. Not a possible tool name (no parentheses in those).
UNKNOWN_TOOL = "(unknown)"


class RunMetrics:
    """Counts runs from their events: acceptance (``session``), the first answer text, tool
    results, a failure, the result. Per run it keeps one start time until the result."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._started: dict[str, float] = {}
        self._first_token: set[str] = set()

    def __call__(self, run: Any, payload: object) -> None:
        agent = run.agent.id
        if isinstance(payload, SessionStarted):
            self._started[run.run_id] = self._clock()
        elif isinstance(payload, AnswerChunk):
            if run.run_id not in self._first_token and run.run_id in self._started:
                self._first_token.add(run.run_id)
                metrics.TTFT.labels(agent).observe(self._clock() - self._started[run.run_id])
        elif isinstance(payload, ToolCallFinished):
            status = "error" if payload.is_error else "ok"
            tool = payload.name if payload.name in run.tool_names else UNKNOWN_TOOL
            metrics.TOOL_CALLS.labels(tool, status).inc()
        elif isinstance(payload, RunFailed):
            metrics.PROVIDER_ERRORS.labels(agent).inc()
        elif isinstance(payload, RunFinished):
            metrics.RUNS.labels(agent, payload.status.value).inc()
            started = self._started.pop(run.run_id, None)
            self._first_token.discard(run.run_id)
            if started is not None:
                metrics.RUN_DURATION.labels(agent).observe(self._clock() - started)


def _counting(counter: Any) -> Callable[[str], None]:
    """A callback that counts each call under its one argument (the label value): a hot
    window read's result, a memory change, the agent of a failed memory extraction."""
    return lambda value: counter.labels(value).inc()


def breaker_changed(is_open: bool) -> None:
    metrics.BREAKER_OPEN.set(1 if is_open else 0)
    if is_open:
        metrics.BREAKER_TRIPS.inc()


def summary_written(agent_id: str, _conversation: str, _summary: object) -> None:
    metrics.SUMMARIES.labels(agent_id).inc()


def _before(conn: Any, _cursor: Any, _statement: str, *_args: Any) -> None:
    # A connection runs one statement at a time; a failed one is simply overwritten.
    conn.info[_STATEMENT_START] = time.perf_counter()


def _after(conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
    started = conn.info.pop(_STATEMENT_START, None)
    if started is not None:
        elapsed = time.perf_counter() - started
        metrics.SQL_STATEMENTS.labels(_operation(statement)).observe(elapsed)


def _operation(statement: str) -> str:
    word = statement.lstrip().split(None, 1)[0].lower() if statement.strip() else ""
    return word if word in ("select", "insert", "update", "delete") else "other"


def install(
    *,
    run_observers: list,
    window_listeners: list,
    breaker_listeners: list | None,
    summary_hooks: list,
    engines: Iterable[sa.Engine],
    agents: Iterable[str],
    tools: Iterable[str],
    memory_hooks: list,
    extraction_failure_hooks: list,
) -> None:
    """Attach every metric; the lists are the callbacks the parts call. ``agents`` and
    ``tools``: the label values known now, whose series start at 0."""
    metrics.initialise(agents=agents, tools=[*tools, UNKNOWN_TOOL])
    run_observers.append(RunMetrics())
    window_listeners.append(_counting(metrics.HOT_WINDOW_READS))
    if breaker_listeners is not None:
        breaker_listeners.append(breaker_changed)
        breaker_changed(False)
    summary_hooks.append(summary_written)
    memory_hooks.append(_counting(metrics.MEMORIES))
    extraction_failure_hooks.append(_counting(metrics.MEMORY_EXTRACTION_FAILURES))
    for engine in engines:  # every statement timed, once per engine
        if not sa.event.contains(engine, "before_cursor_execute", _before):
            sa.event.listen(engine, "before_cursor_execute", _before)
            sa.event.listen(engine, "after_cursor_execute", _after)
