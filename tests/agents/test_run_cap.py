"""The per-owner run cap at the one place runs are accepted (what the UI's send and
regenerate go through): counted in process and in Redis alike, given back when a run ends
or fails to start, and each owner counted apart."""

from __future__ import annotations

import pytest

from lumina_app.composition import open_services
from lumina_app.domain import LOCAL, AgentNotFound, Principal, RunStatus, TooManyRuns, Via
from lumina_app.ui.view_models.views import explain

BOB = Principal(owner="bob", via=Via.API_KEY, name="bob")


@pytest.mark.parametrize("redis", [True, False], ids=["redis", "in-process"])
async def test_runs_past_the_cap_are_refused_until_one_ends(
    settings_factory, fake_llm, redis: bool
) -> None:
    overrides = {} if redis else {"redis_url": None}
    services = await open_services(settings_factory(max_active_runs_per_owner=2, **overrides))
    try:
        runs = services.runs
        finished = await runs.execute_sync(LOCAL, agent_id="tester", message="zero")
        fake_llm.script.chunks = [f"w{i} " for i in range(200)]
        fake_llm.script.delay = 0.05
        first = await runs.start_run(LOCAL, agent_id="tester", message="one")
        second = await runs.start_run(LOCAL, agent_id="tester", message="two")
        with pytest.raises(TooManyRuns) as refused:
            await runs.start_run(LOCAL, agent_id="tester", message="three")
        assert "at most 2 runs may go at once" in explain(refused.value)
        assert refused.value.retry_after >= 1
        with pytest.raises(TooManyRuns):
            await runs.regenerate(LOCAL, finished.conversation_uuid)
        bobs = await runs.start_run(BOB, agent_id="tester", message="mine")
        with pytest.raises(AgentNotFound):
            await runs.start_run(LOCAL, agent_id="nobody", message="x")  # refused before the cap
        await runs.stop(LOCAL, first.run_id)
        third = await runs.start_run(LOCAL, agent_id="tester", message="three")
        for principal, run in ((LOCAL, second), (LOCAL, third), (BOB, bobs)):
            assert (await runs.stop(principal, run.run_id)).status is RunStatus.STOPPED
        fake_llm.script.delay = 0
        done = [await runs.execute_sync(LOCAL, agent_id="tester", message=f"{n}") for n in "ab"]
        assert [d.status for d in done] == [RunStatus.COMPLETE] * 2
    finally:
        await services.close()
