"""The banner that says when Lumina is degraded (hot window down) or the database is down."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.state.base import AppState


class HealthState(AppState):
    banner: str = ""

    @rx.event
    async def check(self) -> None:
        health = await self._services().health.check()
        if health.database != "ok":
            self.banner = "The database is unreachable: messages cannot be saved right now."
        elif health.hot_window != "ok":
            self.banner = (
                "Redis is unreachable: Lumina is answering from the database "
                "(slower, nothing lost)."
            )
        else:
            self.banner = ""
