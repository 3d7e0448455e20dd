"""Titles that say what a conversation is about (#30): after the first answer the agent's
provider proposes one — the demo model its question's first meaningful words, an
OpenAI-compatible model through one small marked request (the fake LLM answers it from
its own queue, so the scripted model turns are untouched); a title the person set stays."""

from __future__ import annotations

import logging

import pytest

from lumina_app.agents.definitions.titling import DEFAULT_TITLE_PROMPT, MAX_TITLE_CHARS, clean_title
from lumina_app.agents.providers.factory import demo_title
from lumina_app.domain import LOCAL
from tests.conftest import write_agent
from tests.waits import wait_until

QUESTION = "Please explain how tides work on Mars today"


def test_the_demo_title_is_the_first_meaningful_words() -> None:
    assert demo_title("Please, can you tell me how tides work on Mars today? /long") == (
        "how tides work on Mars today"
    )
    assert demo_title("What is 2+2?") == "What is 2+2"
    assert demo_title("/long") is None
    assert demo_title("hello") is None


def test_a_reply_is_cleaned_into_one_short_line() -> None:
    assert clean_title('"Tides on Mars."\nHope that helps!') == "Tides on Mars"
    assert clean_title("\n  Title: **Tides on Mars**  ") == "Tides on Mars"
    assert clean_title("«Marées sur Mars»") == "Marées sur Mars"
    assert clean_title("   \n") is None
    assert clean_title(None) is None
    long = clean_title("word " * 50)
    assert long is not None and len(long) <= MAX_TITLE_CHARS and long.endswith("…")


async def title_of(services, uuid: str) -> str:
    await services.runs.titles.settled()
    return (await services.conversations.get(LOCAL, uuid)).title


async def test_a_new_conversation_is_named_after_its_first_answer(services) -> None:
    async with services.live.page(LOCAL, "tab") as feed:
        first = await services.runs.execute_sync(LOCAL, agent_id="demo", message=QUESTION)
        assert await title_of(services, first.conversation_uuid) == "explain how tides work on Mars"
        kinds = []
        while (notice := await feed.next(0.5)) is not None:
            kinds.append((notice.kind, notice.title))
        assert ("renamed", "explain how tides work on Mars") in kinds
    # Later turns leave it be.
    await services.runs.execute_sync(
        LOCAL,
        agent_id="demo",
        message="And on Venus? /long",
        conversation_uuid=first.conversation_uuid,
    )
    assert await title_of(services, first.conversation_uuid) == "explain how tides work on Mars"


async def test_a_title_the_person_set_is_kept(services) -> None:
    run = await services.runs.start_run(
        LOCAL, agent_id="demo", message="Please tell me about the sea /long"
    )
    await services.conversations.rename(LOCAL, run.conversation.uuid, "My sea notes")
    await services.runs.result(run)
    assert await title_of(services, run.conversation.uuid) == "My sea notes"
    given = await services.runs.execute_sync(
        LOCAL, agent_id="demo", message="Please name it yourself", title="Given at the start"
    )
    assert await title_of(services, given.conversation_uuid) == "Given at the start"


async def test_an_openai_model_proposes_with_one_marked_request(services, fake_llm) -> None:
    fake_llm.script.titles = ['"Tides on Mars."\nI hope this helps!']
    done = await services.runs.execute_sync(LOCAL, agent_id="tester", message=QUESTION)
    assert await title_of(services, done.conversation_uuid) == "Tides on Mars"
    assert len(fake_llm.requests) == 1, "the model turn only"
    (asked,) = fake_llm.title_requests
    assert asked["model"] == "fake-1" and asked["max_tokens"] <= 40
    assert asked["messages"][0] == {"role": "system", "content": DEFAULT_TITLE_PROMPT}
    assert QUESTION in asked["messages"][1]["content"]
    assert "Hello from the fake LLM." in asked["messages"][1]["content"]
    # A later turn asks nothing more.
    await services.runs.execute_sync(
        LOCAL, agent_id="tester", message="More", conversation_uuid=done.conversation_uuid
    )
    assert await title_of(services, done.conversation_uuid) == "Tides on Mars"
    assert len(fake_llm.title_requests) == 1 and len(fake_llm.requests) == 2


