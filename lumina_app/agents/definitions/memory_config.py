"""An agent's ``memory`` block in config.json: what it carries forward past the window.

    "memory": {"summary": true, "recall": true, "contextTokens": 8000,
               "autoRecall": {"limit": 5, "tokens": 1000, "scope": "conversation"}}

* ``summary``: a rolling summary of what left the window goes into every context, as one
  system message after the prompt (the agent's ``summary.md`` is the summarizing prompt).
* ``recall``: the built-in ``recall`` tool searches the conversation's whole history.
* ``autoRecall``: before each run the ``limit`` earlier messages most relevant to the input
  that are not in the window go into one system message, within ``tokens``; with
  ``"scope": "all"`` they may also come from the person's other conversations with the agent.
* ``contextTokens``: the oldest window messages are left out (whole turns) while the
  estimated prompt is over this many tokens.
* ``longTerm``: memories about the person across conversations (``true`` or
  ``{"scope": "agent" | "owner", "limit": n, "tokens": n}``): the memory tools, a
  background extractor after each run (the agent's ``memory.md`` is its prompt) and, before
  each run, what is known about the person in one system message.

Without the block an agent keeps the seed behaviour exactly: prompt + last N + input.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

SUMMARY_FILE = "summary.md"
DEFAULT_SUMMARY_PROMPT = (
    "You keep a running summary of a conversation between a user and an assistant. Update "
    "the summary with the new messages: keep every fact, name, number, decision, preference "
    "and open question that could matter later, drop small talk, and stay under 300 words. "
    "Answer with the summary only."
)
MEMORY_FILE = "memory.md"
DEFAULT_MEMORY_PROMPT = (
    "You keep a short list of durable facts about the user (name, where they live, what "
    "they work on, their preferences), one per memory. Given the memories already known "
    "and the newest exchange, decide what the exchange adds. Reply with JSON only: "
    '{"operations": [...]} where each operation is {"op": "add", "text": "..."}, '
    '{"op": "update", "id": N, "text": "..."} (the same fact, said better), '
    '{"op": "supersede", "id": N, "text": "..."} (a fact that changed) or '
    '{"op": "none"}. Write each fact as a short sentence about "the user". Never add a '
    "fact that is already known; add nothing for small talk, questions or one-off requests."
)
MIN_CONTEXT_TOKENS = 256
MAX_CONTEXT_TOKENS = 2_000_000


@dataclass(frozen=True, slots=True)
class AutoRecallConfig:
    limit: int = 5
    tokens: int = 1000
    scope: str = "conversation"  # or "all": the owner's other conversations with the agent too


@dataclass(frozen=True, slots=True)
class LongTermConfig:
    scope: str = "agent"  # or "owner": every agent of the owner shares them
    limit: int = 10  # memories in a context at most
    tokens: int = 500


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    summary: bool = False
    recall: bool = False
    context_tokens: int | None = None
    auto_recall: AutoRecallConfig | None = None
    summary_prompt: str = DEFAULT_SUMMARY_PROMPT
    long_term: LongTermConfig | None = None
    memory_prompt: str = DEFAULT_MEMORY_PROMPT


def parse_memory(
    config: dict[str, Any], summary_prompt: str | None, memory_prompt: str | None = None
) -> MemoryConfig | str:
    """The agent's memory settings, or the reason its config.json cannot be used."""
    block = config.get("memory")
    if block is None:
        return MemoryConfig()
    if not isinstance(block, dict):
        return "config.json: 'memory' must be an object"
    unknown = set(block) - {"summary", "recall", "contextTokens", "autoRecall", "longTerm"}
    if unknown:
        return f"config.json: unknown 'memory' keys: {', '.join(sorted(unknown))}"
    for key in ("summary", "recall"):
        if key in block and not isinstance(block[key], bool):
            return f"config.json: 'memory.{key}' must be true or false"
    tokens = block.get("contextTokens")
    if tokens is not None and (
        isinstance(tokens, bool)
        or not isinstance(tokens, int)
        or not MIN_CONTEXT_TOKENS <= tokens <= MAX_CONTEXT_TOKENS
    ):
        return (
            f"config.json: 'memory.contextTokens' must be a whole number from "
            f"{MIN_CONTEXT_TOKENS} to {MAX_CONTEXT_TOKENS}"
        )
    auto_recall = _auto_recall(block.get("autoRecall"))
    if isinstance(auto_recall, str):
        return auto_recall
    long_term = _long_term(block.get("longTerm"))
    if isinstance(long_term, str):
        return long_term
    return MemoryConfig(
        long_term=long_term,
        memory_prompt=memory_prompt or DEFAULT_MEMORY_PROMPT,
        auto_recall=auto_recall,
        summary=bool(block.get("summary", False)),
        recall=bool(block.get("recall", False)),
        context_tokens=tokens,
        summary_prompt=summary_prompt or DEFAULT_SUMMARY_PROMPT,
    )


def _whole(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _auto_recall(block: Any) -> AutoRecallConfig | str | None:
    if block is None or block is False:
        return None
    if block is True:
        return AutoRecallConfig()
    if not isinstance(block, dict) or set(block) - {"limit", "tokens", "scope"}:
        return (
            "config.json: 'memory.autoRecall' must be true or "
            '{"limit": n, "tokens": n, "scope": "conversation" | "all"}'
        )
    config = AutoRecallConfig(
        block.get("limit", 5), block.get("tokens", 1000), block.get("scope", "conversation")
    )
    if config.scope not in ("conversation", "all"):
        return (
            'config.json: \'memory.autoRecall.scope\' must be "conversation" or "all" '
            f"(not {json.dumps(config.scope)[:40]})"
        )
    if not _whole(config.limit, 1, 20) or not _whole(config.tokens, 50, 20_000):
        return (
            "config.json: 'memory.autoRecall' wants a limit from 1 to 20 and tokens from "
            "50 to 20000"
        )
    return config


def _long_term(block: Any) -> LongTermConfig | str | None:
    if block is None or block is False:
        return None
    if block is True:
        return LongTermConfig()
    wrong = (
        "config.json: 'memory.longTerm' must be true or "
        '{"scope": "agent" | "owner", "limit": 1..50, "tokens": 50..20000}'
    )
    if not isinstance(block, dict) or set(block) - {"scope", "limit", "tokens"}:
        return wrong
    config = LongTermConfig(
        block.get("scope", "agent"), block.get("limit", 10), block.get("tokens", 500)
    )
    if config.scope not in ("agent", "owner"):
        return wrong
    if not _whole(config.limit, 1, 50) or not _whole(config.tokens, 50, 20_000):
        return wrong
    return config
