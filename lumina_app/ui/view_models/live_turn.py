"""The turn a page is following, built from its run's events: the question, each tool step
once it is done (its answer with its cards, as stored), the live step's text and cards,
and at the end the final answer. Nothing is read back from the store."""

from __future__ import annotations

from dataclasses import dataclass, field

from lumina_app.domain import (
    AnswerChunk,
    RunFinished,
    RunPayload,
    SessionStarted,
    ThinkingChunk,
    ToolCallFinished,
    ToolCallRequested,
)
from lumina_app.ui.view_models.file_views import FileView
from lumina_app.ui.view_models.tool_views import ToolView, live_card, live_result
from lumina_app.ui.view_models.views import UNARRANGED, MessageView, answer_view, question_view


@dataclass
class LiveTurn:
    question: str  # what this page sent ("" when it re-attached to a run)
    known: set[int]  # ids of the rows the page already shows
    files: list[FileView] = field(default_factory=list)  # the files the page sent with it
    session: SessionStarted | None = None
    result: RunFinished | None = None
    text: str = ""  # the live step's text
    thinking: str = ""  # the live step's reasoning (models that stream it)
    cards: list[ToolView] = field(default_factory=list)  # the live step's calls
    rows: list[MessageView] = field(default_factory=list)  # done, for the list
    dirty: bool = False
    _parts: list[str] = field(default_factory=list)
    _step: tuple[int, int] = (0, 0)  # id and seq of the answer row the cards belong to
    _next_seq: int = 0
    _one_answer: bool = False  # an acp agent's tools: no steps, the text goes on after them

    def feed(self, payload: RunPayload | None) -> None:
        if isinstance(payload, SessionStarted):
            self.session = payload
            self._next_seq = payload.answer_seq or payload.user_seq + 1
        elif isinstance(payload, AnswerChunk):
            self._close_step()
            self._parts.append(payload.text)
        elif isinstance(payload, ThinkingChunk):
            self._close_step()
            self.thinking += payload.text
        elif isinstance(payload, ToolCallRequested):
            self._one_answer = self._one_answer or payload.by_agent
            if (payload.message_id, payload.seq) != self._step:
                self._close_step()
                self._step = (payload.message_id, payload.seq)
            self.cards = [*self.cards, live_card(payload)]
        elif isinstance(payload, ToolCallFinished):
            self.cards = live_result(self.cards, payload)
        elif isinstance(payload, RunFinished):
            self.result = payload
        else:
            return
        self.dirty = True

    @property
    def waiting(self) -> bool:
        """An acp agent waits for the person (a permission request): show it now, as no
        further event may come until they answer."""
        return any(card["options"] for card in self.cards)

    @property
    def question_listed(self) -> bool:
        """The question is one of the rows (no longer shown apart as pending)."""
        return self.session is not None and self.session.user_message_id in self.known

    def take(self) -> list[MessageView]:
        """The rows done since the last look (the live text is joined up as well)."""
        self._join()
        rows, self.rows, self.dirty = self.rows, [], False
        return rows

    def _join(self) -> None:
        if self._parts:
            self.text += "".join(self._parts)
            self._parts.clear()

    def finish(self) -> list[MessageView]:
        """The rest of the turn once the run is over: the question if it is not shown yet,
        and the final answer (with the cards of a step the run ended in)."""
        self._join()
        self._add_question()
        result = self.result
        if result is not None and result.message_id not in self.known:
            cards = self.cards if result.message_id == self._step[0] else []
            time = self.session.created_at if self.session else ""
            seq = self._step[1] if cards else self._next_seq
            answer = answer_view(result, seq, time, self.thinking)
            self._add(MessageView(**{**answer, "tools": cards}))
        return self.take()

    def _close_step(self) -> None:
        """A step whose calls all have results is stored: it joins the list as such."""
        if not self.cards or self._one_answer:
            return
        self._join()
        self._add_question()
        answer_id, seq = self._step
        time = self.session.created_at if self.session else ""
        step = MessageView(
            key=f"m{answer_id}",
            id=answer_id,
            seq=seq,
            role="assistant",
            content=self.text,
            status="complete",
            error="",
            time=time,
            run=self.session.run_id if self.session else "",
            tools=self.cards,
            turn=self.session.turn_id if self.session else "",
            thinking=self.thinking,
            files=[],
            **UNARRANGED,
        )
        self._add(step)
        self._next_seq = seq + len(self.cards) + 1
        self.text, self.thinking, self.cards = "", "", []

    def _add_question(self) -> None:
        session = self.session
        asked = self.question or self.files
        if session is not None and asked and session.user_message_id not in self.known:
            self._add(question_view(session, self.question, self.files))

    def _add(self, row: MessageView) -> None:
        self.known.add(row["id"])
        self.rows.append(row)
