"""One message: avatar, author, time, status, and the text (Markdown for answers)."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.components.edit_box import edit_box
from lumina_app.ui.components.file_cards import file_list
from lumina_app.ui.components.message_actions import message_actions, thinking_block
from lumina_app.ui.components.times import short_time
from lumina_app.ui.components.tool_card import tool_cards
from lumina_app.ui.state.actions import MessageActions
from lumina_app.ui.state.chat import ChatState
from lumina_app.ui.view_models.views import MessageView, StepView

STATUS_COLORS = {
    "superseded": "gray",
    "stopped": "gray",  # the person's own Stop: neutral, not an error
    "interrupted": "orange",
    "failed": "red",
    "streaming": "blue",
}


def _code_block(value: str, **props) -> rx.Component:
    return rx.code_block(value, can_copy=True, wrap_long_lines=True, margin_y="0.5em", **props)


def markdown(text) -> rx.Component:
    """Markdown without raw HTML: HTML inside a message is shown, never run."""
    return rx.markdown(
        text, use_raw=False, component_map={"pre": _code_block}, class_name="lumina-md"
    )


def avatar(role) -> rx.Component:
    return rx.cond(
        role == "user",
        rx.avatar(fallback="You", size="2", radius="full", color_scheme="gray"),
        rx.avatar(fallback="AI", size="2", radius="full", color_scheme="violet"),
    )


def status_badge(status) -> rx.Component:
    return rx.cond(
        (status != "complete") & (status != ""),
        rx.badge(
            status,
            color_scheme=rx.match(status, *STATUS_COLORS.items(), "gray"),
            variant="soft",
            size="1",
            custom_attrs={"data-testid": "message-status"},
        ),
    )


def timestamp(time) -> rx.Component:
    """The date and time; on a phone "14:03" today, "Mar 3" another day (CSS picks one:
    .lumina-time-*)."""
    return rx.fragment(
        rx.moment(time, format="YYYY-MM-DD HH:mm", class_name="lumina-time lumina-time-long"),
        short_time(time, class_name="lumina-time lumina-time-short"),
    )


def bubble(role, author, time, body: rx.Component, status, error, testid: str) -> rx.Component:
    return rx.hstack(
        avatar(role),
        rx.box(
            rx.hstack(
                rx.text(author, weight="bold", size="2"),
                rx.cond(time != "", timestamp(time)),
                status_badge(status),
                spacing="2",
                align="center",
            ),
            body,
            rx.cond(
                (error != "") & (status != "stopped"),
                rx.callout(
                    error, icon="triangle_alert", color_scheme="red", size="1", margin_top="0.5em"
                ),
            ),
            min_width="0",
            width="100%",
        ),
        align="start",
        spacing="3",
        width="100%",
        padding_y="0.6em",
        class_name="lumina-message",
        custom_attrs={"data-testid": testid, "data-role": role},
    )


def user_text(text) -> rx.Component:
    return rx.text(text, white_space="pre-wrap", overflow_wrap="anywhere", size="3")


def question_body(text, files) -> rx.Component:
    """A question: its words, then its files (thumbnails and cards); either may be empty."""
    return rx.fragment(rx.cond(text != "", user_text(text)), file_list(files))


def answer_body(text, tools, thinking="") -> rx.Component:
    """An answer's thinking (folded), its text (Markdown) and the cards of its tools."""
    return rx.fragment(
        thinking_block(thinking), rx.cond(text != "", markdown(text)), tool_cards(tools)
    )


def step_body(step: StepView) -> rx.Component:
    """An earlier step of an answer, inline: a search hit on its row scrolls here."""
    return rx.box(
        answer_body(step["content"], step["tools"], step["thinking"]),
        id="msg-" + step["seq"].to_string(),
        custom_attrs={"data-testid": "answer-step"},
    )


def steps_and_answer(steps, text, tools, thinking) -> rx.Component:
    return rx.fragment(rx.foreach(steps, step_body), answer_body(text, tools, thinking))


def message_item(msg: MessageView) -> rx.Component:
    is_user = msg["role"] == "user"
    return rx.cond(
        ~msg["hidden"],  # another version of this answer is the one shown
        rx.box(
            bubble(
                msg["role"],
                rx.cond(is_user, "You", ChatState.agent_name),
                msg["time"],
                rx.cond(
                    is_user,
                    rx.cond(
                        MessageActions.edit_seq == msg["seq"],
                        edit_box(),  # edited in place (a new branch once sent)
                        question_body(msg["content"], msg["files"]),
                    ),
                    steps_and_answer(msg["steps"], msg["content"], msg["tools"], msg["thinking"]),
                ),
                msg["status"],
                msg["error"],
                "message",
            ),
            message_actions(msg),
            # A search hit opens the conversation scrolled to this message, marked.
            id="msg-" + msg["seq"].to_string(),
            class_name=rx.cond(ChatState.focus_seq == msg["seq"], "lumina-focus", ""),
        ),
    )
