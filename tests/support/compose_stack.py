"""A compose project brought up for real on this machine's engine: files, env, up/down, and its containers."""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


def in_ci() -> bool:
    """Whether this is CI (CI=true), where a tier whose setup fails must fail, not skip."""
    return os.environ.get("CI", "").lower() in ("1", "true")


def unavailable(reason: str) -> None:
    """Fail under CI, skip elsewhere."""
    if in_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def compose_binary() -> list[str]:
    """The compose v2 plugin when the docker CLI has it, else Debian's docker-compose (v1)."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    unavailable("no docker compose here: apt-get install -y docker-compose")
    raise AssertionError("unreachable")


def docker(*args: str, check: bool = True) -> str:
    """Run the docker CLI; its stdout."""
    done = subprocess.run(["docker", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed: {done.stderr[-2000:]}")
    return done.stdout


@functools.cache
def build(script: str, *args: str) -> str:
    """Build an image with one of scripts/build-*.sh (layers cached between runs), once per session; its tag."""
    done = subprocess.run([str(ROOT / "scripts" / script), *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"{script} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout.strip().splitlines()[-1]


@functools.cache
def app_image(base: str = "mini-fix-base:bookworm") -> str:
    """The App's image from this checkout, built once per session under a tag of its own (other checkouts build
    on this engine too), untagged when the session ends."""
    tag = build("build-app-image.sh", base, f"mini-fix:test-{os.getpid()}")
    atexit.register(docker, "rmi", tag, check=False)
    return tag


class Network:
    """A user-defined bridge network the stack joins; host-side fakes listen on its gateway address."""

    def __init__(self) -> None:
        self.name = f"minifix-test-{uuid.uuid4().hex[:8]}"
        docker("network", "create", self.name)
        ipam = json.loads(docker("network", "inspect", self.name))[0]["IPAM"]["Config"][0]
        self.gateway: str = ipam.get("Gateway") or ipam["Subnet"].rsplit(".", 1)[0] + ".1"

    def remove(self) -> None:
        docker("network", "rm", self.name, check=False)


@dataclass
class ComposeStack:
    """`docker compose -p NAME -f ... --project-directory DIR` with an environment for interpolation."""

    files: list[Path]
    project_dir: Path
    env: dict[str, str]
    name: str = field(default_factory=lambda: f"minifix{uuid.uuid4().hex[:8]}")

    def run(self, *args: str, check: bool = True, timeout: float = 600) -> str:
        """One compose command; its stdout (stderr too in the error)."""
        files = [arg for path in self.files for arg in ("-f", str(path))]
        cmd = [*compose_binary(), "-p", self.name, "--project-directory", str(self.project_dir), *files, *args]
        done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **self.env}, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-4000:]}")
        return done.stdout

    def up(self, *services: str, scale: dict[str, int] | None = None) -> None:
        """Start exactly these services (no dependencies: the GPU's vLLM is not part of the test)."""
        scales = [arg for svc, n in (scale or {}).items() for arg in ("--scale", f"{svc}={n}")]
        self.run("up", "-d", "--no-deps", "--no-build", *scales, *services)

    def containers(self, service: str) -> list[str]:
        """Ids of the service's containers, in replica order."""
        ids = docker(
            "ps",
            "-q",
            "--filter",
            f"label=com.docker.compose.project={self.name}",
            "--filter",
            f"label=com.docker.compose.service={service}",
        ).split()
        number = "com.docker.compose.container-number"
        return sorted(ids, key=lambda cid: int(self.inspect(cid)["Config"]["Labels"][number]))

    def inspect(self, container: str) -> dict[str, Any]:
        info: dict[str, Any] = json.loads(docker("inspect", container))[0]
        return info

    def ip(self, container: str) -> str:
        """The container's address on the stack's network."""
        nets = self.inspect(container)["NetworkSettings"]["Networks"]
        return str(next(iter(nets.values()))["IPAddress"])

    def url(self, container: str, port: int = 3000) -> str:
        """The container's HTTP base URL, reached directly on the bridge from the host."""
        return f"http://{self.ip(container)}:{port}"

    def healthy(self, container: str) -> bool:
        state = self.inspect(container)["State"]
        return bool(state.get("Health", {}).get("Status") == "healthy")

    def exec_json(self, service: str, *args: str) -> list[dict[str, Any]]:
        """JSON lines printed by a command run in the service's first container."""
        out = self.run("exec", "-T", service, *args)
        return [json.loads(line) for line in out.splitlines() if line.startswith("{")]

    def logs(self) -> str:
        return self.run("logs", "--no-color", "--tail", "200", check=False)[-12000:]

    def down(self) -> None:
        self.run("down", "-v", "--remove-orphans", "--timeout", "20", check=False)


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, log: Callable[[], str] = str) -> Any:
    """Poll until `predicate` returns something truthy; fail with `log()` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if value := predicate():
                return value
        except (OSError, AssertionError, ValueError, httpx.HTTPError):
            pass
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{log()}")
