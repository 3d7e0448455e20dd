"""The ``acp`` provider against a small ACP agent of our own (tests/acp/echo_agent.py):
one process per conversation holding its context, new processes that load or are given
the history, stop, crash, permissions, folder confinement, the env rule, eviction and
shutdown leaving no process behind."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest

from lumina_app.composition import open_services
from lumina_app.domain import LOCAL, EventType
from lumina_app.ui.view_models.tool_views import stored_cards
from tests.acp.helpers import (
    PROMPT,
    alive,
    answer_of,
    echo_agent,
    kill_group,
    pid_of,
    result_of,
    send,
    workdir,
)


def received(folder, conversation: str) -> list[str]:
    """Every prompt the echo agent got in that conversation's folder, in order."""
    data = json.loads((workdir(folder, conversation) / ".echo-agent.json").read_text())
    return [text for prompts in data.values() for text in prompts]


async def record_of(services, events) -> dict:
    record = await services.chat.runs.get_run(result_of(events)["runId"])
    return record.context["acp"]


async def wait_dead(pid: int, seconds: float = 5.0) -> bool:
    for _ in range(int(seconds / 0.05)):
        if not alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_one_process_keeps_the_context_and_a_new_one_loads_it(services, data_dir) -> None:
    folder = echo_agent(data_dir)
    first = await send(services, "first question")
    conv = first[0].data["conversationId"]
    assert first[0].data["scenario"] == "new"
    assert result_of(first)["status"] == "complete"
    assert (await record_of(services, first))["mode"] == "new"
    second = await send(services, "second question", conv)
    assert second[0].data["scenario"] == "continue"
    assert pid_of(second) == pid_of(first)  # the same process
    assert "prompt 2 in session" in answer_of(second)
    # A: the system prompt with the message; B: only the new message.
    assert received(folder, conv)[0].startswith(f"<instructions>\n{PROMPT}")
    assert received(folder, conv)[1] == "second question"

    kill_group(pid_of(second))
    assert await wait_dead(pid_of(second))
    third = await send(services, "third question", conv)
    assert third[0].data["scenario"] == "resume"
    assert (await record_of(services, third))["mode"] == "load"
    assert pid_of(third) != pid_of(second)
    assert "prompt 3 in session" in answer_of(third)  # the loaded session, whole
    assert "REPLAY" not in answer_of(third)  # what session/load replayed is not an answer
    assert received(folder, conv)[2] == "third question"
    messages = await services.memory.load_view(
        await services.reads.lookup.find_visible(LOCAL, conv)
    )
    assert [m.content for m in messages.messages][::2] == [
        "first question",
        "second question",
        "third question",
    ]


async def test_an_agent_without_load_gets_the_stored_history(services, data_dir) -> None:
    folder = echo_agent(data_dir, env={"ECHO_AGENT_CAPS": "none"})
    first = await send(services, "my name is Ada")
    conv = first[0].data["conversationId"]
    kill_group(pid_of(first))
    assert await wait_dead(pid_of(first))
    second = await send(services, "what is my name?", conv)
    assert second[0].data["scenario"] == "resume"
    assert (await record_of(services, second))["mode"] == "inject"
    assert "prompt 1 in session" in answer_of(second)  # a new session ...
    injected = received(folder, conv)[-1]  # ... given the stored history
    assert PROMPT in injected
    assert "User: my name is Ada" in injected
    assert "Assistant: prompt 1 in session" in injected
    assert injected.endswith("what is my name?")


async def test_an_agent_with_resume_resumes(services, data_dir) -> None:
    echo_agent(data_dir, env={"ECHO_AGENT_CAPS": "resume"})
    first = await send(services, "one")
    conv = first[0].data["conversationId"]
    kill_group(pid_of(first))
    assert await wait_dead(pid_of(first))
    second = await send(services, "two", conv)
    assert (await record_of(services, second))["mode"] == "resume"
    assert "prompt 2 in session" in answer_of(second)


