"""The write strategy contract (``storage.sql.write_paths``) on each database: the
strategy ``write_paths.for_database(db)`` returns — what the composition root gives the cold
store — has every public method exercised through the cold store's own calls, its effect
read back from SQL, and the statements and commits each sends counted against what the
design promises:

* PostgreSQL (``writes_pg``): a turn's accept, a new conversation's first turn, the final
  write and a proposed title as one statement each, committing itself;
* SQLite (``sqlite_raw``: "a chat turn's writes are six short statements and two
  commits"): UPDATE … RETURNING for the seq bump, one INSERT … RETURNING for a turn's rows;
* MariaDB: the seq bump needs a second statement (no UPDATE … RETURNING; ``writes``).

A method the strategy gains without a test here fails ``test_every_public_method_is_covered``;
one that never runs (the dead ``retitle`` of #44, indented after ``for_database``'s return)
fails its count."""

from __future__ import annotations

import inspect
import secrets

from lumina_app.domain import (
    ConversationInfo,
    ConversationStatus,
    MessageStatus,
    Msg,
    MsgRole,
    RunRecord,
    RunStatus,
    new_turn_id,
)
from lumina_app.storage.sql.conversation_queries import ConversationQueries
from lumina_app.storage.sql.runs import RunStore
from lumina_app.storage.sql.write_paths import (
    InlineSQLiteWrites,
    PostgresWrites,
    TransactionWrites,
)
from tests.contracts.conftest import WriteSide

# Statements sent per call, by dialect (SQLAlchemy's name: mysql is MariaDB here).
STATEMENTS = {
    # create_conversation (``transact``): the conversation's INSERT.
    "transact": {"sqlite": 1, "mysql": 1, "postgresql": 1},
    # A new conversation with its question, streaming answer and run (``start_conversation``).
    "start_conversation": {"sqlite": 3, "mysql": 3, "postgresql": 1},
    # The same without a run: PostgreSQL's transaction (conversation, rows).
    "start_conversation without a run": {"sqlite": 2, "mysql": 2, "postgresql": 2},
    # A turn's accept: seq bump, rows, run (``accept``).
    "accept": {"sqlite": 3, "mysql": 4, "postgresql": 1},
    # Rows without a run (a continued turn's): seq bump, rows.
    "accept without a run": {"sqlite": 2, "mysql": 3, "postgresql": 2},
    # The final write: answer, conversation, run (``settle``); fenced off: the answer's
    # UPDATE alone, matching nothing.
    "final write": {"sqlite": 3, "mysql": 3, "postgresql": 1},
    "fenced off": {"sqlite": 1, "mysql": 1, "postgresql": 1},
    # A tool step (``transact`` of ``settle_with_rows``): the answer, the seq bump, the
    # TOOL result and next answer rows, the run.
    "tool step": {"sqlite": 4, "mysql": 5, "postgresql": 4},
    # A plain text update of an answer (``settle`` without the settling).
    "text": {"sqlite": 1, "mysql": 1, "postgresql": 1},
    # A proposed title's compare-and-set (``retitle``), matched or not.
    "retitle": {"sqlite": 1, "mysql": 1, "postgresql": 1},
}
# PostgreSQL's one-statement writes: no transaction around them (no BEGIN, no COMMIT
# round trip), where every other write on every database is one transaction.
ONE_STATEMENT = {"start_conversation", "accept", "final write", "fenced off", "retitle"}
COVERED = {"transact", "start_conversation", "accept", "settle", "retitle"}


def record(conversation: ConversationInfo) -> RunRecord:
    return RunRecord(
        run_id="run-" + secrets.token_hex(6),
        conversation_pk=conversation.id,
        agent_id=conversation.agent_id,
        owner=conversation.owner,
        scenario="new",
        provider="test",
        model="m",
    )


def turn(question: str) -> list[Msg]:
    turn_id = new_turn_id()
    return [
        Msg.user(question, turn_id=turn_id),
        Msg.assistant("", turn_id=turn_id, status=MessageStatus.STREAMING),
    ]


def check(sent, operation: str, backend: str) -> None:
    assert len(sent.statements) == STATEMENTS[operation][backend], "\n".join(sent.statements)
    alone = backend == "postgresql" and operation in ONE_STATEMENT
    assert (sent.begins, sent.commits) == (0 if alone else 1, 1), operation


async def started(side: WriteSide) -> tuple[ConversationInfo, list[Msg], RunRecord]:
    conversation = ConversationInfo.new(agent_id="a", title="first words", owner="o")
    msgs, run = turn("q1"), record(conversation)
    await side.store.start_conversation(
        conversation, msgs, status=ConversationStatus.RUNNING, run=run
    )
    return conversation, msgs, run


def test_every_public_method_is_covered() -> None:
    """The strategies' public methods are the ones this suite exercises."""
    for strategy in (TransactionWrites, InlineSQLiteWrites, PostgresWrites):
        public = {n for n, m in inspect.getmembers(strategy) if callable(m) and n[0] != "_"}
        assert public == COVERED, strategy.__name__


