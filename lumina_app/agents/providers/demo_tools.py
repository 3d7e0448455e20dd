"""How the offline ``demo`` model uses tools, deterministically, so tools work with no LLM.

Asked "what time is it" (optionally "in Europe/Paris") it calls ``current_time`` (or an
MCP server's ``get_current_time``); asked to "calculate 17 * 23" (or "what is 2 + 2") it
calls ``calculator``; asked "what did I say about X" (or "do you remember X", "recall
X") it calls ``recall`` with X; ``/tool <name> {json}`` calls any tool the agent has. Several in one
message are called in parallel. Given the results, it answers with them.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Sequence
from typing import Any

from lumina_app.domain import ToolCall

ChatMessage = dict[str, Any]

_TIME = re.compile(
    r"\bwhat time\b|\bcurrent time\b|\btime is it\b|\bwhat(?:'s| is) the time\b|\btime now\b",
    re.IGNORECASE,
)
_ZONE = re.compile(r"\bin ([A-Z][A-Za-z_]+(?:/[A-Za-z_+-]+){1,2}|UTC)\b")
_MATH = re.compile(
    r"\b(?:calculate|compute|what is|what's|how much is)\s+"
    r"([-(\d][\d\s.+\-*/%()^]*\d\)*|[-(\d][\d\s.+\-*/%()^]*\))",
    re.IGNORECASE,
)
_OPERATOR = re.compile(r"[\d)]\s*(?:\*\*|[-+*/%^])\s*[-(\d]")
_RECALL = re.compile(
    r"\b(?:what did (?:i|we) (?:say|tell you|write|mention) about|do you remember|recall)\s+"
    r"(?:the\s+|my\s+)?([^?!.\n]{2,120})",
    re.IGNORECASE,
)
_TOOL = re.compile(r"/tool\s+([A-Za-z0-9_-]+)\s*(\{.*\})?", re.DOTALL)


def demo_tool_calls(user_input: str, tools: Sequence[dict[str, Any]]) -> list[ToolCall]:
    """The calls the demo model makes for ``user_input``, among the ``tools`` offered."""
    offered = {t["function"]["name"] for t in tools}
    calls: list[tuple[str, dict[str, Any]]] = []
    explicit = _TOOL.search(user_input)
    if explicit and explicit.group(1) in offered:
        raw = explicit.group(2) or "{}"
        return [ToolCall(explicit.group(1), raw, _call_id())]
    if _TIME.search(user_input):
        zone = _ZONE.search(user_input)
        if "current_time" in offered:
            calls.append(("current_time", {"timezone": zone.group(1)} if zone else {}))
        elif "get_current_time" in offered:
            calls.append(("get_current_time", {"timezone": zone.group(1) if zone else "UTC"}))
    math = _MATH.search(user_input)
    if math and _OPERATOR.search(math.group(1)) and "calculator" in offered:
        calls.append(("calculator", {"expression": math.group(1).strip().replace("^", "**")}))
    remember = _RECALL.search(user_input)
    if remember and "recall" in offered:
        calls.append(("recall", {"query": remember.group(1).strip()}))
    return [ToolCall(name, json.dumps(args), _call_id()) for name, args in calls]


def demo_tool_answer(agent_name: str, messages: Sequence[ChatMessage]) -> str:
    """The demo's answer once its calls have results: it reports what the tools said."""
    asked = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("tool_calls")), None
    )
    if asked is None:
        return f"**{agent_name}** here (offline demo model). I got tool results I did not ask for."
    names = {c["id"]: c["function"]["name"] for c in messages[asked]["tool_calls"]}
    lines = [f"**{agent_name}** here (offline demo model). I used my tools:"]
    for result in messages[asked + 1 :]:
        if result.get("role") != "tool":
            continue
        name = names.get(result.get("tool_call_id"), "a tool")
        text = " ".join(str(result.get("content") or "").split())
        lines.append(f"\n- `{name}` said: {text}")
    return "".join(lines)


def _call_id() -> str:
    return "call_" + secrets.token_hex(6)
