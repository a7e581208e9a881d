"""The sandbox seam: what the agent and the pipeline need from an isolated place to run commands."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, SecretStr


@dataclass(frozen=True)
class ExecResult:
    """The outcome of one action: combined stdout+stderr, return code and, on timeout or failure, why."""

    output: str
    returncode: int
    exception_info: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The shape mini-swe-agent's templates and trajectories use (`output.returncode`, ...)."""
        return {"output": self.output, "returncode": self.returncode, "exception_info": self.exception_info}


class SandboxConfig(BaseModel):
    """How one run's container is started and how its actions run."""

    model_config = ConfigDict(extra="forbid")

    image: str = "mini-fix-sandbox:latest"
    """Image the container is created from."""
    cwd: str = "/testbed"
    """Working directory of every action (the repository is copied here)."""
    env: dict[str, str] = {}
    """Environment of every action. Never put secrets here: the model can read them."""
    timeout: int = 60
    """Seconds one action may run before it is killed inside the container."""
    memory: str = "2g"
    """Memory limit (swap set equal): processes and the files in the tmpfs workdir and scratch dirs count together."""
    disk: str = "1g"
    """Size of the working directory (a tmpfs volume); writes past it fail with ENOSPC. The image is read-only."""
    scratch_disk: str = "512m"
    """Size of each scratch tmpfs (`scratch_paths`), the only other writable places."""
    scratch_paths: list[str] = ["/tmp", "/var/tmp", "/home/agent"]
    """Writable tmpfs directories besides the working directory (the image's home of the action user, temp dirs)."""
    copy_in_max_bytes: str = "1g"
    """`copy_in` refuses a tree larger than this (file contents plus 512 bytes per entry)."""
    cpus: float = 1.0
    """CPU quota, in cores."""
    pids_limit: int = 512
    """Maximum number of processes in the container (stops fork bombs)."""
    network: bool = False
    """A setup phase with egress through the filtering proxy only (`setup_hosts`); off unless the operator allows it."""
    setup_hosts: list[str] = []
    """Host names the setup proxy lets through (a leading dot allows subdomains); all else is refused."""
    setup_mirror_addresses: list[str] = []
    """IPv4 addresses or ranges of the operator's own registry mirrors that the proxy may reach although they are
    private (an Artifactory or Nexus on the company network), for names in `setup_hosts` only."""
    setup_upstream_network: str = "bridge"
    """Engine network the setup proxy reaches the allowed hosts through."""
    setup_proxy_image: str = "mini-fix-proxy:latest"
    """Image of the setup proxy (Debian's squid; built by scripts/ensure-docker.sh from sandbox/proxy)."""
    setup_env: dict[str, SecretStr] = {}
    """Variables of the setup phase only, on top of `env` (a registry mirror, its credentials, the toolchains told
    to go online): gone with the network, never in an agent's action or a check."""
    setup_files: dict[str, str] = {}
    """HOME-relative path -> text written when a sandbox starts with the setup network (a registry mirror's tool
    configuration, such as `.cargo/config.toml`): kept with setup's result, so readable by the agent afterwards."""
    setup_ca_file: str | None = None
    """A PEM file on the worker the setup phase's tools trust (an internal registry's CA, a TLS-inspecting
    proxy's): copied to SETUP_CA_PATH when the sandbox starts with a network, named by the tools' CA variables."""
    path_prepend: list[str] = ["~/.venv/bin"]
    """Directories put before the image's PATH in every action's and check's environment (`~/`: the image's
    HOME): a virtualenv setup made at `~/.venv` is what `python3` and `pip` mean to the agent and the tests."""
    wall_time_seconds: int = 3600
    """The container is killed this many seconds after it starts, whatever it is doing."""
    user: str = "1000:1000"
    """Numeric uid:gid the actions run as: never root, never the runner's uid."""
    runtime: str | None = None
    """OCI runtime, e.g. `runsc` for gVisor; None for the engine's default."""


