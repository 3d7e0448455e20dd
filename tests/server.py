"""Run the real app (``reflex run``) as a subprocess for end-to-end and fault tests.

Each server gets its own database, data folder and Reflex work folders, so tests never
touch the developer's ``.web`` or ``data``. ``backend_only`` starts in ~2 s and serves
the API; the full app also builds the frontend (~15 s on a fresh folder).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from alembic import command

from tests.conftest import ROOT, alembic_config, free_port

VENV_BIN = Path(sys.executable).parent


class AppServer:
    def __init__(
        self,
        workdir: Path,
        *,
        backend_only: bool,
        env: dict[str, str] | None = None,
        database_url: str | None = None,
    ) -> None:
        self.workdir = workdir
        self.backend_only = backend_only
        self.port = free_port()
        self.database_url = database_url or f"sqlite:///{workdir / 'lumina.db'}"
        self.data_dir = workdir / "data"
        self.extra_env = env or {}
        self.proc: subprocess.Popen | None = None
        self.log_path = workdir / "server.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def prepare(self) -> None:
        """A fresh data folder with the shipped agents, and a migrated database."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        if not self.data_dir.exists():
            shutil.copytree(ROOT / "data" / "agents", self.data_dir / "agents")
        command.upgrade(alembic_config(self.database_url), "head")
        web = self.workdir / "web"
        if not self.backend_only and not web.exists() and (ROOT / ".web").exists():
            # Reuse the developer's installed frontend deps: saves the npm install.
            top = str(ROOT / ".web")

            def skip_output(folder: str, names: list[str]) -> list[str]:
                return ["build"] if folder == top and "build" in names else []

            shutil.copytree(top, web, symlinks=True, ignore=skip_output)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        # Each server its own metrics directory (rxconfig makes one): a directory this test
        # process inherited from an imported rxconfig would add earlier servers' counts.
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        env.update(
            PATH=f"{VENV_BIN}:{env.get('PATH', '')}",
            REFLEX_USE_NPM="1",
            REFLEX_CHECK_LATEST_VERSION="0",
            NPM_CONFIG_REGISTRY=env.get("NPM_CONFIG_REGISTRY", "https://registry.npmjs.org/"),
            REFLEX_WEB_WORKDIR=str(self.workdir / "web"),
            REFLEX_STATES_WORKDIR=str(self.workdir / "states"),
            LUMINA_DATABASE_URL=self.database_url,
            LUMINA_DATA_DIR=str(self.data_dir),
        )
        env.update(self.extra_env)
        return env

    def start(self, timeout: float = 240) -> None:
        self.prepare()
        args = [str(VENV_BIN / "reflex"), "run", "--env", "prod", "--loglevel", "warning"]
        if self.backend_only:
            args += ["--backend-only", "--backend-port", str(self.port)]
        else:
            args += ["--frontend-port", str(self.port)]
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            args,
            cwd=ROOT,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        path = "/ping" if self.backend_only else "/"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited early:\n{self.tail()}")
            try:
                if httpx.get(self.url + path, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"server did not answer within {timeout}s:\n{self.tail()}")

    def cli(self, *args: str, stdin: str | None = None) -> str:
        """``python -m lumina_app …`` on this server's database and settings, as the
        operator would run it beside the server; its standard output."""
        done = subprocess.run(
            [str(VENV_BIN / "python"), "-m", "lumina_app", *args],
            input=stdin,
            cwd=ROOT,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""

    def kill(self) -> None:
        """kill -9 the whole process group: a crash, no clean shutdown."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
