"""Talking to the Docker engine: connecting, creating locked-down containers, finding and removing ours."""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import docker
import requests
import structlog
from docker.errors import APIError, DockerException, ImageNotFound, NotFound

from sandbox.base import EngineUnavailable, ImageMissing, SandboxConfig, SandboxError

LABEL = "mini-fix"
RUN_ID_LABEL = "mini-fix.run-id"
JOB_ID_LABEL = "mini-fix.job-id"
DEADLINE_LABEL = "mini-fix.deadline"

log = structlog.get_logger(__name__)


def _engine_address() -> str:
    return os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


def _unavailable(exc: Exception, image: str) -> SandboxError:
    return EngineUnavailable(
        f"no Docker engine at {_engine_address()}; start dockerd or set DOCKER_HOST ({exc})"
    )


def _missing(exc: Exception, image: str) -> SandboxError:
    return ImageMissing(
        f"sandbox image {image!r} not found; run scripts/ensure-docker.sh "
        f"or docker build -t {image} sandbox/image"
    )


def _refused(exc: Exception, image: str) -> SandboxError:
    explanation = getattr(exc, "explanation", None) or exc
    return SandboxError(f"the Docker engine refused a sandbox request: {explanation}")


# Most specific first: ImageNotFound is an APIError; the SDK raises DockerException when it cannot connect.
_TRANSLATIONS: list[tuple[type[Exception], Callable[[Exception, str], SandboxError]]] = [
    (ImageNotFound, _missing),
    (requests.exceptions.ConnectionError, _unavailable),
    (APIError, _refused),
    (DockerException, _unavailable),
]


@contextmanager
def translated(image: str = "") -> Iterator[None]:
    """Turn docker SDK errors into SandboxError subclasses whose message says what to do."""
    try:
        yield
    except SandboxError:
        raise
    except Exception as exc:
        for kind, make in _TRANSLATIONS:
            if isinstance(exc, kind):
                raise make(exc, image) from exc
        raise


def connect() -> docker.DockerClient:
    """A client for the engine named by the environment (DOCKER_HOST, else the local socket)."""
    with translated():
        return docker.from_env()


def create_container(
    client: docker.DockerClient, config: SandboxConfig, run_id: str, labels: dict[str, str]
) -> str:
    """Create (not start) a run's container, every limit applied; its main process ends at its deadline."""
    api = client.api
    host_config = api.create_host_config(
        network_mode="bridge" if config.network else "none",
        mem_limit=config.memory,
        memswap_limit=config.memory,
        nano_cpus=int(config.cpus * 1e9),
        pids_limit=config.pids_limit,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        init=True,
        runtime=config.runtime,
    )
    deadline = int(time.time()) + config.wall_time_seconds
    with translated(config.image):
        created = api.create_container(
            config.image,
            entrypoint=["sleep"],
            command=[str(config.wall_time_seconds)],
            name=f"mini-fix-{_slug(run_id)}-{uuid.uuid4().hex[:6]}",
            user=config.user,
            working_dir=config.cwd,
            labels={**labels, LABEL: "1", RUN_ID_LABEL: run_id, DEADLINE_LABEL: str(deadline)},
            host_config=host_config,
        )
    container_id: str = created["Id"]
    return container_id


def exec_action(
    client: docker.DockerClient,
    container_id: str,
    command: str,
    config: SandboxConfig,
    timeout: float,
    cwd: str,
    limit: int,
) -> dict[str, Any]:
    """One action by `docker exec`, for images without python3: `timeout -s KILL` kills it inside.

    Returns the runner's reply shape. Slower (one exec per action) but the same semantics.
    """
    # Docker keeps the exec's stderr apart (and unordered against stdout): merge it before the command starts.
    merged = ["bash", "-c", 'exec 2>&1; exec bash -c "$1"', "bash", command]
    wrapped = ["timeout", "-s", "KILL", str(max(1, round(timeout))), *merged]
    began = time.monotonic()
    with translated(config.image):
        exec_id = client.api.exec_create(
            container_id, wrapped, user=config.user, workdir=cwd, environment=config.env
        )["Id"]
        raw: bytes = client.api.exec_start(exec_id)
        code: int = client.api.exec_inspect(exec_id)["ExitCode"]
    timed_out = code == 137 and time.monotonic() - began >= timeout - 0.5
    return {
        "output": raw[:limit].decode("utf-8", "surrogateescape"),
        "returncode": code,
        "timed_out": timed_out,
        "truncated": len(raw) > limit,
        "error": "",
    }


def force_remove(client: docker.DockerClient, container_id: str) -> bool:
    """Kill and remove a container; False (logged) when that failed for a reason other than it being gone."""
    try:
        client.api.remove_container(container_id, force=True)
    except NotFound:
        return True
    except (DockerException, requests.exceptions.RequestException) as exc:
        log.warning("sandbox.remove_failed", container=container_id[:12], error=str(exc))
        return False
    return True


def sweep(client: docker.DockerClient | None = None, *, now: float | None = None) -> int:
    """Force-remove mini-fix containers whose deadline has passed (crash cleanup); returns how many."""
    client = client or connect()
    now = time.time() if now is None else now
    expired = [c["Id"] for c in _ours(client, f"{LABEL}=1") if _deadline(c) < now]
    return sum(force_remove(client, container_id) for container_id in expired)


def remove_run_containers(run_id: str, client: docker.DockerClient | None = None) -> int:
    """Force-remove every container of one run, including any created after its starter lost track."""
    return remove_labelled(RUN_ID_LABEL, run_id, client)


def remove_labelled(label: str, value: str, client: docker.DockerClient | None = None) -> int:
    """Force-remove every mini-fix container whose `label` is `value` (e.g. a dead worker's job)."""
    client = client or connect()
    return sum(force_remove(client, c["Id"]) for c in _ours(client, f"{label}={value}"))


def _ours(client: docker.DockerClient, label: str) -> list[dict[str, Any]]:
    with translated():
        found: list[dict[str, Any]] = client.api.containers(all=True, filters={"label": label})
    return found


def _deadline(container: dict[str, Any]) -> float:
    try:
        return float((container.get("Labels") or {}).get(DEADLINE_LABEL, ""))
    except ValueError:
        return 0.0  # a mini-fix container with an unreadable deadline is stale


def _slug(run_id: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]+", "-", run_id)[:40].strip("-.") or "run"
