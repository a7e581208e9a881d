"""DockerSandbox: one locked-down container per run, actions run by a long-lived runner inside it."""

from __future__ import annotations

import posixpath
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import docker
import structlog

from sandbox.base import ExecResult, SandboxConfig, SandboxError
from sandbox.channel import RunnerChannel, RunnerUnavailable
from sandbox.engine import (
    connect,
    create_container,
    exec_action,
    force_remove,
    remove_run_containers,
    sweep,
    translated,
)

__all__ = ["DockerSandbox", "remove_run_containers", "sweep"]

OUTPUT_LIMIT = 4 << 20  # bytes of one action's output kept; the rest is dropped and flagged
DIFF_LIMIT = 256 << 20
DIFF_TIMEOUT = 300
REPLY_GRACE = 15.0  # the runner enforces the timeout; this only bounds waiting on a runner that hangs

log = structlog.get_logger(__name__)
ExecObserver = Callable[[float], None]
"""Told the seconds each action took (the App passes its metrics histogram in; the sandbox knows no App)."""


class DockerSandbox:
    """A Sandbox backed by one Docker container; see `sandbox.base.Sandbox` for the contract."""

    def __init__(
        self,
        client: docker.DockerClient,
        container_id: str,
        config: SandboxConfig,
        on_exec: ExecObserver | None = None,
    ) -> None:
        self.client = client
        self._on_exec = on_exec
        self.container_id = container_id
        self.config = config
        self._runner: RunnerChannel | None = None
        self._exec_lock = threading.Lock()  # one action at a time on the runner's stream
        self._state_lock = threading.Lock()  # close() must not wait for a running action: it ends it
        self._closed = False
        self._owns_client = False
        self._expired = False
        self._base_commit = ""
        self._uname: dict[str, str] = {}
        self._timer = threading.Timer(config.wall_time_seconds, self._expire)
        self._timer.daemon = True

    @classmethod
    def start(
        cls,
        config: SandboxConfig,
        run_id: str,
        *,
        client: docker.DockerClient | None = None,
        labels: dict[str, str] | None = None,
        on_exec: ExecObserver | None = None,
    ) -> DockerSandbox:
        """Create and start the run's container and its runner; raises EngineUnavailable / ImageMissing."""
        owns_client = client is None
        client = client or connect()
        try:
            container_id = create_container(client, config, run_id, labels or {})
        except BaseException:
            if owns_client:
                client.close()
            raise
        sandbox = cls(client, container_id, config, on_exec)
        sandbox._owns_client = owns_client
        try:
            sandbox._boot()
        except BaseException:
            sandbox.close()
            raise
        return sandbox

    def _boot(self) -> None:
        with translated(self.config.image):
            self.client.api.start(self.container_id)
        self._timer.start()
        try:
            with translated(self.config.image):
                self._runner = RunnerChannel.open(
                    self.client.api, self.container_id, user=self.config.user, workdir=self.config.cwd
                )
        except RunnerUnavailable as exc:
            log.info("sandbox.runner_unavailable", image=self.config.image, error=str(exc))

    def execute(self, command: str, *, timeout: float | None = None, cwd: str | None = None) -> ExecResult:
        """Run `command` in a fresh `bash -c`; a timeout kills it inside the sandbox and is reported."""
        seconds = timeout or self.config.timeout
        started = time.monotonic()
        try:
            reply = self._run(command, seconds, cwd or self.config.cwd, OUTPUT_LIMIT)
        finally:
            if self._on_exec is not None:
                self._on_exec(time.monotonic() - started)
        output = reply["output"].encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        extra = {"truncated": True} if reply["truncated"] else {}
        if reply["timed_out"]:
            info = (
                f"The command timed out after {seconds:g} seconds and was killed, "
                f"with every process it started: {command}"
            )
            return ExecResult(output, -1, info, extra)
        if reply["error"]:
            return ExecResult(output, -1, f"The command could not be run: {reply['error']}", extra)
        return ExecResult(output, reply["returncode"], "", extra)

    def _run(self, command: str, timeout: float, cwd: str, limit: int) -> dict[str, Any]:
        with self._exec_lock:
            if self._closed:
                raise SandboxError("the sandbox is closed")
            try:
                if self._runner is None:
                    return exec_action(
                        self.client, self.container_id, command, self.config, timeout, cwd, limit
                    )
                request = {
                    "command": command,
                    "cwd": cwd,
                    "env": self.config.env,
                    "timeout": timeout,
                    "limit": limit,
                }
                return self._runner.request(request, timeout + REPLY_GRACE)
            except SandboxError as exc:
                if self._expired:
                    raise SandboxError(
                        f"the sandbox reached its wall-time limit of {self.config.wall_time_seconds}s"
                    ) from exc
                raise

    def copy_in(self, src: Path, dest: str | None = None) -> None:
        """Copy a host directory's contents (with .git) into the sandbox, owned by the sandbox user."""
        target = dest or self.config.cwd
        uid, gid = _ids(self.config.user)
        # Unpacked into the parent under the target's name, so the target directory itself becomes the user's.
        parent, name = posixpath.split(target.rstrip("/")) if target.strip("/") else ("/", ".")
        with tempfile.TemporaryFile() as archive:
            _tar_directory(Path(src), name, archive, uid, gid)
            archive.seek(0)
            with translated(self.config.image):
                if not self.client.api.put_archive(self.container_id, parent or "/", archive):
                    raise SandboxError(f"could not copy {src} into the sandbox at {target}")
        if target == self.config.cwd:
            head = self._run("git rev-parse --verify -q HEAD", 60, target, 1024)
            self._base_commit = head["output"].strip() if head["returncode"] == 0 else ""

    def diff(self) -> str:
        """The changes since `copy_in`: `git add -A && git diff --cached --binary` in the working directory.

        Bytes that are not UTF-8 come back as surrogate escapes: write the text with errors="surrogateescape".
        """
        flags = "--binary --no-color --no-ext-diff --no-textconv"
        command = f"git add -A && git diff --cached {flags} {self._base_commit}"
        reply = self._run(command, max(self.config.timeout, DIFF_TIMEOUT), self.config.cwd, DIFF_LIMIT)
        if reply["timed_out"] or reply["error"] or reply["returncode"] != 0:
            detail = reply["error"] or reply["output"][-2000:]
            raise SandboxError(f"could not take the diff from the sandbox: {detail}")
        if reply["truncated"]:
            raise SandboxError(f"the diff is larger than {DIFF_LIMIT >> 20} MiB")
        diff: str = reply["output"]
        return diff

    def disconnect_network(self) -> None:
        """Remove the container from every network it is on (a setup phase had one); loopback stays."""
        with translated(self.config.image):
            networks = self.client.api.inspect_container(self.container_id)["NetworkSettings"]["Networks"] or {}
            for name in networks:
                self.client.api.disconnect_container_from_network(self.container_id, name, force=True)
            left = self.client.api.inspect_container(self.container_id)["NetworkSettings"]["Networks"] or {}
        if left:
            raise SandboxError(f"the sandbox is still on networks {sorted(left)} after disconnecting them")

    def template_vars(self) -> dict[str, Any]:
        """Variables for prompt templates: system, release, version, machine (of the sandbox), cwd."""
        if not self._uname:
            result = self.execute("uname -s; uname -r; uname -v; uname -m", timeout=30)
            lines = [*result.output.splitlines(), "", "", "", ""]
            self._uname = dict(zip(("system", "release", "version", "machine"), lines, strict=False))
        return {**self._uname, "cwd": self.config.cwd}

    def close(self) -> None:
        """Remove the container, ending any action running in it. Idempotent; never raises."""
        with self._state_lock:
            if self._closed:
                return
            self._closed = True
        self._timer.cancel()
        if self._runner is not None:
            self._runner.close()
        force_remove(self.client, self.container_id)
        if self._owns_client:
            self.client.close()

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _expire(self) -> None:
        """Wall-time deadline reached: kill the container (close() still removes it)."""
        self._expired = True
        log.warning(
            "sandbox.deadline", container=self.container_id[:12], seconds=self.config.wall_time_seconds
        )
        try:
            with translated(self.config.image):
                self.client.api.kill(self.container_id)
        except SandboxError as exc:
            log.info("sandbox.deadline_kill_failed", error=str(exc))


def _ids(user: str) -> tuple[int, int]:
    """Numeric uid and gid of a `uid[:gid]` user spec; names (not resolvable from the host) map to 1000."""
    uid, _, gid = user.partition(":")
    as_int = [int(part) if part.isdigit() else 1000 for part in (uid, gid or uid)]
    return as_int[0], as_int[1]


def _tar_directory(src: Path, name: str, out: IO[bytes], uid: int, gid: int) -> None:
    """Write a tar of `src` (its top directory renamed `name`) with every entry owned by uid:gid."""

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid, info.gid, info.uname, info.gname = uid, gid, "", ""
        return info

    with tarfile.open(fileobj=out, mode="w") as tar:
        tar.add(str(src), arcname=name, filter=owned)
