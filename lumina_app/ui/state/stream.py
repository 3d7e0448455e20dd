"""The answer being streamed on the open conversation's page: following a run's events
outside the state lock, re-entering it at most every ~50 ms to extend one small var
(``stream_text``), and settling the finished turn into the list from what the events
carried (nothing is read back). Stop works on whichever run the page follows."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator

import reflex as rx

from lumina_app.domain import NotFound, RunEvent, RunNotFound
from lumina_app.ui.state.history import MAX_VISIBLE, HistoryState
from lumina_app.ui.state.sidebar import SidebarState
from lumina_app.ui.view_models.file_views import FileView
from lumina_app.ui.view_models.live_turn import LiveTurn
from lumina_app.ui.view_models.tool_views import ToolView
from lumina_app.ui.view_models.turns import one_per_turn, split_live
from lumina_app.ui.view_models.versions import arrange, choices
from lumina_app.ui.view_models.views import MessageView, StepView, no_events

FLUSH_SECONDS = 0.05


class StreamState(HistoryState):
    pending_user: str = ""
    pending_time: str = ""
    pending_files: list[FileView] = []  # the files sent with the pending question
    stream_text: str = ""
    stream_thinking: str = ""  # a reasoning model's thoughts for the live step
    live_tools: list[ToolView] = []  # the cards of the step being streamed
    streaming: bool = False
    run_id: str = ""
    error: str = ""
    # Bumped whenever the view changes; a follower with an older ticket stops writing.
    _ticket: int = 0
    # The followed run asked a question again (an edit made elsewhere): once it ends, the
    # page is read again so the question carries its "k / n".
    _reread_after: bool = False

    @rx.var
    def messages(self) -> list[MessageView]:
        """What the page lists: one message per turn, its steps inline (a streaming
        turn's steps are in ``live_steps``)."""
        return split_live(one_per_turn(self._rows), self.run_id)[0]

    @rx.var
    def live_steps(self) -> list[StepView]:
        """The steps the streaming answer has done, shown inside it."""
        return split_live(one_per_turn(self._rows), self.run_id)[1]

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
            files = [FileView(**f) for f in self.pending_files]
            turn = LiveTurn(self.pending_user, {m["id"] for m in self._rows}, files)
        last_flush = time.monotonic()
        try:
            async for event in events or no_events():
                turn.feed(event.payload if event is not None else None)
                due = turn.result or turn.waiting or time.monotonic() - last_flush >= FLUSH_SECONDS
                if turn.dirty and due:
                    async with self:
                        if self._ticket != ticket:
                            return
                        self._show_live(turn, turn.take())
                    last_flush = time.monotonic()
        finally:
            async with self:
                reread, self._reread_after = self._reread_after, False
                if self._ticket == ticket:
                    self._settle(turn.finish())
                else:
                    reread = False
        yield SidebarState.refresh
        if reread:
            yield StreamState.refresh_page

    @rx.event
    async def refresh_page(self):
        """A branch switched here from elsewhere (another tab, the API): the page as it is
        stored now."""
        if self.streaming or not self.conversation_id:
            return
        self._ticket += 1
        await self._reopen()

    def _show_live(self, turn: LiveTurn, rows: list[MessageView]) -> None:
        """The live step as it is now; steps done move into the list (once each)."""
        if rows:
            self._rows = self._rows + rows
        if turn.question_listed:
            self.pending_user, self.pending_files = "", []
        if self.stream_text != turn.text:
            self.stream_text = turn.text
        if self.stream_thinking != turn.thinking:
            self.stream_thinking = turn.thinking
        if self.live_tools != turn.cards:
            self.live_tools = turn.cards

    def _settle(self, turn: list[MessageView]) -> None:
        """Move the rest of the finished turn into the list (one list update)."""
        kept = arrange(self._rows + turn, choices(self._rows))[-MAX_VISIBLE:]
        if len(kept) < len(self._rows) + len(turn):
            self.has_older = True  # trimmed off the top: reachable again by paging
        self._rows = kept
        self._reset_stream()

    def _reset_stream(self) -> None:
        self.streaming, self.run_id, self.stream_text, self.stream_thinking = False, "", "", ""
        self.pending_user, self.pending_time, self.live_tools = "", "", []
        self.pending_files = []

    @rx.event(background=True)
    async def stop(self):
        async with self:
            run_id, caller = self.run_id, self._caller()
        if run_id:
            with contextlib.suppress(RunNotFound):  # it ended on its own meanwhile
                await self._services().runs.stop(caller, run_id)

    @rx.event(background=True)
    async def answer_permission(self, request_id: str, option_id: str):
        """The person's choice on an acp agent's permission request (its card's buttons)."""
        async with self:
            run_id, caller = self.run_id, self._caller()
        permissions = self._services().permissions
        if run_id and permissions is not None:
            with contextlib.suppress(NotFound):  # answered, timed out, or the run ended
                permissions.answer(caller, run_id, request_id, option_id)
