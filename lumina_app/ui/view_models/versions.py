"""Which version of each answer the page shows. A regenerated turn holds every version
(the earlier ones ``superseded``); the page shows one — the live one unless the reader
picked an earlier one with the "n / m" switcher — and hides the others. Numbering is the
API's (``domain.versions``); this only decides what is on screen."""

from __future__ import annotations

from collections.abc import Mapping

from lumina_app.domain.versions import AnswerRow, number_versions
from lumina_app.ui.view_models.views import MessageView


def arrange(rows: list[MessageView], shown: Mapping[str, int] | None = None) -> list[MessageView]:
    """``rows`` numbered, with the version ``shown`` of each turn (default: the newest)
    visible and the others hidden; the switcher on the last row shown of a turn with
    several versions; ``last`` on the page's final answer row shown."""
    answers = [
        AnswerRow(r["seq"], r["turn"], r["role"] == "assistant", r["run"] or None)
        for r in rows
        if r["role"] != "user"
    ]
    numbers = number_versions(answers)
    out: list[MessageView] = []
    switcher_at: dict[str, int] = {}
    for row in rows:
        version, versions = numbers.get(row["seq"], (1, 1))
        hidden = row["role"] != "user" and version != (shown or {}).get(row["turn"], versions)
        view = MessageView(
            **{
                **row,
                "version": version,
                "versions": versions,
                "hidden": hidden,
                "switcher": False,
                "last": False,
            }
        )
        if versions > 1 and not hidden and row["role"] == "assistant":
            switcher_at[row["turn"]] = len(out)
        out.append(view)
    for index in switcher_at.values():
        out[index]["switcher"] = True
    shown_answers = [i for i, r in enumerate(out) if r["role"] == "assistant" and not r["hidden"]]
    if shown_answers:
        out[shown_answers[-1]]["last"] = True
    return out


def choices(rows: list[MessageView]) -> dict[str, int]:
    """The version each multi-version turn shows now (kept when the page changes)."""
    return {r["turn"]: r["version"] for r in rows if r["switcher"]}


def show(rows: list[MessageView], turn: str, version: int) -> list[MessageView]:
    """Show another version of one turn's answer; the other turns stay as they are."""
    picked = choices(rows)
    if not rows or version < 1:
        return rows
    picked[turn] = version
    return arrange(rows, picked)


def retire_answer(rows: list[MessageView]) -> list[MessageView]:
    """Before a regenerate: the newest turn's shown answer leaves the page's flow (it is
    about to be superseded; it comes back as the previous version once the new one is in)."""
    last_question = max((i for i, r in enumerate(rows) if r["role"] == "user"), default=-1)
    return [
        MessageView(**{**r, "hidden": True, "status": "superseded", "last": False})
        if i > last_question and not r["hidden"]
        else r
        for i, r in enumerate(rows)
    ]


def with_memories(rows: list[MessageView], run_id: str, used: int) -> list[MessageView]:
    """``rows`` with the answers of ``run_id`` marked as given ``used`` memories."""
    return [
        MessageView(**{**r, "memories": used}) if r["run"] == run_id and r["role"] != "user" else r
        for r in rows
    ]
