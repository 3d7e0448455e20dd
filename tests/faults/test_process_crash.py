"""A real server killed -9 mid-stream: after a restart nothing acknowledged is missing, the
partial answer is kept as ``interrupted``, and the conversation carries on (``resume``)."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.server import AppServer

pytestmark = pytest.mark.slow


def sse_data(lines: list[str]) -> list[dict]:
    return [json.loads(line[6:]) for line in lines if line.startswith("data: ")]


def test_kill_9_mid_stream_then_restart(tmp_path) -> None:
    server = AppServer(
        tmp_path / "crash",
        backend_only=True,
        env={
            "LUMINA_DEMO_DELAY_MS": "20",
            "LUMINA_FLUSH_INTERVAL_MS": "50",
            "LUMINA_REDIS_URL": "",
        },
    )
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            first = client.post(
                "/api/v1/agents/assistant/execute/sync", json={"task": "remember: 42"}
            )
            assert first.status_code == 200, first.text
            conv = first.json()["conversationId"]
            chunks: list[str] = []
            with client.stream(
                "POST",
                "/api/v1/agents/assistant/execute/stream",
                json={"task": "a long answer please /long", "conversationId": conv},
            ) as response:
                assert response.status_code == 200
                for line in response.iter_lines():
                    if line.startswith("data: ") and '"chunk"' in line:
                        chunks.append(json.loads(line[6:])["chunk"])
                    if len(chunks) >= 40:
                        server.kill()  # kill -9 the whole server, mid-stream
                        break
        assert server.proc.returncode is not None

        server.start()
        with httpx.Client(base_url=server.url, timeout=30) as client:
            info = client.get(f"/api/v1/conversations/{conv}").json()
            assert info["status"] != "running"
            msgs = client.get(f"/api/v1/conversations/{conv}/messages").json()["items"]
            assert [m["role"] for m in msgs] == ["USER", "ASSISTANT", "USER", "ASSISTANT"]
            assert msgs[2]["content"] == "a long answer please /long"  # acknowledged: kept
            partial = msgs[3]
            assert partial["status"] == "interrupted"
            assert partial["content"]  # flushed text survived the crash
            assert "".join(chunks).startswith(partial["content"][:20])
            assert len(partial["content"]) < 2000

            with client.stream(
                "POST",
                "/api/agent/assistant/chat",
                json={"message": "still there?", "conversationId": conv},
            ) as response:
                lines = list(response.iter_lines())
            session = next(
                json.loads(lines[i + 2][6:])
                for i, line in enumerate(lines)
                if line == "event: session"
            )
            assert session["scenario"] == "resume"
            text = "".join(
                json.loads(lines[i + 2][6:])["text"]
                for i, line in enumerate(lines)
                if line == "event: agent_output"
            )
            assert "I can see 4 earlier messages" in text  # the interrupted answer included
            after = client.get(f"/api/v1/conversations/{conv}/messages").json()["items"]
            assert len(after) == 6 and after[-1]["status"] == "complete"
    finally:
        server.stop()
