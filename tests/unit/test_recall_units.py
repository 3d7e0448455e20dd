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
