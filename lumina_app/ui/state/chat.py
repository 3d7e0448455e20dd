"""The open conversation: its visible page of messages and the answer being streamed.

Sending follows the chat_app pattern: a normal event shows the question at once and hands
over to a background event, which follows the run's events outside the state lock and
re-enters it at most every ~50 ms to extend one small var (``stream_text``). The finished
turn joins the list from what the run's events carried: nothing is read back.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator

import reflex as rx

from lumina_app.domain import (
    AgentNotFound,
    AnswerChunk,
    LuminaError,
    MessageStatus,
    NotFound,
    RunEvent,
    RunFinished,
    RunNotFound,
    SessionStarted,
    utcnow,
)
from lumina_app.domain.views import iso_ms
from lumina_app.ui.routes import chat_url
from lumina_app.ui.state.base import AppState
from lumina_app.ui.state.health import HealthState
from lumina_app.ui.state.sidebar import SidebarState
from lumina_app.ui.views import MessageView, explain, finished_turn, message_view, no_events

PAGE_SIZE = 40
# The list a long session keeps on screen is bounded too: every turn re-sends it once.
MAX_VISIBLE = 2 * PAGE_SIZE
FLUSH_SECONDS = 0.05


class ChatState(AppState):
    agent_description: str = ""
    messages: list[MessageView] = []
    has_older: bool = False
    not_found: str = ""
    pending_user: str = ""
    pending_time: str = ""
    stream_text: str = ""
    streaming: bool = False
    run_id: str = ""
    error: str = ""
    _send_text: str = ""
    # Bumped whenever the view changes; a follower with an older ticket stops writing.
    _ticket: int = 0

    @rx.event
    async def load(self):
        """On page load: the agent, the conversation's latest page, a live run to re-attach."""
        # The route's dynamic segments (/chat/[agent]/[conversation]); "" where absent.
        agent_id, conversation_id = self.agent or "", self.conversation or ""
        if self.streaming and self.run_id and conversation_id == self.conversation_id:
            return  # the address of the run this page follows (a new conversation's)
        services, caller = self._services(), self._caller()
        self._ticket += 1
        self._reset_stream()
        self.error, self.not_found, self.messages, self.has_older = "", "", [], False
        self.conversation_id, self.title = "", ""
        try:
            agent = services.agents.get(agent_id)
        except AgentNotFound:
            agents = services.agents.list()
            if agents and not agent_id:
                return rx.redirect(chat_url(agents[0].id))
            self.not_found = f"There is no agent called “{agent_id}”."
            return
        self.agent_id, self.agent_name, self.agent_description = (
            agent.id,
            agent.name,
            agent.description,
        )
        if not agent.available:
            self.error = f"This agent is unavailable: {agent.error}"
        if not conversation_id:
            return
        try:
            conversation, page = await services.conversations.latest(
                caller, conversation_id, limit=PAGE_SIZE, agent_id=agent.id
            )
        except NotFound:
            self.not_found = "This conversation does not exist (it may have been deleted)."
            return
        self.conversation_id, self.title = conversation.uuid, conversation.title
        msgs = page.items
        run_id = await services.runs.running_in(caller, conversation.uuid)
        if run_id is not None:  # its answer is shown as it streams, not as a stored row
            msgs = [m for m in msgs if m.status is not MessageStatus.STREAMING]
            self.streaming, self.run_id = True, run_id
        self.has_older = page.next_before is not None
        self.messages = [message_view(m) for m in msgs]
        if run_id is not None:
            return ChatState.follow_run

    @rx.event
    async def load_older(self) -> None:
        if not self.messages or not self.conversation_id:
            return
        _conversation, page = await self._services().conversations.messages(
            self._caller(), self.conversation_id, limit=PAGE_SIZE, before=self.messages[0]["seq"]
        )
        self.has_older = page.next_before is not None
        self.messages = [message_view(m) for m in page.items] + self.messages

    @rx.event
    def send(self, form: dict):
        text = str(form.get("message") or "").strip()
        if not text or self.streaming or not self.agent_id:
            return
        self._ticket += 1
        self.error = ""
        self.streaming, self.stream_text = True, ""
        self.pending_user, self.pending_time = text, iso_ms(utcnow())
        self._send_text = text
        return ChatState.run_message

    @rx.event(background=True)
    async def run_message(self):
        async with self:
            agent, conversation, ticket = self.agent_id, self.conversation_id, self._ticket
            text, caller = self._send_text, self._caller()
        runs = self._services().runs
        try:
            run = await runs.start(
                caller, agent_id=agent, message=text, conversation_id=conversation or None
            )
        except LuminaError as exc:
            async with self:
                if self._ticket == ticket:
                    self._reset_stream()
                    self.error = explain(exc)
            yield rx.set_value("composer", text)
            yield HealthState.check
            return
        async with self:
            if self._ticket != ticket:
                return
            self.run_id, self.conversation_id = run.run_id, run.conversation.uuid
            self.title = run.conversation.title
        if not conversation:  # the new conversation's address; load() sees it is followed
            yield rx.redirect(chat_url(agent, run.conversation.uuid), replace=True)
        yield SidebarState.refresh
        async for update in self._follow(runs.follow(run), ticket):
            yield update

    @rx.event(background=True)
    async def follow_run(self):
        """Re-attach to a run that is still going (after a reload or a switch back)."""
        async with self:
            run_id, ticket, caller = self.run_id, self._ticket, self._caller()
        events = None
        with contextlib.suppress(RunNotFound):  # ended and expired meanwhile
            events = await self._services().runs.events(caller, run_id)
        async for update in self._follow(events, ticket):
            yield update

    async def _follow(self, events: AsyncIterator[RunEvent | None] | None, ticket: int):
        session, result, pending = None, None, []
        last_flush = time.monotonic()
        try:
            async for event in events or no_events():
                payload = event.payload if event is not None else None
                if isinstance(payload, SessionStarted):
                    session = payload
                elif isinstance(payload, AnswerChunk):
                    pending.append(payload.text)
                elif isinstance(payload, RunFinished):
                    result = payload
                if pending and (result or time.monotonic() - last_flush >= FLUSH_SECONDS):
                    async with self:
                        if self._ticket != ticket:
                            return
                        self.stream_text += "".join(pending)
                    pending.clear()
                    last_flush = time.monotonic()
        finally:
            async with self:
                if self._ticket == ticket:
                    self._settle(session, result)
        yield SidebarState.refresh

    def _settle(self, session: SessionStarted | None, result: RunFinished | None) -> None:
        """Move the finished turn into the list (one list update per turn)."""
        turn = finished_turn(self.messages, session, result, self.pending_user)
        kept = (self.messages + turn)[-MAX_VISIBLE:]
        if len(kept) < len(self.messages) + len(turn):
            self.has_older = True  # trimmed off the top: reachable again by paging
        self.messages = kept
        self._reset_stream()

    def _reset_stream(self) -> None:
        self.streaming, self.run_id, self.stream_text = False, "", ""
        self.pending_user, self.pending_time = "", ""

    @rx.event(background=True)
    async def stop(self):
        async with self:
            run_id, caller = self.run_id, self._caller()
        if run_id:
            with contextlib.suppress(RunNotFound):  # it ended on its own meanwhile
                await self._services().runs.stop(caller, run_id)
