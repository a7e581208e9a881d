"""FakeSandbox: the Sandbox protocol on the host, in a scratch directory, for tests without Docker.

Each action runs in a fresh `bash -c` with a clean environment (nothing from the host's), so tests see real
output and return codes; `results` scripts exact commands instead (e.g. a timeout, as Docker reports it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sandbox.archive import extract_archive
from sandbox.base import ExecResult

PLATFORM = {"system": "Linux", "release": "6.1.0-fake", "version": "#1 SMP", "machine": "x86_64"}


class FakeSandbox:
    """Runs actions with the host's bash in `workdir`; records every command in `.commands`."""

    def __init__(
        self,
        workdir: Path | None = None,
        *,
        results: Mapping[str, ExecResult] | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="fake-sandbox-"))
        self.results = dict(results or {})
        self.env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(self.workdir), **(env or {})}
        self.timeout = timeout
        self.commands: list[str] = []
        self.closed = False
        self.ended_processes = 0
        self._running: set[subprocess.Popen[str]] = set()  # killed by close(), as removing a container ends its exec

    def execute(self, command: str, *, timeout: float | None = None, cwd: str | None = None) -> ExecResult:
        """Run `command` (or return its scripted result); a timeout is reported, not raised."""
        self.commands.append(command)
        if command in self.results:
            return self.results[command]
        limit = timeout or self.timeout
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=cwd or self.workdir,
            env=self.env,
            text=True,
            errors="replace",
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._running.add(proc)
        try:
            output, _ = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
            return ExecResult(output, -1, f"The command timed out after {limit:g} seconds and was killed.")
        finally:
            self._running.discard(proc)
        return ExecResult(output, proc.returncode)

    def copy_in(self, src: Path, dest: str | None = None) -> None:
        """Copy a directory's contents into the working directory (or `dest`)."""
        shutil.copytree(src, Path(dest) if dest else self.workdir, symlinks=True, dirs_exist_ok=True)  # as the tar does

    def diff(self) -> str:
        """`git add -A && git diff --cached --binary` in the working directory."""
        return self.execute("git add -A && git diff --cached --binary").output

    def export_tree(self, dest: Path, *, max_bytes: int) -> None:
        """The working directory (without .git) through the same checked extractor DockerSandbox uses."""
        with tempfile.TemporaryFile() as archive:
            with tarfile.open(fileobj=archive, mode="w") as tar:
                tar.add(str(self.workdir), arcname=".")
            archive.seek(0)
            extract_archive(iter(lambda: archive.read(1 << 16), b""), dest, max_bytes=max_bytes, skip_top=(".git",))

    def run_check(self, command: str, *, timeout: float) -> ExecResult:
        """A verdict command: here simply an action."""
        return self.execute(command, timeout=timeout)

    def end_processes(self) -> None:
        """Counted only: this fake runs on the host, where killing by uid would kill the test runner."""
        self.ended_processes += 1

    def template_vars(self) -> dict[str, Any]:
        """Fixed platform values, so prompts are the same on every machine."""
        return {**PLATFORM, "cwd": str(self.workdir)}

    def close(self) -> None:
        """End the actions still running (as removing a container does), remove the scratch directory. Idempotent."""
        for proc in list(self._running):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        if not self.closed:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.closed = True
