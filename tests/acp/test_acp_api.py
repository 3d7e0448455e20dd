"""The API side of an ``acp`` agent: a broken ``acp`` block makes the agent unavailable
with its reason, and a permission request (policy ``ask``) is answered over REST."""

from __future__ import annotations

import json

from lumina_app.domain import EventType
from tests.acp.helpers import echo_agent
from tests.api.conftest import api_factory  # noqa: F401 - fixture
from tests.api.helpers import error_of, start_run, wait_run
from tests.conftest import write_agent


async def test_a_broken_acp_block_makes_the_agent_unavailable(api_factory, data_dir) -> None:  # noqa: F811
    write_agent(data_dir / "agents", "broken", {"provider": "acp", "acp": {"args": []}})
    write_agent(
        data_dir / "agents",
        "escapes",
        {"provider": "acp", "acp": {"command": "x", "cwd": "../elsewhere"}},
    )
    _services, api = await api_factory()
    info = (await api.get("/api/agent/broken/info")).json()
    assert info["available"] is False
    assert "acp.command must be a non-empty string" in info["error"]
    info = (await api.get("/api/agent/escapes/info")).json()
    assert "inside the agent's folder" in info["error"]
    resp = await api.post("/api/v1/agents/broken/execute/sync", json={"task": "hi"})
    assert "acp.command" in error_of(resp, 409)["message"]


async def test_a_permission_request_is_answered_over_rest(api_factory, data_dir) -> None:  # noqa: F811
    echo_agent(data_dir, permissions="ask")
    services, api = await api_factory()
    run_id = (await start_run(api, "/permission", agent="echo"))["runId"]
    run = services.chat.active_run(run_id)
    async for event in services.runs.follow(run):
        if event is not None and event.type is EventType.TOOL_CALL:
            asked = json.loads(event.data["arguments"])
            break
    url = f"/api/v1/runs/{run_id}/permissions/{asked['requestId']}"
    error_of(await api.post(url, json={"optionId": "maybe"}), 422)
    error_of(
        await api.post(f"/api/v1/runs/{run_id}/permissions/perm-nope", json={"optionId": "yes"}),
        404,
    )
    error_of(
        await api.post("/api/v1/runs/run-0000000000000000/permissions/x", json={"optionId": "yes"}),
        404,
    )
    resp = await api.post(url, json={"optionId": "no"})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"runId": run_id, "requestId": asked["requestId"], "optionId": "no"}
    done = await wait_run(api, run_id, within=15)
    assert done["status"] == "complete"
    assert "permission=no" in done["content"]
    error_of(await api.post(url, json={"optionId": "yes"}), 404)  # answered: no longer waiting
