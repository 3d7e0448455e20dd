"""A conversation's two ids: the public uuid is checked once, at the service edge, and the
row key's Python name (``conversation_pk``) meets its SQL column (``conversation_id``) in one
place, so a run row stored before the rename still loads."""

from datetime import UTC, datetime

import pytest

from lumina_app.domain import ConversationNotFound, RunRecord, RunStatus, Scenario
from lumina_app.domain.ids import parse_conversation_uuid
from lumina_app.storage.sql.runs import run_record, run_values

pytestmark = pytest.mark.unit

UUID = "0b7b6c8e-4a57-4f8e-9a51-1f0f3c1c2d3e"


def test_a_uuid_or_an_imported_id_passes_the_edge() -> None:
    assert parse_conversation_uuid(UUID) == UUID
    assert parse_conversation_uuid("conv-mn3112l3") == "conv-mn3112l3"


@pytest.mark.parametrize("bad", ["", "../etc", "conv-x\n", "x" * 37, None, 7])
def test_anything_else_is_not_found_naming_what_was_sent(bad: object) -> None:
    with pytest.raises(ConversationNotFound) as caught:
        parse_conversation_uuid(bad)
    assert str(caught.value) == f"conversation {str(bad)!r} not found"


def test_an_id_cut_out_of_a_longer_name_is_reported_by_that_name() -> None:
    with pytest.raises(ConversationNotFound, match="'conv_nope!' not found"):
        parse_conversation_uuid("nope!", named="conv_nope!")


def _old_shape_row() -> dict[str, object]:
    """A ``lumina_run`` row as it is stored (and as a running cluster wrote it)."""
    started = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    return {
        "run_id": "run-00000000000000aa", "conversation_id": 41, "agent_id": "demo",
        "owner": "alice", "scenario": "continue", "provider": "demo", "model": "demo",
        "status": "complete", "context_first_seq": 1, "context_last_seq": 4,
        "context_messages": 4, "user_message_id": 7, "assistant_message_id": 8,
        "started_at": started, "finished_at": started, "error": None,
        "context": {"ids": [1, 2]}, "trimmed": 0,
    }  # fmt: skip


def test_a_stored_run_row_loads_with_its_row_key_as_conversation_pk() -> None:
    record = run_record(_old_shape_row())
    assert isinstance(record, RunRecord)
    assert record.conversation_pk == 41
    assert record.status is RunStatus.COMPLETE and record.scenario is Scenario.CONTINUE
    assert record.user_message_id == 7 and record.context == {"ids": [1, 2]}


def test_a_record_is_written_back_under_the_stored_column_names() -> None:
    row = _old_shape_row()
    assert run_values(run_record(row)) == row
