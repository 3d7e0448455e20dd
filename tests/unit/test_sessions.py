"""The warm session pool keeps the newest summary a session has heard of."""

from __future__ import annotations

import pytest

from lumina_app.agents.run.sessions import Session, SessionPool
from lumina_app.domain import Msg, Summary

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


def _said(chars: int) -> list[Msg]:
    return [Msg.user("q" * (chars // 2), seq=1), Msg.assistant("a" * (chars - chars // 2), seq=2)]


def test_the_pool_is_bounded_by_the_text_its_sessions_hold() -> None:
    """A count alone let 1,000 sessions of long messages hold gigabytes."""
    pool = SessionPool(max_size=100, idle_seconds=60, max_chars=1000)
    for i in range(3):
        pool.put(Session("a", f"c{i}", _said(400), 2))
    assert [pool.get("a", f"c{i}") is not None for i in range(3)] == [False, True, True]
    assert pool.chars == 800 and len(pool) == 2  # the least recently used went

    pool.put(Session("a", "c1", _said(100), 4))  # replaced: its old text no longer counts
    assert pool.chars == 500
    pool.set_summary("a", "c1", Summary(covered_to_seq=2, text="s" * 600))
    assert pool.get("a", "c2") is None and pool.chars == 700  # a summary's text counts too

    pool.put(Session("a", "big", _said(1001), 2))  # alone over the budget: not kept
    assert pool.get("a", "big") is None and pool.get("a", "c1") is not None
    assert pool.chars == 700

    pool.drop("a", "c1")
    assert pool.chars == 0 and len(pool) == 0


def test_an_expired_session_gives_back_its_text() -> None:
    now = [0.0]
    pool = SessionPool(max_size=10, idle_seconds=5, max_chars=1000, clock=lambda: now[0])
    pool.put(Session("a", "c", _said(300), 2))
    now[0] = 6.0
    assert pool.get("a", "c") is None and pool.chars == 0
