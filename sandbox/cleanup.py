"""Finding and removing our containers, volumes and networks: one run's, a dead worker's job's, and the sweeper's
(what serves no run any more, of this deployment alone when it has a name)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import docker
import structlog
from docker.errors import NotFound

from sandbox.engine import (
    DEADLINE_LABEL,
    DEPLOYMENT_LABEL,
    JOB_ID_LABEL,
    LABEL,
    RUN_ID_LABEL,
    connect,
    force_remove,
    remove_network,
    remove_volume,
    translated,
)

EXITED_GRACE_SECONDS = 60.0  # the run that owned a stopped container has read its exit state by then

log = structlog.get_logger(__name__)


def sweep(
    client: docker.DockerClient | None = None,
    *,
    now: float | None = None,
    deployment: str | None = None,
    running: Callable[[str], bool] | None = None,
) -> int:
    """Force-remove mini-fix containers (and their volumes and networks) that serve no run; returns how many
    containers. With a `deployment`, only that deployment's, never one whose job `running` says is running, and
    every other one of its jobs; without, any past its deadline or stopped for a while (e.g. by an engine restart
    while their worker could not reach it)."""
    client = client or connect()
    now = time.time() if now is None else now
    selector = [f"{LABEL}=1", *([f"{DEPLOYMENT_LABEL}={deployment}"] if deployment else [])]
    is_running = running or (lambda _job: False)

    def stale(labelled: dict[str, Any], exited: bool = False) -> bool:
        job = (labelled.get("Labels") or {}).get(JOB_ID_LABEL)
        if job and is_running(job):
            return False
        return bool(deployment and job) or _deadline(labelled) < now or exited

    containers = _ours(client, selector)
    expired = [c["Id"] for c in containers if stale(c, _exited_before(client, c, now))]
    removed = sum(force_remove(client, container_id) for container_id in expired)
    for volume in _our_volumes(client, selector):
        if stale(volume):
            remove_volume(client, volume["Name"])
    for network in _our_networks(client, selector):
        if stale(network):
            remove_network(client, network["Name"])
    return removed


def remove_run_containers(run_id: str, client: docker.DockerClient | None = None) -> int:
    """Force-remove every container of one run, including any created after its starter lost track."""
    return remove_labelled(RUN_ID_LABEL, run_id, client)


def remove_labelled(
    label: str, value: str, client: docker.DockerClient | None = None, *, deployment: str | None = None
) -> int:
    """Force-remove every mini-fix container whose `label` is `value` (e.g. a dead worker's job), of `deployment`
    alone when given."""
    client = client or connect()
    selector = [f"{label}={value}", *([f"{DEPLOYMENT_LABEL}={deployment}"] if deployment else [])]
    removed = sum(force_remove(client, c["Id"]) for c in _ours(client, selector))
    for volume in _our_volumes(client, selector):
        remove_volume(client, volume["Name"])
    for network in _our_networks(client, selector):
        remove_network(client, network["Name"])
    return removed


def _ours(client: docker.DockerClient, label: str | list[str]) -> list[dict[str, Any]]:
    with translated():
        found: list[dict[str, Any]] = client.api.containers(all=True, filters={"label": label})
    return found


def _our_volumes(client: docker.DockerClient, label: str | list[str]) -> list[dict[str, Any]]:
    with translated():
        found: list[dict[str, Any]] = client.api.volumes(filters={"label": label}).get("Volumes") or []
    return found


def _our_networks(client: docker.DockerClient, label: str | list[str]) -> list[dict[str, Any]]:
    with translated():
        found: list[dict[str, Any]] = client.api.networks(filters={"label": label})
    return found


def _exited_before(client: docker.DockerClient, container: dict[str, Any], now: float) -> bool:
    """A sandbox is never restarted: one that stopped over EXITED_GRACE_SECONDS ago serves nobody."""
    if container.get("State") not in ("exited", "dead"):
        return False
    try:
        finished = str(client.api.inspect_container(container["Id"])["State"].get("FinishedAt") or "")
    except NotFound:  # removed meanwhile
        return False
    try:  # RFC 3339 with nanoseconds: keep the microseconds Python reads
        stamp = datetime.fromisoformat(finished[:26].rstrip("Z") + "+00:00").timestamp()
    except ValueError:
        return True
    return now - stamp > EXITED_GRACE_SECONDS


def _deadline(container: dict[str, Any]) -> float:
    try:
        return float((container.get("Labels") or {}).get(DEADLINE_LABEL, ""))
    except ValueError:
        return 0.0  # a mini-fix container with an unreadable deadline is stale
