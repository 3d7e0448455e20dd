"""The sidebar's search: the box, the agent filter, and the messages it found (below the
matching titles)."""

from __future__ import annotations

import reflex as rx

from lumina_app.services.conversations import MAX_SEARCH_CHARS
from lumina_app.ui.state.sidebar import ALL_AGENTS, SidebarState
from lumina_app.ui.view_models.views import HitView


def search_box() -> rx.Component:
    return rx.input(
        rx.input.slot(rx.icon("search", size=14)),
        placeholder="Search titles and messages",
        value=SidebarState.search,
        on_change=SidebarState.set_search,
        max_length=MAX_SEARCH_CHARS,
        debounce_timeout=300,
        width="100%",
        custom_attrs={"data-testid": "search-input"},
    )


def agent_filter() -> rx.Component:
    """Narrows the list (and the search) to one agent's conversations; all by default."""
    return rx.select.root(
        rx.select.trigger(
            width="100%",
            variant="ghost",
            aria_label="Show conversations of",
            custom_attrs={"data-testid": "agent-filter"},
        ),
        rx.select.content(
            rx.select.item("All agents", value=ALL_AGENTS),
            rx.foreach(
                SidebarState.agents,
                lambda agent: rx.select.item(agent["name"], value=agent["id"]),
            ),
        ),
        value=SidebarState.agent_filter,
        on_change=SidebarState.set_agent_filter,
        size="1",
    )


def hit_item(hit: HitView) -> rx.Component:
    """A message a search found: opens its conversation scrolled to it."""
    return rx.link(
        rx.vstack(
            rx.text(hit["title"], size="1", weight="medium", class_name="lumina-ellipsis"),
            rx.box(
                rx.html(hit["snippet"]),
                font_size="var(--font-size-1)",
                color="var(--gray-11)",
                class_name="lumina-snippet",
            ),
            spacing="0",
            min_width="0",
        ),
        href=hit["url"],
        underline="none",
        color="inherit",
        padding="0.4em 0.6em",
        border_radius="var(--radius-3)",
        _hover={"background": "var(--gray-a3)"},
        width="100%",
        on_click=SidebarState.set_drawer_open(False),
        custom_attrs={"data-testid": "search-hit"},
    )


def hits() -> rx.Component:
    return rx.cond(
        SidebarState.hits.length() > 0,
        rx.vstack(
            rx.text("Messages", size="1", weight="bold", color="gray", padding_x="0.6em"),
            rx.foreach(SidebarState.hits, hit_item),
            spacing="1",
            width="100%",
            padding_top="0.5em",
        ),
    )