async def test_the_app_gets_its_databases_strategy(write_side: WriteSide) -> None:
    expected = {"sqlite": InlineSQLiteWrites, "postgresql": PostgresWrites}
    assert type(write_side.strategy) is expected.get(write_side.backend, TransactionWrites)
    assert write_side.store.write_path is write_side.strategy


async def test_transact_runs_one_transaction(write_side: WriteSide) -> None:
    store = write_side.store
    with write_side.counting() as sent:
        made = await store.create_conversation(agent_id="a", title="t", owner="o")
    check(sent, "transact", write_side.backend)
    stored = await ConversationQueries(store.db).get_conversation(made.uuid)
    assert (stored.id, stored.title, stored.owner, stored.last_seq) == (made.id, "t", "o", 0)


async def test_start_conversation_stores_a_conversation_its_first_turn_and_its_run(
    write_side,
) -> None:
    store = write_side.store
    with write_side.counting() as sent:
        conversation, (question, answer), run = await started(write_side)
    check(sent, "start_conversation", write_side.backend)
    stored = await ConversationQueries(store.db).get_conversation(conversation.uuid)
    assert stored.id == conversation.id and (stored.last_seq, stored.message_count) == (2, 2)
    assert stored.status == ConversationStatus.RUNNING
    assert (question.seq, answer.seq) == (1, 2)
    assert (await ConversationQueries(store.db).get_message(question.id)).content == "q1"
    assert (
        await ConversationQueries(store.db).get_message(answer.id)
    ).status == MessageStatus.STREAMING
    kept = await RunStore(write_side.db).get_run(run.run_id)
    assert (kept.conversation_pk, kept.user_message_id, kept.assistant_message_id) == (
        conversation.id,
        question.id,
        answer.id,
    )
    assert kept.status == RunStatus.RUNNING


async def test_start_conversation_without_a_run_stores_the_rows(write_side) -> None:
    store = write_side.store
    conversation = ConversationInfo.new(agent_id="a", owner="o")
    msgs = [Msg.user("imported q", turn_id="t"), Msg.assistant("imported a", turn_id="t")]
    with write_side.counting() as sent:
        await store.start_conversation(conversation, msgs)
    check(sent, "start_conversation without a run", write_side.backend)
    assert [m.content for m in await store.last_messages(conversation.id, 10)] == [
        "imported q",
        "imported a",
    ]


async def test_accept_takes_the_next_seqs_and_points_the_run_at_them(write_side) -> None:
    store = write_side.store
    conversation, _, _ = await started(write_side)
    question, answer = turn("q2")
    run = record(conversation)
    with write_side.counting() as sent:
        await store.append_messages(
            conversation.id, [question, answer], status=ConversationStatus.RUNNING, run=run
        )
    check(sent, "accept", write_side.backend)
    assert (question.seq, answer.seq) == (3, 4)
    stored = await ConversationQueries(store.db).get_conversation(conversation.uuid)
    assert (stored.last_seq, stored.message_count) == (4, 4)
    assert (await ConversationQueries(store.db).get_message(question.id)).content == "q2"
    kept = await RunStore(write_side.db).get_run(run.run_id)
    assert (kept.user_message_id, kept.assistant_message_id) == (question.id, answer.id)


async def test_accept_without_a_run_appends_the_rows(write_side) -> None:
    store = write_side.store
    conversation, _, _ = await started(write_side)
    rows = [Msg.user("more", turn_id="t2"), Msg.assistant("said", turn_id="t2")]
    with write_side.counting() as sent:
        await store.append_messages(conversation.id, rows)
    check(sent, "accept without a run", write_side.backend)
    assert [m.seq for m in rows] == [3, 4]
    assert (await ConversationQueries(store.db).get_conversation(conversation.uuid)).last_seq == 4


async def test_the_final_write_settles_answer_conversation_and_run_once(write_side) -> None:
    store = write_side.store
    conversation, (_, answer), run = await started(write_side)
    run.status = RunStatus.COMPLETE

    async def final(text: str) -> bool:
        return await store.update_message(
            answer.id,
            content=text,
            status=MessageStatus.COMPLETE,
            meta={"usage": {"out": 3}},
            conversation_pk=conversation.id,
            conversation_status=ConversationStatus.COMPLETED,
            run=run,
            only_streaming=True,
        )

    with write_side.counting() as sent:
        assert await final("the answer")
    check(sent, "final write", write_side.backend)
    stored = await ConversationQueries(store.db).get_message(answer.id)
    assert (stored.content, stored.status) == ("the answer", MessageStatus.COMPLETE)
    assert stored.meta == {"usage": {"out": 3}}
    assert (await ConversationQueries(store.db).get_conversation(conversation.uuid)).status == (
        ConversationStatus.COMPLETED
    )
    kept = await RunStore(write_side.db).get_run(run.run_id)
    assert kept.status == RunStatus.COMPLETE and kept.finished_at is not None

    with write_side.counting() as sent:
        assert not await final("too late")  # the answer is closed: fenced off
    check(sent, "fenced off", write_side.backend)
    assert (await ConversationQueries(store.db).get_message(answer.id)).content == "the answer"


