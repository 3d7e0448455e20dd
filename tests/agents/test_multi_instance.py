"""Two engines (as two instances) over one SQL database and one Redis: the run lock, stops,
warm-vs-resume context and orphaned runs all work across them."""

from __future__ import annotations

import pytest

from lumina_app.agents.run.context import build_context
from lumina_app.composition import open_services
from lumina_app.domain import LOCAL, ConversationBusy, EventType
from tests.conftest import crashed_run
from tests.waits import wait_until


@pytest.fixture
async def pair(settings_factory):
    one = await open_services(settings_factory(run_lease_seconds=1.0))
    two = await open_services(settings_factory(run_lease_seconds=1.0), recover=False)
    yield one, two
    await one.close()
    await two.close()


async def test_one_active_run_per_conversation_across_instances(pair, fake_llm) -> None:
    one, two = pair
    fake_llm.script.delay = 0.05
    run = await one.chat.start_run(agent_id="tester", message="slow one")
    with pytest.raises(ConversationBusy) as busy:
        await two.chat.start_run(
            agent_id="tester", message="again", conversation_uuid=run.conversation.uuid
        )
    assert busy.value.run_id == run.run_id
    await run.done.wait()
    fake_llm.script.delay = 0
    after = await two.runs.execute_sync(
        LOCAL, agent_id="tester", message="now", conversation_uuid=run.conversation.uuid
    )
    assert after.status == "complete"


async def test_stop_sent_to_the_other_instance(pair, fake_llm) -> None:
    one, two = pair
    fake_llm.script.chunks = [f"w{i} " for i in range(200)]
    fake_llm.script.delay = 0.02
    run = await one.chat.start_run(agent_id="tester", message="long")
    await wait_until(lambda: run.next_event_id > 3, "the run on instance one to stream")
    await two.chat.stop(run.run_id, owner="")  # returns once the store shows the run ended
    # Instance one sets `done` a few awaits after that write (hot window, events, lock): the
    # same loop may run this first, so wait for it rather than look at once (a 1-in-5 flake).
    await wait_until(run.done.is_set, "instance one's run to end", within=5)
    assert run.result.status == "stopped"
    record = await two.chat.runs.get_run(run.run_id)
    assert record.status == "stopped"


async def test_warm_on_one_is_resume_on_two_with_the_same_context(pair, fake_llm) -> None:
    one, two = pair
    first = await one.runs.execute_sync(LOCAL, agent_id="tester", message="alpha")
    conv = first.conversation_uuid
    await one.runs.execute_sync(LOCAL, agent_id="tester", message="beta", conversation_uuid=conv)
    warm = one.chat.sessions.get("tester", conv)
    assert warm is not None  # instance one would 'continue' from memory
    agent = one.registry.get("tester")
    would_send = build_context(agent.system_prompt, warm.history, "gamma", window=20).messages

    run = await two.chat.start_run(agent_id="tester", message="gamma", conversation_uuid=conv)
    assert run.scenario.value == "resume"
    await run.done.wait()
    assert fake_llm.requests[-1]["messages"] == would_send


async def test_orphaned_run_is_interrupted_by_a_survivor(pair) -> None:
    one, two = pair
    conv, record = await crashed_run(one, "run-0123456789abcdef", "half")
    assert await one.chat.locks.acquire(conv.uuid, record.run_id) is None
    # The instance holding it dies: nobody renews the lease.
    assert await two.chat.sweep_orphans() == 0  # lease still valid

    # Within a lease and a sweep interval a survivor's background sweep closes it.
    async def swept() -> bool:
        return (await two.chat.runs.get_run(record.run_id)).status != "running"

    await wait_until(swept, "a survivor's sweep to close the orphaned run", within=4)
    assert (await two.chat.runs.get_run(record.run_id)).status == "interrupted"
    stored = await two.memory.queries.get_message(record.assistant_message_id)
    assert (stored.status.value, stored.content) == ("interrupted", "half")
    # A late write from the lost instance is fenced off.
    assert not await one.memory.flush_answer(record.assistant_message_id, "half and more")
    assert (await two.memory.queries.get_message(record.assistant_message_id)).content == "half"
    events = [
        e
        async for e in two.runs.stream(
            LOCAL, agent_id="tester", message="next", conversation_uuid=conv.uuid
        )
    ]
    assert events[0].data["scenario"] == "resume" and events[-1].type is EventType.RESULT


async def test_a_sweep_during_accept_leaves_a_live_run_alone(settings_factory, monkeypatch) -> None:
    """Redis hiccups at lock time (in-process fallback) and a sweep runs mid-accept: the
    live run must not be taken for an orphan."""
    from redis.exceptions import TimeoutError as RedisTimeout

    services = await open_services(settings_factory())
    try:
        chat, memory = services.chat, services.memory

        async def set_times_out(*args, **kwargs):
            raise RedisTimeout("Timeout reading from socket")

        monkeypatch.setattr(chat.locks.client, "set", set_times_out)
        begin_turn = memory.begin_turn

        async def begin_turn_then_sweep(*args, **kwargs):
            result = await begin_turn(*args, **kwargs)
            await chat.sweep_orphans()
            return result

        monkeypatch.setattr(memory, "begin_turn", begin_turn_then_sweep)
        result = await services.runs.execute_sync(LOCAL, agent_id="demo", message="hello")
        assert result.status == "complete"
        conv = await services.reads.lookup.get_conversation(result.conversation_uuid)
        stored = await memory.queries.page_messages(conv.id, limit=10)
        assert [m.status.value for m in stored] == ["complete", "complete"]
    finally:
        await services.close()


async def test_text_no_database_can_store_is_invalid_input(services) -> None:
    from lumina_app.domain import InvalidInput

    with pytest.raises(InvalidInput):
        await services.runs.execute_sync(LOCAL, agent_id="demo", message="hi \ud800")
    conv = await services.memory.create_conversation(agent_id="demo")
    for title in ("a\x00b", "x\udc00"):
        with pytest.raises(InvalidInput):
            await services.memory.rename(conv, title)
