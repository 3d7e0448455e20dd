"""Answer flushes of several runs arriving together share one transaction; each caller
still gets its own fenced outcome, and a failure reaches every caller."""

import asyncio

import pytest
import sqlalchemy as sa

from lumina_app.domain import MessageStatus, Msg, StoreUnavailable, new_turn_id
from lumina_app.storage.sql.cold_store import SQLColdStore
from lumina_app.storage.sql.conversation_queries import ConversationQueries
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.flush_batch import FlushBatch


async def _streaming_answers(store: SQLColdStore, n: int) -> list[Msg]:
    conv = await store.create_conversation(agent_id="assistant")
    answers = []
    for _ in range(n):
        turn = new_turn_id()
        answer = Msg.assistant("", turn_id=turn, status=MessageStatus.STREAMING)
        _, saved = await store.append_messages(conv.id, [Msg.user("q", turn_id=turn), answer])
        answers.append(saved)
    return answers


async def test_flushes_of_the_same_moment_share_a_transaction(engine) -> None:
    store = SQLColdStore(SQLDatabase(engine), flush_window=0.02)
    answers = await _streaming_answers(store, 5)
    closed = answers[4]
    await store.update_message(closed.id, content="final", status=MessageStatus.COMPLETE)
    commits: list[int] = []
    for sync_engine in store.db.engines:
        sa.event.listen(sync_engine, "commit", lambda _c: commits.append(1))
    outcomes = await asyncio.gather(
        *(store.flush_answer(a.id, f"partial {i}") for i, a in enumerate(answers)),
        store.flush_answer(answers[0].id, "partial 0, later"),  # replaces the waiting one
    )
    assert outcomes == [True, True, True, True, False, True]  # the closed one is fenced
    assert len(commits) == 1
    texts = [(await ConversationQueries(store.db).get_message(a.id)).content for a in answers]
    assert texts == ["partial 0, later", "partial 1", "partial 2", "partial 3", "final"]
    await store.db.close()


async def test_a_failed_batch_fails_every_caller() -> None:
    async def broken(_flushes):
        raise StoreUnavailable("database unavailable: gone")

    batch = FlushBatch(broken, window=0.01)
    results = await asyncio.gather(batch.write(1, "a"), batch.write(2, "b"), return_exceptions=True)
    assert all(isinstance(r, StoreUnavailable) for r in results)
    later = FlushBatch(broken, window=0.01)
    with pytest.raises(StoreUnavailable):
        await later.write(3, "c")


async def test_a_flush_still_in_the_window_is_withdrawn_for_the_final_write(engine) -> None:
    """The final write stores the whole answer: it does not wait out the group commit's
    window for a flush of the same answer, which is dropped (never sent); other answers'
    flushes of that window are committed when it closes, as before."""
    store = SQLColdStore(SQLDatabase(engine), flush_window=1.0)
    mine, other = await _streaming_answers(store, 2)
    sent: list[object] = []
    for sync_engine in store.db.engines:
        sa.event.listen(sync_engine, "before_cursor_execute", lambda *a: sent.append(a[3]))
    flushing = asyncio.ensure_future(store.flush_answer(mine.id, "partial"))
    theirs = asyncio.ensure_future(store.flush_answer(other.id, "theirs"))
    await asyncio.sleep(0)  # both wait in the window
    store.withdraw_flush(mine.id)
    assert await asyncio.wait_for(flushing, 0.5) is True  # at once, not when the window ends
    await store.update_message(mine.id, content="partial, then all", status=MessageStatus.COMPLETE)
    assert not theirs.done()
    assert await theirs is True
    assert (await ConversationQueries(store.db).get_message(mine.id)).content == "partial, then all"
    assert (await ConversationQueries(store.db).get_message(other.id)).content == "theirs"
    assert "'partial'" not in repr(sent) and "'theirs'" in repr(sent)
    await store.db.close()


async def test_a_window_left_empty_by_withdrawals_sends_nothing() -> None:
    sent: list[list] = []

    async def transact(flushes):
        sent.append(list(flushes))
        return [True] * len(flushes)

    batch = FlushBatch(transact, window=0.01)
    first = asyncio.ensure_future(batch.write(7, "a"))
    again = asyncio.ensure_future(batch.write(7, "ab"))  # replaces the waiting one
    await asyncio.sleep(0)
    batch.withdraw(7)
    batch.withdraw(8)  # nothing of it waits: nothing happens
    assert await first is True and await again is True
    await asyncio.sleep(0.05)
    assert sent == []
    assert await batch.write(9, "c") is True  # the next window commits as before
    assert sent == [[{"_mid": 9, "content": "c", "updated_at": sent[0][0]["updated_at"]}]]
