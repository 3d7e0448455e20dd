"""Malformed archives: a clear error naming the file, and nothing half-imported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lumina_app.domain import ConversationNotFound, ImportOutcome
from lumina_app.storage.sql import archive_rows as archive_sql

GOOD_META = {
    "conversationId": "conv-good0001",
    "agentId": "demo",
    "title": "good",
    "createdAt": "2026-03-23T10:00:00.000Z",
    "updatedAt": "2026-03-23T10:00:05.000Z",
    "status": "completed",
    "stats": {"messageCount": 2, "toolCallCount": 0},
}
GOOD_HISTORY = [
    {"role": "user", "content": "q", "messageId": "msg-a", "timestamp": "2026-03-23T10:00:01Z"},
    {
        "role": "assistant",
        "content": "a",
        "messageId": "msg-a",
        "timestamp": "2026-03-23T10:00:05Z",
    },
]


def write_conversation(root: Path, conv_id: str, meta: object, history: object) -> Path:
    folder = root / "agents" / "demo" / "conversations" / conv_id
    folder.mkdir(parents=True)
    for name, value in (("meta.json", meta), ("history.json", history)):
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _bad_entry(**changes: object) -> list[dict]:
    entry = dict(GOOD_HISTORY[1], **changes)
    return [GOOD_HISTORY[0], {k: v for k, v in entry.items() if v is not ...}]


CASES = {
    "history is not JSON": ({}, '[{"role": "user",', "history.json", "invalid JSON"),
    "meta is not JSON": ("{oops", GOOD_HISTORY, "meta.json", "invalid JSON: Expecting"),
    "history is an object": ({}, {"role": "user"}, "history.json", "expected a JSON array"),
    "entry is a string": ({}, [GOOD_HISTORY[0], "hi"], "history.json", "entry 1: expected an"),
    "content missing": ({}, _bad_entry(content=...), "history.json", "entry 1: 'content' is"),
    "role missing": ({}, _bad_entry(role=...), "history.json", "entry 1: 'role' is missing"),
    "role unknown": ({}, _bad_entry(role="robot"), "history.json", "'role' must be one of"),
    "role a number": ({}, _bad_entry(role=1), "history.json", "'role' must be a string"),
    "content a list": ({}, _bad_entry(content=["a"]), "history.json", "got an array"),
    "bad timestamp": ({}, _bad_entry(timestamp="yesterday"), "history.json", "not an ISO"),
    "messageId a number": ({}, _bad_entry(messageId=7), "history.json", "'messageId' must be"),
    "NUL in content": ({}, _bad_entry(content="a\x00b"), "history.json", "NUL"),
    "status unknown": ({"status": "paused"}, GOOD_HISTORY, "meta.json", "'status' must be"),
    "title a number": ({"title": 5}, GOOD_HISTORY, "meta.json", "'title' must be a string"),
    "stats a list": ({"stats": []}, GOOD_HISTORY, "meta.json", "'stats' must be an object"),
    "negative tool calls": (
        {"stats": {"toolCallCount": -1}},
        GOOD_HISTORY,
        "meta.json",
        "non-negative integer",
    ),
    "id too long": ({"conversationId": "c" * 37}, GOOD_HISTORY, "meta.json", "1-36"),
    "createdAt garbage": ({"createdAt": "soon"}, GOOD_HISTORY, "meta.json", "'createdAt' is"),
    "message status unknown": (
        {},
        _bad_entry(status="streaming"),
        "history.json",
        "entry 1: 'status' must be one of complete, superseded",
    ),
    "toolCalls not a list": (
        {},
        _bad_entry(toolCalls={"id": "c"}),
        "history.json",
        "'toolCalls' must be a list of 1 to 128 calls",
    ),
    "toolCalls without a name": (
        {},
        _bad_entry(toolCalls=[{"id": "c", "arguments": "{}"}]),
        "history.json",
        "entry 1: toolCalls[0]: 'name' is missing",
    ),
    "tool isError a string": (
        {},
        [GOOD_HISTORY[0], {"role": "tool", "content": "42", "isError": "no"}],
        "history.json",
        "'isError' must be true or false",
    ),
    "tool durationMs negative": (
        {},
        [GOOD_HISTORY[0], {"role": "tool", "content": "42", "durationMs": -3}],
        "history.json",
        "'durationMs' must be a non-negative integer",
    ),
    "forkedFrom a string": ({"forkedFrom": "x"}, GOOD_HISTORY, "meta.json", "'forkedFrom' must"),
    "forkedFrom bad id": (
        {"forkedFrom": {"conversationId": "../x", "atSeq": 1}},
        GOOD_HISTORY,
        "meta.json",
        "forkedFrom.'conversationId' must be a conversation id",
    ),
    "forkedFrom bad seq": (
        {"forkedFrom": {"conversationId": "conv-a", "atSeq": -1}},
        GOOD_HISTORY,
        "meta.json",
        "forkedFrom.'atSeq' must be a whole number",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_a_malformed_file_is_named_and_the_others_still_import(
    sqlite_archive, tmp_path: Path, case: str
) -> None:
    meta_change, history, bad_file, message = CASES[case]
    meta = meta_change if isinstance(meta_change, str) else {**GOOD_META, **meta_change}
    if isinstance(meta, dict):
        meta["conversationId"] = meta_change.get("conversationId", "conv-bad00001")
    write_conversation(tmp_path, "conv-bad00001", meta, history)
    write_conversation(tmp_path, "conv-good0001", GOOD_META, GOOD_HISTORY)

    report = await sqlite_archive.import_path(tmp_path)
    (error,) = report.errors
    folder = tmp_path / "agents" / "demo" / "conversations" / "conv-bad00001"
    assert error.startswith(f"{folder / bad_file}: "), error
    assert message in error, error
    assert report.count(ImportOutcome.CREATED) == 1  # the good one
    with pytest.raises(ConversationNotFound):
        await sqlite_archive.memory.queries.get_conversation("conv-bad00001")
    conversations, _ = await sqlite_archive.memory.queries.list_conversations(limit=10)
    assert [c.uuid for c in conversations] == ["conv-good0001"]


async def test_a_missing_history_file_is_an_error(sqlite_archive, tmp_path: Path) -> None:
    folder = write_conversation(tmp_path, "conv-nohist01", GOOD_META, GOOD_HISTORY)
    (folder / "history.json").unlink()
    (error,) = (await sqlite_archive.import_path(tmp_path)).errors
    assert error == f"{folder / 'history.json'}: file is missing"


async def test_not_an_archive(sqlite_archive, tmp_path: Path) -> None:
    (error,) = (await sqlite_archive.import_path(tmp_path / "nowhere")).errors
    assert "no such file or directory" in error
    (tmp_path / "empty").mkdir()
    (error,) = (await sqlite_archive.import_path(tmp_path / "empty")).errors
    assert "no archive here" in error


async def test_a_failure_inside_the_transaction_leaves_nothing(
    sqlite_archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The conversation row is inserted before its messages: both or neither."""
    write_conversation(tmp_path, "conv-good0001", GOOD_META, GOOD_HISTORY)

    async def broken_insert(*args: object, **kwargs: object) -> None:
        raise RuntimeError("connection lost mid-import")

    monkeypatch.setattr(archive_sql, "_insert_messages", broken_insert)
    with pytest.raises(RuntimeError):
        await sqlite_archive.import_path(tmp_path)
    with pytest.raises(ConversationNotFound):
        await sqlite_archive.memory.queries.get_conversation("conv-good0001")


