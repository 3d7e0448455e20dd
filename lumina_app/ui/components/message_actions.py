"""The small row under a message: copy, edit in place (questions), a new conversation
from here (fork), regenerate (the last answer), the answer's context, the "n / m"
switcher of a regenerated answer and the "< k / n >" branches of an edited question;
plus an answer's collapsible thinking."""

from __future__ import annotations

import reflex as rx

from lumina_app.ui.components.context import context_button
from lumina_app.ui.components.used_memories import used_mark
from lumina_app.ui.state.actions import MessageActions
from lumina_app.ui.state.chat import ChatState
from lumina_app.ui.view_models.views import MessageView


def _action(icon: str, label: str, testid: str, **props) -> rx.Component:
    return rx.tooltip(
        rx.icon_button(
            rx.icon(icon, size=13),
            size="1",
            variant="ghost",
            color_scheme="gray",
            aria_label=label,
            custom_attrs={"data-testid": testid},
            **props,
        ),
        content=label,
    )


def _switcher(kind: str, number, count, previous, following, *, blocked=False) -> rx.Component:
    """The "< n / m >" of a ``kind`` (version, branch): its test ids and labels."""
    return rx.hstack(
        rx.icon_button(
            rx.icon("chevron-left", size=13),
            size="1",
            variant="ghost",
            disabled=(number <= 1) | blocked,
            on_click=previous,
            aria_label=f"Previous {kind}",
            custom_attrs={"data-testid": f"{kind}-previous"},
        ),
        rx.text(
            number.to_string() + " / " + count.to_string(),
            size="1",
            color="gray",
            white_space="nowrap",
            custom_attrs={"data-testid": f"{kind}-label"},
        ),
        rx.icon_button(
            rx.icon("chevron-right", size=13),
            size="1",
            variant="ghost",
            disabled=(number >= count) | blocked,
            on_click=following,
            aria_label=f"Next {kind}",
            custom_attrs={"data-testid": f"{kind}-next"},
        ),
        spacing="1",
        align="center",
        flex_shrink="0",
    )


def version_switcher(msg: MessageView) -> rx.Component:
    """Earlier versions of a regenerated answer, read-only; the newest is the live one."""
    return rx.cond(
        msg["switcher"],
        _switcher(
            "version",
            msg["version"],
            msg["versions"],
            ChatState.show_version(msg["turn"], msg["version"] - 1),
            ChatState.show_version(msg["turn"], msg["version"] + 1),
        ),
    )


def branch_switcher(msg: MessageView) -> rx.Component:
    """The branches of an edited question: switching shows everything after it as that
    branch left it (the next turn's context follows)."""
    return rx.cond(
        msg["branches"] > 1,
        _switcher(
            "branch",
            msg["branch"],
            msg["branches"],
            ChatState.switch_branch(msg["seq"], msg["branch"] - 1),
            ChatState.switch_branch(msg["seq"], msg["branch"] + 1),
            blocked=ChatState.streaming,
        ),
    )


def message_actions(msg: MessageView) -> rx.Component:
    is_user = msg["role"] == "user"
    idle = ~ChatState.streaming
    return rx.hstack(
        version_switcher(msg),
        branch_switcher(msg),
        _action("copy", "Copy", "copy-message", on_click=rx.set_clipboard(msg["content"])),
        rx.cond(
            idle & ~MessageActions.busy & (MessageActions.edit_seq != msg["seq"]),
            rx.fragment(
                rx.cond(
                    is_user,
                    _action(
                        "pencil",
                        "Edit",
                        "edit-message",
                        on_click=MessageActions.start_edit(msg["seq"], msg["content"]),
                    ),
                ),
                _action(
                    "git-fork",
                    "New conversation from here",
                    "fork-message",
                    on_click=MessageActions.fork_here(msg["seq"]),
                ),
                rx.cond(
                    msg["last"] & (msg["status"] == "stopped"),
                    rx.button(
                        rx.icon("play", size=12),
                        "Continue",
                        size="1",
                        variant="soft",
                        on_click=ChatState.continue_answer,
                        custom_attrs={"data-testid": "continue-message"},
                    ),
                ),
                rx.cond(
                    msg["last"] & (msg["status"] != "superseded"),
                    _action(
                        "refresh-cw",
                        "Regenerate",
                        "regenerate-message",
                        on_click=ChatState.regenerate,
                    ),
                ),
            ),
        ),
        context_button(msg["run"]),
        used_mark(msg),
        spacing="2",
        align="center",
        wrap="wrap",
        row_gap="0",
        margin_left=["0", "3.2em"],  # under the message, past the avatar (not on a phone)
        class_name="lumina-actions",
        custom_attrs={"data-testid": "message-actions"},
    )


def thinking_block(text) -> rx.Component:
    """A reasoning model's thoughts before its answer, folded away until opened."""
    return rx.cond(
        text != "",
        rx.el.details(
            rx.el.summary(rx.text("Thinking", size="1", color="gray", as_="span")),
            rx.text(text, size="2", color="gray", white_space="pre-wrap", padding_y="0.3em"),
            custom_attrs={"data-testid": "thinking"},
            margin_y="0.3em",
        ),
    )
