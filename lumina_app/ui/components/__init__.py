"""Small presentational components; each reads the states it shows, nothing else."""

from __future__ import annotations

from typing import Any

import reflex as rx


def testid(name: str) -> dict:
    """The ``data-testid`` attribute the tests and the page's scripts find an element by."""
    return {"data-testid": name}


def cancel_button(on_click: Any, **props: Any) -> rx.Component:
    """A form's or a dialog's grey "Cancel" (a plain button: it never submits the form)."""
    return rx.button(
        "Cancel", type="button", variant="soft", color_scheme="gray", on_click=on_click, **props
    )


def confirm_dialog(
    trigger: rx.Component,
    title: rx.Component,
    description: rx.Component,
    label: str,
    on_click: Any,
    name: str,
    **cancel: Any,
) -> rx.Component:
    """An "are you sure?" dialog that ``trigger`` opens: Cancel (``cancel`` its props), or
    the red ``label`` that acts (``name`` is its test id)."""
    return rx.alert_dialog.root(
        rx.alert_dialog.trigger(trigger),
        rx.alert_dialog.content(
            title,
            description,
            rx.flex(
                rx.alert_dialog.cancel(rx.button("Cancel", variant="soft", **cancel)),
                rx.alert_dialog.action(
                    rx.button(
                        label, color_scheme="red", on_click=on_click, custom_attrs=testid(name)
                    )
                ),
                spacing="3",
                justify="end",
                margin_top="1em",
            ),
        ),
    )


def row_button(label: str, name: str, **props: Any) -> rx.Component:
    """A table row's small soft button (enable, disable, sign out, revoke...); ``name`` is
    its test id."""
    return rx.button(label, size="1", variant="soft", **props, custom_attrs=testid(name))


def said(text: rx.Var[str], icon: str, color: str, **props: Any) -> rx.Component:
    """A small callout of ``text`` (an outcome, an error, a warning), shown while there is one."""
    return rx.cond(text != "", rx.callout(text, icon=icon, color_scheme=color, size="1", **props))
