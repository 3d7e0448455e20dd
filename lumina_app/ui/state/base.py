"""The state every page shares: which agent and conversation are open, and who is asking.

Imports nothing else of the UI, so the chat and the sidebar states both build on it
without importing each other.
"""

from __future__ import annotations

import reflex as rx

from lumina_app.composition import Services, current
from lumina_app.domain import LOCAL, Principal


class AppState(rx.State):
    agent_id: str = ""
    agent_name: str = ""
    conversation_id: str = ""
    title: str = ""

    def _caller(self) -> Principal:
        """Who this browser acts as (the local operator on this machine)."""
        return LOCAL

    @staticmethod
    def _services() -> Services:
        return current()
