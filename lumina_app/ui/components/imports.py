"""The Import page: bring conversations from ChatGPT, Claude, Open WebUI or LibreChat, and
paste what ChatGPT or Claude know about you."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.components import testid
from lumina_app.ui.components.shell import notice, section, shell
from lumina_app.ui.routes import IMPORT
from lumina_app.ui.state.imports import SOURCES, ImportState

UPLOAD_ID = "import-file"
LABELS = {
    "chatgpt": "ChatGPT (conversations.json or the export .zip)",
    "claude": "Claude (conversations.json or the export .zip)",
    "openwebui": "Open WebUI (chat export .json)",
    "librechat": "LibreChat (conversation export .json)",
}


def _picker() -> rx.Component:
    return rx.upload(
        rx.vstack(
            rx.icon("upload", size=20),
            rx.text("Drop the export here, or click to choose it", size="2"),
            rx.foreach(rx.selected_files(UPLOAD_ID), lambda name: rx.text.strong(name, size="2")),
            align="center",
            spacing="1",
        ),
        id=UPLOAD_ID,
        multiple=False,
        max_files=1,
        accept={"application/json": [".json"], "application/zip": [".zip"]},
        border="1px dashed var(--gray-a8)",
        border_radius="var(--radius-3)",
        padding="1.2em",
        width="100%",
        custom_attrs=testid("import-picker"),
    )


def _preview() -> rx.Component:
    return rx.cond(
        ImportState.summary != "",
        rx.box(
            rx.text(ImportState.summary, weight="medium", custom_attrs=testid("import-preview")),
            rx.foreach(ImportState.titles, lambda t: rx.text("• ", t, size="2", color="gray")),
            width="100%",
        ),
    )


def chats_form() -> rx.Component:
    return section(
        "Conversations",
        rx.select(
            SOURCES,
            value=ImportState.source,
            on_change=ImportState.set_source,
            custom_attrs=testid("import-source"),
        ),
        rx.text(rx.match(ImportState.source, *LABELS.items(), ""), size="1", color="gray"),
        _picker(),
        rx.hstack(
            rx.button(
                "Preview",
                variant="soft",
                on_click=ImportState.preview(rx.upload_files(upload_id=UPLOAD_ID)),
                custom_attrs=testid("import-preview-button"),
            ),
            rx.checkbox(
                "Learn memories from these",
                checked=ImportState.learn,
                on_change=ImportState.set_learn,
                custom_attrs=testid("import-learn"),
            ),
            align="center",
            spacing="4",
            wrap="wrap",
        ),
        _preview(),
        rx.button(
            rx.cond(ImportState.importing, "Importing…", "Import"),
            disabled=ImportState.importing,
            on_click=ImportState.start_import(rx.upload_files(upload_id=UPLOAD_ID)),
            custom_attrs=testid("import-start"),
        ),
        rx.cond(
            ImportState.progress != "",
            rx.text(ImportState.progress, size="2", custom_attrs=testid("import-progress")),
        ),
    )


def memories_form() -> rx.Component:
    return section(
        "What they know about you",
        rx.text(
            "Paste the memories ChatGPT (Settings → Personalization → Manage memories) or "
            "Claude shows: one fact per line.",
            size="2",
            color="gray",
        ),
        rx.form(
            rx.vstack(
                rx.text_area(
                    name="facts",
                    placeholder="- Prefers metric units\n- Lives in Lyon",
                    rows="5",
                    width="100%",
                    custom_attrs=testid("import-facts"),
                ),
                rx.hstack(
                    rx.select(["chatgpt", "claude"], name="origin", default_value="chatgpt"),
                    rx.button(
                        "Add to memory", type="submit", custom_attrs=testid("import-remember")
                    ),
                    spacing="3",
                ),
                width="100%",
            ),
            on_submit=ImportState.remember,
            reset_on_submit=True,
            width="100%",
        ),
    )


def import_page() -> rx.Component:
    return shell(
        IMPORT,
        "Import",
        rx.text(
            "Bring your history: conversations exported from ChatGPT, Claude, Open WebUI or "
            "LibreChat keep their titles and dates. Importing the same file again adds nothing.",
            color="gray",
        ),
        notice(ImportState.result, ImportState.error),
        chats_form(),
        memories_form(),
    )