async def test_a_restart_starts_a_new_process_that_loads_the_session(
    settings_factory, data_dir
) -> None:
    echo_agent(data_dir)
    services = await open_services(settings_factory())
    try:
        first = await send(services, "before the restart")
        conv, pid = first[0].data["conversationId"], pid_of(first)
    finally:
        await services.close()
    assert not alive(pid)  # shutdown ended it
    services = await open_services(settings_factory())
    try:
        second = await send(services, "after the restart", conv)
        assert second[0].data["scenario"] == "resume"
        assert (await record_of(services, second))["mode"] == "load"
        assert "prompt 2 in session" in answer_of(second)
    finally:
        await services.close()


async def test_stop_cancels_the_prompt_and_keeps_the_process(services, data_dir) -> None:
    echo_agent(data_dir)
    first = await send(services, "hello")
    conv = first[0].data["conversationId"]
    run = await services.runs.start_run(
        LOCAL, agent_id="echo", message="/slow", conversation_uuid=conv
    )
    events = services.runs.follow(run)
    async for event in events:
        if event is not None and event.type is EventType.DELTA and "w2" in event.data["text"]:
            break
    await services.chat.stop(run.run_id)
    assert run.result.status == "stopped"
    assert run.result.content.startswith("w0 w1 w2")  # what streamed is kept
    after = await send(services, "still there?", conv)
    assert pid_of(after) == pid_of(first)
    assert after[0].data["scenario"] == "continue"


async def test_an_agent_that_ignores_cancel_is_ended(services, data_dir) -> None:
    echo_agent(data_dir)
    first = await send(services, "hello")
    conv = first[0].data["conversationId"]
    run = await services.runs.start_run(
        LOCAL, agent_id="echo", message="/stubborn", conversation_uuid=conv
    )
    async for event in services.runs.follow(run):  # the agent is in its prompt
        if event is not None and event.type is EventType.DELTA:
            break
    await services.chat.stop(run.run_id)
    assert run.result.status == "stopped"
    assert await wait_dead(pid_of(first))
    after = await send(services, "next", conv)
    assert pid_of(after) != pid_of(first)
    assert result_of(after)["status"] == "complete"


async def test_a_crash_is_a_failed_run_and_the_next_message_respawns(services, data_dir) -> None:
    echo_agent(data_dir)
    first = await send(services, "hello")
    conv = first[0].data["conversationId"]
    crashed = await asyncio.wait_for(send(services, "/crash", conv), 15)
    result = result_of(crashed)
    assert result["status"] == "failed"
    assert "exited with code 3" in result["error"]
    assert result["content"] == "about to crash "  # streamed before the crash: kept
    assert any(e.type is EventType.ERROR for e in crashed)
    after = await send(services, "are you back?", conv)
    assert result_of(after)["status"] == "complete"
    assert pid_of(after) != pid_of(first)
    assert (await record_of(services, after))["mode"] == "load"


async def test_an_agent_that_cannot_start_fails_the_run_clearly(services, data_dir) -> None:
    echo_agent(data_dir, command="/nonexistent/agent")
    events = await asyncio.wait_for(send(services, "hello"), 15)
    assert result_of(events)["status"] == "failed"
    assert "cannot start '/nonexistent/agent'" in result_of(events)["error"]


async def test_an_agent_that_dies_before_initialize_shows_its_stderr(services, data_dir) -> None:
    script = "import sys; sys.stderr.write('boom-on-start'); sys.exit(2)"
    echo_agent(data_dir, args=["-c", script])
    events = await asyncio.wait_for(send(services, "hello"), 15)
    assert result_of(events)["status"] == "failed"
    assert "its stderr ends: boom-on-start" in result_of(events)["error"]


