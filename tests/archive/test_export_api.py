"""``GET /api/v1/conversations/{id}/export?format=json|md|archive``, owner-scoped."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from tests.api.conftest import api, api_factory  # noqa: F401 - fixtures


async def _conversation_with_a_turn(client, headers=None) -> dict:
    created = await client.post(
        "/api/v1/conversations", json={"agentId": "demo", "title": "导出"}, headers=headers
    )
    assert created.status_code == 201, created.text
    uuid = created.json()["uuid"]
    answer = await client.post(
        "/api/v1/agents/demo/execute/sync",
        params={"task": "你好", "conversationId": uuid},
        headers=headers,
    )
    assert answer.status_code == 200, answer.text
    return {"uuid": uuid, "answer": answer.json()["answer"]}


async def test_json_is_meta_plus_history(api) -> None:  # noqa: F811
    conv = await _conversation_with_a_turn(api)
    resp = await api.get(f"/api/v1/conversations/{conv['uuid']}/export", params={"format": "json"})
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    assert f'filename="{conv["uuid"]}.json"' in resp.headers["content-disposition"]
    body = resp.json()
    assert body["meta"]["conversationId"] == conv["uuid"]
    assert body["meta"]["title"] == "导出" and body["meta"]["stats"]["messageCount"] == 2
    assert [(e["role"], e["content"]) for e in body["history"]] == [
        ("user", "你好"),
        ("assistant", conv["answer"]),
    ]
    assert "导出".encode() in resp.content  # not \u-escaped
    default = await api.get(f"/api/v1/conversations/{conv['uuid']}/export")
    assert default.json() == body


async def test_markdown_is_a_readable_transcript(api) -> None:  # noqa: F811
    conv = await _conversation_with_a_turn(api)
    resp = await api.get(f"/api/v1/conversations/{conv['uuid']}/export", params={"format": "md"})
    assert resp.status_code == 200
    assert resp.headers["content-type"] == "text/markdown; charset=utf-8"
    text = resp.text
    assert text.startswith("# 导出\n")
    assert f"- Conversation: `{conv['uuid']}`" in text
    user_at, answer_at = text.index("### User · "), text.index("### Assistant · ")
    assert user_at < text.index("你好", user_at) < answer_at
    assert text.rstrip().endswith(conv["answer"].rstrip())


async def test_a_title_cannot_add_lines_to_the_markdown_header(api) -> None:  # noqa: F811
    title = "Plan\n# Forged heading\r\n- Status: approved\u2028- Agent: `root`\x0bend"
    created = await api.post("/api/v1/conversations", json={"agentId": "demo", "title": title})
    assert created.status_code == 201, created.text
    uuid = created.json()["uuid"]
    resp = await api.get(f"/api/v1/conversations/{uuid}/export", params={"format": "md"})
    assert resp.status_code == 200
    lines = resp.text.split("\n")
    assert lines[0] == "# Plan # Forged heading - Status: approved - Agent: `root` end"
    assert lines[1:8] == [
        "",
        f"- Conversation: `{uuid}`",
        "- Agent: `demo`",
        lines[4],
        lines[5],
        "- Status: idle",
        "- Messages: 0",
    ]
    assert lines[4].startswith("- Created: ") and lines[5].startswith("- Updated: ")
    assert sum(line.startswith("#") for line in resp.text.splitlines()) == 1
    assert "\r" not in resp.text and "\u2028" not in resp.text and "\x0b" not in resp.text


async def test_archive_is_a_zip_of_the_per_agent_layout(api) -> None:  # noqa: F811
    conv = await _conversation_with_a_turn(api)
    resp = await api.get(
        f"/api/v1/conversations/{conv['uuid']}/export", params={"format": "archive"}
    )
    assert resp.status_code == 200
    assert resp.headers["content-type"] == "application/zip"
    zipped = zipfile.ZipFile(io.BytesIO(resp.content))
    base = f"agents/demo/conversations/{conv['uuid']}"
    history = json.loads(zipped.read(f"{base}/history.json"))
    turn = history[0]["messageId"]
    assert sorted(zipped.namelist()) == sorted(
        [f"{base}/history.json", f"{base}/meta.json", f"{base}/{turn}/messages.log"]
    )
    log = zipped.read(f"{base}/{turn}/messages.log").decode("utf-8")
    assert log.splitlines()[:2] == [f"[{history[0]['timestamp']}] [USER]", "你好"]


async def test_someone_elses_or_unknown_conversation_is_404(api_factory) -> None:  # noqa: F811
    services, client = await api_factory(api_keys="alice:key-a,bob:key-b")
    alice, bob = {"Authorization": "Bearer key-a"}, {"Authorization": "Bearer key-b"}
    try:
        conv = await _conversation_with_a_turn(client, alice)
        url = f"/api/v1/conversations/{conv['uuid']}/export"
        for fmt in ("json", "md", "archive"):
            assert (await client.get(url, params={"format": fmt}, headers=alice)).status_code == 200
            resp = await client.get(url, params={"format": fmt}, headers=bob)
            assert resp.status_code == 404, resp.text
            assert resp.json()["error"]["code"] == "not_found"
        unknown = "/api/v1/conversations/00000000-0000-4000-8000-000000000000/export"
        assert (await client.get(unknown, headers=alice)).status_code == 404
        assert (
            await client.get("/api/v1/conversations/..%2F..%2Fx/export", headers=alice)
        ).status_code == 404
        assert (await client.get(url)).status_code == 401
    finally:
        await client.aclose()
        await services.close()


async def test_a_bad_format_is_422(api) -> None:  # noqa: F811
    conv = await _conversation_with_a_turn(api)
    resp = await api.get(f"/api/v1/conversations/{conv['uuid']}/export", params={"format": "pdf"})
    assert resp.status_code == 422
    assert resp.json()["error"]["code"] == "invalid_input"
    assert "format" in resp.json()["error"]["message"]


async def test_an_imported_conversation_keeps_its_foreign_id(api_factory, seed_tree: Path) -> None:  # noqa: F811
    services, client = await api_factory()
    try:
        report = await services.archive.import_path(seed_tree)
        assert report.errors == []
        resp = await client.get("/api/v1/conversations/conv-mn3112l3/export")
        assert resp.status_code == 200, resp.text
        assert resp.json()["meta"]["title"] == "创建 Master Agent"
        assert [e["messageId"] for e in resp.json()["history"]][:2] == ["msg-xxx-aaa"] * 2
    finally:
        await client.aclose()
        await services.close()
