"""Estimating how many tokens a prompt takes, offline (no tokenizer to download).

A documented estimate, not a tokenizer: ASCII text runs about 4 characters per token in
the common BPE vocabularies, most other scripts (CJK above all) about one token per
character, and each chat message costs a few tokens of framing. It errs high for CJK and
emoji and is within ~15 % for English prose, which is what a budget needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

PER_MESSAGE = 4


def estimate_text(text: str) -> int:
    ascii_chars = sum(1 for c in text if c < "\x80")
    return (ascii_chars + 3) // 4 + (len(text) - ascii_chars)


def estimate_messages(messages: Iterable[Mapping[str, object]]) -> int:
    total = 0
    for message in messages:
        total += PER_MESSAGE + estimate_text(str(message.get("content") or ""))
    return total
