"""Numbering the versions of an answer: one per run that wrote rows after the question,
tool rows with the answer that asked, rows without a run (imported) by their shape."""

from __future__ import annotations

import pytest

from lumina_app.domain.versions import AnswerRow, number_versions

pytestmark = pytest.mark.unit


def test_one_answer_is_version_one_of_one() -> None:
    assert number_versions([AnswerRow(2, "t1", True, "run-a")]) == {2: (1, 1)}


def test_each_run_is_a_version_with_its_tool_rows() -> None:
    rows = [
        AnswerRow(2, "t", True, "run-a"),
        AnswerRow(3, "t", False, None),
        AnswerRow(4, "t", True, "run-a"),
        AnswerRow(5, "t", True, "run-b"),
        AnswerRow(6, "t", True, "run-c"),
        AnswerRow(7, "t", False, None),
        AnswerRow(8, "t", True, "run-c"),
    ]
    assert number_versions(rows) == {
        2: (1, 3),
        3: (1, 3),
        4: (1, 3),
        5: (2, 3),
        6: (3, 3),
        7: (3, 3),
        8: (3, 3),
    }


def test_rows_without_a_run_split_after_a_final_answer() -> None:
    rows = [
        AnswerRow(2, "t", True, None),
        AnswerRow(3, "t", False, None),
        AnswerRow(4, "t", True, None),
        AnswerRow(5, "t", True, None),
        AnswerRow(7, "u", True, None),
    ]
    assert number_versions(rows) == {2: (1, 2), 3: (1, 2), 4: (1, 2), 5: (2, 2), 7: (1, 1)}
