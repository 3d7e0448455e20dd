"""Misbehaving SSE clients against a real server (``reflex run --backend-only``, granian):

- a client that hangs up after k chunks: the answer still completes and is stored complete;
- reconnecting with Last-Event-ID: exactly the missing frames (compared with a full replay);
- an idle stream: ``: keepalive`` comments on the wire;
- a hang-up while nothing is being sent: noticed at once (the run is interrupted when
  LUMINA_CANCEL_ON_DISCONNECT says so);
- a client that never reads: the server stays responsive, its memory stays bounded, the
  answer is stored complete, and (once the socket buffers are full) the client is dropped
  after LUMINA_SSE_SEND_TIMEOUT_SECONDS.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.api.helpers import frames, parse_sse
from tests.fake_llm import FakeLLM
from tests.faults.realserver import (
    MB,
    group_rss,
    latest_conversation,
    raw_request,
    read_until_closed,
    settled_rss,
    start_server,
    wait_answer,
)
from tests.server import AppServer

pytestmark = pytest.mark.slow

SEND_TIMEOUT = 1.0


@pytest.fixture(scope="module")
def paced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """Demo model at 20 ms a word: a plain answer streams for ~0.5 s, /markdown ~1.3 s."""
    server = start_server(tmp_path_factory.mktemp("paced"), LUMINA_DEMO_DELAY_MS="20")
    yield server
    server.stop()


def chunk_text(body: bytes) -> str:
    return "".join(e.json.get("chunk", "") for e in parse_sse(body))


def hang_up_after(client: httpx.Client, chunks: int, task: str) -> bytes:
    """POST execute/stream, read until ``chunks`` chunk frames arrived, then close the
    connection. Returns the complete frames received."""
    received = b""
    with client.stream(
        "POST", "/api/v1/agents/assistant/execute/stream", json={"task": task}
    ) as response:
        assert response.status_code == 200
        for piece in response.iter_raw():
            received += piece
            complete = received[: received.rfind(b"\n\n") + 2]
            if complete.count(b'data: {"chunk"') >= chunks:
                break
    # Leaving the block mid-stream closes the connection: the server sees the client go.
    return complete


def replay(client: httpx.Client, run_id: str, after: int = 0) -> bytes:
    resp = client.get(
        f"/api/v1/runs/{run_id}/stream",
        params={"format": "v1"},
        headers={"Last-Event-ID": str(after)} if after else {},
    )
    assert resp.status_code == 200, resp.text
    return resp.content


@pytest.mark.parametrize("chunks", [1, 8])
def test_a_client_that_hangs_up_after_k_chunks_loses_nothing(paced, chunks) -> None:
    with httpx.Client(base_url=paced.url, timeout=30) as client:
        first = hang_up_after(client, chunks, f"hang up after {chunks}")
        session = parse_sse(first)[0].json
        answer = wait_answer(client, session["conversationId"])
        assert answer["status"] == "complete"
        full = replay(client, session["runId"])
        assert parse_sse(full)[-1].json == {"done": True, "messageId": answer["id"]}
        assert answer["content"] == chunk_text(full)
        assert answer["content"].startswith(chunk_text(first))
        assert len(answer["content"]) > len(chunk_text(first))
        assert f"You said: “hang up after {chunks}”" in answer["content"]
        run = client.get(f"/api/v1/runs/{session['runId']}").json()
        assert run["status"] == "complete" and run["content"] == answer["content"]


def test_reconnect_with_last_event_id_gets_exactly_the_missing_frames(paced) -> None:
    with httpx.Client(base_url=paced.url, timeout=30) as client:
        first = hang_up_after(client, 5, "reconnect /markdown")
        seen = parse_sse(first)
        run_id = seen[0].json["runId"]
        status_at_reconnect = client.get(f"/api/v1/runs/{run_id}").json()["status"]
        rest = replay(client, run_id, after=seen[-1].id)
        full = replay(client, run_id)

    assert status_at_reconnect == "running"  # so the reconnect got the missed, then live
    assert [e.id for e in seen + parse_sse(rest)] == [e.id for e in parse_sse(full)]
    assert first + rest == full  # byte for byte: no gap, no duplicate
    assert chunk_text(first) + chunk_text(rest) == chunk_text(full)
    assert parse_sse(rest)[-1].json["done"] is True


def test_an_idle_stream_gets_keepalive_comments(tmp_path: Path) -> None:
    """The model says a word a second; with keepalive every 0.3 s the wire carries
    ``: keepalive`` comments in between (raw bytes, as a proxy would see them)."""
    server = start_server(
        tmp_path / "slow", LUMINA_DEMO_DELAY_MS="1000", LUMINA_SSE_KEEPALIVE_SECONDS="0.3"
    )
    try:
        seen: list[tuple[float, bytes]] = []
        with (
            httpx.Client(base_url=server.url, timeout=30) as client,
            client.stream("POST", "/api/agent/assistant/chat", json={"message": "hi"}) as resp,
        ):
            assert resp.status_code == 200
            start, pending = time.monotonic(), b""
            for piece in resp.iter_raw():
                pending += piece
                cut = pending.rfind(b"\n\n") + 2
                if cut >= 2:
                    seen += [(time.monotonic() - start, f) for f in frames(pending[:cut])]
                    pending = pending[cut:]
                if time.monotonic() - start > 2.5:
                    break
            run_id = parse_sse(seen[0][1])[0].json["runId"]
            client.post(f"/api/v1/runs/{run_id}/stop")
    finally:
        server.stop()

    keepalives = [at for at, f in seen if f == b": keepalive\n\n"]
    words = [at for at, f in seen if f.startswith(b"event: agent_output")]
    rounded = [round(t, 2) for t in keepalives], [round(t, 2) for t in words]
    print(f"keepalives at {rounded[0]} s; words at {rounded[1]} s")
    assert keepalives, [f[:30] for _, f in seen]
    assert keepalives[0] < 1.0, f"first keepalive after {keepalives[0]:.2f}s"
    assert len(keepalives) >= 4, keepalives
    assert words and any(at < words[0] for at in keepalives)  # while the model was quiet


def test_a_hang_up_while_the_model_is_quiet_is_noticed_at_once(tmp_path: Path) -> None:
    """With LUMINA_CANCEL_ON_DISCONNECT, leaving a stream that has had nothing to send for
    a while (the next keepalive 15 s away) interrupts the run within a moment: the server
    hears the hang-up itself rather than at its next write."""
    server = start_server(
        tmp_path / "quiet", LUMINA_DEMO_DELAY_MS="600000", LUMINA_CANCEL_ON_DISCONNECT="true"
    )
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            accepted = client.post("/api/v1/agents/assistant/execute", params={"task": "quiet"})
            run_id = accepted.json()["runId"]
            with client.stream("GET", f"/api/v1/runs/{run_id}/stream") as resp:
                assert resp.status_code == 200
                assert b"event: session" in next(resp.iter_raw())
                time.sleep(0.3)  # the point: a quiet while, the stream waits on the model
            left = time.monotonic()
            while (status := client.get(f"/api/v1/runs/{run_id}").json()["status"]) == "running":
                assert time.monotonic() - left < 3, "the hang-up went unnoticed"
                time.sleep(0.05)
        assert status == "interrupted"
    finally:
        server.stop()


# -- a client that never reads ----------------------------------------------------------


def tcp_buffers() -> int:
    """The most a loopback connection can hold in flight: the server's largest send buffer
    (tcp_wmem max) plus our receive buffer."""
    wmem = int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])
    return wmem + 64 * 1024


@pytest.fixture(scope="module")
def fast(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AppServer, FakeLLM]]:
    """Demo model without delay, a 1 s send timeout, and agent ``bulk`` whose (fake) model
    answers with more text than the socket buffers hold."""
    with FakeLLM() as llm:
        piece = 200 * 1024
        llm.script.chunks = ["y" * piece] * math.ceil(tcp_buffers() * 1.5 / piece)
        server = start_server(
            tmp_path_factory.mktemp("fast"),
            agents={"bulk": {"name": "Bulk", "provider": "openai", "base_url": llm.base_url}},
            LUMINA_DEMO_DELAY_MS="0",
            LUMINA_SSE_SEND_TIMEOUT_SECONDS=str(SEND_TIMEOUT),
            LUMINA_LLM_MODEL="fake",
            # What the server holds for silent clients is measured here; the background
            # embedding of the 6 MB answer (its own, bounded allocation: #31) is not.
            LUMINA_EMBEDDINGS_PROVIDER="off",
        )
        yield server, llm
        server.stop()


def assert_responsive(client: httpx.Client) -> None:
    started = time.monotonic()
    assert client.get("/healthz").status_code == 200
    other = client.post("/api/v1/agents/socrates/execute/sync", json={"task": "still there?"})
    assert other.status_code == 200 and other.json()["status"] == "complete"
    assert time.monotonic() - started < 1.0


def test_a_client_that_never_reads_a_long_answer(fast) -> None:
    """The brief's case: POST /api/agent/assistant/chat "x /long" and never read.

    NOTE: this answer is ~30 KB of SSE, far less than the socket buffers on loopback (the
    kernel lets the server's send buffer grow to tcp_wmem max, 4 MB here): the server's
    sends never block, so this test cannot show the send timeout at work. It shows that a
    silent client breaks nothing (responsive server, answer stored complete, RSS flat),
    and asserts the premise: the whole stream sat in the buffers. The next test uses a
    volume that does fill the buffers.
    """
    server, _llm = fast
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert_responsive(client)  # warm: the first requests allocate caches
        before = settled_rss(server)
        sock = raw_request(
            server, "POST", "/api/agent/assistant/chat", json_body={"message": "x /long"}
        )
        conversation = latest_conversation(client, "assistant")
        assert_responsive(client)
        answer = wait_answer(client, conversation)
        assert answer["status"] == "complete"
        assert answer["content"].endswith("word399")
        grown = settled_rss(server) - before
        data, _closed = read_until_closed(sock, idle=1.0)
    print(
        f"silent client, /long answer ({len(data) / 1024:.0f} KB of SSE): RSS {grown / MB:+.1f} MB"
    )
    assert grown < 5 * MB, f"RSS grew {grown / MB:.1f} MB"
    assert len(data) < 64 * 1024 and b"event: result" in data  # all of it was buffered


def test_a_client_that_never_reads_a_huge_stream_is_dropped(fast) -> None:
    """Agent ``bulk`` answers with 1.5x the most the socket buffers can hold (6 MB of text,
    12 MB of SSE with the final result). A client with a small receive buffer that never
    reads makes the server's send block; after the send timeout it is dropped (EOF before
    the result event) while the run carries on and stores the whole answer. Then four
    silent clients replay a finished run (after four reading ones, for a baseline): the
    server holds none of their undelivered frames in its own memory (RSS growth < 5 MB;
    it would be ~30 MB if it did)."""
    server, llm = fast
    size = sum(len(c) for c in llm.script.chunks)
    with httpx.Client(base_url=server.url, timeout=60) as client:
        warm = client.post("/api/agent/bulk/chat", json={"message": "warm up"})
        assert warm.status_code == 200
        run_id = parse_sse(warm.content)[0].json["runId"]
        warm_conversation = latest_conversation(client, "bulk")

        sock = raw_request(
            server, "POST", "/api/agent/bulk/chat", json_body={"message": "big"}, recv_buffer=4096
        )
        deadline = time.monotonic() + 10
        while (conversation := latest_conversation(client, "bulk")) == warm_conversation:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert_responsive(client)
        answer = wait_answer(client, conversation)
        assert answer["status"] == "complete" and len(answer["content"]) == size
        assert_responsive(client)
        time.sleep(SEND_TIMEOUT + 0.5)  # the point: past the send timeout, unread all along
        data, closed = read_until_closed(sock)
        assert closed, "a client that stopped reading is dropped"
        assert b"event: result" not in data and len(data) < 2 * size
        print(f"silent client dropped after {len(data) / MB:.1f} of {2 * size / MB:.0f} MB")

        # Four clients replay the finished run at once, reading: the memory this takes is
        # the baseline. Then four replay it without reading.
        replays = [
            raw_request(server, "GET", f"/api/v1/runs/{run_id}/stream", close=True)
            for _ in range(4)
        ]
        with ThreadPoolExecutor(4) as pool:
            for data, closed in pool.map(read_until_closed, replays):
                assert closed and b"event: result" in data
        before = settled_rss(server)
        silent = [
            raw_request(server, "GET", f"/api/v1/runs/{run_id}/stream", recv_buffer=4096)
            for _ in range(4)
        ]
        time.sleep(SEND_TIMEOUT + 1.5)  # the point: RSS while silent readers outlive it
        during = group_rss(server)
        assert_responsive(client)
        for sock in silent:
            data, closed = read_until_closed(sock)
            assert closed and b"event: result" not in data
    grown = during - before
    print(f"4 silent replays of a 12 MB stream: RSS {grown / MB:+.1f} MB")
    assert grown < 5 * MB, f"RSS grew {grown / MB:.1f} MB"
