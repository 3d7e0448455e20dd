"""The Memory page (/memories): what agents know about you across conversations — search,
add, correct, pin, forget one or everything, where each came from, and what a fact that
changed used to be (its history, #42)."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.components import cancel_button, confirm_dialog, testid
from lumina_app.ui.components.shell import notice, section, shell
from lumina_app.ui.routes import MEMORIES
from lumina_app.ui.state.memories import MemoriesState


def search_form() -> rx.Component:
    return rx.form(
        rx.hstack(
            rx.input(name="q", placeholder="Search what is known…", flex="1",
                     custom_attrs=testid("memory-search")),
            rx.button("Search", type="submit", variant="soft"),
            width="100%",
        ),
        on_submit=MemoriesState.search,
        width="100%",
    )  # fmt: skip


def add_form() -> rx.Component:
    return rx.form(
        rx.hstack(
            rx.input(name="text", placeholder="Tell the assistant a fact about you", flex="1",
                     max_length=500, required=True, custom_attrs=testid("memory-new")),
            rx.button("Remember", type="submit", custom_attrs=testid("memory-add")),
            width="100%",
        ),
        on_submit=MemoriesState.add,
        reset_on_submit=True,
        width="100%",
    )  # fmt: skip


def edit_form(row: dict) -> rx.Component:
    return rx.form(
        rx.flex(
            rx.input(name="text", default_value=row["text"], flex="1 1 14em", max_length=500,
                     required=True, custom_attrs=testid("memory-edit-text")),
            rx.hstack(
                rx.el.label(
                    rx.el.input(type="checkbox", name="supersede",
                                custom_attrs=testid("memory-edit-supersede")),
                    rx.text("it changed: keep the old as history", size="1", as_="span"),
                    style={"display": "flex", "gap": "0.3em", "alignItems": "center"},
                ),
                rx.button("Save", type="submit", size="1",
                          custom_attrs=testid("memory-save")),
                cancel_button(MemoriesState.cancel, size="1"),
                align="center",
            ),
            wrap="wrap",
            gap="2",
            align="center",
            width="100%",
        ),
        on_submit=MemoriesState.save,
        width="100%",
    )  # fmt: skip


def _source(row: dict) -> rx.Component:
    return rx.cond(
        row["source"] != "",
        rx.link("from a conversation (message " + row["seq"] + ")", href=row["source"],
                size="1", custom_attrs=testid("memory-source")),
        rx.text(rx.cond(row["origin"] != "", row["origin"], "added by hand"), size="1",
                color="gray", custom_attrs=testid("memory-origin")),
    )  # fmt: skip


def _actions(row: dict) -> rx.Component:
    pinned = row["pinned"] != ""
    return rx.hstack(
        rx.button(rx.cond(pinned, "Unpin", "Pin"), size="1", variant="ghost",
                  on_click=MemoriesState.pin(row["id"], ~pinned),
                  custom_attrs=testid("memory-pin")),
        rx.button("Edit", size="1", variant="ghost", on_click=MemoriesState.edit(row["id"]),
                  custom_attrs=testid("memory-edit")),
        rx.button("Forget", size="1", variant="ghost", color_scheme="red",
                  on_click=MemoriesState.delete(row["id"]),
                  custom_attrs=testid("memory-delete")),
        spacing="3",
    )  # fmt: skip


def _version(version: dict) -> rx.Component:
    return rx.box(
        rx.text(version["text"], size="1", color="var(--gray-11)"),
        rx.text("from " + version["since"] + " until " + version["until"], size="1",
                color="gray"),
        custom_attrs=testid("memory-version"),
    )  # fmt: skip


def _history(row: dict) -> rx.Component:
    """The versions a memory replaced, folded away under a small "history" line."""
    return rx.cond(
        row["history"].length() > 0,
        rx.el.details(
            rx.el.summary(
                rx.text("history: ", row["history"].length(), " earlier", as_="span",
                        size="1", color="gray"),
                cursor="pointer",
                custom_attrs=testid("memory-history-toggle"),
            ),
            rx.vstack(rx.foreach(row["history"], _version), spacing="1",
                      padding_left="1em", border_left="2px solid var(--gray-a5)"),
            custom_attrs=testid("memory-history"),
        ),
    )  # fmt: skip


def memory_item(row: dict) -> rx.Component:
    return rx.box(
        rx.cond(
            MemoriesState.editing == row["id"],
            edit_form(row),
            rx.hstack(
                rx.cond(row["pinned"] != "", rx.icon("pin", size=14, color="var(--accent-9)")),
                rx.text(row["text"], size="2", flex="1", custom_attrs=testid("memory-text")),
                _actions(row),
                align="center",
                width="100%",
            ),
        ),
        rx.hstack(
            rx.badge(row["agent"], variant="soft", size="1"),
            _source(row),
            rx.text("updated ", rx.moment(row["updated"], from_now=True), size="1",
                    color="gray"),
            spacing="2",
            align="center",
            wrap="wrap",
        ),
        _history(row),
        padding="0.6em 0",
        border_bottom="1px solid var(--gray-a4)",
        width="100%",
        id="memory-" + row["id"],  # the "Used N memories" links land here
        custom_attrs={"data-testid": "memory-row", "data-memory-id": row["id"]},
    )  # fmt: skip


def memory_list() -> rx.Component:
    return section(
        "What is known about you",
        search_form(),
        rx.cond(
            MemoriesState.items.length() == 0,
            rx.text(rx.cond(MemoriesState.query != "", "Nothing matches.", "Nothing yet: "
                            "tell the assistant your name, and it is remembered here."),
                    color="gray", size="2", custom_attrs=testid("memory-empty")),
            rx.box(rx.foreach(MemoriesState.items, memory_item), width="100%"),
        ),
        add_form(),
        confirm_dialog(
            rx.button("Forget everything", variant="soft", color_scheme="red", size="1",
                      custom_attrs=testid("memory-forget-all")),
            rx.alert_dialog.title("Forget everything?"),
            rx.alert_dialog.description("No agent will use any of these memories again."),
            "Forget everything",
            MemoriesState.forget_all,
            "memory-confirm-forget-all",
        ),
    )  # fmt: skip


def used_memories(texts: rx.Var) -> rx.Component:
    """In an answer's Context: the memories it was given, and where to correct them."""
    return rx.cond(
        texts.length() > 0,
        rx.box(
            rx.hstack(
                rx.icon("brain", size=14, color="var(--violet-11)"),
                rx.text("Used ", texts.length(), " memories about you", size="2", weight="medium"),
                align="center",
            ),
            rx.foreach(texts, lambda t: rx.text("• ", t, size="2")),
            rx.link("Correct them on the Memory page", href=MEMORIES, size="2"),
            background="var(--violet-a3)",
            border_radius="var(--radius-3)",
            padding="0.6em 0.8em",
            margin_bottom="0.5em",
            custom_attrs=testid("used-memories"),
        ),
    )


def memories_page() -> rx.Component:
    return shell(
        MEMORIES,
        "Memory",
        rx.text(
            "Facts the assistant keeps about you across conversations. Each answer's "
            "Context shows which it used; correct or forget any of them here.",
            color="gray",
        ),
        notice(MemoriesState.message, MemoriesState.error),
        memory_list(),
    )
