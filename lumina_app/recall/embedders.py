"""Embedders: text → unit vectors. ``local`` is a static model whose weights ship inside
the ``wordllama`` wheel (read from the package's own files, never fetched); ``openai``
calls any OpenAI-compatible ``/v1/embeddings`` server (Ollama, vLLM, llama.cpp, TEI)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import httpx
import numpy as np

from lumina_app.platform import tokenizers_private

log = logging.getLogger(__name__)

LOCAL_MODEL = "wordllama-l2-supercat-256"
MAX_INPUT_CHARS = 8000  # what one text may weigh in a request or a local embedding
BATCH = 64


class EmbeddingError(RuntimeError):
    """The embedder could not embed (server down, bad answer)."""


class Embedder(Protocol):
    """What recall embeds with; the embedders below inherit its defaults (nothing to load
    at start, nothing to close)."""

    name: str  # stored with each vector: a vector of another model is not compared
    # its vectors' size once known (a stored vector of another size is made again)
    dimension: int | None
    # below this cosine a message is unrelated, not a weak match ("zebra" finds nothing)
    min_similarity: float

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row per text."""
        ...

    async def warm(self) -> None:
        """Load what the first embedding needs (at start, off the event loop), so memory
        is taken once at start and no request pays for the load."""
        return None

    async def close(self) -> None:
        return None


async def query_vector(embedder: Embedder | None, query: str, using: str) -> np.ndarray | None:
    """``query``'s vector; None without an embedder, or if embedding fails (logged: what
    ``using`` then does without it, with lexical ranking alone)."""
    if embedder is None:
        return None
    try:
        return (await embedder.embed([query]))[0]
    except EmbeddingError as exc:
        log.warning("%s without embeddings: %s", using, exc)
        return None


class EmbedderChoice(Protocol):
    """Which embedder makes and reads a conversation's vectors: its agent's own
    (config.json ``embeddings``), else the server's."""

    def for_agent(self, agent_id: str) -> Embedder | None:
        """The agent's embedder; None: lexical ranking only."""
        ...

    def own(self) -> dict[str, Embedder | None]:
        """The agents whose embedder is not the server's, with theirs."""
        ...


def normalised(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)


@lru_cache(maxsize=1)
def _wordllama():
    """Loaded once per process (16 MB), on first use."""
    import safetensors.numpy
    import tokenizers
    import wordllama
    from wordllama.inference import WordLlamaInference

    # The package's own files: WordLlama.load would look for the tokenizer under a folder
    # the wheel does not have and then try a download.
    root = Path(wordllama.__file__).parent
    weights = safetensors.numpy.load_file(str(root / "weights/l2_supercat_256.safetensors"))
    tokenizer = tokenizers.Tokenizer.from_file(
        str(root / "tokenizers/l2_supercat_tokenizer_config.json")
    )
    # its word cache never hits on chat text and only grows: platform/tokenizers_private
    tokenizers_private.drop_word_cache(tokenizer)
    return WordLlamaInference(weights["embedding.weight"], tokenizer)


class LocalEmbedder(Embedder):
    """WordLlama's l2_supercat (256 dims): a token-embedding table averaged, CPU-only."""

    name = LOCAL_MODEL
    dimension = 256
    min_similarity = 0.2  # unrelated texts score under 0.1, paraphrases over 0.25

    def embed_now(self, texts: Sequence[str]) -> np.ndarray:
        clipped = [t[:MAX_INPUT_CHARS] or " " for t in texts]
        return normalised(np.asarray(_wordllama().embed(clipped, norm=False), dtype=np.float32))

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed_now, texts)

    async def warm(self) -> None:
        await asyncio.to_thread(_wordllama)


class OpenAIEmbedder(Embedder):
    """``POST {base_url}/embeddings`` with ``{"model", "input": [...]}``."""

    def __init__(
        self, base_url: str, model: str, *, api_key: str | None = None, timeout: float = 30.0
    ) -> None:
        self.name = f"openai:{model}"[:128]
        self.dimension: int | None = None  # learnt from the server's first answer
        self.min_similarity = 0.0  # scales differ by model: every vector may rank
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=base_url.rstrip("/") + "/", headers=headers, timeout=timeout
        )

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            batch = [t[:MAX_INPUT_CHARS] or " " for t in texts[start : start + BATCH]]
            rows += await self._request(batch)
        return normalised(np.asarray(rows, dtype=np.float32))

    async def _request(self, batch: list[str]) -> list[list[float]]:
        try:
            response = await self._client.post(
                "embeddings", json={"model": self.model, "input": batch}
            )
            response.raise_for_status()
            data = sorted(response.json()["data"], key=lambda d: d["index"])
            vectors = [d["embedding"] for d in data]
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"embeddings server: {exc}") from exc
        if len(vectors) != len(batch) or len({len(v) for v in vectors}) != 1:
            raise EmbeddingError("embeddings server: wrong number or size of vectors")
        self.dimension = len(vectors[0])
        return vectors

    async def close(self) -> None:
        await self._client.aclose()
