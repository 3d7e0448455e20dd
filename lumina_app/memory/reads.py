"""The memory layer's read repositories, one per consumer (and the conversation lookup
they share), built once over the cold store by the composition root, which hands each
service its own."""

from __future__ import annotations

from dataclasses import dataclass

from lumina_app.memory.archive_rows import ArchiveRows
from lumina_app.memory.context_reads import ContextReads
from lumina_app.memory.conversation_lookup import ConversationLookup
from lumina_app.memory.conversation_reads import ConversationReads
from lumina_app.memory.gateway_history import GatewayHistory
from lumina_app.memory.run_inspection import RunInspection
from lumina_app.memory.search_reads import SearchReads
from lumina_app.memory.summary_store import SummaryStore
from lumina_app.storage.cold_store import ColdStore
from lumina_app.storage.sql.database import SQLDatabase


@dataclass(frozen=True, slots=True)
class MemoryReads:
    lookup: ConversationLookup  # a conversation by id, and the one visibility rule
    conversations: ConversationReads
    search: SearchReads
    gateway: GatewayHistory
    archive: ArchiveRows
    runs: RunInspection
    summaries: SummaryStore
    context: ContextReads

    @classmethod
    def over(cls, cold: ColdStore, db: SQLDatabase, *, window: int) -> MemoryReads:
        """Every repository over ``cold`` and, for the queries of their own, ``db``;
        ``window`` is N, the hot window's size, which a run's context reads also use."""
        return cls(
            lookup=ConversationLookup(cold),
            conversations=ConversationReads(cold, db),
            search=SearchReads(db),
            gateway=GatewayHistory(db),
            archive=ArchiveRows(cold, db),
            runs=RunInspection(cold, db),
            summaries=SummaryStore(cold),
            context=ContextReads(cold, window=window),
        )
