"""Built-in tools whose cost depends on their input run here, in worker processes, so no
call can stall the event loop (and with it every other user), and a deadline really ends
the work: a thread cannot be stopped, a process can. A call that outlives its deadline,
or whose run was stopped (or timed out), kills its worker; the next call starts a fresh
one. Workers are ``python -m compute_worker`` with a minimal environment and a capped
address space, started on first need, one call at a time each."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from lumina_app.agents.tools.spec import ToolError
from lumina_app.domain.tasks import keep

WORKER_MODULE = "lumina_app.agents.tools.compute_worker"
WORKER_MEMORY_BYTES = 512 * 1024**2
_ROOT = Path(__file__).resolve().parents[3]  # where ``lumina_app`` is importable from
_START_TIMEOUT = 20.0  # a loaded machine can take seconds to start Python
_LINE_LIMIT = 1024**2  # an answer longer than this is refused (results are small)
_ENV_KEPT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "LD_LIBRARY_PATH", "TMPDIR")
_READY = b'{"ready": true}\n'

Worker = asyncio.subprocess.Process


class WorkerCrashed(RuntimeError):
    """A tool raised something other than ToolError in its worker: a bug (logged)."""


class ComputePool:
    def __init__(
        self,
        *,
        workers: int,
        deadline: float,
        module: str = WORKER_MODULE,
        memory_bytes: int = WORKER_MEMORY_BYTES,
    ) -> None:
        self.deadline = deadline
        self.module = module
        self.memory_bytes = memory_bytes
        self._slots = asyncio.Semaphore(workers)
        self._idle: list[Worker] = []
        self._busy: set[Worker] = set()
        self._reaping: set[asyncio.Task] = set()

    async def run(self, tool: str, args: dict[str, Any]) -> str:
        """``tool``'s text for ``args``, computed in a worker; ToolError for the model when
        the tool refuses, the deadline passes or the worker dies."""
        request = (json.dumps({"tool": tool, "args": args}) + "\n").encode()
        async with self._slots:
            worker = await self._take()
            self._busy.add(worker)
            try:
                async with asyncio.timeout(self.deadline):
                    assert worker.stdin is not None and worker.stdout is not None
                    worker.stdin.write(request)
                    await worker.stdin.drain()
                    line = await worker.stdout.readline()
            except TimeoutError:
                self._kill(worker)
                raise ToolError(
                    f"{tool} did not finish within {self.deadline:g} s: its work was stopped"
                ) from None
            except (OSError, ValueError):  # the pipe broke, or an answer too long
                self._kill(worker)
                raise ToolError(f"{tool} failed: its worker process stopped") from None
            except BaseException:  # cancelled: the run was stopped, or the tool timed out
                self._kill(worker)
                raise
            finally:
                self._busy.discard(worker)
            if not line:  # it died (out of memory, killed from outside)
                self._kill(worker)
                raise ToolError(f"{tool} failed: its worker process stopped")
            self._idle.append(worker)
        return _answer(tool, line)

    async def _take(self) -> Worker:
        while self._idle:
            worker = self._idle.pop()
            if worker.returncode is None:
                return worker
            self._kill(worker)
        return await self._start()

    async def _start(self) -> Worker:
        env = {key: os.environ[key] for key in _ENV_KEPT if key in os.environ}
        env["PYTHONPATH"] = str(_ROOT)
        worker = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            self.module,
            str(self.memory_bytes),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
            cwd=_ROOT,
            limit=_LINE_LIMIT,
        )
        try:
            assert worker.stdout is not None
            async with asyncio.timeout(_START_TIMEOUT):
                ready = await worker.stdout.readline()
        except BaseException:
            self._kill(worker)
            raise
        if ready != _READY:
            self._kill(worker)
            raise RuntimeError(f"the tool worker {self.module} did not start (said {ready!r})")
        return worker

    def _kill(self, worker: Worker) -> None:
        """Kill ``worker`` now and reap it in the background."""
        if worker.returncode is None:
            with contextlib.suppress(ProcessLookupError):  # it had just ended
                worker.kill()
        keep(self._reaping, worker.wait())

    def pids(self) -> list[int]:
        """The live workers' process ids (for tests and operators)."""
        return [w.pid for w in [*self._idle, *self._busy] if w.returncode is None]

    async def close(self) -> None:
        """Stop every worker: idle ones at the end of their input, busy ones killed."""
        idle, self._idle = self._idle, []
        for worker in self._busy:
            self._kill(worker)
        for worker in idle:
            if worker.stdin is not None:
                worker.stdin.close()
        for worker in idle:
            try:
                async with asyncio.timeout(2):
                    await worker.wait()
            except TimeoutError:
                self._kill(worker)
        await asyncio.gather(*self._reaping, return_exceptions=True)


def _answer(tool: str, line: bytes) -> str:
    answer = json.loads(line)
    if "ok" in answer:
        return answer["ok"]
    if "error" in answer:
        raise ToolError(answer["error"])
    raise WorkerCrashed(f"{tool} crashed in its worker:\n{answer.get('crash', answer)}")
