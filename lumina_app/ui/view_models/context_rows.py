"""An answer's context as the "context" dialog lists it: each message sent to the model
as text, tool calls spelled out, and where each later model call (after a tool step)
began."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def context_rows(messages: Sequence[dict[str, Any]], calls: Sequence[int]) -> list[dict[str, str]]:
    """``{role, content, call}`` per message; ``call`` names the model call a message
    first went to, on the first message added for it (after the first call)."""
    starts = {size: n for n, size in enumerate(calls[:-1], start=2)}
    rows = []
    for index, message in enumerate(messages):
        text = str(message.get("content") or "")
        asked = [
            f"→ {c['function']['name']}({c['function']['arguments']})"
            for c in message.get("tool_calls") or []
        ]
        if message.get("role") == "tool":
            text = f"[{message.get('tool_call_id', '')}] {text}"
        call = starts.get(index)
        rows.append(
            {
                "role": str(message.get("role", "")),
                "content": "\n".join([text, *asked]).strip(),
                "call": f"model call {call}" if call else "",
            }
        )
    return rows
