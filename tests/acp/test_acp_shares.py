"""Fair shares of the ACP pool (in process): one owner's runs hold at most their share of
the agent processes (then AcpShareFull, a 429) and of waiting permission prompts (then the
prompt is rejected at once), and a stop of a run waiting on a permission keeps its process."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from lumina_app.agents.providers.acp.pool import AcpShareFull
from lumina_app.composition import open_services
from lumina_app.domain import LOCAL, EventType, TooManyRuns
from tests.acp.helpers import answer_of, echo_agent, pid_of, send


async def asked(services, run) -> dict:
    async for event in services.runs.follow(run):
        if event is not None and event.type is EventType.TOOL_CALL:
            return json.loads(event.data["arguments"])
    raise AssertionError("no permission asked")


async def test_an_owner_gets_their_share_of_processes_and_prompts(
    settings_factory, data_dir
) -> None:
    echo_agent(data_dir, permissions="ask")
    settings = settings_factory(acp_max_per_owner=2, acp_max_asks_per_owner=1)
    services = await open_services(settings)
    try:
        first = await services.runs.start_run(LOCAL, agent_id="echo", message="/permission")
        await asked(services, first)
        # A second prompt waiting for the same owner is over the share: rejected at once.
        events = await asyncio.wait_for(send(services, "/permission"), 15)
        assert "permission=no" in answer_of(events)
        refused = next(e for e in events if e.type is EventType.TOOL_RESULT)
        assert "LUMINA_ACP_MAX_ASKS_PER_OWNER" in refused.data["content"]

        second = await services.runs.start_run(LOCAL, agent_id="echo", message="/slow")
        with pytest.raises(AcpShareFull) as full:
            await services.runs.start_run(LOCAL, agent_id="echo", message="one too many")
        assert isinstance(full.value, TooManyRuns)  # the API's 429
        assert "at most 2 agent processes" in str(full.value)
        for run in (first, second):
            await services.runs.stop(LOCAL, run.run_id)
        assert "prompt 1 in session" in answer_of(await send(services, "room again"))
    finally:
        await services.close()


async def test_a_stop_while_a_permission_waits_is_quick_and_keeps_the_process(
    services, data_dir
) -> None:
    echo_agent(data_dir, permissions="ask")
    first = await send(services, "hello")
    conv = first[0].data["conversationId"]
    run = await services.runs.start_run(
        LOCAL, agent_id="echo", message="/permission", conversation_uuid=conv
    )
    await asked(services, run)
    began = time.monotonic()
    await services.runs.stop(LOCAL, run.run_id)
    assert time.monotonic() - began < 0.5
    assert run.result.status == "stopped"
    after = await send(services, "still there?", conv)
    assert pid_of(after) == pid_of(first)
