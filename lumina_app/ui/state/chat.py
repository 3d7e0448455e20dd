"""The open conversation: opening it (and a run still going in it), sending, regenerating,
editing a question in place and switching its branches.

Sending follows the chat_app pattern: a normal event shows the question at once and hands
over to a background event that starts the run and follows it (``StreamState``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import reflex as rx

from lumina_app.composition import Services
from lumina_app.domain import AgentNotFound, LuminaError, NotFound, Principal, utcnow
from lumina_app.domain.views import iso_ms
from lumina_app.services.runs import ActiveRun
from lumina_app.ui.routes import chat_url
from lumina_app.ui.state.attach import AttachState
from lumina_app.ui.state.health import HealthState
from lumina_app.ui.state.sidebar import SidebarState
from lumina_app.ui.state.stream import StreamState
from lumina_app.ui.view_models.file_views import FileView
from lumina_app.ui.view_models.versions import arrange, retire_answer, with_memories
from lumina_app.ui.view_models.views import explain

CONTINUE = "Continue from where you stopped."


class ChatState(StreamState):
    agent_description: str = ""
    not_found: str = ""
    # The open conversation is temporary, or (no conversation yet) the next one will be:
    # nothing is read from or written to long-term memory for it.
    temporary: bool = False
    _send_text: str = ""
    _send_files: list[FileView] = []  # the files of the send on its way
    _offered: str = ""  # a send waiting for the page's yes (see send())
    _offered_files: list[str] = []
    # The address of the new conversation this page's own redirect goes to (see load()).
    _arriving: str = ""
    # The open conversation's last seq when load() read it (what LiveState checks against).
    _loaded_seq: int = 0
    _edit_seq: int = 0  # the question the next run asks again (an edit), or 0

    @rx.event
    async def load(self):
        """On page load: the agent, the conversation's page (the latest, or around the
        ``?seq=`` a search hit links to), and a live run to re-attach to."""
        # The route's segments (/chat/[agent]/[[conversation]], the last optional); "" if absent.
        agent_id, conversation_id = self.agent or "", self.conversation or ""
        arrived, self._arriving = self._arriving, ""
        if conversation_id and conversation_id == arrived == self.conversation_id:
            # The new conversation's address this page moved itself to: what it shows is
            # current (its run followed or settled, perhaps a next question sent already).
            return None
        services, caller = self._services(), self._caller()
        self._ticket += 1
        self._reset_stream()
        self.error, self.not_found, self._rows = "", "", []
        self.has_older = self.has_newer = False
        self.conversation_id, self.title, self.focus_seq, self._loaded_seq = "", "", 0, 0
        self.parent_title = self.parent_url = ""
        self.temporary = False
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
            return await self._elsewhere(conversation_id)
        self.conversation_id, self.title = conversation.uuid, conversation.title
        self.temporary, self._loaded_seq = conversation.temporary, conversation.last_seq
        await self._link_parent(conversation)
        scroll = await self._open(conversation, _seq(self.router.url.query_parameters))
        run_id = await services.runs.running_in(caller, conversation.uuid)
        if run_id is None:
            return scroll
        if not self.has_newer:  # its answers are shown from its events, not stored rows
            last_question = max(
                (i for i, m in enumerate(self._rows) if m["role"] == "user"), default=-1
            )
            self._rows = self._rows[: last_question + 1]
        self.streaming, self.run_id = True, run_id
        return [StreamState.follow_run, *([scroll] if scroll else [])]

    async def _elsewhere(self, conversation_id: str):
        """A conversation of another agent (one history spans them all, #45) opens under
        its own agent, which the picker then shows; one that is not the caller's is not
        found."""
        try:
            conversation = await self._services().conversations.get(self._caller(), conversation_id)
        except NotFound:
            self.not_found = "This conversation does not exist (it may have been deleted)."
            return None
        query = self.router.url.query
        url = chat_url(conversation.agent_id, conversation.uuid)
        return rx.redirect(url + (f"?{query}" if query else ""), replace=True)

    @rx.event
    def set_temporary(self, value: bool) -> None:
        """The "Temporary chat" switch: it only decides for a conversation not yet started."""
        if not self.conversation_id and not self.streaming:
            self.temporary = bool(value)

    @rx.event
    async def send(self, form: dict):
        """The composer's send: asked back to the page before it starts (the page may have
        given up on it while the connection was gone: then it is not sent, ever). Its files
        are the page's own chips: the ones the form names, which must all be chips here."""
        text = str(form.get("message") or "").strip()
        nonce = json.dumps(str(form.get("nonce") or ""))
        attach = await self.get_state(AttachState)
        named = [i for i in str(form.get("files") or "").split(",") if i]
        refusal = _not_sendable(attach, named)
        if refusal:
            attach.refused = refusal
            return rx.call_script(f"window.__lumina && window.__lumina.withdraw({nonce})")
        if not (text or named) or self.streaming or not self.agent_id:
            return None
        self._offered, self._offered_files = text, named
        return rx.call_script(
            f"window.__lumina ? window.__lumina.accept({nonce}) : true",
            callback=ChatState.accept_send,
        )

    @rx.event
    async def accept_send(self, accepted: bool):
        text, self._offered = self._offered, ""
        named, self._offered_files = self._offered_files, []
        if accepted is not True:
            return None
        attach = await self.get_state(AttachState)
        if _not_sendable(attach, named) or not (text or named) or self.streaming:
            return None  # a chip removed meanwhile: the composer still shows the rest
        return self._begin(text, attach.hand_over(named))

    @rx.event
    def continue_answer(self):
        """Continue a stopped answer: a new turn that asks for the rest."""
        return self._begin(CONTINUE)

    @rx.event
    def reconnected(self):
        """The connection is back: read the open conversation again (what happened meanwhile)."""
        if self.streaming and self.run_id:
            return None  # its follower is still feeding it
        self._arriving = ""
        return ChatState.load

    def _begin(self, text: str, files: list[FileView] | None = None):
        files = files or []
        if not (text or files) or self.streaming or not self.agent_id:
            return None
        self._ticket += 1
        self.error = ""
        self.streaming, self.stream_text = True, ""
        self.pending_user, self.pending_time = text, iso_ms(utcnow())
        self.pending_files, self._send_files = list(files), list(files)
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
        self._send_files = []
        self._rows = retire_answer(self._rows)
        return ChatState.run_message

    @rx.event
    def edit_question(self, seq: int, text: str):
        """Ask the question at ``seq`` again as ``text``: a new branch from there. The
        question and what followed it leave the page now; the new one streams in its
        place, and the page is read again once it has settled (its "< k / n >")."""
        text = text.strip()
        if not text or self.streaming or not self.conversation_id or seq < 1:
            return None
        self._ticket += 1
        self.error, self.focus_seq = "", 0
        self.streaming, self.stream_text = True, ""
        self.pending_user, self.pending_time = text, iso_ms(utcnow())
        self._send_text, self._edit_seq, self._send_files = text, seq, []
        self._rows = [r for r in self._rows if r["seq"] < seq]
        return ChatState.run_message

    @rx.event
    async def switch_branch(self, seq: int, branch: int):
        """The "< k / n >" switcher on an edited question: everything after it switches."""
        if self.streaming or not self.conversation_id or branch < 1:
            return None
        services, caller = self._services(), self._caller()
        self.error = ""
        try:
            await services.runs.switch_branch(caller, self.conversation_id, seq, branch)
        except LuminaError as exc:
            self.error = explain(exc)
        self._ticket += 1
        await self._reopen()
        return None

    @rx.event(background=True)
    async def run_message(self):
        async with self:
            edit_seq, self._edit_seq = self._edit_seq, 0
            if not edit_seq:
                await self._jump_to_latest()
            agent, conversation, ticket = self.agent_id, self.conversation_id, self._ticket
            text, caller, temporary = self._send_text, self._caller(), self.temporary
            files = [FileView(**f) for f in self._send_files]
        services = self._services()
        runs = services.runs
        try:
            if edit_seq:
                run = await runs.edit(caller, conversation, edit_seq, text)
            else:
                ids = [f["id"] for f in files]
                run = await _start_run(services, caller, agent, conversation, text, temporary, ids)
        except LuminaError as exc:
            async with self:
                if self._ticket == ticket:
                    self._reset_stream()
                    self.error = explain(exc)
                    self._rows = arrange(self._rows)  # a retired answer is back
                    if files:  # chips again, with the words, for another try
                        (await self.get_state(AttachState)).give_back(files)
                    if edit_seq:  # the question and its branch, as they are stored
                        await self._reopen()
            if edit_seq:
                return
            if text:  # the words go back into the composer (and its draft)
                yield rx.call_script(
                    f"window.__lumina && window.__lumina.restore({json.dumps(text)})"
                )
            yield HealthState.check
            return
        async with self:
            if self._ticket != ticket:
                return
            self.run_id, self.conversation_id = run.run_id, run.conversation.uuid
            self.title = run.conversation.title
            if not conversation:
                self._arriving = run.conversation.uuid
        if not conversation:  # the new conversation's address; load() sees it is current
            yield rx.redirect(chat_url(agent, run.conversation.uuid), replace=True)
        yield SidebarState.refresh
        async for update in self._follow(runs.follow(run), ticket):
            yield update
        used = len(run.record.context.get("memories") or [])
        if used:  # the answer just settled from its events: its mark, as a reload shows it
            async with self:
                if self._ticket == ticket:
                    self._rows = with_memories(self._rows, run.run_id, used)
        if edit_seq:  # the edited question's "< k / n >", as a reload shows it
            async with self:
                if self._ticket == ticket and not self.streaming:
                    await self._reopen()