async def test_thinking_and_the_agents_tools_are_streamed_and_kept(services, data_dir) -> None:
    echo_agent(data_dir)
    events = await send(services, "/think /tool")
    kinds = [e.type for e in events]
    assert EventType.THINKING in kinds
    call = next(e for e in events if e.type is EventType.TOOL_CALL)
    done = next(e for e in events if e.type is EventType.TOOL_RESULT)
    assert call.data == {"callId": "t1", "name": "list files", "arguments": '{"path": "."}'}
    assert done.data["content"] == "a.txt b.txt" and done.data["isError"] is False
    answer = await services.reads.runs.get_message(result_of(events)["messageId"])
    assert answer.meta["thinking"] == "pondering "
    assert [t["event"] for t in answer.meta["agentTools"]] == ["tool_call", "tool_result"]
    [shown] = stored_cards(answer)  # as the chat shows it once stored
    assert (shown["name"], shown["status"], shown["content"]) == (
        "list files",
        "done",
        "a.txt b.txt",
    )
    assert answer.meta["usage"] == {"promptTokens": 7, "completionTokens": 7}


@pytest.mark.parametrize(
    ("policy", "message", "chosen"),
    [
        ("allow-all", "/permission", "yes"),
        ("deny", "/permission", "no"),
        ("allow-reads", "/permission", "no"),
        ("allow-reads", "/permission-read", "yes"),
    ],
)
async def test_permission_policies(services, data_dir, policy, message, chosen) -> None:
    echo_agent(data_dir, permissions=policy)
    events = await send(services, message)
    assert f"permission={chosen}" in answer_of(events)


async def test_ask_waits_for_the_persons_choice(services, data_dir) -> None:
    echo_agent(data_dir, permissions="ask")
    run = await services.runs.start_run(LOCAL, agent_id="echo", message="/permission")
    async for event in services.runs.follow(run):
        if event is not None and event.type is EventType.TOOL_CALL:
            asked = json.loads(event.data["arguments"])
            break
    assert event.data["name"] == "permission: edit notes.md"
    assert [o["optionId"] for o in asked["options"]] == ["yes", "no"]
    assert run.provider.answer_permission(asked["requestId"], "yes")
    await run.done.wait()
    assert "permission=yes" in run.result.content
    events = [e async for e in services.runs.follow(run) if e is not None]
    decided = next(
        e
        for e in events
        if e.type is EventType.TOOL_RESULT and e.data["callId"] == asked["requestId"]
    )
    assert decided.data["content"] == "chose Allow" and decided.data["isError"] is False


async def test_ask_unanswered_is_rejected_after_the_timeout(settings_factory, data_dir) -> None:
    echo_agent(data_dir, permissions="ask")
    services = await open_services(settings_factory(acp_permission_timeout_seconds=0.3))
    try:
        events = await asyncio.wait_for(send(services, "/permission"), 15)
        assert "permission=no" in answer_of(events)
        decided = next(e for e in events if e.type is EventType.TOOL_RESULT)
        assert decided.data["content"] == "no answer in 0 s: chose Reject"
        assert decided.data["isError"] is True
    finally:
        await services.close()


async def test_file_access_is_confined_to_the_conversations_folder(
    services, data_dir, tmp_path
) -> None:
    folder = echo_agent(data_dir)
    first = await send(services, "hello")
    conv = first[0].data["conversationId"]
    work = workdir(folder, conv)
    (work / "notes.txt").write_text("inside")
    (tmp_path / "secret.txt").write_text("outside")
    (work / "link.txt").symlink_to(tmp_path / "secret.txt")
    inside = answer_of(await send(services, f"/read {work / 'notes.txt'}", conv))
    assert "read='inside'" in inside
    for path in ("../../config.json", str(tmp_path / "secret.txt"), str(work / "link.txt")):
        refused = answer_of(await send(services, f"/read {path}", conv))
        assert "read-refused" in refused and "outside" not in refused.split("read-refused")[0]
    assert "write=ok" in answer_of(await send(services, f"/write {work / 'new.txt'}", conv))
    assert (work / "new.txt").read_text() == "written by echo"
    escaped = answer_of(await send(services, f"/write {tmp_path / 'x.txt'}", conv))
    assert "write-refused" in escaped and not (tmp_path / "x.txt").exists()


