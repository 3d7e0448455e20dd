"""Context for a run (ARCHITECTURE.md § Runs): system prompt, the rolling summary of what left the
window (agents with ``memory.summary``), the last N history messages, the new input.

An agent with a summary is also sent, verbatim, the messages that left the window but no
summary covers yet (the summary is written in the background, every few turns): nothing
older ever silently drops out of its context between two summaries.

The history never starts on an assistant or tool message, and a token budget
(``memory.contextTokens``) leaves out the oldest turns whole. :func:`render` is the one
place a context becomes the messages a provider is sent, so a run's context can be rebuilt
from what it was made of (GET /api/v1/runs/{id}/context) and come out the same.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from lumina_app.agents.run.attachments import Attached
from lumina_app.domain import ChatMessage, Msg, MsgRole, Summary
from lumina_app.domain.tokens import estimate_messages

SUMMARY_PREFIX = "Summary of the earlier conversation: "
# At most this many not-yet-summarised messages from before the window (the newest): in
# normal running the gap is below the summary's interval plus a few turns; it only grows
# this far while summaries keep failing.
MAX_EARLIER = 100


@dataclass(slots=True)
class BuiltContext:
    messages: list[ChatMessage]
    history: list[Msg]
    summary: Summary | None = None
    trimmed: int = 0  # history messages the token budget left out
    tokens: int = 0  # the estimate of ``messages``
    earlier: int = 0  # how many of ``history`` (its first) are from before the window

    @property
    def seq_range(self) -> tuple[int | None, int | None]:
        """The window's part of the history: first and last seq."""
        return _seqs(self.history[self.earlier :])

    @property
    def earlier_range(self) -> tuple[int | None, int | None]:
        """The messages from before the window no summary covered yet: first and last seq."""
        return _seqs(self.history[: self.earlier])


def _seqs(msgs: Sequence[Msg]) -> tuple[int | None, int | None]:
    return (msgs[0].seq, msgs[-1].seq) if msgs else (None, None)


def usable_history(history: Sequence[Msg], window: int) -> list[Msg]:
    """The last ``window`` messages, never starting on an assistant or tool message, and
    never a tool call without its results (see :func:`whole_exchanges`).

    Answers cut short (interrupted, stopped, failed) stay in as far as they got; an answer
    that got nowhere (no text, no tool calls) is left out.
    """
    return whole_exchanges([m for m in history if _usable(m)][-window:])


def whole_exchanges(msgs: Sequence[Msg]) -> list[Msg]:
    """``msgs`` from the first user message on, every tool call kept only together with
    all its results, and a result only with its call.

    The one place where the pairing is protected: every cut of a history (the window, a
    rebuild, a resume, a token budget) goes through here. A call whose results are not all
    there (only possible in data from elsewhere, such as an imported archive) loses its
    calls but keeps its text; results whose call is gone are left out.
    """
    start = next((i for i, m in enumerate(msgs) if m.role is MsgRole.USER), len(msgs))
    kept: list[Msg] = []
    i = start
    while i < len(msgs):
        msg = msgs[i]
        i += 1
        if msg.role is MsgRole.TOOL:
            continue  # its call is not before it
        calls = msg.tool_calls
        if not calls:
            kept.append(msg)
            continue
        results = []
        while i < len(msgs) and msgs[i].role is MsgRole.TOOL:
            results.append(msgs[i])
            i += 1
        if {c.get("id") for c in calls} == {r.tool_call_id for r in results}:
            kept += [msg, *results]
        elif msg.content:
            meta = {k: v for k, v in msg.meta.items() if k != "toolCalls"}
            kept.append(dataclasses.replace(msg, meta=meta))
    return kept


def _usable(msg: Msg) -> bool:
    if msg.role is MsgRole.TOOL:
        return True  # an empty result is still the answer to its call
    return bool(msg.content or msg.tool_calls or msg.files)  # a question may be files alone


