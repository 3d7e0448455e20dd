"""The open page follows its owner live: a run started in the conversation it shows
(from another tab, REST or the OpenAI-compatible doors, on any instance) is followed
through the run's event log like one sent here; the sidebar follows conversations
created, renamed, forked, deleted and runs' status. The subscription itself lives in
``services/live.py``; this holds what the page does with a notice."""

from __future__ import annotations

import functools

import reflex as rx
from reflex.utils.prerequisites import get_and_validate_app

from lumina_app.domain import NotFound, Principal, utcnow
from lumina_app.domain.views import iso_ms
from lumina_app.services.live import AlreadyLive, Notice, TooManyLivePages
from lumina_app.ui.state.chat import ChatState
from lumina_app.ui.state.sidebar import SidebarState
from lumina_app.ui.state.stream import StreamState
from lumina_app.ui.view_models.file_views import message_files
from lumina_app.ui.view_models.versions import retire_answer

DELETED = "This conversation was deleted."


class LiveState(ChatState):
    @rx.event(background=True)
    async def watch(self):
        """Runs while the page is open (one per browser tab; later loads find it on). A
        tab signed in as someone else starts its own at once, which ends this one."""
        async with self:
            if not self._via:
                return
            caller, token = self._caller(), self.router.session.client_token
        try:
            async with self._services().live.page(caller, token) as feed:
                if await self._changed_before_the_feed(caller):
                    yield ChatState.load
                while True:
                    notice = await feed.next()
                    if not _connected(token) or (notice is not None and notice.kind == "closed"):
                        return
                    async with self:
                        if self._via == "" or self._owner != caller.owner:
                            return  # signed out, or another identity now: not theirs
                        if self._admitted_sid != self.router.session.session_id:
                            continue  # a new socket not let in yet: it may be someone else's
                        updates = self._apply(notice) if notice is not None else []
                    for update in updates:
                        yield update
        except (AlreadyLive, TooManyLivePages):
            return

    async def _changed_before_the_feed(self, caller: Principal) -> bool:
        """Whether the open conversation changed between the page's load and its feed
        coming on (a run started, perhaps ended, in that gap was told to no feed of this
        page; from now on every change is). One read of the conversation."""
        async with self:
            conversation, loaded = self.conversation_id, self._loaded_seq
            if not conversation or self.streaming or self.has_newer:
                return False
        try:
            now = (await self._services().conversations.get(caller, conversation)).last_seq
        except NotFound:
            now = -1  # deleted meanwhile: a load says so
        async with self:
            current = self.conversation_id == conversation and not self.streaming
            return current and self._loaded_seq == loaded and now != loaded

    def _apply(self, notice: Notice) -> list:
        here = notice.conversation == self.conversation_id and self.conversation_id != ""
        # the sidebar lists every agent's conversations (#45): any change may show there
        updates: list = [SidebarState.follow(notice.kind, notice.conversation)]
        if not here:
            return updates
        if notice.kind == "renamed":
            self.title = notice.title
        elif notice.kind == "deleted":
            self._ticket += 1
            self._reset_stream()
            self._rows, self.not_found = [], DELETED
        elif notice.kind == "branched" and not self.streaming:
            updates.append(StreamState.refresh_page)  # everything after the question switched
        elif notice.kind == "run" and not self.streaming and not self.has_newer:
            self._ticket += 1
            self.error, self.focus_seq = "", 0
            if notice.regenerate:
                self._rows = retire_answer(self._rows)
            else:
                if notice.edited:  # asked again: the question and what followed leave
                    self._rows = [r for r in self._rows if r["seq"] < notice.edited]
                    self._reread_after = True
                self.pending_user, self.pending_time = notice.question, iso_ms(utcnow())
                self.pending_files = message_files({"files": list(notice.files)})
            self.streaming, self.run_id = True, notice.run_id
            updates.append(StreamState.follow_run)
        return updates


def _connected(token: str) -> bool:
    """Whether the tab with this client token still has its socket open on this instance
    (Reflex's own record of it): a page gone is let go at its next wake-up."""
    namespace = _app().event_namespace
    return namespace is None or token in namespace.token_to_sid


@functools.cache
def _app() -> rx.App:
    """The running app, looked up once (the lookup imports and touches ``sys.path``)."""
    return get_and_validate_app().app
