"""A turn gone on after a client's tool output, on the three databases: its run records the
turn's question (not the output), so ``/api/v1/runs/{id}/context`` shows what the model was
sent — the question, the answer that called the tool, the output — and ``input_items`` the
output it was given. (PostgreSQL's one-statement accept would point the run at the first
new row: such a run takes the transactional path.)"""

from __future__ import annotations

from tests.api.helpers import bearer, openai_sdk
from tests.fake_llm import Call, Reply, Script

WEATHER = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}


async def test_the_continued_turns_context_has_its_question(
    api_factory, database, fake_llm
) -> None:
    _services, client = await api_factory(database_url=database.url, api_keys="ada:key-ada")
    fake_llm.script = Script(
        replies=[Reply(calls=[Call("call_q1", "get_weather", "{}")]), Reply(chunks=["Sunny."])]
    )
    async with openai_sdk(client, "key-ada") as sdk:
        first = await sdk.responses.create(model="tester", input="Weather?", tools=[WEATHER])
        second = await sdk.responses.create(
            model="tester",
            previous_response_id=first.id,
            input=[{"type": "function_call_output", "call_id": "call_q1", "output": "sun"}],
            tools=[WEATHER],
        )
        assert second.output_text == "Sunny."
        given = await sdk.responses.input_items.list(second.id)
        assert [(item.type, item.output) for item in given.data] == [
            ("function_call_output", "sun")
        ]
    run = "run-" + second.id.removeprefix("resp_")
    context = await client.get(f"/api/v1/runs/{run}/context", headers=bearer("key-ada"))
    assert context.status_code == 200, context.text
    sent = [(m["role"], m.get("content")) for m in context.json()["messages"]]
    assert [text for role, text in sent if role == "user"] == ["Weather?"]
    assert sent[-2][0] == "assistant" and sent[-1] == ("tool", "sun")
    assert context.json()["messages"][-1]["tool_call_id"] == "call_q1"
