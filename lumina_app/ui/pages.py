"""Pages of the browser UI: ``/`` goes to the first agent; ``/chat/<agent>[/<conversation>]``."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.components.conversation import conversation_pane
from lumina_app.ui.components.sidebar import delete_dialog, drawer, rename_dialog, sidebar
from lumina_app.ui.routes import CHAT, CHAT_NEW, HOME
from lumina_app.ui.state.chat import ChatState
from lumina_app.ui.state.health import HealthState
from lumina_app.ui.state.sidebar import SidebarState

STYLESHEET = "/lumina.css"
ON_LOAD = [ChatState.load, SidebarState.refresh, HealthState.check]


def chat_page() -> rx.Component:
    return rx.hstack(
        sidebar(),
        drawer(),
        conversation_pane(),
        rename_dialog(),
        delete_dialog(),
        spacing="0",
        width="100%",
        height="100dvh",
        overflow="hidden",
    )


def add_pages(app: rx.App) -> None:
    app.add_page(chat_page, route=HOME, title="Lumina", on_load=ON_LOAD)
    app.add_page(chat_page, route=CHAT_NEW, title="Lumina", on_load=ON_LOAD)
    app.add_page(chat_page, route=CHAT, title="Lumina", on_load=ON_LOAD)
