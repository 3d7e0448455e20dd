"""Titles that say what a conversation is about (#30): after the first answer the demo
provider proposes the question's first meaningful words; a title the person set stays."""

from __future__ import annotations

import asyncio

import pytest

from lumina_app.agents.providers import demo_title
from lumina_app.domain import LOCAL


def test_the_demo_title_is_the_first_meaningful_words() -> None:
    assert demo_title("Please, can you tell me how tides work on Mars today? /long") == (
        "how tides work on Mars today"
    )
    assert demo_title("What is 2+2?") == "What is 2+2"
    assert demo_title("/long") is None
    assert demo_title("hello") is None


async def wait_title(services, uuid: str, title: str) -> None:
    for _ in range(100):
        if (await services.conversations.get(LOCAL, uuid)).title == title:
            return
        await asyncio.sleep(0.05)
    pytest.fail(f"title never became {title!r}")


async def test_a_new_conversation_is_named_after_its_first_answer(services) -> None:
    async with services.live.page(LOCAL, "tab") as feed:
        first = await services.runs.execute_sync(
            LOCAL, agent_id="demo", message="Please explain how tides work on Mars today"
        )
        await wait_title(services, first.conversation_uuid, "explain how tides work on Mars")
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
    await asyncio.sleep(0.3)
    conv = await services.conversations.get(LOCAL, first.conversation_uuid)
    assert conv.title == "explain how tides work on Mars"


async def test_a_title_the_person_set_is_kept(services) -> None:
    run = await services.runs.start(
        LOCAL, agent_id="demo", message="Please tell me about the sea /long"
    )
    await services.conversations.rename(LOCAL, run.conversation.uuid, "My sea notes")
    await services.runs.result(run)
    await asyncio.sleep(0.3)  # the proposal has had its chance
    conv = await services.conversations.get(LOCAL, run.conversation.uuid)
    assert conv.title == "My sea notes"
    given = await services.runs.execute_sync(
        LOCAL, agent_id="demo", message="Please name it yourself", title="Given at the start"
    )
    await asyncio.sleep(0.3)
    conv = await services.conversations.get(LOCAL, given.conversation_uuid)
    assert conv.title == "Given at the start"


async def test_providers_that_cannot_propose_keep_the_cut_title(services) -> None:
    done = await services.runs.execute_sync(
        LOCAL, agent_id="tester", message="Please explain how tides work on Mars today"
    )
    await asyncio.sleep(0.3)
    conv = await services.conversations.get(LOCAL, done.conversation_uuid)
    assert conv.title == "Please explain how tides work on Mars today"
