"""The warm session pool keeps the newest summary a session has heard of."""

from __future__ import annotations

import pytest

from lumina_app.agents.sessions import Session, SessionPool
from lumina_app.domain import Summary

pytestmark = pytest.mark.unit


def test_a_summary_that_landed_during_a_run_outlives_the_runs_session() -> None:
    pool = SessionPool(max_size=4, idle_seconds=60)
    pool.put(Session("a", "c", [], 8))
    newer = Summary(covered_to_seq=10, text="new")
    pool.set_summary("a", "c", newer)  # written while the next run went on
    pool.put(Session("a", "c", [], 10, summary=Summary(covered_to_seq=4, text="old")))
    assert pool.get("a", "c").summary is newer
    pool.put(Session("a", "c", [], 12, summary=Summary(covered_to_seq=20, text="newest")))
    assert pool.get("a", "c").summary.text == "newest"
