"""The open conversation: its visible page of messages and the answer being streamed.

Sending follows the chat_app pattern: a normal event shows the question at once and hands
over to a background event, which consumes the engine's event stream outside the state
lock and re-enters it at most every ~50 ms to extend one small var (``stream_text``).
"""

from __future__ import annotations

import contextlib
import time

import reflex as rx

from lumina_app.composition import get_services
from lumina_app.domain import (
    ConversationBusy,
    EventType,
    LuminaError,
    MessageStatus,
    NotFound,
    RunNotFound,
    StoreUnavailable,
)
from lumina_app.domain.types import utcnow
from lumina_app.domain.views import iso_ms
from lumina_app.ui.routes import chat_url
from lumina_app.ui.state.health import HealthState
from lumina_app.ui.views import UI_OWNER, MessageView, answer_view, message_view

PAGE_SIZE = 40
# The list a long session keeps on screen is bounded too: every turn re-sends it once.
MAX_VISIBLE = 2 * PAGE_SIZE
FLUSH_SECONDS = 0.05


def _sidebar_refresh():  # noqa: ANN202 - an EventHandler
    # Imported late: the sidebar state reads this one, so it imports this module.
    from lumina_app.ui.state.sidebar import SidebarState

    return SidebarState.refresh


def explain(exc: LuminaError) -> str:
    if isinstance(exc, ConversationBusy):
        return "This conversation is still answering another message. Wait for it or press Stop."
    if isinstance(exc, StoreUnavailable):
        return "The database is unreachable, so the message was not sent. Try again shortly."
    return str(exc)


class ChatState(rx.State):
    agent_id: str = ""
    agent_name: str = ""
    agent_description: str = ""
    conversation_id: str = ""
    title: str = ""
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

    # -- loading -----------------------------------------------------------------------

    @rx.event
    async def load(self):
        """On page load: the agent, the conversation's latest page, a live run to re-attach."""
        # The route's dynamic segments (/chat/[agent]/[conversation]); "" where absent.
        agent_id, conversation_id = self.agent or "", self.conversation or ""
        services = get_services()
        self._ticket += 1
        self._reset_stream()
        self.error, self.not_found, self.messages, self.has_older = "", "", [], False
        agent = services.registry.get(agent_id)
        if agent is None:
            agents = services.registry.list()
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
        self.conversation_id, self.title = conversation_id, ""
        if not conversation_id:
            return
        try:
            conversation = await services.memory.get_conversation(
                conversation_id, owner=UI_OWNER, agent_id=agent.id
            )
        except NotFound:
            self.not_found = "This conversation does not exist (it may have been deleted)."
            self.conversation_id = ""
            return
        self.title = conversation.title
        msgs = await services.memory.history(
            conversation, limit=PAGE_SIZE + 1, before_seq=conversation.last_seq + 1
        )
        run_id = await services.chat.running_run_id(conversation_id)
        if run_id is not None:  # its answer is shown as it streams, not as a stored row
            msgs = [m for m in msgs if m.status is not MessageStatus.STREAMING]
            self.streaming, self.run_id = True, run_id
        self.has_older = len(msgs) > PAGE_SIZE
        self.messages = [message_view(m) for m in msgs[-PAGE_SIZE:]]
        if run_id is not None:
            return ChatState.follow_run

    @rx.event
    async def load_older(self) -> None:
        if not self.messages or not self.conversation_id:
            return
        services = get_services()
        conversation = await services.memory.get_conversation(self.conversation_id, owner=UI_OWNER)
        older = await services.memory.history(
            conversation, limit=PAGE_SIZE + 1, before_seq=self.messages[0]["seq"]
        )
        self.has_older = len(older) > PAGE_SIZE
        self.messages = [message_view(m) for m in older[-PAGE_SIZE:]] + self.messages

    def _reset_stream(self) -> None:
        self.streaming, self.run_id, self.stream_text = False, "", ""
        self.pending_user, self.pending_time = "", ""

    # -- sending -----------------------------------------------------------------------

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
            agent, conversation, text, ticket = (
                self.agent_id,
                self.conversation_id,
                self._send_text,
                self._ticket,
            )
        chat = get_services().chat
        try:
            run = await chat.start(
                agent_id=agent, message=text, conversation_uuid=conversation or None, owner=UI_OWNER
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
            self.run_id = run.run_id
            self.conversation_id = run.conversation.uuid
            self.title = run.conversation.title
        if not conversation:
            # A new conversation gets its URL through the router, so a reconnect (or another
            # instance) loads this conversation; that load re-attaches to the run.
            yield rx.redirect(chat_url(agent, run.conversation.uuid), replace=True)
            return
        yield _sidebar_refresh()
        async for update in self._follow(run.run_id, ticket, skip_events=1):
            yield update

    @rx.event(background=True)
    async def follow_run(self):
        """Re-attach to a run that is still going (after a reload or a switch back)."""
        async with self:
            run_id, ticket = self.run_id, self._ticket
        async for update in self._follow(run_id, ticket, skip_events=0):
            yield update

    async def _follow(self, run_id: str, ticket: int, *, skip_events: int):
        chat = get_services().chat
        try:
            events = await chat.open_stream(run_id, after=skip_events, owner=UI_OWNER)
        except RunNotFound:
            async with self:
                if self._ticket == ticket:
                    self._reset_stream()
            return
        pending: list[str] = []
        last_flush = time.monotonic()
        result = None
        async for event in events:
            if event.type is EventType.DELTA:
                pending.append(event.data["text"])
            elif event.type is EventType.RESULT:
                result = event.data
            if pending and (result or time.monotonic() - last_flush >= FLUSH_SECONDS):
                async with self:
                    if self._ticket != ticket:
                        return
                    self.stream_text += "".join(pending)
                pending.clear()
                last_flush = time.monotonic()
        await self._settle(result, ticket)
        yield _sidebar_refresh()

    async def _settle(self, result: dict | None, ticket: int) -> None:
        """Move the finished turn into the message list (one list update per turn)."""
        services = get_services()
        async with self:
            if self._ticket != ticket:
                return
            conversation_id = self.conversation_id
        conversation = await services.memory.get_conversation(conversation_id, owner=UI_OWNER)
        turn = await services.memory.history(
            conversation, limit=2, before_seq=conversation.last_seq + 1
        )
        async with self:
            if self._ticket != ticket:
                return
            known = {m["id"] for m in self.messages}
            fresh = [message_view(m) for m in turn if m.id not in known]
            if result is not None:
                fresh = [
                    answer_view(result, m["seq"], m["time"])
                    if m["id"] == result["messageId"]
                    else m
                    for m in fresh
                ]
            kept = (self.messages + fresh)[-MAX_VISIBLE:]
            if len(kept) < len(self.messages) + len(fresh):
                self.has_older = True  # trimmed off the top: reachable again by paging
            self.messages = kept
            self._reset_stream()

    @rx.event(background=True)
    async def stop(self):
        async with self:
            run_id = self.run_id
        if not run_id:
            return
        with contextlib.suppress(RunNotFound):  # it ended on its own meanwhile
            await get_services().chat.stop(run_id, owner=UI_OWNER)