async def _start_run(
    services: Services,
    caller: Principal,
    agent: str,
    conversation: str,
    text: str,
    temporary: bool,
    files: list[str],
) -> ActiveRun:
    """Start the run a send (``text`` and/or ``files``) or a regenerate (neither) asks
    for. A temporary conversation is made first, so that its first run already skips
    long-term memory."""
    if not (text or files):
        return await services.runs.regenerate(caller, conversation)
    into = conversation or None
    if into is None and temporary:
        into = (await services.conversations.create(caller, agent_id=agent, temporary=True)).uuid
    return await services.runs.start_run(
        caller, agent_id=agent, message=text, conversation_uuid=into, files=files
    )


def _not_sendable(attach: AttachState, named: list[str]) -> str:
    """Why a send's files cannot go: one still uploading, or a file that is no chip of
    this page (a crafted event naming someone else's file); "" when they can."""
    if attach.uploading:
        return "A file is still uploading: send once it is done (your message is kept)."
    chips = {c["id"] for c in attach.chips}
    if any(i not in chips for i in named):
        return "That file is not attached here, so nothing was sent."
    return ""


def _seq(query: Mapping[str, str]) -> int:
    """The message a link asks to open at (``?seq=42``), or 0."""
    raw = query.get("seq", "")
    return int(raw) if raw.isdigit() and len(raw) < 10 else 0
