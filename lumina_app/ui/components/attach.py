"""Attaching files in the composer (#48): the paperclip (a file picker, several files),
the chips before sending (name, size, ×; a thumbnail for an image; progress while an
upload is on its way) and why a file was refused, said next to the composer.

The paperclip is Reflex's upload (react-dropzone). A drop anywhere on the chat column and
a pasted image are handed to it by ``assets/lumina-composer.js``, so all three arrive
through one upload handler (``AttachState.upload``)."""

from __future__ import annotations

from typing import Any

import reflex as rx
from reflex.vars import ArrayVar, ObjectVar, Var

from lumina_app.settings import get_settings
from lumina_app.ui.components import testid
from lumina_app.ui.state.attach import UPLOAD_ID, AttachState, max_files
from lumina_app.ui.view_models.file_views import FileView


def _x_button(label: str | Var, on_click: Any, **props: Any) -> rx.Component:
    """The small grey ✕ that removes a chip, stops an upload or dismisses a refusal."""
    return rx.icon_button(
        rx.icon("x", size=12),
        type="button",
        size="1",
        variant="ghost",
        color_scheme="gray",
        aria_label=label,
        on_click=on_click,
        **props,
    )


def _held_back(rejected: Var) -> rx.event.EventSpec:
    """Only each refused file's name and reason go to the server (not its bytes)."""
    said = rejected.to(ArrayVar, list[dict]).map(
        lambda r: (
            r.to(ObjectVar, dict)["file"].to(ObjectVar, dict)["name"].to(str)
            + "\n"
            + r.to(ObjectVar, dict)["errors"]
            .to(ArrayVar, list[dict])[0]
            .to(ObjectVar, dict)["code"]
            .to(str)
        )
    )
    return AttachState.rejected(said)


def paperclip() -> rx.Component:
    """The picker; also the drop target the page's script hands drops and pastes to."""
    upload = AttachState.upload(
        rx.upload_files_chunk(upload_id=UPLOAD_ID, on_upload_progress=AttachState.progress)
    )
    return rx.upload.root(
        rx.tooltip(
            rx.icon_button(
                rx.icon("paperclip", size=18),
                type="button",
                variant="soft",
                color_scheme="gray",
                size="3",
                aria_label="Attach files",
                custom_attrs=testid("attach-button"),
            ),
            content="Attach files (or drop or paste them here)",
        ),
        id=UPLOAD_ID,
        multiple=True,
        max_files=max_files(),
        max_size=get_settings().max_file_bytes,
        no_keyboard=True,
        on_drop=[AttachState.begin(), upload],
        on_drop_rejected=_held_back,
        class_name="lumina-attach",
        custom_attrs=testid("attach-zone"),
    )


def _thumbnail(chip: FileView) -> rx.Component:
    return rx.cond(
        chip["image"],
        rx.image(
            src=chip["src"],
            alt=chip["name"],
            class_name="lumina-chip-thumb",
            custom_attrs=testid("chip-thumbnail"),
        ),
        rx.icon("file-text", size=18, class_name="lumina-chip-icon"),
    )


def chip(file: FileView) -> rx.Component:
    return rx.hstack(
        _thumbnail(file),
        rx.vstack(
            rx.text(file["name"], size="1", weight="medium", class_name="lumina-chip-name"),
            rx.text(file["size"], size="1", color="gray"),
            spacing="0",
            min_width="0",
        ),
        _x_button(
            f"Remove {file['name']}",
            AttachState.remove(file["id"]),
            custom_attrs=testid("chip-remove"),
        ),
        align="center",
        spacing="2",
        class_name="lumina-chip",
        custom_attrs={"data-testid": "chip", "data-file-id": file["id"]},
    )


def uploading_chip() -> rx.Component:
    return rx.cond(
        AttachState.uploading,
        rx.hstack(
            rx.spinner(size="1"),
            rx.text("Uploading… ", AttachState.percent, "%", size="1"),
            rx.progress(value=AttachState.percent, max=100, size="1", width="4em"),
            _x_button("Stop the upload", AttachState.cancel, custom_attrs=testid("upload-cancel")),
            align="center",
            spacing="2",
            class_name="lumina-chip",
            custom_attrs=testid("attach-uploading"),
        ),
    )


def refused() -> rx.Component:
    """Why a file was not attached: beside the composer, until dismissed or the next try."""
    return rx.cond(
        AttachState.refused != "",
        rx.hstack(
            rx.icon("circle-alert", size=14, color="var(--red-11)"),
            rx.text(AttachState.refused, size="1", custom_attrs=testid("attach-refused")),
            rx.spacer(),
            _x_button("Dismiss", AttachState.dismiss),
            align="center",
            width="100%",
            padding="0.3em 0.6em",
            border_radius="var(--radius-2)",
            background="var(--red-a3)",
            custom_attrs=testid("attach-refused-box"),
        ),
    )


def wait_note() -> rx.Component:
    """Shown by the page's script when Send is pressed while a file still uploads."""
    return rx.text(
        "A file is still uploading: send once it is done (your message is kept).",
        size="1",
        color="var(--amber-11)",
        class_name="lumina-hidden",
        custom_attrs=testid("wait-upload"),
    )


def chips() -> rx.Component:
    """The chips row, and the ids the form sends with the message (the server checks
    them against its own list)."""
    return rx.fragment(
        rx.cond(
            (AttachState.chips.length() > 0) | AttachState.uploading,
            rx.flex(
                rx.foreach(AttachState.chips, chip),
                uploading_chip(),
                wrap="wrap",
                gap="0.4em",
                width="100%",
                custom_attrs=testid("chips"),
            ),
        ),
        rx.el.input(
            type="hidden",
            name="files",
            value=AttachState.chips.map(lambda c: c["id"]).join(","),
            custom_attrs=testid("chip-ids"),
        ),
    )


def drop_hint() -> rx.Component:
    """Shown by the page's script while files are dragged over the chat."""
    return rx.center(
        rx.vstack(
            rx.icon("paperclip", size=28),
            rx.text("Drop files to attach them", size="3", weight="medium"),
            align="center",
        ),
        class_name="lumina-drop-hint lumina-hidden",
        custom_attrs=testid("drop-hint"),
    )
