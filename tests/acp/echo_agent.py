"""A tiny ACP agent for Lumina's tests, written with the SDK's agent side.

It keeps each session's prompts (in memory, and in ``.echo-agent.json`` in its folder so
``session/load`` in a new process finds them), answers with how many it has seen, and on
request streams thoughts, runs a tool, asks a permission, reads or writes a file through
the client (``/fifo NAME`` makes a named pipe and reads it; ``/link NAME TARGET`` makes a
symbolic link), reports an environment variable, starts a grandchild, ignores a cancel, or
crashes. ``ECHO_AGENT_CAPS`` = ``load`` (default), ``resume``, or ``none``;
``ECHO_AGENT_IMAGES=1`` says prompts may carry images, and it names each image block it gets
(``image=TYPE:SHA256[:12]``, ``link=URI``); ``/echo`` repeats the prompt's text.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import acp
from acp.schema import (
    AgentCapabilities,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionResumeCapabilities,
    ToolCallUpdate,
    Usage,
)

STORE = ".echo-agent.json"


class EchoAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.sessions: dict[str, list[str]] = {}
        self.folders: dict[str, Path] = {}
        self.cancelled: set[str] = set()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        caps = os.environ.get("ECHO_AGENT_CAPS", "load")
        session_caps = SessionCapabilities(
            resume=SessionResumeCapabilities() if caps == "resume" else None
        )
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=caps == "load",
                session_capabilities=session_caps,
                prompt_capabilities=PromptCapabilities(
                    image=os.environ.get("ECHO_AGENT_IMAGES") == "1"
                ),
            ),
            agent_info={"name": "echo-agent", "version": "1.0"},
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = "echo-" + uuid.uuid4().hex[:8]
        self.sessions[session_id], self.folders[session_id] = [], Path(cwd)
        self._save(session_id)
        return NewSessionResponse(session_id=session_id)

    def _stored(self, cwd: str, session_id: str) -> list[str]:
        data = json.loads((Path(cwd) / STORE).read_text())
        if session_id not in data:
            raise acp.RequestError.resource_not_found(session_id)
        return data[session_id]

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        prompts = self._stored(cwd, session_id)
        self.sessions[session_id], self.folders[session_id] = prompts, Path(cwd)
        for text in prompts:  # replayed: the client must not take these for a new answer
            await self.conn.session_update(session_id, acp.update_user_message_text(text))
            await self.conn.session_update(session_id, acp.update_agent_message_text("REPLAY"))
        return LoadSessionResponse()

    async def resume_session(
        self, cwd: str, session_id: str, **kwargs: Any
    ) -> ResumeSessionResponse:
        self.sessions[session_id] = self._stored(cwd, session_id)
        self.folders[session_id] = Path(cwd)
        return ResumeSessionResponse()

    def _save(self, session_id: str) -> None:
        path = self.folders[session_id] / STORE
        data = json.loads(path.read_text()) if path.exists() else {}
        data[session_id] = self.sessions[session_id]
        path.write_text(json.dumps(data))

    async def _read(self, session_id: str, path: str, say: Any) -> None:
        try:
            got = await self.conn.read_text_file(session_id, path)
            await say(f"read={got.content!r} ")
        except acp.RequestError as exc:
            await say(f"read-refused={exc} ")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.add(session_id)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        prompts = self.sessions[session_id]
        prompts.append(text)
        self._save(session_id)
        say = lambda words: self.conn.session_update(  # noqa: E731
            session_id, acp.update_agent_message_text(words)
        )
        for block in prompt:
            if getattr(block, "type", "") == "image":
                digest = hashlib.sha256(base64.b64decode(block.data)).hexdigest()[:12]
                await say(f"image={block.mime_type}:{digest} ")
            if getattr(block, "type", "") == "resource_link":
                await say(f"link={block.uri} ")
        if "/echo" in text:
            await say(f"text={text!r} ")
        if "/think" in text:
            await self.conn.session_update(session_id, acp.update_agent_thought_text("pondering "))
        if "/crash" in text:
            await say("about to crash ")
            await asyncio.sleep(0.05)
            os._exit(3)
        for part in text.split("/env ")[1:]:
            name = part.split()[0]
            await say(f"env {name}={os.environ.get(name, '<unset>')} ")
        if "/tool" in text:
            await self.conn.session_update(
                session_id,
                acp.start_tool_call(
                    "t1", "list files", kind="read", status="in_progress", raw_input={"path": "."}
                ),
            )
            await self.conn.session_update(
                session_id,
                acp.update_tool_call(
                    "t1",
                    status="completed",
                    content=[acp.tool_content(acp.text_block("a.txt b.txt"))],
                ),
            )
        for part in text.split("/fifo ")[1:]:  # a named pipe in its folder, then read it
            name = part.split()[0]
            with contextlib.suppress(FileExistsError):
                os.mkfifo(self.folders[session_id] / name)
            await say(f"fifo={name} ")
            await self._read(session_id, str(self.folders[session_id] / name), say)
        for part in text.split("/link ")[1:]:  # /link NAME TARGET: a symbolic link
            name, target = part.split()[:2]
            with contextlib.suppress(FileExistsError):
                (self.folders[session_id] / name).symlink_to(target)
            await say(f"linked={name} ")
        if "/permission" in text:
            kind = "read" if "/permission-read" in text else "edit"
            reply = await self.conn.request_permission(
                session_id,
                ToolCallUpdate(tool_call_id="p1", title="edit notes.md", kind=kind),
                [
                    PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                    PermissionOption(option_id="no", name="Reject", kind="reject_once"),
                ],
            )
            outcome = reply.outcome
            chosen = getattr(outcome, "option_id", None) or outcome.outcome
            await say(f"permission={chosen} ")
        for part in text.split("/read ")[1:]:
            await self._read(session_id, part.split()[0], say)
        if "/write " in text:
            path = text.split("/write ", 1)[1].split()[0]
            try:
                await self.conn.write_text_file(session_id, path, "written by echo")
                await say("write=ok ")
            except acp.RequestError as exc:
                await say(f"write-refused={exc} ")
        if "/spawn" in text:  # a grandchild in the same group: must end with the agent
            child = await asyncio.create_subprocess_exec(
                sys.executable, "-c", "import time; time.sleep(300)"
            )
            await say(f"grandchild={child.pid} ")
        if "/slow" in text or "/stubborn" in text:
            for i in range(100):
                if session_id in self.cancelled and "/stubborn" not in text:
                    self.cancelled.discard(session_id)
                    return PromptResponse(stop_reason="cancelled")
                await say(f"w{i} ")
                await asyncio.sleep(0.1)
        await say(f"prompt {len(prompts)} in session {session_id} pid={os.getpid()}")
        return PromptResponse(
            stop_reason="end_turn",
            usage=Usage(input_tokens=len(text.split()), output_tokens=7, total_tokens=0),
        )


if __name__ == "__main__":
    if os.environ.get("ECHO_AGENT_NOISE"):  # a chatty stderr must not stall anything
        sys.stderr.write("x" * 1_000_000 + "\n")
        sys.stderr.flush()
    asyncio.run(acp.run_agent(EchoAgent(), use_unstable_protocol=True))
