"""Titles that say what a conversation is about: after a new conversation's first answer,
the agent's provider proposes a short title in the background — the demo model
deterministically, an OpenAI-compatible one with one small marked request
(``agents/definitions/titling.py``). An agent with ``"titles": false``, or whose provider cannot
propose (acp), keeps the cut first message; so does a failed or empty proposal (logged).

A title the person set is never overwritten: one given at creation is not asked about,
and the proposal is stored only if the title is still the one it replaces (one
conditional UPDATE), so a rename that lands while the model thinks wins. The rename
reaches open pages live, as any rename does."""

from __future__ import annotations

import asyncio
import logging

from lumina_app.agents.definitions.titling import TitleFailed, clean_title
from lumina_app.agents.run.engine import title_from
from lumina_app.agents.run.run_driver import ActiveRun
from lumina_app.agents.run.turns import RunRequest
from lumina_app.domain import LuminaError, Principal, RunStatus
from lumina_app.domain.tasks import keep
from lumina_app.services.conversations import ConversationService

log = logging.getLogger(__name__)


class Titles:
    def __init__(self, conversations: ConversationService, *, timeout: float = 15.0) -> None:
        self.conversations = conversations
        self.timeout = timeout
        self._pending: set[asyncio.Task] = set()

    def run_accepted(self, request: RunRequest, run: ActiveRun) -> None:
        """The engine accepted a run (its ``on_run_started``): a question asked anew may
        have opened its conversation."""
        if request.asks:
            self.after_first_answer(request.principal, run)

    def after_first_answer(self, principal: Principal, run: ActiveRun) -> None:
        """For a run that opened its conversation: propose a title once it has answered."""
        propose = getattr(run.provider, "propose_title", None)
        if propose is None or not run.agent.titles or run.user.seq > 1:
            return
        if run.conversation.title not in ("", title_from(run.user.content)):
            return  # named when it was created
        keep(self._pending, self._title(principal, run, propose), "title")

    async def settled(self) -> None:
        """Every proposal asked for so far has landed or failed (tests, shutdown)."""
        while self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)

    async def close(self) -> None:
        for task in self._pending:
            task.cancel()
        await self.settled()

    async def _title(self, principal: Principal, run: ActiveRun, propose) -> None:
        await run.done.wait()
        if run.result is None or run.result.status is not RunStatus.COMPLETE:
            return
        conversation = run.conversation
        uuid, replacing = conversation.uuid, conversation.title
        try:
            async with asyncio.timeout(self.timeout):
                reply = await propose(run.user.content, run.result.content, run.agent.title_prompt)
            title = clean_title(reply)
            if title is None:
                raise TitleFailed(f"an unusable reply: {reply!r:.80}")
            if title != replacing:
                await self.conversations.propose_title(
                    principal, conversation, title, replacing=replacing
                )
        except TimeoutError:
            log.warning("no title for %s: no proposal within %.0f s", uuid, self.timeout)
        except TitleFailed as exc:
            log.warning("no title for %s: %s", uuid, exc)
        except LuminaError as exc:  # deleted meanwhile, say
            log.info("no title for %s: %s", uuid, exc)
