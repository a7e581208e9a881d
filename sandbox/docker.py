"""DockerSandbox: one locked-down container per run, actions run by a long-lived runner inside it."""

from __future__ import annotations

import io
import shlex
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import IO, Any

import docker
import structlog
from docker.utils import parse_bytes

from sandbox.action_env import SETUP_CA_PATH, action_env, ca_bytes, setup_env
from sandbox.archive import extract_archive, tar_directory
from sandbox.base import ExecResult, SandboxConfig, SandboxError
from sandbox.channel import RunnerChannel, RunnerUnavailable
from sandbox.cleanup import remove_run_containers, sweep
from sandbox.cpu import cgroup_cpu_seconds, engine_cpu_seconds
from sandbox.engine import (
    DEADLINE_LABEL,
    LABEL,
    RUN_ID_LABEL,
    action_ids,
    connect,
    create_container,
    force_remove,
    remove_volume,
    translated,
)
from sandbox.engine_exec import engine_exec, kill_by_engine
from sandbox.pipes import stream_in, stream_out
from sandbox.replies import as_result
from sandbox.setup_proxy import SetupProxy, disconnect_all

__all__ = ["DockerSandbox", "remove_run_containers", "sweep"]

OUTPUT_LIMIT = 4 << 20  # bytes of one action's output kept; the rest is dropped and flagged
DIFF_LIMIT = 256 << 20
DIFF_TIMEOUT = 300
REPLY_GRACE = 15.0  # the runner enforces the timeout; this only bounds waiting on a runner that hangs
REAP_TIMEOUT = 30.0
CHECK_OUTPUT_LIMIT = 1 << 20
CA_TIMEOUT = 60  # seconds to write the setup CA file into a started sandbox

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
        self._opening: threading.Thread | None = None  # the runner starting (`_boot`); `_await_runner` joins it
        self._runner_failed: SandboxError | None = None  # the engine refused the runner's exec: said at first use
        self._exec_lock = threading.Lock()  # one action at a time on the runner's stream
        self._state_lock = threading.Lock()  # close() must not wait for a running action: it ends it
        self._closed = False
        self._owns_client = False
        self._expired = False
        self._base_commit = ""
        self._base_pending = False  # a copy-in's commit not read yet: read before the next command runs in here
        self._uname: dict[str, str] = {}
        self._uid, self._gid = action_ids(config.user)
        self._volume = ""
        self._proxy: SetupProxy | None = None
        self._env = dict(config.env)  # with the image's PATH once started (action_env)
        self._setup_ca = False
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
        proxy = None
        try:
            if config.network:
                proxy = SetupProxy.start(client, config, _labels(config, run_id, labels))
            network = proxy.network if proxy else "none"
            container_id, volume = create_container(client, config, run_id, labels or {}, network)
        except BaseException:
            if proxy:
                proxy.close()
            if owns_client:
                client.close()
            raise
        sandbox = cls(client, container_id, config, on_exec)
        sandbox._owns_client = owns_client
        sandbox._volume, sandbox._proxy = volume, proxy
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
        with translated(self.config.image):
            image_env = self.client.api.inspect_container(self.container_id)["Config"].get("Env") or []
        self._env = action_env(self.config, image_env)
        if self._proxy is not None:
            self._proxy.pin(self.config, self.container_id, {LABEL: "1"})
            self._copy_setup_ca()
            self._write_setup_files()
        # The runner starts while the caller goes on (a copy-in's archive is sent meanwhile); what needs it waits.
        self._opening = threading.Thread(target=self._open_runner, name="sandbox-runner-open", daemon=True)
        self._opening.start()

    def _open_runner(self) -> None:
        try:
            with translated(self.config.image):
                self._runner = RunnerChannel.open(
                    self.client.api, self.container_id, uid=self._uid, gid=self._gid, workdir=self.config.cwd
                )
        except RunnerUnavailable as exc:
            log.info("sandbox.runner_unavailable", image=self.config.image, error=str(exc))
        except SandboxError as exc:
            self._runner_failed = exc

    def _await_runner(self) -> None:
        """Wait for the runner `_boot` started; a runner the engine refused fails what needed it, as `start` did."""
        if self._opening is not None:
            self._opening.join()
        if self._runner_failed is not None:
            raise self._runner_failed

    def _copy_setup_ca(self) -> None:
        """The operator's CA file, for the setup phase's tools (`setup_ca_file`)."""
        if not self.config.setup_ca_file:
            return
        data = io.BytesIO(ca_bytes(self.config.setup_ca_file))
        stream_in(self.client, self.container_id, f"cat > {SETUP_CA_PATH}", self.config, data, timeout=CA_TIMEOUT)
        self._setup_ca = True

    def _write_setup_files(self) -> None:
        """The operator's mirror configuration files (`setup_files`), under the action user's HOME."""
        for rel, text in self.config.setup_files.items():
            path = PurePosixPath(rel)
            if path.is_absolute() or ".." in path.parts or not path.parts:
                raise SandboxError(f"a setup file must be a path under HOME: {rel!r}")
            place = f'"$HOME"/{shlex.quote(str(path))}'
            command = f'mkdir -p "$HOME"/{shlex.quote(str(path.parent))} && cat > {place}'
            stream_in(
                self.client, self.container_id, command, self.config, io.BytesIO(text.encode()), timeout=CA_TIMEOUT
            )

    def execute(self, command: str, *, timeout: float | None = None, cwd: str | None = None) -> ExecResult:
        """Run `command` in a fresh `bash -c`; a timeout kills it inside the sandbox and is reported."""
        seconds = timeout or self.config.timeout
        started = time.monotonic()
        try:
            reply = self._run(command, seconds, cwd or self.config.cwd, OUTPUT_LIMIT)
        finally:
            if self._on_exec is not None:
                self._on_exec(time.monotonic() - started)
        return as_result(reply, command, seconds)

    def run_check(self, command: str, *, timeout: float) -> ExecResult:
        """Run a verdict command as its own engine exec: the return code is the engine's, not the runner's.

        Every process the agent left is killed first (nothing of its may tamper with the check) and after.
        """
        self.end_processes()
        with self._exec_lock:
            self._check_open()
            self._read_base()
            reply = self._engine_exec(command, timeout, self.config.cwd, CHECK_OUTPUT_LIMIT, self._env)
        self.end_processes()
        return as_result(reply, command, timeout)

    def end_processes(self) -> None:
        """Kill every process of the action uid (daemons a setup or an action left, `setsid` ones included)."""
        with self._exec_lock:
            self._check_open()
            self._kill_unlocked()

    def _kill_unlocked(self) -> None:
        self._await_runner()
        if self._runner is None:
            kill_by_engine(self.client, self.container_id, self.config)
        else:
            self._runner.reap(REAP_TIMEOUT)

    def _engine_exec(self, command: str, timeout: float, cwd: str, limit: int, env: dict[str, str]) -> dict[str, Any]:
        return engine_exec(
            self.client,
            self.container_id,
            command,
            self.config,
            timeout=timeout,
            cwd=cwd,
            limit=limit,
            env=env,
            kill=self._kill_unlocked,
        )

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxError("the sandbox is closed")

    def _run(self, command: str, timeout: float, cwd: str, limit: int) -> dict[str, Any]:
        with self._exec_lock:
            self._check_open()
            self._read_base()
            return self._run_unlocked(command, timeout, cwd, limit)

    def _read_base(self) -> None:
        """The commit the last copy-in brought (`diff`'s base), read once before anything else runs in here, so no
        command has moved HEAD yet; a copy-in itself then waits for nothing (the runner may still be starting)."""
        if self._base_pending:
            self._base_pending = False
            head = self._run_unlocked("git rev-parse --verify -q HEAD", 60, self.config.cwd, 1024)
            self._base_commit = head["output"].decode("ascii", "replace").strip() if head["returncode"] == 0 else ""

    def _run_unlocked(self, command: str, timeout: float, cwd: str, limit: int) -> dict[str, Any]:
        self._await_runner()
        try:
            env = self._env
            if self._proxy is not None:  # the setup phase
                env = {**env, **setup_env(self.config, self._proxy.env(), self._setup_ca)}
            if self._runner is None:
                return self._engine_exec(command, timeout, cwd, limit, env)
            request = {"command": command, "cwd": cwd, "env": env, "timeout": timeout}
            return self._runner.run(request, timeout + REPLY_GRACE, limit)
        except SandboxError as exc:
            if self._expired:
                limit_s = self.config.wall_time_seconds
                raise SandboxError(f"the sandbox reached its wall-time limit of {limit_s}s") from exc
            raise

    def copy_in(self, src: Path, dest: str | None = None) -> None:
        """Copy a host directory's contents (with .git) into the sandbox, owned by the action user; size-capped."""
        target = dest or self.config.cwd
        cap = int(parse_bytes(self.config.copy_in_max_bytes))
        with tempfile.TemporaryFile() as archive:
            tar_directory(Path(src), archive, self._uid, self._gid, cap)
            archive.seek(0)
            with translated(self.config.image):
                if not self.client.api.put_archive(self.container_id, target, archive):
                    raise SandboxError(f"could not copy {src} into the sandbox at {target}")
        if target == self.config.cwd:
            with self._exec_lock:
                self._base_pending = True

    def export_tree(self, dest: Path, *, max_bytes: int) -> None:
        """Extract the working directory into the new directory `dest` through the engine's archive API.

        The sandbox's .git is left out (the host has its own). Links stay links and are never followed; hard
        links become copies; devices, fifos and anything escaping `dest` are refused; past `max_bytes` (file
        contents plus 512 bytes per entry) the export stops with a SandboxError.
        """
        self.end_processes()  # nothing may change the tree while it is read
        with translated(self.config.image):
            chunks, _ = self.client.api.get_archive(self.container_id, self.config.cwd.rstrip("/") + "/.")
            try:
                extract_archive(chunks, dest, max_bytes=max_bytes, skip_top=(".git",))
            finally:
                # Closing the stream closes its connection: one left half read (an export stopped at its cap)
                # holds the container in the engine, and removing it would wait out the client's timeout.
                chunks.close()

    def image_id(self) -> str:
        """The id of the image this container was created from (a tag may have moved since)."""
        with translated(self.config.image):
            image: str = self.client.api.inspect_container(self.container_id)["Image"]
        return image

    def stream_out(self, command: str, out: IO[bytes], *, max_bytes: int, timeout: float) -> int:
        """Write what `command` (as the action user, in its own exec) prints to `out`, never parsed here; the bytes
        written. StreamTooLarge past `max_bytes`, SandboxError when it fails."""
        with self._exec_lock:
            self._check_open()
            self._read_base()
            return stream_out(self.client, self.container_id, command, self.config, out, max_bytes=max_bytes,
                              timeout=timeout)  # fmt: skip

    def stream_in(self, command: str, src: IO[bytes], *, timeout: float) -> None:
        """Feed `src` to `command`'s stdin (as the action user, in its own exec); SandboxError when it fails."""
        with self._exec_lock:
            self._check_open()
            self._read_base()
            stream_in(self.client, self.container_id, command, self.config, src, timeout=timeout)

    def diff(self) -> str:
        """The changes since `copy_in`: `git add -A && git diff --cached --binary` in the working directory.

        Bytes that are not UTF-8 come back as surrogate escapes: write the text with errors="surrogateescape".
        """
        flags = "--binary --no-color --no-ext-diff --no-textconv"
        with self._exec_lock:
            self._check_open()
            self._read_base()
            command = f"git add -A && git diff --cached {flags} {self._base_commit}"
            reply = self._run_unlocked(command, max(self.config.timeout, DIFF_TIMEOUT), self.config.cwd, DIFF_LIMIT)
        if reply["timed_out"] or reply["error"] or reply["returncode"] != 0:
            detail = reply["error"] or reply["output"][-2000:].decode("utf-8", "replace")
            raise SandboxError(f"could not take the diff from the sandbox: {detail}")
        if reply["truncated"]:
            raise SandboxError(f"the diff is larger than {DIFF_LIMIT >> 20} MiB")
        diff: str = reply["output"].decode("utf-8", "surrogateescape")
        return diff

    def disconnect_network(self) -> None:
        """End the setup phase: off every network (loopback stays), every setup process killed, the proxy gone."""
        disconnect_all(self.client, self.container_id, self.config.image)
        self.end_processes()  # a daemon started during setup must not live on into the agent's phase
        if self._proxy is not None:
            self._proxy.close()
            self._proxy = None

    def template_vars(self) -> dict[str, Any]:
        """Variables for prompt templates: system, release, version, machine (of the sandbox), cwd."""
        if not self._uname:
            result = self.execute("uname -s; uname -r; uname -v; uname -m", timeout=30)
            lines = [*result.output.splitlines(), "", "", "", ""]
            self._uname = dict(zip(("system", "release", "version", "machine"), lines, strict=False))
        return {**self._uname, "cwd": self.config.cwd}

    def cpu_seconds(self) -> float | None:
        """CPU time the container's processes used so far, as the kernel counts it for its cgroup (read on the host
        where the engine is local, else the engine's one-shot stats); None when neither can say."""
        found = cgroup_cpu_seconds(self.container_id)
        return found if found is not None else engine_cpu_seconds(self.client.api, self.container_id)

    def close(self) -> None:
        """Remove the container, ending any action running in it. Idempotent; never raises."""
        with self._state_lock:
            if self._closed:
                return
            self._closed = True
        self._timer.cancel()
        if self._opening is not None and self._opening.is_alive():
            force_remove(self.client, self.container_id)  # ends the runner's exec: its start returns at once
            self._opening.join(REAP_TIMEOUT)
        if self._runner is not None:
            self._runner.close()
        force_remove(self.client, self.container_id)
        if self._volume:
            remove_volume(self.client, self._volume)
        if self._proxy is not None:
            self._proxy.close()
        if self._owns_client:
            self.client.close()

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _expire(self) -> None:
        """Wall-time deadline reached: kill the container (close() still removes it)."""
        self._expired = True
        log.warning("sandbox.deadline", container=self.container_id[:12], seconds=self.config.wall_time_seconds)
        try:
            with translated(self.config.image):
                self.client.api.kill(self.container_id)
        except SandboxError as exc:
            log.info("sandbox.deadline_kill_failed", error=str(exc))


def _labels(config: SandboxConfig, run_id: str, labels: dict[str, str] | None) -> dict[str, str]:
    """The labels a run's helpers (proxy, network) carry, so crash cleanup finds them with the container."""
    deadline = int(time.time()) + config.wall_time_seconds
    return {**(labels or {}), RUN_ID_LABEL: run_id, DEADLINE_LABEL: str(deadline)}
