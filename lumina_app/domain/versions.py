"""Versions of an answer: a regenerate keeps the replaced answer (``superseded``) and adds
a new one to the same turn, so the rows after a question are one or more versions, each
the rows one run wrote (its answers and their TOOL rows), in seq order; the live one is
always the last. The API's ``version`` / ``versions`` and the UI's "n / m" switcher both come
from :func:`number_versions`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AnswerRow:
    """What numbering needs of a row after a question."""

    seq: int
    turn_id: str
    is_assistant: bool  # else a TOOL row: it belongs to the answer that asked for it
    run_id: str | None  # the run that wrote an ASSISTANT row (None: not recorded)


def number_versions(rows: Iterable[AnswerRow]) -> dict[int, tuple[int, int]]:
    """``seq -> (version, versions)`` for every answer row, rows given in seq order.

    An ASSISTANT row starts a new version when a different run wrote it, or — for rows
    without a run (imported archives) — when the row before it in the turn is itself an
    answer (a final answer; an answer that called tools is followed by its results)."""
    numbered: dict[int, tuple[str, int]] = {}
    count: dict[str, int] = {}
    last: dict[str, AnswerRow] = {}
    run_of: dict[str, str | None] = {}
    for row in rows:
        turn = row.turn_id
        before = last.get(turn)
        if before is None:
            new = True
        elif not row.is_assistant:
            new = False
        elif row.run_id is not None:
            new = row.run_id != run_of.get(turn)
        else:
            new = before.is_assistant
        if new:
            count[turn] = count.get(turn, 0) + 1
        if row.is_assistant:
            run_of[turn] = row.run_id
        last[turn] = row
        numbered[row.seq] = (turn, count[turn])
    return {seq: (version, count[turn]) for seq, (turn, version) in numbered.items()}
