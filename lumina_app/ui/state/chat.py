"""The open conversation: its visible page of messages and the answer being streamed.

Sending follows the chat_app pattern: a normal event shows the question at once and hands
over to a background event, which follows the run's events outside the state lock and
re-enters it at most every ~50 ms to extend one small var (``stream_text``). The finished
turn joins the list from what the run's events carried: nothing is read back.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Mapping

import reflex as rx

from lumina_app.domain import (
    AgentNotFound,
    LuminaError,
    NotFound,
    RunEvent,
    RunNotFound,
    utcnow,
)
from lumina_app.domain.views import iso_ms
from lumina_app.ui.routes import chat_url
from lumina_app.ui.state.health import HealthState
from lumina_app.ui.state.history import MAX_VISIBLE, HistoryState
from lumina_app.ui.state.sidebar import SidebarState
from lumina_app.ui.view_models.live_turn import LiveTurn
from lumina_app.ui.view_models.tool_views import ToolView
from lumina_app.ui.view_models.versions import arrange, choices, retire_answer
from lumina_app.ui.view_models.views import MessageView, explain, no_events

FLUSH_SECONDS = 0.05


class ChatState(HistoryState):
    agent_description: str = ""
    not_found: str = ""
    pending_user: str = ""
    pending_time: str = ""
    stream_text: str = ""
    stream_thinking: str = ""  # a reasoning model's thoughts for the live step
    live_tools: list[ToolView] = []  # the cards of the step being streamed
    streaming: bool = False
    run_id: str = ""
    error: str = ""
    _send_text: str = ""
    # Bumped whenever the view changes; a follower with an older ticket stops writing.
    _ticket: int = 0

    @rx.event
    async def load(self):
        """On page load: the agent, the conversation's page (the latest, or around the
        ``?seq=`` a search hit links to), and a live run to re-attach to."""
        # The route's dynamic segments (/chat/[agent]/[conversation]); "" where absent.
        agent_id, conversation_id = self.agent or "", self.conversation or ""
        if self.streaming and self.run_id and conversation_id == self.conversation_id:
            return None  # the address of the run this page follows (a new conversation's)
        services, caller = self._services(), self._caller()
        self._ticket += 1
        self._reset_stream()
        self.error, self.not_found, self.messages = "", "", []
        self.has_older = self.has_newer = False
        self.conversation_id, self.title, self.focus_seq = "", "", 0
        self.parent_title = self.parent_url = ""
        try:
            agent = services.agents.get(agent_id)
        except AgentNotFound:
            agents = services.agents.list()
            if agents and not agent_id:
                return rx.redirect(chat_url(agents[0].id))
            self.not_found = f"There is no agent called “{agent_id}”."
            return None
        self.agent_id, self.agent_name = agent.id, agent.name
        self.agent_description = agent.description
        if not agent.available:
            self.error = f"This agent is unavailable: {agent.error}"
        if not conversation_id:
            return None
        try:
            conversation = await services.conversations.get(
                caller, conversation_id, agent_id=agent.id
            )
        except NotFound:
            self.not_found = "This conversation does not exist (it may have been deleted)."
            return None
        self.conversation_id, self.title = conversation.uuid, conversation.title
        await self._link_parent(conversation)
        scroll = await self._open(conversation, _seq(self.router.url.query_parameters))
        run_id = await services.runs.running_in(caller, conversation.uuid)
        if run_id is None:
            return scroll
        if not self.has_newer:  # its answers are shown from its events, not stored rows
            last_question = max(
                (i for i, m in enumerate(self.messages) if m["role"] == "user"), default=-1
            )
            self.messages = self.messages[: last_question + 1]
        self.streaming, self.run_id = True, run_id
        return [ChatState.follow_run, *([scroll] if scroll else [])]

    @rx.event
    def send(self, form: dict):
        text = str(form.get("message") or "").strip()
        if not text or self.streaming or not self.agent_id:
            return
        self._ticket += 1
        self.error = ""
        self.streaming, self.stream_text = True, ""
        self.pending_user, self.pending_time = text, iso_ms(utcnow())
        self._send_text, self.focus_seq = text, 0
        return ChatState.run_message

    @rx.event
    def regenerate(self):
        """Answer the last question again: its shown answer leaves the list now and
        returns as an earlier version once the new one is in."""
        if self.streaming or not self.conversation_id:
            return None
        self._ticket += 1
        self.error, self.focus_seq = "", 0
        self.streaming, self.stream_text, self._send_text = True, "", ""
        self.messages = retire_answer(self.messages)
        return ChatState.run_message

    @rx.event(background=True)
    async def run_message(self):
        async with self:
            await self._jump_to_latest()
            agent, conversation, ticket = self.agent_id, self.conversation_id, self._ticket
            text, caller = self._send_text, self._caller()
        runs = self._services().runs
        try:
            if text:
                run = await runs.start(
                    caller, agent_id=agent, message=text, conversation_id=conversation or None
                )
            else:  # "" is a regenerate of the last question
                run = await runs.regenerate(caller, conversation)
        except LuminaError as exc:
            async with self:
                if self._ticket == ticket:
                    self._reset_stream()
                    self.error = explain(exc)
                    self.messages = arrange(self.messages)  # a retired answer is back
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
        async with self:
            turn = LiveTurn(self.pending_user, {m["id"] for m in self.messages})
        last_flush = time.monotonic()
        try:
            async for event in events or no_events():
                turn.feed(event.payload if event is not None else None)
                if turn.dirty and (turn.result or time.monotonic() - last_flush >= FLUSH_SECONDS):
                    async with self:
                        if self._ticket != ticket:
                            return
                        self._show_live(turn, turn.take())
                    last_flush = time.monotonic()
        finally:
            async with self:
                if self._ticket == ticket:
                    self._settle(turn.finish())
        yield SidebarState.refresh

    def _show_live(self, turn: LiveTurn, rows: list[MessageView]) -> None:
        """The live step as it is now; steps done move into the list (once each)."""
        if rows:
            self.messages = self.messages + rows
        if turn.question_listed:
            self.pending_user = ""
        if self.stream_text != turn.text:
            self.stream_text = turn.text
        if self.stream_thinking != turn.thinking:
            self.stream_thinking = turn.thinking
        if self.live_tools != turn.cards:
            self.live_tools = turn.cards

    def _settle(self, turn: list[MessageView]) -> None:
        """Move the rest of the finished turn into the list (one list update)."""
        kept = arrange(self.messages + turn, choices(self.messages))[-MAX_VISIBLE:]
        if len(kept) < len(self.messages) + len(turn):
            self.has_older = True  # trimmed off the top: reachable again by paging
        self.messages = kept
        self._reset_stream()

    def _reset_stream(self) -> None:
        self.streaming, self.run_id, self.stream_text, self.stream_thinking = False, "", "", ""
        self.pending_user, self.pending_time, self.live_tools = "", "", []

    @rx.event(background=True)
    async def stop(self):
        async with self:
            run_id, caller = self.run_id, self._caller()
        if run_id:
            with contextlib.suppress(RunNotFound):  # it ended on its own meanwhile
                await self._services().runs.stop(caller, run_id)


def _seq(query: Mapping[str, str]) -> int:
    """The message a link asks to open at (``?seq=42``), or 0."""
    raw = query.get("seq", "")
    return int(raw) if raw.isdigit() and len(raw) < 10 else 0
