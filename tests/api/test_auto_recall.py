"""Auto-recall (the shipped ``assistant``): before a run, the earlier messages most relevant
to the input that left the window go into one system message; the run's recorded context
is exactly what the model received, and the demo model's answer names them."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.api.helpers import count_whole_reads, say
from tests.conftest import ROOT, write_agent

FACT = "my locker code is 4711 and the locker is in the basement"
QUESTION = "where is my locker and what is its code?"


async def chat_past_the_window(api, agent: str) -> str:
    conv = (await say(api, FACT, agent=agent))["conversationId"]
    for n in range(3):
        await say(api, f"small talk number {n} about the weather", conv, agent=agent)
    return conv


async def context_of(api, run_id: str) -> list[dict]:
    resp = await api.get(f"/api/v1/runs/{run_id}/context")
    assert resp.status_code == 200, resp.text
    return resp.json()["messages"]


@pytest.fixture
async def api_on(api_factory, database, data_dir):
    """The shipped ``assistant`` (auto-recall on) on the demo model, a window of 4; and
    ``recaller``, the same agent without the rolling summary."""
    shutil.copytree(ROOT / "data/agents/assistant", data_dir / "agents/assistant")
    shipped = json.loads((data_dir / "agents/assistant/config.json").read_text())
    shipped["memory"]["summary"] = False
    write_agent(data_dir / "agents", "recaller", shipped, {"agent.md": "You recall."})
    _services, client = await api_factory(database_url=database.url, context_window=4)
    return client


async def test_the_demo_model_names_what_was_recalled(api_on) -> None:
    """Without a summary, what left the window comes back only through recall."""
    conv = await chat_past_the_window(api_on, "recaller")
    run = await say(api_on, QUESTION, conv, agent="recaller")
    sent = await context_of(api_on, run["runId"])
    recalled = [m["content"] for m in sent if m["role"] == "system" and
                m["content"].startswith("Earlier in this conversation:")]  # fmt: skip
    assert len(recalled) == 1
    assert f"user] {FACT}" in recalled[0] and recalled[0].count("\n[#") <= 5
    assert "[#1 " in recalled[0]
    assert "#1" in run["answer"] and "I also recall earlier messages" in run["answer"]
    windowed = [m["content"] for m in sent if m["role"] == "user"]
    assert FACT not in windowed  # it came back through recall, not the window


async def test_a_summary_agent_is_sent_what_left_the_window_once(api_on) -> None:
    """The shipped assistant (summary on): a message past the window that no summary
    covers yet is sent word for word (#24), so recall does not send it a second time."""
    conv = await chat_past_the_window(api_on, "assistant")
    run = await say(api_on, QUESTION, conv, agent="assistant")
    sent = await context_of(api_on, run["runId"])
    assert [m["content"] for m in sent if m["role"] == "user"].count(FACT) == 1
    recalled = [m["content"] for m in sent if m["content"].startswith("Earlier in this")]
    assert not any(FACT in text for text in recalled)


async def test_the_recorded_context_is_what_the_model_received(
    api_factory, data_dir, fake_llm
) -> None:
    config = {"provider": "openai", "base_url": fake_llm.base_url, "model": "fake-1",
              "memory": {"autoRecall": {"limit": 3, "tokens": 200}}}  # fmt: skip
    write_agent(data_dir / "agents", "recaller", config, {"agent.md": "You recall."})
    _services, api = await api_factory(context_window=4)
    conv = await chat_past_the_window(api, "recaller")
    run = await say(api, QUESTION, conv, agent="recaller")
    received = fake_llm.requests[-1]["messages"]
    assert received[-1]["content"] == QUESTION
    sent = await context_of(api, run["runId"])
    assert [(m["role"], m["content"]) for m in sent] == [
        (m["role"], m["content"]) for m in received
    ]
    assert any(m["content"].startswith("Earlier in this conversation:") for m in received)


async def test_each_turns_auto_recall_reads_only_what_came_after(api_on, monkeypatch) -> None:
    """Auto-recall runs before each turn is stored; only the first reads the conversation
    whole: each later one reads the rows after what its index was fingerprinted through
    (the turns said since), however long the conversation."""
    whole = count_whole_reads(monkeypatch)
    conv = await chat_past_the_window(api_on, "recaller")
    for n in range(4):
        await say(api_on, f"where was the locker again, number {n}?", conv, agent="recaller")
    run = await say(api_on, QUESTION, conv, agent="recaller")
    sent = await context_of(api_on, run["runId"])
    assert any("4711" in m["content"] for m in sent if m["role"] == "system")
    assert len(whole) == 1, whole