class SandboxError(Exception):
    """The sandbox could not be started or used; the message says what to do."""


class ExportTooLarge(SandboxError):
    """The tree being exported holds more files and directories than its `ExportCap` allows."""


class ExportCap(int):
    """`export_tree`'s byte cap (every byte of the archive read, as an int), carrying `entries`, the most files,
    links and directories the export writes before it stops (None: no such cap), and `skip`, paths (a directory
    as `dir/`) read past, never written or counted as entries (what setup left untracked, which git leaves out of
    the change anyway). An int, so every sandbox wrapper that forwards `max_bytes` forwards these too."""

    entries: int | None
    skip: tuple[str, ...]

    def __new__(cls, max_bytes: int, *, entries: int | None = None, skip: tuple[str, ...] = ()) -> ExportCap:
        cap = super().__new__(cls, max_bytes)
        cap.entries, cap.skip = entries, skip
        return cap


class EngineUnavailable(SandboxError):
    """No Docker engine answers."""


class ImageMissing(SandboxError):
    """The configured sandbox image does not exist on the engine."""


class Sandbox(Protocol):
    """An isolated, resource-limited place that runs one bash command per action, statelessly."""

    def execute(self, command: str, *, timeout: float | None = None, cwd: str | None = None) -> ExecResult:
        """Run `command` in a fresh `bash -c`; a timeout kills it inside the sandbox and is reported, not raised."""
        ...

    def copy_in(self, src: Path, dest: str | None = None) -> None:
        """Copy a host directory's contents into the sandbox (default: the working directory)."""
        ...

    def diff(self) -> str:
        """The submission diff: `git add -A && git diff --cached --binary` in the working directory."""
        ...

    def export_tree(self, dest: Path, *, max_bytes: int) -> None:
        """Extract the working directory (without its .git) into the new directory `dest`, checked and size-capped."""
        ...

    def run_check(self, command: str, *, timeout: float) -> ExecResult:
        """Run a verdict command (e.g. the tests) whose return code is the engine's own exec exit code."""
        ...

    def end_processes(self) -> None:
        """Kill every process the actions left running (e.g. daemons of a setup phase), whatever session they took."""
        ...

    def template_vars(self) -> dict[str, Any]:
        """Variables for prompt templates: system, release, version, machine (of the sandbox), cwd."""
        ...

    def close(self) -> None:
        """Remove the container. Idempotent; never raises."""
        ...


class DelegatingSandbox:
    """A sandbox that wraps another: every `Sandbox` method, and any other attribute the real one has
    (disconnect_network, stream_in, image_id, container_id...), goes to `inner`; a wrapper overrides only what it
    adds to."""

    def __init__(self, inner: Sandbox) -> None:
        self.inner = inner

    def execute(self, command: str, *, timeout: float | None = None, cwd: str | None = None) -> ExecResult:
        """See `Sandbox.execute`."""
        return self.inner.execute(command, timeout=timeout, cwd=cwd)

    def copy_in(self, src: Path, dest: str | None = None) -> None:
        """See `Sandbox.copy_in`."""
        self.inner.copy_in(src, dest)

    def diff(self) -> str:
        """See `Sandbox.diff`."""
        return self.inner.diff()

    def export_tree(self, dest: Path, *, max_bytes: int) -> None:
        """See `Sandbox.export_tree`."""
        self.inner.export_tree(dest, max_bytes=max_bytes)

    def run_check(self, command: str, *, timeout: float) -> ExecResult:
        """See `Sandbox.run_check`."""
        return self.inner.run_check(command, timeout=timeout)

    def end_processes(self) -> None:
        """See `Sandbox.end_processes`."""
        self.inner.end_processes()

    def template_vars(self) -> dict[str, Any]:
        """See `Sandbox.template_vars`."""
        return self.inner.template_vars()

    def close(self) -> None:
        """See `Sandbox.close`."""
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (e.g. while copying): never recurse
            raise AttributeError(name)
        return getattr(self.inner, name)
