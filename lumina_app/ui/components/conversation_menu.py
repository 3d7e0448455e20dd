"""A conversation row's menu: rename, pin, archive, export (Markdown, JSON, zip), delete."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.state.sidebar import SidebarState
from lumina_app.ui.view_models.views import ConversationView

MENU_LAYER = "60"  # above the phone's drawer (50), which holds the same rows


def _item(label: str, icon: str, testid: str, on_click, **props) -> rx.Component:
    return rx.dropdown_menu.item(
        rx.hstack(rx.icon(icon, size=14), rx.text(label), spacing="2", align="center"),
        on_click=on_click,
        custom_attrs={"data-testid": testid},
        **props,
    )


def _export_menu(conv: ConversationView) -> rx.Component:
    def export(label: str, export_format: str) -> rx.Component:
        return rx.dropdown_menu.item(
            label,
            on_click=SidebarState.export(conv["uuid"], export_format),
            custom_attrs={"data-testid": f"export-{export_format}"},
        )

    return rx.dropdown_menu.sub(
        rx.dropdown_menu.sub_trigger(
            rx.hstack(rx.icon("download", size=14), rx.text("Export"), spacing="2"),
            custom_attrs={"data-testid": "export-menu"},
        ),
        rx.dropdown_menu.sub_content(
            export("Markdown (.md)", "md"),
            export("JSON (.json)", "json"),
            export("Archive (.zip)", "archive"),
            z_index=MENU_LAYER,
        ),
    )


def conversation_menu(conv: ConversationView) -> rx.Component:
    return rx.dropdown_menu.root(
        rx.dropdown_menu.trigger(
            rx.icon_button(
                rx.icon("ellipsis", size=16),
                variant="ghost",
                size="1",
                aria_label="Conversation actions",
                custom_attrs={"data-testid": "conversation-menu"},
            )
        ),
        rx.dropdown_menu.content(
            _item(
                "Rename",
                "pencil",
                "menu-rename",
                SidebarState.start_rename(conv["uuid"], conv["title"]),
            ),
            rx.cond(
                conv["pinned"],
                _item(
                    "Unpin", "pin-off", "menu-unpin", SidebarState.set_pinned(conv["uuid"], False)
                ),
                _item("Pin", "pin", "menu-pin", SidebarState.set_pinned(conv["uuid"], True)),
            ),
            rx.cond(
                conv["archived"],
                _item(
                    "Unarchive",
                    "archive-restore",
                    "menu-unarchive",
                    SidebarState.set_archived(conv["uuid"], False),
                ),
                _item(
                    "Archive",
                    "archive",
                    "menu-archive",
                    SidebarState.set_archived(conv["uuid"], True),
                ),
            ),
            _export_menu(conv),
            rx.dropdown_menu.separator(),
            _item(
                "Delete",
                "trash-2",
                "menu-delete",
                SidebarState.ask_delete(conv["uuid"], conv["title"]),
                color="red",
            ),
            z_index=MENU_LAYER,
        ),
    )
