"""Robustness found on the way (issue #12): ids checked to their very end, Last-Event-ID
parsed strictly and bounded on both replay paths, idempotency claims that outlive a crash,
and a 413 shaped like every other error."""

from __future__ import annotations

import pytest

from lumina_app.agents.registry import is_valid_agent_id
from tests.api.helpers import error_of
from tests.conftest import write_agent

# -- ids end where the id ends -----------------------------------------------------------


@pytest.mark.parametrize("agent_id", ["demo\n", "demo\r\n", "\ndemo", "de\nmo"])
def test_an_agent_id_with_a_newline_is_not_an_agent_id(agent_id) -> None:
    assert is_valid_agent_id("demo")
    assert not is_valid_agent_id(agent_id)


async def test_an_agent_folder_named_with_a_trailing_newline_is_not_served(
    api_factory, data_dir
) -> None:
    """``$`` also matches before a final newline: a folder ``demo\\n`` (say, unpacked from
    a tarball) was listed, served and given conversations under that id."""
    write_agent(data_dir / "agents", "demo\n", {"name": "Newline"})
    _services, api = await api_factory()
    assert [a["id"] for a in (await api.get("/api/agent/list")).json()] == ["demo", "tester"]
    error_of(await api.get("/api/agent/demo%0A/info"), 404)
    error_of(await api.get("/api/agent/demo%0A/conversations"), 404)
    resp = await api.post("/api/v1/conversations", json={"agentId": "demo\n"})
    error_of(resp, 404)
    resp = await api.post("/api/agent/demo%0A/chat", json={"message": "hi"})
    error_of(resp, 404)
    assert (await api.get("/api/v1/conversations")).json()["items"] == []