def chat_message(msg: Msg, attached: Attached | None = None) -> ChatMessage:
    """A stored message in the chat-completions shape (``tool_calls``, ``tool_call_id``);
    a question with files as ``attached`` sends them."""
    if msg.role is MsgRole.USER and attached is not None and msg.files:
        return {"role": "user", "content": attached.content(msg.turn_id, msg.content)}
    if msg.role is MsgRole.TOOL:
        return {"role": "tool", "tool_call_id": msg.tool_call_id, "content": msg.content}
    calls = msg.tool_calls
    if calls:
        return {
            "role": "assistant",
            "content": msg.content or None,
            "tool_calls": [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in calls
            ],
        }
    return {"role": msg.role.chat_role, "content": msg.content}


def render(
    system_prompt: str,
    summary: Summary | None,
    history: Sequence[Msg],
    user_input: str,
    recalled: str = "",
    known: str = "",
    attached: Attached | None = None,
    turn: str = "",
) -> list[ChatMessage]:
    """The messages a provider is sent for this context (``recalled``: auto-recall's
    system message, after the summary; ``known``: long-term memories, after the prompt;
    ``attached``: the parts of the files of the questions, ``turn`` the new input's)."""
    messages: list[ChatMessage] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    if known:
        messages.append({"role": "system", "content": known})
    if summary is not None and summary.text:
        messages.append({"role": "system", "content": SUMMARY_PREFIX + summary.text})
    if recalled:
        messages.append({"role": "system", "content": recalled})
    messages.extend(chat_message(m, attached) for m in history)
    content = attached.content(turn, user_input) if attached is not None else user_input
    messages.append({"role": "user", "content": content})
    return messages


def build_context(
    system_prompt: str,
    history: Sequence[Msg],
    user_input: str,
    *,
    window: int,
    summary: Summary | None = None,
    token_budget: int | None = None,
    earlier: bool = False,
    recalled: str = "",
    known: str = "",
) -> BuiltContext:
    """``earlier``: ``history`` may reach back past the window, and what of it the
    summary does not cover is sent too (agents with ``memory.summary``)."""
    used = usable_history(history, window)
    window_start = used[0].seq if used else None
    if earlier:
        used = _with_earlier(history, used, summary)
    messages = render(system_prompt, summary, used, user_input, recalled, known)
    tokens = estimate_messages(messages)
    trimmed = 0
    while token_budget is not None and used and tokens > token_budget:
        cut = _oldest_turn(used)
        trimmed += cut
        used = used[cut:]
        messages = render(system_prompt, summary, used, user_input, recalled, known)
        tokens = estimate_messages(messages)
    before = sum(1 for m in used if window_start is None or m.seq < window_start)
    return BuiltContext(messages, used, summary, trimmed, tokens, before)


def _with_earlier(history: Sequence[Msg], used: list[Msg], summary: Summary | None) -> list[Msg]:
    """``used`` (the window) preceded by the messages of ``history`` before it that the
    summary does not cover, the newest :data:`MAX_EARLIER`, kept in whole exchanges."""
    covered = summary.covered_to_seq if summary else 0
    first = used[0].seq if used else (history[-1].seq + 1 if history else 0)
    older = [m for m in history if covered < m.seq < first and _usable(m)]
    if not older:
        return used
    return whole_exchanges([*older[-MAX_EARLIER:], *used])


def carried(
    history: Sequence[Msg], *, window: int, summary: Summary | None, earlier: bool
) -> list[Msg]:
    """What a warm session keeps of ``history`` for its next context: the last ``window``
    messages, and with ``earlier`` also those before them no summary covers yet."""
    if not earlier:
        return list(history[-window:])
    covered = summary.covered_to_seq if summary else 0
    kept = [m for m in history if m.seq > covered]
    return kept[-(window + MAX_EARLIER) :] if len(kept) > window else list(history[-window:])


def _oldest_turn(history: Sequence[Msg]) -> int:
    """How many messages the oldest turn takes: its question and everything up to the next
    question (so an answer never loses its question, nor a tool call its results)."""
    end = 1
    while end < len(history) and history[end].role is not MsgRole.USER:
        end += 1
    return end
