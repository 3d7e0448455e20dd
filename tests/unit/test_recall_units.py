"""Recall's parts without a server: words, BM25, the embedded model offline, and the
``openai`` embedder against a local fake /v1/embeddings server."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from lumina_app.recall import embedders, text
from lumina_app.recall.embedders import EmbeddingError, LocalEmbedder, OpenAIEmbedder
from lumina_app.recall.lexical import Bm25
from tests.fake_llm import FakeLLM

pytestmark = pytest.mark.unit


def test_questions_lose_stopwords_and_meet_their_stems() -> None:
    assert text.query_terms("When did Caroline go to the support groups?") == [
        "carolin", "go", "support", "group",
    ]  # fmt: skip
    assert text.terms("She supported the group") == ["support", "group"]
    assert text.query_terms("who is it") == ["who", "is", "it"]  # stopwords only: kept


def test_bm25_ranks_the_rarer_match_first_and_needs_no_every_word() -> None:
    docs = [text.terms(d) for d in ("a dog and a cat", "the dog barked", "a cat slept", "rain")]
    scores = Bm25(docs).scores(text.query_terms("Which cats and dogs slept?"))
    assert scores[3] == 0 and scores[2] > scores[1] > 0 and scores[0] > scores[1]


def test_the_embedded_model_loads_from_its_wheel_with_no_network(monkeypatch) -> None:
    def unplugged(*args, **kwargs):
        raise OSError("network unplugged in this test")

    monkeypatch.setattr(socket.socket, "connect", unplugged)
    monkeypatch.setattr(socket, "getaddrinfo", unplugged)
    embedders._wordllama.cache_clear()
    model = LocalEmbedder()
    vectors = model.embed_now(["my sister moves to Lisbon", "siblings abroad", "tax forms"])
    assert vectors.shape == (3, 256)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert vectors[0] @ vectors[1] > model.min_similarity > vectors[0] @ vectors[2]


def _malloc_in_use() -> int:
    """Bytes glibc's malloc has handed out: what native code (a tokenizer) holds too."""
    import ctypes

    class Info(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost")]  # fmt: skip

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = Info
    info = libc.mallinfo2()
    return info.uordblks + info.hblkhd


def test_embedding_many_different_short_messages_holds_no_memory() -> None:
    """The tokenizer has no pre-tokenizer, so a short message is one BPE word; its cache
    kept ~3.7 KB for each of the first 10,000 per thread, never hit again (a chat rarely
    repeats itself). The cache is off: 3,000 different messages leave nothing behind, and
    the vectors are the ones the cache gave."""
    model = LocalEmbedder()
    texts = [f"Tell me about keeping services healthy, part {i}." for i in range(3_000)]
    first = model.embed_now(texts[:100])
    before = _malloc_in_use()
    for start in range(0, len(texts), 50):
        model.embed_now(texts[start : start + 50])
    grown = _malloc_in_use() - before
    assert grown < 2_000_000, f"{grown / 1e6:.1f} MB held after 3,000 messages"
    cached = embedders._wordllama().tokenizer
    cached.model._resize_cache(10_000)  # as the package ships it
    try:
        assert np.array_equal(model.embed_now(texts[:100]), first)
    finally:
        cached.model._resize_cache(0)


async def test_the_openai_embedder_calls_a_v1_embeddings_server() -> None:
    with FakeLLM() as fake:
        embedder = OpenAIEmbedder(fake.base_url, "fake-embed", api_key="k", timeout=5)
        try:
            vectors = await embedder.embed(["red apple", "red apple pie", "blue sky"])
        finally:
            await embedder.close()
    assert fake.embedding_requests == [
        {"model": "fake-embed", "input": ["red apple", "red apple pie", "blue sky"]}
    ]
    assert vectors.shape == (3, 16) and embedder.name == "openai:fake-embed"
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


async def test_an_unreachable_embeddings_server_is_an_embedding_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    embedder = OpenAIEmbedder(f"http://127.0.0.1:{port}/v1", "m", timeout=2)
    try:
        with pytest.raises(EmbeddingError):
            await embedder.embed(["x"])
    finally:
        await embedder.close()


async def test_auto_recall_keeps_to_its_token_budget_and_skips_a_whole_window() -> None:
    from datetime import UTC, datetime

    from lumina_app.agents.definitions.memory_config import AutoRecallConfig
    from lumina_app.agents.tools.auto_recall import recall_earlier, recalled_message
    from lumina_app.domain import ConversationInfo, MsgRole
    from lumina_app.recall.retriever import Recalled

    when = datetime(2026, 5, 8, 13, 56, tzinfo=UTC)
    hits = [Recalled(i, 1, seq, MsgRole.USER, "word " * 40, when, 1.0) for i, seq in
            enumerate((7, 3, 5))]  # fmt: skip

    class Found:
        async def in_conversation(
            self, conversation_id, query, *, limit, exclude_seqs, before_seq=None
        ):
            assert exclude_seqs == {10, 11}
            return hits[:limit]

    conversation = ConversationInfo.new(agent_id="a", title="t")
    conversation.last_seq = 11
    budget = AutoRecallConfig(limit=5, tokens=130)  # room for two of the ~58-token lines
    kept = await recall_earlier(Found(), conversation, "q", budget, in_window={10, 11})
    assert [h.seq for h in kept.here] == [7, 3] and not kept.elsewhere
    text = recalled_message(kept.here)
    assert text.startswith("Earlier in this conversation:\n[#3 2026-05-08 13:56 user] word")
    assert text.index("[#3 ") < text.index("[#7 ")  # in the order they were said
    assert not await recall_earlier(Found(), conversation, "q", budget, in_window={1, 2})


def test_auto_recall_settings_are_checked() -> None:
    from lumina_app.agents.definitions.memory_config import AutoRecallConfig, parse_memory

    def parsed(block):
        return parse_memory({"memory": {"autoRecall": block}}, None)

    assert parsed({"limit": 3, "tokens": 500}).auto_recall == AutoRecallConfig(3, 500)
    assert parsed(True).auto_recall == AutoRecallConfig(5, 1000)
    assert parsed(False).auto_recall is None
    for bad in ({"limit": 0}, {"tokens": 10}, {"limit": "5"}, {"when": 1}, [5], {"limit": True}):
        assert "memory.autoRecall" in parsed(bad), bad


def test_bm25_for_one_query_scores_as_the_full_index_does() -> None:
    from lumina_app.recall.lexical import Bm25

    docs = [["printer", "jam", "printer"], ["ticket", "zebra"], [], ["printer", "ticket"]]
    for query in (["printer"], ["ticket", "printer", "absent"], ["absent"]):
        assert Bm25(docs, only=query).scores(query).tolist() == Bm25(docs).scores(query).tolist()


def test_the_likeliest_candidates_favour_rarer_words_and_several_words() -> None:
    from lumina_app.recall.retriever import _likeliest

    frequent = [10, 9, 8, 7, 6, 5]  # a full window: each match weighs 1/6
    rare = [3, 8]  # every match of a rarer word: 1/2 each
    assert _likeliest([frequent, rare], 3) == [8, 3, 10]  # both words, the rare one, newest
    assert _likeliest([[], []], 3) == []


def test_stems_from_the_table_equal_the_stemmers() -> None:
    from lumina_app.recall import text

    words = ["running", "runs", "ran", "happiness", "happily", "groups", "supported"]
    first = text.terms(" ".join(words))
    text._STEMS.clear()
    assert first == text.terms(" ".join(words)) == text._stemmer().stemWords(words)


def test_an_index_rebuilt_from_an_earlier_one_ranks_as_one_built_afresh() -> None:
    """A turn rebuilds its conversation's index reusing the earlier index's terms: the
    result ranks exactly as a fresh build, an edited row's new words included."""
    from datetime import UTC, datetime

    from lumina_app.domain import MsgRole
    from lumina_app.recall.retriever import UnitIndex, Units
    from lumina_app.storage.sql.recall_rows import RecallRow

    def row(i: int, content: str) -> RecallRow:
        role = MsgRole.USER if i % 2 else MsgRole.ASSISTANT
        return RecallRow(i, 1, i, role, content, datetime(2026, 12, i, tzinfo=UTC), None)

    said = ["my sister moves to Lisbon", "how nice", "the budget review is Friday", "ok"]
    earlier = UnitIndex([row(i + 1, t) for i, t in enumerate(said)], Units())
    now = [row(i + 1, t) for i, t in enumerate(said)]
    now[1] = row(2, "how nice, Lisbon in spring")  # an edited row keeps its id
    now.append(row(5, "a parents support group on Tuesday"))
    reused = UnitIndex(now, Units(), reuse=earlier)
    fresh = UnitIndex(now, Units())
    assert reused.own_terms == fresh.own_terms and "spring" in reused.own_terms[1]
    everything = np.ones(len(now), dtype=bool)
    for query in ("when is the budget review", "Lisbon in spring", "support group Tuesday"):
        assert reused.ranked(query, None, (1.0, 0.0), everything) == fresh.ranked(
            query, None, (1.0, 0.0), everything
        )


def test_an_index_extended_by_a_turn_scores_exactly_as_a_fresh_build(monkeypatch) -> None:
    """A turn appends rows to a conversation of thousands: the earlier index's leading
    documents and vectors are taken as they are and only the new rows are added. Whatever
    changed — rows added, the last rows replaced (a regenerated answer), a row edited in
    the middle, a date moved, vectors embedded, one of another size — the scores and the
    vector matrix equal a fresh build's, to the bit."""
    import dataclasses
    import random
    from datetime import UTC, datetime, timedelta

    from lumina_app.domain import MsgRole
    from lumina_app.recall.retriever import UnitIndex, Units
    from lumina_app.storage.sql.recall_rows import RecallRow

    rng = random.Random(5)
    vocabulary = [
        "heron",
        "lake",
        "blue",
        "grey",
        "nest",
        "river",
        "budget",
        "review",
        "lisbon",
        "sister",
        "spring",
    ]
    start = datetime(2026, 11, 1, tzinfo=UTC)

    def row(i: int, content: str, day: int = 0) -> RecallRow:
        role = MsgRole.USER if i % 2 else MsgRole.ASSISTANT
        return RecallRow(i, 1, i, role, content, start + timedelta(days=day or i // 7), None)

    def vector(size: int = 4) -> bytes:
        return np.array([rng.random() for _ in range(size)], dtype=np.float16).tobytes()

    def said() -> str:
        return " ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 6)))

    def embedded(rows: list, size: int = 4) -> list:
        return [r if r.vector or rng.random() < 0.3 else dataclasses.replace(r, vector=vector(size))
                for r in rows]  # fmt: skip

    rows = embedded([row(i, said()) for i in range(1, 40)])
    index = UnitIndex(rows, Units())
    queries = ["blue heron", "budget review in lisbon", "river", "december 2027", "absent words"]
    for step in range(80):
        change = 6 if step == 78 else step % 8
        if change in (0, 5):  # a turn: two rows appended
            rows = [*rows, row(len(rows) + 1, said()), row(len(rows) + 2, said())]
        elif change == 1:  # the last answer replaced by a new one (a new id)
            rows = [*rows[:-1], row(1000 + step, said())]
        elif change == 2:  # a row in the middle edited
            at = rng.randrange(len(rows))
            rows = [*rows[:at], row(rows[at].message_id, said()), *rows[at + 1 :]]
        elif change == 3:  # the last rows gone (deleted)
            rows = rows[: -rng.randint(1, 3)]
        elif change == 4:  # nothing changed but a date
            at = rng.randrange(len(rows))
            rows = [*rows[:at], row(rows[at].message_id, rows[at].content, 400), *rows[at + 1 :]]
        elif change == 6:  # vectors embedded since, now and then one of another model's size
            rows = embedded(rows, size=8 if step == 78 else 4)
        else:  # a vector replaced
            at = rng.randrange(len(rows))
            rows = [*rows[:at], dataclasses.replace(rows[at], vector=vector()), *rows[at + 1 :]]
        extended, fresh = UnitIndex(rows, Units(), reuse=index), UnitIndex(rows, Units())
        assert extended.own_terms == fresh.own_terms
        for query in queries:
            terms = text.query_terms(query)
            assert extended.bm25.scores(terms).tobytes() == fresh.bm25.scores(terms).tobytes()
        assert extended.vector_rows.tolist() == fresh.vector_rows.tolist()
        assert (extended.vectors is None) == (fresh.vectors is None)
        if fresh.vectors is not None:
            assert extended.vectors.tobytes() == fresh.vectors.tobytes()
        index = extended
    four = len(vector())  # bytes
    rows = [r if not r.vector or len(r.vector) == four else dataclasses.replace(r, vector=vector())
            for r in rows]  # fmt: skip
    index = UnitIndex(rows, Units())  # vectors of one size
    stacked = []
    monkeypatch.setattr(UnitIndex, "_stack_vectors", lambda self: stacked.append(self))
    new = dataclasses.replace(row(5000, "heron"), vector=vector())
    appended = UnitIndex([*rows, new], Units(), reuse=index)
    assert not stacked and len(appended.vector_rows) == len(index.vector_rows) + 1
    added = {"heron", *text.date_terms(new.created_at), *index.own_terms[-1]}  # its unit
    kept = [t for t in index.bm25._postings if t not in added]
    assert kept and all(appended.bm25._postings[t] is index.bm25._postings[t] for t in kept)
