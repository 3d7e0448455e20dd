"""Auto-recall over other conversations, without servers: the system message names each
other conversation on its lines and reads back the same (what the demo model parses), a
long message is searched by its first 2,000 characters, the current conversation is never
drawn on twice, a temporary one never draws on others, and the budget counts the second
heading."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lumina_app.agents.definitions.memory_config import AutoRecallConfig, parse_memory
from lumina_app.agents.tools.auto_recall import (
    OTHERS_PREFIX,
    PREFIX,
    recall_earlier,
    recalled_in,
    recalled_message,
)
from lumina_app.domain import ConversationInfo, MsgRole
from lumina_app.domain.search import MAX_RECALL_CHARS
from lumina_app.recall.retriever import Recalled

pytestmark = pytest.mark.unit

WHEN = datetime(2026, 3, 2, 14, 0, tzinfo=UTC)


def hit(message_id: int, seq: int, text: str, score: float, pk: int = 1) -> Recalled:
    return Recalled(message_id, pk, seq, MsgRole.USER, text, WHEN, score)  # type: ignore[arg-type]


class Retriever:
    """A stand-in retriever: what each search was asked, and fixed hits."""

    def __init__(self, here: list[Recalled], across: list[tuple[str, str, Recalled]]) -> None:
        self.here, self.others, self.asked = here, across, []

    async def in_conversation(
        self, conversation_pk, query, *, limit, exclude_seqs, before_seq=None
    ):
        self.asked.append(("here", query))
        return self.here[:limit]

    async def across(self, owner, query, *, agent_id, limit):
        self.asked.append(("across", owner, agent_id, query))
        return self.others[:limit]


def current() -> ConversationInfo:
    conversation = ConversationInfo.new(agent_id="a", title="Now")
    conversation.last_seq = 20
    return conversation


async def test_other_conversations_are_named_and_read_back_the_same() -> None:
    now = current()
    stand_in = Retriever(
        [hit(5, 3, "the sprint ends March 29", 0.02)],
        [
            ("u-other", 'Say "plans"\nnow', hit(9, 12, "the budget is 4,000 euros", 0.03, pk=2)),
            (now.uuid, "Now", hit(7, 19, "in the window", 0.05, pk=now.id)),  # never twice
        ],
    )
    config = AutoRecallConfig(limit=5, tokens=1000, scope="all")
    question = "when does the sprint end? " + "x" * 3000
    found = await recall_earlier(stand_in, now, question, config, in_window={18, 19, 20},
                                 owner="ada", agent_id="a")  # fmt: skip
    assert [h.seq for h in found.here] == [3]
    assert [(e.conversation_uuid, e.message_id) for e in found.elsewhere] == [("u-other", 9)]
    assert all(len(asked[-1]) == MAX_RECALL_CHARS for asked in stand_in.asked)
    assert stand_in.asked[1][:3] == ("across", "ada", "a")

    text = found.message()
    assert text.startswith(PREFIX) and f"\n{OTHERS_PREFIX}\n" in text
    assert "[#12 2026-03-02 14:00 user, in \"Say 'plans' now\"] the budget is 4,000 euros" in text
    assert recalled_in(text) == [(3, None), (12, "Say 'plans' now")]
    recipe = found.recipe()
    assert recipe["recalled"] == [5]
    assert recipe["recalledElsewhere"][0] | {"score": 0} == {
        "id": 9, "conversationPk": 2, "conversationId": "u-other",
        "title": 'Say "plans"\nnow', "seq": 12, "score": 0,
    }  # fmt: skip
    assert recalled_message([], found.elsewhere).startswith(OTHERS_PREFIX)
    assert recalled_in("What you know about this person:\n[#1 x] y") == []


async def test_scope_conversation_never_looks_elsewhere_and_a_new_conversation_can() -> None:
    other = ("u-other", "Earlier", hit(9, 1, "the budget is 4,000 euros", 0.03, pk=2))
    stand_in = Retriever([], [other])
    fresh = ConversationInfo.new(agent_id="a", title="New")  # nothing said here yet
    plain = AutoRecallConfig(limit=5, tokens=1000)
    assert not await recall_earlier(stand_in, fresh, "budget?", plain, in_window=(),
                                    owner="ada", agent_id="a")  # fmt: skip
    assert stand_in.asked == []
    wide = AutoRecallConfig(limit=5, tokens=1000, scope="all")
    found = await recall_earlier(stand_in, fresh, "budget?", wide, in_window=(),
                                 owner="ada", agent_id="a")  # fmt: skip
    assert [e.message_id for e in found.elsewhere] == [9] and not found.here
    temporary = ConversationInfo.new(agent_id="a", title="Private", temporary=True)
    assert not await recall_earlier(stand_in, temporary, "budget?", wide, in_window=(),
                                    owner="ada", agent_id="a")  # fmt: skip
    tight = AutoRecallConfig(limit=5, tokens=12, scope="all")  # no room for heading + line
    assert not await recall_earlier(stand_in, fresh, "budget?", tight, in_window=(),
                                    owner="ada", agent_id="a")  # fmt: skip


def test_the_scope_is_checked() -> None:
    def parsed(block):
        return parse_memory({"memory": {"autoRecall": block}}, None)

    assert parsed({"scope": "all"}).auto_recall == AutoRecallConfig(5, 1000, "all")
    assert parsed(True).auto_recall.scope == "conversation"
    for bad in ("everywhere", "", None, ["all"], 1):
        problem = parsed({"scope": bad})
        assert isinstance(problem, str) and "'memory.autoRecall.scope' must be" in problem, bad


def test_the_context_view_names_where_recalled_messages_came_from() -> None:
    from lumina_app.services.runs import RecalledFrom
    from lumina_app.ui.view_models.context_rows import recalled_facts

    recalled = [
        RecalledFrom(5, 3, "u-now", None, WHEN),
        RecalledFrom(9, 12, "u-other", "Project planning", WHEN),
        RecalledFrom(10, 14, "u-other", "Project planning", WHEN),
    ]
    assert recalled_facts(recalled) == [
        "recalled #3 from this conversation",
        "recalled #12, #14 from “Project planning” (2026-03-02)",
    ]
