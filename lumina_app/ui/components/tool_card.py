"""A tool call inside an answer: a collapsible card (native <details>, no state) with the
tool's name, a status (running, error, done) and duration; open, its arguments and result."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.state.chat import ChatState
from lumina_app.ui.view_models.tool_views import ToolView


def _section(label: str, text, testid: str) -> rx.Component:
    return rx.box(
        rx.text(label, size="1", weight="bold", color="gray"),
        rx.el.pre(
            text,
            class_name="lumina-tool-text",
            custom_attrs={"data-testid": testid},
        ),
    )


def _permission_buttons(tool: ToolView) -> rx.Component:
    """An acp agent waits for the person: one button per option it offered."""
    return rx.cond(
        tool["options"].length() > 0,
        rx.hstack(
            rx.foreach(
                tool["options"],
                lambda option: rx.button(
                    option["name"],
                    size="1",
                    variant="soft",
                    on_click=ChatState.answer_permission(tool["key"], option["optionId"]),
                    custom_attrs={"data-testid": "permission-option"},
                ),
            ),
            spacing="2",
            padding="0 0.5em 0.5em",
        ),
    )


def tool_card(tool: ToolView) -> rx.Component:
    status = tool["status"]
    return rx.el.details(
        rx.el.summary(
            rx.hstack(
                rx.match(
                    status,
                    ("running", rx.spinner(size="1")),
                    ("error", rx.icon("circle_alert", size=14, color="var(--red-9)")),
                    rx.icon("wrench", size=14, color="var(--gray-10)"),
                ),
                rx.code(tool["name"], size="1", variant="ghost"),
                rx.match(
                    status,
                    ("running", rx.text("running…", size="1", color="gray")),
                    ("error", rx.badge("error", color_scheme="red", size="1", variant="soft")),
                    ("pending", rx.text("no result stored", size="1", color="gray")),
                    rx.fragment(),
                ),
                rx.spacer(),
                rx.text(tool["duration"], size="1", color="gray"),
                align="center",
                spacing="2",
                width="100%",
            ),
            class_name="lumina-tool-summary",
        ),
        rx.vstack(
            _section("Arguments", tool["arguments"], "tool-arguments"),
            rx.cond(
                status != "running",
                _section("Result", tool["content"], "tool-result"),
            ),
            spacing="2",
            padding="0.25em 0.5em 0.5em",
        ),
        class_name="lumina-tool-card",
        custom_attrs={"data-testid": "tool-card", "data-status": status, "data-tool": tool["name"]},
    )


def _card_with_choices(tool: ToolView) -> rx.Component:
    return rx.fragment(tool_card(tool), _permission_buttons(tool))


def tool_cards(tools) -> rx.Component:
    return rx.cond(
        tools.length() > 0,
        rx.vstack(
            rx.foreach(tools, _card_with_choices), spacing="1", width="100%", margin_y="0.4em"
        ),
    )
