"""`mini-fix serve` as a real subprocess on 127.0.0.1, for end-to-end tests that kill and restart it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class AppProcess:
    """One `mini-fix serve` (or `worker`) process with its own environment; output goes to a log file."""

    def __init__(self, env: dict[str, str], log: Path, *, command: str = "serve", args: tuple[str, ...] = ()) -> None:
        self.port = free_port()
        self.env = {**os.environ, **env}
        self.log_path = log
        self.command = command
        self.args = args  # more arguments of the command, e.g. ("--no-worker",)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> AppProcess:
        args = [sys.executable, "-m", "bot.cli", self.command, *self.args]
        if self.command == "serve":
            args += ["--host", "127.0.0.1", "--port", str(self.port)]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(args, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        if self.command == "serve":
            self._wait_healthy(timeout)
        return self

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"mini-fix exited with {self.proc.returncode}:\n{self.log()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"mini-fix did not answer /healthz in {timeout}s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=60)

    def stop(self) -> None:
        self.kill(signal.SIGTERM)
