"""A turn reads as one answer: the rows a run wrote (an answer that asked for tools, its
results paired into it, the answer after them…) are shown as one assistant message with
the earlier steps inline, in order, and one action row. Display only: the rows the page
pages, arranges and versions stay one per stored message."""

from __future__ import annotations

from lumina_app.ui.view_models.views import MessageView, StepView


def one_per_turn(rows: list[MessageView]) -> list[MessageView]:
    """``rows`` with each shown answer that continues the previous shown answer's run
    (nothing asked in between) folded into it; the folded message keeps the last row's
    text, status, version and actions, and the first row's time."""
    out: list[MessageView] = []
    open_at = -1  # the index in ``out`` of the answer a next step would join
    for row in rows:
        if row["hidden"]:
            out.append(row)
            continue
        if row["role"] == "user":
            open_at = -1
        elif row["role"] == "assistant":
            head = out[open_at] if open_at >= 0 else None
            if head is not None and row["run"] and row["run"] == head["run"]:
                out[open_at] = MessageView(
                    **{
                        **row,
                        "time": head["time"],
                        "steps": [*head["steps"], _step(head)],
                        "memories": max(head["memories"], row["memories"]),
                    }
                )
                continue
            open_at = len(out)
        out.append(row)
    return out


def _step(row: MessageView) -> StepView:
    return StepView(
        seq=row["seq"], content=row["content"], thinking=row["thinking"], tools=row["tools"]
    )


def split_live(rows: list[MessageView], run_id: str) -> tuple[list[MessageView], list[StepView]]:
    """While ``run_id`` streams, the steps it has done so far (already rows) are shown in
    the streaming message, not as a message of their own: ``rows`` without them, and
    them. ``rows`` is ``one_per_turn``'s."""
    if run_id:
        for index in range(len(rows) - 1, -1, -1):
            row = rows[index]
            if row["hidden"]:
                continue
            if row["role"] == "assistant" and row["run"] == run_id:
                return rows[:index] + rows[index + 1 :], [*row["steps"], _step(row)]
            break
    return rows, []
