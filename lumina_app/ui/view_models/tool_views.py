"""Tool calls as the UI shows them: one card per call (name, arguments, result, duration,
error state), under the answer that asked for it. From stored rows, an answer's
``toolCalls`` are paired with the TOOL rows answering them; during a run, the cards come
from its ``tool_call`` / ``tool_result`` events."""

from __future__ import annotations

import json
from typing import Any, TypedDict

from lumina_app.domain import Msg, ToolCallFinished, ToolCallRequested


class ToolView(TypedDict):
    key: str  # the call id
    name: str
    arguments: str
    content: str
    status: str  # running (live) | pending (stored, no result seen) | done | error
    duration: str
    # An acp agent's permission request waiting for the person: its options (buttons).
    options: list[dict[str, str]]


PERMISSION = "permission: "  # the name of an acp agent's permission request card


def card(call_id: str, name: str, arguments: str, status: str) -> ToolView:
    return ToolView(
        key=call_id,
        name=name,
        arguments=_pretty(arguments),
        content="",
        status=status,
        duration="",
        options=_options(arguments) if status == "running" and name.startswith(PERMISSION) else [],
    )


def _options(arguments: str) -> list[dict[str, str]]:
    try:
        options = json.loads(arguments).get("options") or []
    except (ValueError, AttributeError):
        return []
    return [
        {"optionId": str(o.get("optionId", "")), "name": str(o.get("name", ""))}
        for o in options
        if isinstance(o, dict)
    ]


def with_result(view: ToolView, content: str, is_error: bool, duration_ms: int) -> ToolView:
    return ToolView(
        key=view["key"],
        name=view["name"],
        arguments=view["arguments"],
        content=content,
        status="error" if is_error else "done",
        duration=f"{duration_ms} ms" if duration_ms < 1000 else f"{duration_ms / 1000:.1f} s",
        options=[],
    )


def stored_cards(msg: Msg) -> list[ToolView]:
    """An answer's calls (without results), or a TOOL row's own result as a card."""
    if msg.tool_call_id is not None:
        alone = card(msg.tool_call_id, str(msg.meta.get("name") or "tool"), "", "pending")
        duration = int(msg.meta.get("durationMs") or 0)
        return [with_result(alone, msg.content, bool(msg.meta.get("isError")), duration)]
    cards = [card(c["id"], c["name"], c["arguments"], "pending") for c in msg.tool_calls]
    return cards + agent_cards(msg.meta.get("agentTools") or [])


def agent_cards(events: list[dict[str, Any]]) -> list[ToolView]:
    """The tools an acp agent ran itself, kept in its answer's meta as their events."""
    cards: dict[str, ToolView] = {}
    for event in events:
        key = str(event.get("callId", ""))
        if event.get("event") == "tool_call":
            cards[key] = card(
                key, str(event.get("name", "")), str(event.get("arguments", "")), "pending"
            )
        elif key in cards:
            cards[key] = with_result(
                cards[key],
                str(event.get("content", "")),
                bool(event.get("isError")),
                int(event.get("durationMs") or 0),
            )
    return list(cards.values())


def pair_results(views: list[Any]) -> list[Any]:
    """Message views with each TOOL view's result moved into the card of the call it
    answers, and the TOOL view left out; one whose call is not in the list (it is on an
    older page) stays on its own until that page is loaded."""
    out = [dict(view, tools=list(view["tools"])) for view in views]
    waiting = {
        c["key"]: (i, j)
        for i, view in enumerate(out)
        if view["role"] == "assistant"
        for j, c in enumerate(view["tools"])
        if c["status"] == "pending"
    }
    kept = []
    for view in out:
        where = waiting.get(view["tools"][0]["key"]) if view["role"] == "tool" else None
        if where is None:
            kept.append(view)
            continue
        i, j = where
        result = view["tools"][0]
        out[i]["tools"][j] = ToolView(**{**result, "arguments": out[i]["tools"][j]["arguments"]})
    return kept


def live_card(event: ToolCallRequested) -> ToolView:
    return card(event.call_id, event.name, event.arguments, "running")


def live_result(cards: list[ToolView], event: ToolCallFinished) -> list[ToolView]:
    """The cards with one call's result in (the event carries at most 2 KB of it)."""
    return [
        with_result(c, event.content, event.is_error, event.duration_ms)
        if c["key"] == event.call_id
        else c
        for c in cards
    ]


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), ensure_ascii=False, indent=2)
    except ValueError:
        return arguments