async def test_a_tool_step_settles_the_answer_and_adds_the_rows_after_it(write_side) -> None:
    store = write_side.store
    conversation, (_, answer), run = await started(write_side)
    answer.content, answer.status = "calling", MessageStatus.COMPLETE
    rows = [
        Msg(MsgRole.TOOL, "42", turn_id=answer.turn_id),
        Msg.assistant("", turn_id=answer.turn_id, status=MessageStatus.STREAMING),
    ]
    with write_side.counting() as sent:
        assert await store.settle_with_rows(conversation.id, answer, rows, run=run)
    check(sent, "tool step", write_side.backend)
    assert [m.seq for m in rows] == [3, 4]
    assert (await ConversationQueries(store.db).get_message(answer.id)).content == "calling"
    assert (await ConversationQueries(store.db).get_message(rows[0].id)).content == "42"
    stored = await ConversationQueries(store.db).get_conversation(conversation.uuid)
    assert (stored.last_seq, stored.tool_call_count) == (4, 1)
    kept = await RunStore(write_side.db).get_run(run.run_id)
    assert kept.assistant_message_id == rows[1].id
    with write_side.counting() as sent:  # the answer is closed now: fenced off
        assert not await store.settle_with_rows(conversation.id, answer, [], run=run)
    # The answer's UPDATE alone, in a transaction on every database.
    assert (len(sent.statements), sent.begins, sent.commits) == (1, 1, 1), sent.statements
    assert (await ConversationQueries(store.db).get_conversation(conversation.uuid)).last_seq == 4


async def test_an_answers_text_is_updated_alone(write_side) -> None:
    store = write_side.store
    _, (_, answer), _ = await started(write_side)
    with write_side.counting() as sent:
        assert await store.update_message(answer.id, content="so far")
    check(sent, "text", write_side.backend)
    stored = await ConversationQueries(store.db).get_message(answer.id)
    assert (stored.content, stored.status) == ("so far", MessageStatus.STREAMING)


async def test_retitle_compares_and_sets(write_side) -> None:
    store = write_side.store
    conversation, _, _ = await started(write_side)
    before = await ConversationQueries(store.db).get_conversation(conversation.uuid)
    for title, replacing, stored in [
        ("Proposed", "first words", True),
        ("Late", "first words", False),  # the title changed meanwhile
    ]:
        with write_side.counting() as sent:
            assert await store.retitle(conversation.uuid, title, replacing=replacing) is stored
        check(sent, "retitle", write_side.backend)
    unknown = "00000000-0000-4000-8000-000000000000"
    assert not await store.retitle(unknown, "x", replacing="first words")
    after = await ConversationQueries(store.db).get_conversation(conversation.uuid)
    assert after.title == "Proposed"
    assert after.updated_at == before.updated_at  # its place in lists kept


async def test_without_the_fast_lanes_internals_the_writes_land_the_same(
    write_side: WriteSide, monkeypatch
) -> None:
    """An untested SQLAlchemy (``platform/sqlalchemy_private``): nothing is compiled for the
    cursor, every statement goes through SQLAlchemy, and a turn writes what it wrote."""
    from lumina_app.platform import sqlalchemy_private
    from lumina_app.storage.sql import pg_raw, sqlite_raw

    monkeypatch.setattr(sqlalchemy_private, "AVAILABLE", False)
    monkeypatch.setattr(sqlite_raw, "_PLANS", {})
    plans: list[object] = []
    for lane in (sqlite_raw, pg_raw):
        monkeypatch.setattr(lane, "_compile", _recording(lane._compile, plans))
    store = write_side.store
    conversation, _, _ = await started(write_side)
    question, answer = turn("q2")
    with write_side.counting() as sent:
        await store.append_messages(
            conversation.id, [question, answer], status=ConversationStatus.RUNNING
        )
    assert len(sent.statements) == STATEMENTS["accept without a run"][write_side.backend]
    assert (question.seq, answer.seq) == (3, 4)
    assert (await ConversationQueries(store.db).get_message(question.id)).content == "q2"
    assert (await ConversationQueries(store.db).get_conversation(conversation.uuid)).last_seq == 4
    lanes = {"sqlite": 1, "postgresql": 1}.get(write_side.backend, 0)  # MariaDB has none
    assert len(plans) >= lanes and set(plans) <= {None}, plans


def _recording(compile_plan, plans: list[object]):
    def recorded(*args, **kwargs):
        plans.append(plan := compile_plan(*args, **kwargs))
        return plan

    return recorded
