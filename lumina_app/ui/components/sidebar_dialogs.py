"""The sidebar's rename and delete dialogs (mounted once per page)."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.components import cancel_button
from lumina_app.ui.state.sidebar import SidebarState


def rename_dialog() -> rx.Component:
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title("Rename conversation"),
            rx.form(
                rx.vstack(
                    rx.input(
                        name="title",
                        default_value=SidebarState.rename_title,
                        max_length=255,
                        width="100%",
                        auto_focus=True,
                        custom_attrs={"data-testid": "rename-input"},
                    ),
                    rx.hstack(
                        cancel_button(SidebarState.cancel_rename),
                        rx.button(
                            "Save", type="submit", custom_attrs={"data-testid": "rename-save"}
                        ),
                        justify="end",
                        width="100%",
                    ),
                ),
                on_submit=SidebarState.save_rename,
            ),
        ),
        open=SidebarState.rename_id != "",
        on_open_change=lambda _open: SidebarState.cancel_rename(),
    )


def delete_dialog() -> rx.Component:
    return rx.alert_dialog.root(
        rx.alert_dialog.content(
            rx.alert_dialog.title("Delete conversation?"),
            rx.alert_dialog.description(
                "“" + SidebarState.delete_title + "” and all its messages will be deleted for good."
            ),
            rx.hstack(
                rx.alert_dialog.cancel(
                    rx.button(
                        "Cancel",
                        variant="soft",
                        color_scheme="gray",
                        on_click=SidebarState.cancel_delete,
                    )
                ),
                rx.alert_dialog.action(
                    rx.button(
                        "Delete",
                        color_scheme="red",
                        on_click=SidebarState.confirm_delete,
                        custom_attrs={"data-testid": "delete-confirm"},
                    )
                ),
                justify="end",
                spacing="3",
                margin_top="1em",
            ),
        ),
        open=SidebarState.delete_id != "",
    )