async def test_a_link_planted_for_a_conversations_folder_is_not_followed(
    services, data_dir, tmp_path
) -> None:
    folder = echo_agent(data_dir)
    first = await send(services, "hello")
    conv = first[0].data["conversationId"]
    kill_group(pid_of(first))
    assert await wait_dead(pid_of(first))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    work = workdir(folder, conv)
    shutil.rmtree(work)
    work.symlink_to(elsewhere)  # what an agent with a shell could leave behind
    events = await send(services, "hello again", conv)
    assert result_of(events)["status"] == "failed"
    assert "reached through a symbolic link" in result_of(events)["error"]
    assert list(elsewhere.iterdir()) == []


async def test_allow_reads_refuses_writes(services, data_dir) -> None:
    echo_agent(data_dir, permissions="allow-reads")
    events = await send(services, "/write new.txt")
    assert "write-refused" in answer_of(events)


async def test_the_agent_gets_only_the_env_its_config_names(
    services, data_dir, monkeypatch
) -> None:
    monkeypatch.setenv("LUMINA_TEST_SECRET", "do-not-leak")
    echo_agent(data_dir, env={"GREETING": "hello"})
    events = await send(services, "/env LUMINA_TEST_SECRET /env GREETING")
    assert "env LUMINA_TEST_SECRET=<unset>" in answer_of(events)
    assert "env GREETING=hello" in answer_of(events)


async def test_a_chatty_stderr_does_not_hang(services, data_dir) -> None:
    echo_agent(data_dir, env={"ECHO_AGENT_NOISE": "1"})
    events = await asyncio.wait_for(send(services, "hello"), 15)
    assert result_of(events)["status"] == "complete"


async def test_the_cap_ends_the_least_recently_used_process(settings_factory, data_dir) -> None:
    echo_agent(data_dir)
    services = await open_services(settings_factory(acp_max_processes=1))
    try:
        one = await send(services, "one")
        two = await send(services, "two")
        assert await wait_dead(pid_of(one))
        assert alive(pid_of(two))
        again = await send(services, "one again", one[0].data["conversationId"])
        assert (await record_of(services, again))["mode"] == "load"
        assert "prompt 2 in session" in answer_of(again)
    finally:
        await services.close()


async def test_an_idle_process_ends_and_the_next_message_loads(settings_factory, data_dir) -> None:
    echo_agent(data_dir)
    services = await open_services(settings_factory(acp_idle_seconds=0.2))
    try:
        first = await send(services, "one")
        assert await wait_dead(pid_of(first))
        second = await send(services, "two", first[0].data["conversationId"])
        assert second[0].data["scenario"] == "resume"
        assert "prompt 2 in session" in answer_of(second)
    finally:
        await services.close()


async def test_regenerate_gives_a_fresh_session_the_history_before_the_question(
    services, data_dir
) -> None:
    folder = echo_agent(data_dir)
    first = await send(services, "one")
    conv = first[0].data["conversationId"]
    await send(services, "two", conv)
    result = await services.runs.result(await services.runs.regenerate(LOCAL, conv))
    assert result.status == "complete"
    assert "prompt 1 in session" in result.content  # a new session, not the old one
    injected = received(folder, conv)[-1]
    assert "User: one" in injected and injected.endswith("two")


async def test_shutdown_ends_the_whole_process_group(settings_factory, data_dir) -> None:
    echo_agent(data_dir)
    services = await open_services(settings_factory())
    try:
        events = await send(services, "/spawn")
        grandchild = int(answer_of(events).split("grandchild=")[1].split()[0])
        agent = pid_of(events)
        assert alive(grandchild) and alive(agent)
    finally:
        await services.close()
    assert not alive(agent)
    assert await wait_dead(grandchild)