async def test_the_agents_title_prompt_and_switch(services, fake_llm, data_dir) -> None:
    base = {"provider": "openai", "base_url": fake_llm.base_url, "model": "fake-1"}
    write_agent(data_dir / "agents", "named", {"name": "N", **base}, {"title.md": "Name it."})
    write_agent(data_dir / "agents", "untitled", {"name": "U", "titles": False, **base})
    fake_llm.script.title = "Its own name"
    named = await services.runs.execute_sync(LOCAL, agent_id="named", message=QUESTION)
    assert await title_of(services, named.conversation_uuid) == "Its own name"
    assert fake_llm.title_requests[-1]["messages"][0]["content"] == "Name it."
    plain = await services.runs.execute_sync(LOCAL, agent_id="untitled", message=QUESTION)
    assert await title_of(services, plain.conversation_uuid) == QUESTION
    assert len(fake_llm.title_requests) == 1, "titles: false asks nothing"


@pytest.mark.parametrize("reply", [400, "", "  \n "], ids=["error", "empty", "blank"])
async def test_a_failed_proposal_keeps_the_cut_message_and_says_so(
    services, fake_llm, caplog, reply
) -> None:
    fake_llm.script.titles = [reply]
    with caplog.at_level(logging.WARNING, logger="lumina_app.services.titles"):
        done = await services.runs.execute_sync(LOCAL, agent_id="tester", message=QUESTION)
        assert await title_of(services, done.conversation_uuid) == QUESTION
    assert len(fake_llm.title_requests) == 1
    assert any("no title for" in r.getMessage() for r in caplog.records)


async def test_a_slow_proposal_is_given_up(settings_factory, fake_llm, caplog) -> None:
    from lumina_app.composition import open_services

    services = await open_services(settings_factory(title_timeout_seconds=0.2))
    try:
        fake_llm.script.titles, fake_llm.script.title_delay = ["Too late"], 1.0
        with caplog.at_level(logging.WARNING, logger="lumina_app.services.titles"):
            done = await services.runs.execute_sync(LOCAL, agent_id="tester", message=QUESTION)
            assert await title_of(services, done.conversation_uuid) == QUESTION
        assert any("within" in r.getMessage() for r in caplog.records)
    finally:
        await services.close()


async def test_a_rename_racing_the_proposal_wins(services, fake_llm) -> None:
    """The person renames while the model is still thinking of a title: theirs stays."""
    fake_llm.script.titles, fake_llm.script.title_delay = ["Model's idea"], 1.0
    done = await services.runs.execute_sync(LOCAL, agent_id="tester", message=QUESTION)
    await wait_until(lambda: fake_llm.title_requests, "the title request to be sent")
    await services.conversations.rename(LOCAL, done.conversation_uuid, "Mine")
    assert await title_of(services, done.conversation_uuid) == "Mine"


async def test_a_failed_run_is_not_named(services, fake_llm) -> None:
    fake_llm.script.error_status = 400
    run = await services.runs.start_run(LOCAL, agent_id="tester", message=QUESTION)
    await services.runs.result(run)
    assert await title_of(services, run.conversation.uuid) == QUESTION
    assert fake_llm.title_requests == []


async def test_a_proposal_for_a_deleted_conversation_lands_nowhere(services, fake_llm) -> None:
    """Deleted while the model thinks, then a new conversation with the same first message
    (on SQLite it takes the deleted one's primary key): the late proposal names neither."""
    fake_llm.script.titles, fake_llm.script.title_delay = ["Model's idea"], 1.0
    gone = await services.runs.execute_sync(LOCAL, agent_id="tester", message=QUESTION)
    await wait_until(lambda: fake_llm.title_requests, "the title request to be sent")
    await services.conversations.delete(LOCAL, gone.conversation_uuid)
    fresh = await services.conversations.create(LOCAL, agent_id="tester", title=QUESTION)
    assert await title_of(services, fresh.uuid) == QUESTION
    assert len(fake_llm.title_requests) == 1
