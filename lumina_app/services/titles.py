"""Titles that say what a conversation is about: after a new conversation's first answer,
the agent's provider proposes a short title in the background (providers that can: the
demo model does, deterministically). A title the person set — at creation, or by a rename
before the proposal lands — is never overwritten; the rename reaches open pages live."""

from __future__ import annotations

import asyncio
import logging

from lumina_app.agents.engine import title_from
from lumina_app.agents.run_driver import ActiveRun
from lumina_app.domain import LuminaError, Principal, RunStatus
from lumina_app.services.conversations import ConversationService

log = logging.getLogger(__name__)
PROPOSAL_SECONDS = 20.0


class Titles:
    def __init__(self, conversations: ConversationService) -> None:
        self.conversations = conversations
        self._pending: set[asyncio.Task] = set()

    def after_first_answer(self, principal: Principal, run: ActiveRun) -> None:
        """For a run that opened its conversation: propose a title once it has answered."""
        propose = getattr(run.provider, "propose_title", None)
        if propose is None or run.user.seq > 1:
            return
        task = asyncio.create_task(self._title(principal, run, propose), name="title")
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _title(self, principal: Principal, run: ActiveRun, propose) -> None:
        await run.done.wait()
        if run.result is None or run.result.status is not RunStatus.COMPLETE:
            return
        question = run.user.content
        try:
            title = await asyncio.wait_for(propose(question, run.result.content), PROPOSAL_SECONDS)
            if not title:
                return
            conversation = await self.conversations.get(principal, run.conversation.uuid)
            if conversation.title not in ("", title_from(question)) or title == conversation.title:
                return  # the person named it (or nothing would change)
            await self.conversations.retitle(principal, conversation, title[:255])
        except (LuminaError, TimeoutError) as exc:  # gone meanwhile, or no proposal in time
            log.info("no title proposed for %s: %s", run.conversation.uuid, exc)
