"""The "context" view of an answer: exactly what its model was given (GET
/api/v1/runs/{id}/context, through the same service)."""

from __future__ import annotations

import reflex as rx

from lumina_app.domain import NotFound
from lumina_app.ui.state.base import AppState
from lumina_app.ui.view_models.context_rows import context_rows, recalled_facts

# How the context was built (ARCHITECTURE.md § Runs: new, continue, resume), said for people.
SCENARIO_WORDS = {
    "new": "New conversation",
    "continue": "Same session (kept in memory)",
    "resume": "Resumed from saved history",
}


class ContextState(AppState):
    open: bool = False
    loading: bool = False
    error: str = ""
    summary: str = ""
    facts: list[str] = []
    messages: list[dict[str, str]] = []
    memories: list[str] = []  # the long-term memories the answer was given

    @rx.event
    async def show(self, run_id: str) -> None:
        self.open, self.loading, self.error = True, True, ""
        self.summary, self.facts, self.messages, self.memories = "", [], [], []
        try:
            context = await self._services().runs.context(self._caller(), run_id)
        except NotFound as exc:
            self.error, self.loading = str(exc), False
            return
        first, last = context.window
        window = f"messages {first}–{last}" if first is not None else "no earlier messages"
        self.facts = [
            f"{SCENARIO_WORDS.get(context.scenario.value, context.scenario.value)} · "
            f"model {context.model}",
            f"window: {window}",
            *([_earlier(context.earlier)] if context.earlier else []),
            f"~{context.tokens} tokens",
            *([f"{context.trimmed} left out by the token budget"] if context.trimmed else []),
            *([f"{len(context.calls)} model calls (tool steps)"] if len(context.calls) > 1 else []),
        ]
        if context.summary is not None:
            self.summary = f"summary of messages 1–{context.summary.covered_to_seq}"
        self.messages = context_rows(context.messages, context.calls)
        self.facts += recalled_facts(context.recalled)
        if context.memories:
            used = await self._services().memories.used_by(self._caller(), context.memories)
            self.memories = [m.text for m in used]
            self.facts.append(f"used {len(context.memories)} memories")
        self.loading = False

    @rx.event
    def set_open(self, value: bool) -> None:
        self.open = value


def _earlier(earlier: tuple[int, int, int]) -> str:
    first, last, count = earlier
    return f"{count} earlier messages {first}–{last} (not summarised yet)"
