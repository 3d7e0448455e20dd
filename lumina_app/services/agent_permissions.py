"""Answering an ``acp`` agent's permission request (policy ``ask``): the person's choice
for a request the run is waiting on. Another owner's run, or no such request waiting, is
simply not found."""

from __future__ import annotations

from lumina_app.agents.providers.acp.provider import AcpProvider
from lumina_app.agents.run.engine import ChatEngine
from lumina_app.domain import InvalidInput, NotFound, Principal, RunNotFound
from lumina_app.domain.access import is_run_id


class PermissionNotFound(NotFound):
    def __init__(self, request_id: str) -> None:
        super().__init__(f"no permission request {request_id!r} is waiting in this run")


class AgentPermissions:
    def __init__(self, engine: ChatEngine) -> None:
        self.engine = engine

    def answer(
        self, principal: Principal, run_id: str, request_id: str, option_id: str | None
    ) -> None:
        """Choose ``option_id`` (one of the request's options; None = cancel the request)."""
        run = self.engine.active_run(run_id, owner=principal.owner) if is_run_id(run_id) else None
        if run is None:
            raise RunNotFound(run_id)
        if not isinstance(run.provider, AcpProvider):
            raise PermissionNotFound(request_id)
        try:
            answered = run.provider.answer_permission(request_id, option_id)
        except ValueError as exc:
            raise InvalidInput(str(exc)) from exc
        if not answered:
            raise PermissionNotFound(request_id)