async def test_a_superseded_answer_stays_out_of_contexts(sqlite_archive, tmp_path: Path) -> None:
    """An export marks an answer a regenerated one replaced; the import keeps it so."""
    history = [*GOOD_HISTORY, dict(GOOD_HISTORY[1], content="better")]
    history[1] = dict(history[1], status="superseded")
    write_conversation(tmp_path, "conv-good0001", GOOD_META, history)
    assert (await sqlite_archive.import_path(tmp_path)).count(ImportOutcome.CREATED) == 1
    memory = sqlite_archive.memory
    conversation = await memory.queries.get_conversation("conv-good0001")
    window = await memory.load(conversation)
    assert [(m.content, m.status.value) for m in window] == [
        ("q", "complete"),
        ("better", "complete"),
    ]
    stored = await memory.queries.page_messages(conversation.id)
    assert [m.status.value for m in stored] == ["complete", "superseded", "complete"]
    document = await sqlite_archive.document(conversation)
    assert [e.get("status") for e in document["history"]] == [None, "superseded", None]


async def test_tool_calls_survive_the_archive_and_still_pair(sqlite_archive, tmp_path) -> None:
    """An exported tool turn imports with its calls and results, so a later context sends
    them together (not the answer's text alone, as when the pairing is lost)."""
    call = {"id": "call_a", "name": "calculator", "arguments": '{"expression": "6 * 7"}'}
    history = [
        GOOD_HISTORY[0],
        dict(GOOD_HISTORY[1], content="Let me see.", toolCalls=[call]),
        {
            "role": "tool",
            "content": "42",
            "messageId": "msg-a",
            "toolCallId": "call_a",
            "name": "calculator",
            "isError": False,
            "durationMs": 3,
        },
        dict(GOOD_HISTORY[1], content="It is 42."),
    ]
    write_conversation(tmp_path, "conv-good0001", GOOD_META, history)
    assert (await sqlite_archive.import_path(tmp_path)).count(ImportOutcome.CREATED) == 1
    memory = sqlite_archive.memory
    conversation = await memory.queries.get_conversation("conv-good0001")
    window = await memory.load(conversation)
    assert [(m.role.value, m.tool_calls, m.tool_call_id) for m in window] == [
        ("USER", [], None),
        ("ASSISTANT", [call], None),
        ("TOOL", [], "call_a"),
        ("ASSISTANT", [], None),
    ]
    document = await sqlite_archive.document(conversation)
    assert document["history"][1]["toolCalls"] == [call]
    assert {k: document["history"][2][k] for k in ("toolCallId", "name", "isError")} == {
        "toolCallId": "call_a",
        "name": "calculator",
        "isError": False,
    }
    assert document["history"][2]["durationMs"] == 3
