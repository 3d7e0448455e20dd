"""The sidebar: agent picker, new conversation, search, the conversation list and who is
signed in. On narrow screens the same content sits in a drawer."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.components import testid
from lumina_app.ui.components.conversation_list import conversation_list
from lumina_app.ui.components.identity import identity
from lumina_app.ui.components.sidebar_search import agent_filter, search_box
from lumina_app.ui.routes import IMPORT, MEMORIES
from lumina_app.ui.state.chat import ChatState
from lumina_app.ui.state.sidebar import SidebarState


def page_link(icon: str, label: str, href: str, name: str) -> rx.Component:
    """The sidebar's way to a page of its own (Memory, Import)."""
    return rx.link(
        rx.hstack(rx.icon(icon, size=14), rx.text(label, size="2"), align="center"),
        href=href,
        underline="none",
        custom_attrs=testid(name),
    )


def agent_picker() -> rx.Component:
    return rx.select.root(
        rx.select.trigger(width="100%", custom_attrs={"data-testid": "agent-picker"}),
        rx.select.content(
            rx.foreach(
                SidebarState.agents,
                lambda agent: rx.select.item(agent["name"], value=agent["id"]),
            )
        ),
        value=ChatState.agent_id,
        on_change=SidebarState.pick_agent,
    )


def sidebar_content() -> rx.Component:
    return rx.vstack(
        rx.hstack(
            rx.icon("sparkles", color="var(--accent-9)"),
            rx.heading("Lumina", size="5"),
            align="center",
        ),
        agent_picker(),
        rx.tooltip(
            rx.link(
                rx.button(rx.icon("plus"), "New conversation", width="100%", variant="soft"),
                href="/chat/" + ChatState.agent_id,
                width="100%",
                on_click=SidebarState.set_drawer_open(False),
                custom_attrs={"data-testid": "new-conversation"},
            ),
            content="New conversation (Ctrl+Shift+O, ⌘⇧O on a Mac)",
        ),
        search_box(),
        agent_filter(),
        conversation_list(),
        rx.hstack(
            page_link("brain", "Memory", MEMORIES, "link-memories"),
            page_link("download", "Import", IMPORT, "link-import"),
            spacing="4",
        ),
        identity(),
        spacing="3",
        height="100%",
        width="100%",
        padding="1em",
    )


def sidebar() -> rx.Component:
    return rx.box(
        sidebar_content(),
        width="18em",
        flex_shrink="0",
        height="100dvh",
        border_right="1px solid var(--gray-a5)",
        background="var(--gray-a2)",
        display=["none", "none", "block"],
        custom_attrs={"data-testid": "sidebar"},
    )


def drawer() -> rx.Component:
    return rx.drawer.root(
        rx.drawer.overlay(z_index="40"),
        rx.drawer.portal(
            rx.drawer.content(
                sidebar_content(),
                height="100%",
                width="85vw",
                max_width="20em",
                background="var(--color-panel-solid)",
                top="0",
                left="0",
                z_index="50",
                custom_attrs={"data-testid": "drawer"},
            )
        ),
        direction="left",
        open=SidebarState.drawer_open,
        on_open_change=SidebarState.set_drawer_open,
    )
