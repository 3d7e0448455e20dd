"""A question's files in the message list (#48): an image as a thumbnail that opens it
full size, any other file as a card (icon, name, size) that downloads it. The browser
fetches them from ``GET /api/v1/files/{id}`` with its own cookie (ui/view_models/file_views.py)."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.view_models.file_views import FileView


def _thumbnail(file: FileView) -> rx.Component:
    return rx.link(
        rx.image(src=file["src"], alt=file["name"], class_name="lumina-file-thumb"),
        href=file["href"],
        is_external=True,  # the image full size, in a tab of its own
        reload_document=True,
        title=file["name"],
        custom_attrs={"data-testid": "file-thumbnail", "data-file-id": file["id"]},
    )


def _card(file: FileView) -> rx.Component:
    return rx.el.a(
        rx.hstack(
            rx.icon("file-text", size=22, color="var(--gray-11)", flex_shrink="0"),
            rx.vstack(
                rx.text(file["name"], size="2", weight="medium", class_name="lumina-ellipsis"),
                rx.text(file["size"], size="1", color="gray"),
                spacing="0",
                min_width="0",
            ),
            rx.icon("download", size=16, color="var(--gray-10)", flex_shrink="0"),
            align="center",
            spacing="2",
        ),
        href=file["href"],
        download=file["name"],
        reload_document=True,  # the browser's own download, not the app's router
        title=file["name"],
        class_name="lumina-file-card",
        custom_attrs={"data-testid": "file-card", "data-file-id": file["id"]},
    )


def file_list(files) -> rx.Component:
    return rx.cond(
        files.length() > 0,
        rx.flex(
            rx.foreach(files, lambda f: rx.cond(f["image"], _thumbnail(f), _card(f))),
            wrap="wrap",
            gap="0.5em",
            margin_top="0.4em",
            custom_attrs={"data-testid": "message-files"},
        ),
    )
