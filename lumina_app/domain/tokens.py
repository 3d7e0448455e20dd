"""Estimating how many tokens a prompt takes, offline (no tokenizer to download).

A documented estimate, not a tokenizer: ASCII text runs about 4 characters per token in
the common BPE vocabularies, most other scripts (CJK above all) about one token per
character, and each chat message costs a few tokens of framing. It errs high for CJK and
emoji and is within ~15 % for English prose, which is what a budget needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

PER_MESSAGE = 4
# An image part (a vision model's input): OpenAI's cost of a 1024×1024 image in detail,
# a fair middle for the sizes people paste; the estimate never reads the image.
IMAGE_TOKENS = 765


def estimate_text(text: str) -> int:
    ascii_chars = sum(1 for c in text if c < "\x80")
    return (ascii_chars + 3) // 4 + (len(text) - ascii_chars)


def estimate_messages(messages: Iterable[Mapping[str, object]]) -> int:
    total = 0
    for message in messages:
        total += PER_MESSAGE + estimate_content(message.get("content"))
    return total


def estimate_content(content: object) -> int:
    """A message's content: text, or parts (text parts by their text, images at
    :data:`IMAGE_TOKENS` each)."""
    if not isinstance(content, list):
        return estimate_text(str(content or ""))
    total = 0
    for part in content:
        if isinstance(part, Mapping) and part.get("type") == "text":
            total += estimate_text(str(part.get("text") or ""))
        else:
            total += IMAGE_TOKENS
    return total
