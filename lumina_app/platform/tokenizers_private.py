"""The tokenizers internal the local embedder uses (#44): a BPE model's word cache off.

WordLlama's tokenizer has no pre-tokenizer, so a whole text is one BPE "word", and the
model caches every word under 256 bytes, up to 10,000 per thread that tokenizes: chat
messages hardly repeat, so the cache never hits and only grows (~37 MB per embedding
thread of a long-running server: the soak's RSS slope, docs/PERFORMANCE.md), and
tokenizing is ~20 % faster without it. ``BPE._resize_cache(0)`` turns it off; it is not
public API.

Tested on tokenizers 0.23 (:data:`TESTED`); another release, or the name gone, and the
cache stays on (logged once): more memory, the same vectors. Canary:
``tests/unit/test_fast_lane_canaries.py``.
"""

from __future__ import annotations

from typing import Any

from lumina_app.platform.versions import tested

TESTED = "0.23"
NAME = "_resize_cache"


def drop_word_cache(tokenizer: Any) -> bool:
    """Turn off ``tokenizer``'s BPE word cache; whether it could be."""
    resize = getattr(tokenizer.model, NAME, None)
    if resize is None or not tested("tokenizers", TESTED, __name__):
        return False
    resize(0)
    return True
