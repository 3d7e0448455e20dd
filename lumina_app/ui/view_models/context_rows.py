"""An answer's context as the "context" dialog lists it: each message sent to the model
as text, tool calls spelled out, and — for a turn that called the model more than once
(a tool step, then the answer) — every call in order with what it received.

What is recorded decides the shape: a run keeps one recipe (the prompt version, the
summary, the history ids and the question: what its first call received), and each later
call received the same plus the tool rows stored between calls (the answer that asked for
tools, then their results). So the list is the first call's messages, then for each later
call the rows added before it, each call headed by what it received."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any


def context_rows(messages: Sequence[dict[str, Any]], calls: Sequence[int]) -> list[dict[str, str]]:
    """``{role, content, call}`` per message; ``call`` heads the first message of each
    model call's part (only when there was more than one call)."""
    heads = _heads(calls) if len(calls) > 1 else {}
    rows = []
    for index, message in enumerate(messages):
        text = str(message.get("content") or "")
        asked = [
            f"→ {c['function']['name']}({c['function']['arguments']})"
            for c in message.get("tool_calls") or []
        ]
        if message.get("role") == "tool":
            text = f"[{message.get('tool_call_id', '')}] {text}"
        rows.append(
            {
                "role": str(message.get("role", "")),
                "content": "\n".join([text, *asked]).strip(),
                "call": heads.get(index, ""),
            }
        )
    return rows


def _heads(calls: Sequence[int]) -> dict[int, str]:
    """Where each call's part begins, and what that call received."""
    heads = {0: f"model call 1 · received {_messages(calls[0])}"}
    for n, (before, size) in enumerate(itertools.pairwise(calls), start=2):
        heads[before] = (
            f"model call {n} · received the {before} above and {_messages(size - before)}"
        )
    return heads


def _messages(count: int) -> str:
    return f"{count} message{'s' if count != 1 else ''}"


def recalled_facts(recalled: Sequence[Any]) -> list[str]:
    """One line per conversation auto-recall drew on: which messages came from it, with
    the other conversations named (title, date)."""
    here = [f"#{r.seq}" for r in recalled if r.title is None]
    lines = [f"recalled {', '.join(here)} from this conversation"] if here else []
    others: dict[str, list[Any]] = {}
    for r in recalled:
        if r.title is not None:
            others.setdefault(r.conversation_uuid, []).append(r)
    for said in others.values():
        day = f" ({said[0].created_at:%Y-%m-%d})" if said[0].created_at else ""
        seqs = ", ".join(f"#{r.seq}" for r in said)
        lines.append(f"recalled {seqs} from “{said[0].title or '(untitled)'}”{day}")
    return lines
