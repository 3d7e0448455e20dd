"""Back-to-back turns keep the whole conversation (issue 24, item 5), on a real server over
each backend, warm and resumed: with a window of 6 and summaries written in the background,
every request the model gets holds every earlier question, verbatim or in the summary it
was sent, and the run's context record names the summary and the older messages it used."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lumina_app.agents.run.context import SUMMARY_PREFIX
from tests.conftest import SHARED_REDIS_URL, write_agent
from tests.fake_llm import FakeLLM, Reply
from tests.server import AppServer

pytestmark = pytest.mark.slow

WINDOW = 6
SUMMARIZE = "Summarize tersely."
TURNS = 14


def question(conv: str, n: int) -> str:
    return f"fact {conv}{n:02d}: remember {n * 37}"


def is_summary_request(body: dict) -> bool:
    return body["messages"][0]["content"] == SUMMARIZE


def echo_summary(body: dict) -> Reply | None:
    """A summarizer that forgets nothing: the previous summary plus every new question."""
    if not is_summary_request(body):
        return None
    ask = body["messages"][1]["content"]
    previous, new = ask.split("\n\nNew messages:\n", 1)
    lines = [] if "(none yet)" in previous else previous.split("\n", 1)[1].splitlines()
    lines += [line for line in new.splitlines() if line.startswith("USER: ")]
    return Reply(chunks=["\n".join(lines)])


@pytest.fixture
def start(tmp_path: Path, database, fake_llm: FakeLLM, redis_prefix: str) -> Iterator:
    """Start (or restart) a backend-only server on ``database`` with Redis, window 6 and
    the ``keeper`` agent (summary on); ``env`` adds settings."""
    servers: list[AppServer] = []

    def run(**env: str) -> AppServer:
        for old in servers:
            old.stop()
        server = AppServer(
            tmp_path / f"s{len(servers)}",
            backend_only=True,
            database_url=database.url,
            env={
                "LUMINA_REDIS_URL": SHARED_REDIS_URL,
                "LUMINA_REDIS_PREFIX": redis_prefix,
                "LUMINA_CONTEXT_WINDOW": str(WINDOW),
                **env,
            },
        )
        server.prepare()
        model = {"provider": "openai", "base_url": fake_llm.base_url, "model": "fake-1"}
        config = {"name": "Keeper", **model, "memory": {"summary": True}}
        write_agent(server.data_dir / "agents", "keeper", config, {"agent.md": "Keep."})
        (server.data_dir / "agents" / "keeper" / "summary.md").write_text(SUMMARIZE)
        server.start()
        servers.append(server)
        return server

    fake_llm.script.respond = echo_summary
    yield run
    fake_llm.release.set()
    for server in servers:
        server.stop()


def send(server: AppServer, text: str, conv: str | None) -> dict:
    body = {"task": text, **({"conversationId": conv} if conv else {})}
    resp = httpx.post(server.url + "/api/v1/agents/keeper/execute/sync", json=body, timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()


def context_of(server: AppServer, run_id: str) -> dict:
    resp = httpx.get(f"{server.url}/api/v1/runs/{run_id}/context", timeout=10)
    assert resp.status_code == 200, resp.text
    return resp.json()


def sent_for(fake: FakeLLM, text: str) -> list[dict]:
    """The messages of the (one) answer request whose input was ``text``."""
    (request,) = [
        r
        for r in fake.requests
        if not is_summary_request(r) and r["messages"][-1] == {"role": "user", "content": text}
    ]
    return request["messages"]


def check_turn(server: AppServer, fake: FakeLLM, result: dict, asked: list[str]) -> dict:
    """The request for ``asked[-1]`` carried every earlier question, and its context record
    says how: the summary (by id and range) and the older messages sent verbatim."""
    messages = sent_for(fake, asked[-1])
    verbatim = {m["content"] for m in messages[:-1] if m["role"] == "user"}
    summaries = [
        m["content"][len(SUMMARY_PREFIX) :]
        for m in messages
        if m["role"] == "system" and m["content"].startswith(SUMMARY_PREFIX)
    ]
    summary = summaries[0] if summaries else ""
    missing = [q for q in asked[:-1] if q not in verbatim and q not in summary]
    assert not missing, f"turn {len(asked)} lost {missing}: {messages}"

    record = context_of(server, result["runId"])
    assert record["messages"] == messages
    seqs = {q: 2 * n + 1 for n, q in enumerate(asked)}  # question n has seq 2n+1
    if summaries:
        assert record["summary"]["text"] == summary and record["summary"]["id"] is not None
        covered = record["summary"]["coveredToSeq"]
        assert record["summary"]["coveredFromSeq"] == 1
        assert {q for q in asked[:-1] if seqs[q] <= covered} <= {q for q in asked if q in summary}
    else:
        assert record["summary"] is None
        covered = 0
    window = record["window"]
    earlier = record["earlier"]
    if window["firstSeq"] is not None and window["firstSeq"] > covered + 1:
        # what left the window since the summary went verbatim, and the record says so
        assert earlier == {
            "firstSeq": covered + 1,
            "lastSeq": window["firstSeq"] - 1,
            "messages": window["firstSeq"] - 1 - covered,
        }
    else:
        assert earlier is None
    return record


def summaries_written(server: AppServer) -> float:
    text = httpx.get(server.url + "/metrics", timeout=10).text
    found = re.findall(
        r'^lumina_summaries_written_total\{[^}]*agent="keeper"[^}]*\} (\S+)', text, re.M
    )
    return sum(float(v) for v in found)


def wait_summaries(server: AppServer, at_least: float) -> None:
    deadline = time.monotonic() + 15
    while summaries_written(server) < at_least:
        assert time.monotonic() < deadline, "the summary was never written"
        time.sleep(0.05)


def test_back_to_back_turns_keep_every_question_warm_resumed_and_restarted(start, fake_llm) -> None:
    # A pool of one warm session: a conversation alone stays warm (``continue``); two
    # taking turns each resume from the hot window and SQL every time.
    server = start(LUMINA_SESSION_POOL_SIZE="1")
    fake_llm.script.hold = is_summary_request  # every summary still being written
    convs: dict[str, str | None] = {"w": None, "a": None, "b": None}
    asked: dict[str, list[str]] = {name: [] for name in convs}

    def turn(name: str, scenario: str) -> dict:
        asked[name].append(question(name, len(asked[name]) + 1))
        result = send(server, asked[name][-1], convs[name])
        convs[name] = result["conversationId"]
        assert result["scenario"] == scenario
        return check_turn(server, fake_llm, result, asked[name])

    for n in range(1, TURNS + 1):
        record = turn("w", "new" if n == 1 else "continue")
        assert record["summary"] is None
    assert record["earlier"]["messages"] == 2 * TURNS - 2 - WINDOW  # all but the window

    fake_llm.release.set()  # the summary lands: the next turn is sent it
    wait_summaries(server, 1)
    assert turn("w", "continue")["summary"] is not None

    for n in range(1, TURNS + 1):  # summaries land whenever they do
        for name in ("a", "b"):
            turn(name, "new" if n == 1 else "resume")
    wait_summaries(server, 3)
    for name in ("a", "b"):
        assert turn(name, "resume")["summary"] is not None

    server = start()  # after a restart: no warm session, the same context
    for name in convs:
        assert turn(name, "resume")["summary"] is not None


def test_long_messages_over_the_text_budgets_are_read_again_and_nothing_is_lost(
    start, fake_llm
) -> None:
    """The warm sessions and the in-process hot window are bounded by the text they hold:
    a conversation of long questions, each turn over both budgets alone, is kept by
    neither, so each of its turns resumes from SQL with every earlier question; a short
    conversation beside it stays warm (the long one does not push it out)."""
    server = start(
        LUMINA_REDIS_URL="", LUMINA_SESSION_POOL_CHARS="2000", LUMINA_HOT_MAX_CHARS="2000"
    )
    convs: dict[str, str | None] = {"short": None, "long": None}
    asked: dict[str, list[str]] = {name: [] for name in convs}
    for n in range(1, 5):
        for name, scenario in (("short", "continue"), ("long", "resume")):
            text = question(name, n)
            asked[name].append(text + " " + "x" * 2100 if name == "long" else text)
            result = send(server, asked[name][-1], convs[name])
            convs[name] = result["conversationId"]
            assert result["scenario"] == ("new" if n == 1 else scenario)
            check_turn(server, fake_llm, result, asked[name])
