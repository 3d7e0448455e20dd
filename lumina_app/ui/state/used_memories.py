"""The "Used N memories" mark under an answer: which memories its run was given, read
when the mark is opened (from the run's recorded context, as GET /runs/{id}/context)."""

from __future__ import annotations

import reflex as rx

from lumina_app.domain import NotFound
from lumina_app.ui.routes import MEMORIES
from lumina_app.ui.state.base import AppState


class UsedMemoriesState(AppState):
    run: str = ""  # the answer whose mark is open
    loading: bool = False
    items: list[dict[str, str]] = []  # {id, text, status, href}
    error: str = ""

    @rx.event
    async def show(self, run_id: str) -> None:
        self.run, self.loading, self.items, self.error = run_id, True, [], ""
        services, caller = self._services(), self._caller()
        try:
            context = await services.runs.context(caller, run_id)
            used = await services.memories.used_by(caller, context.memories)
        except NotFound as exc:
            self.error, self.loading = str(exc), False
            return
        self.items = [
            {
                "id": str(m.id),
                "text": m.text,
                "status": m.status.value,
                "href": f"{MEMORIES}#memory-{m.id}",
            }
            for m in used
        ]
        gone = len(context.memories) - len(used)
        if gone:
            self.error = f"{gone} of them no longer exist{'s' if gone == 1 else ''}."
        self.loading = False
