"""Talking to the Docker engine: connecting, creating locked-down containers (removing them: `cleanup.py`)."""

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
from docker.utils import parse_bytes

from sandbox.base import EngineUnavailable, ImageMissing, SandboxConfig, SandboxError

LABEL = "mini-fix"
RUN_ID_LABEL = "mini-fix.run-id"
JOB_ID_LABEL = "mini-fix.job-id"
DEPLOYMENT_LABEL = "mini-fix.deployment"  # whose sandbox it is: a sweeper removes only its own deployment's
DEADLINE_LABEL = "mini-fix.deadline"
# What the runner (root in the container, every other process is the action uid) keeps; nothing else is kept.
# SETUID/SETGID: start each action as the action uid and kill by uid from a helper that takes it. SETPCAP: empty
# the bounding set the actions inherit. Not KILL, DAC_* or CHOWN: the runner never signals or reads across uids.
# The actions cannot use these: the kernel clears the permitted and effective sets when a process's uids all
# become non-zero, ambient and inheritable sets are empty, and no-new-privileges stops setuid binaries and file
# capabilities from giving anything back at exec. A non-root `docker exec` gets an empty effective set too.
RUNNER_CAPS = ["SETUID", "SETGID", "SETPCAP"]
CONTAINER_USER = "0:0"  # the main process (sleep) is not the action uid, so killing that uid never ends it
WORKDIR_TMPFS = "nosuid,nodev"

log = structlog.get_logger(__name__)


def _engine_address() -> str:
    return os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


def _unavailable(exc: Exception, image: str) -> SandboxError:
    return EngineUnavailable(f"no Docker engine at {_engine_address()}; start dockerd or set DOCKER_HOST ({exc})")


def _missing(exc: Exception, image: str) -> SandboxError:
    return ImageMissing(
        f"sandbox image {image!r} not found; run scripts/ensure-docker.sh or docker build -t {image} sandbox/image"
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
    client: docker.DockerClient,
    config: SandboxConfig,
    run_id: str,
    labels: dict[str, str],
    network: str = "none",
) -> tuple[str, str]:
    """Create (not start) a run's container and its workdir volume, every limit applied; (container id, volume).

    Its main process ends at its deadline.
    """
    api = client.api
    name = f"mini-fix-{_slug(run_id)}-{uuid.uuid4().hex[:6]}"
    deadline = int(time.time()) + config.wall_time_seconds
    all_labels = {**labels, LABEL: "1", RUN_ID_LABEL: run_id, DEADLINE_LABEL: str(deadline)}
    with translated(config.image):
        create_workdir_volume(client, name, config, all_labels)
        try:
            created = api.create_container(
                config.image,
                entrypoint=["sleep"],
                command=[str(config.wall_time_seconds)],
                name=name,
                user=CONTAINER_USER,
                working_dir=config.cwd,
                labels=all_labels,
                host_config=_host_config(api, config, name, network),
            )
        except BaseException:
            remove_volume(client, name)
            raise
    container_id: str = created["Id"]
    return container_id, name


def _host_config(api: Any, config: SandboxConfig, volume: str, network: str) -> Any:
    """Every limit: memory (tmpfs included), CPUs, pids, capabilities, a read-only image with tmpfs to write."""
    # One limit for everything: tmpfs pages are charged to the memory cgroup, so RAM never exceeds `memory`.
    limit = config.memory
    return api.create_host_config(
        network_mode=network,
        mem_limit=limit,
        memswap_limit=limit,
        nano_cpus=int(config.cpus * 1e9),
        pids_limit=config.pids_limit,
        cap_drop=["ALL"],
        cap_add=RUNNER_CAPS,
        security_opt=["no-new-privileges"],
        init=True,
        runtime=config.runtime,
        read_only=True,
        binds={volume: {"bind": config.cwd, "mode": "rw"}},
        tmpfs=scratch_mounts(config),
    )


def scratch_mounts(config: SandboxConfig) -> dict[str, str]:
    """The scratch tmpfs mounts, owned by the action user.

    runc gives a tmpfs the mode of the directory it covers in the image (an image's `/home/agent` is 0755), so
    `mode=1777` alone left HOME a root-owned 0755 directory the user could not write; the owner makes it theirs.
    """
    uid, gid = action_ids(config.user)
    options = f"size={parse_bytes(config.scratch_disk)},mode=1777,uid={uid},gid={gid},nosuid,nodev,exec"
    return {path: options for path in config.scratch_paths}


def create_workdir_volume(
    client: docker.DockerClient, name: str, config: SandboxConfig, labels: dict[str, str]
) -> None:
    """A tmpfs volume of `config.disk` bytes for the working directory, owned by the action user.

    A volume and not `--tmpfs`: the engine's archive API (copy in, export) reads and writes volumes but not
    tmpfs mounts, and refuses anything else on a read-only image.
    """
    uid, gid = action_ids(config.user)
    options = f"size={parse_bytes(config.disk)},uid={uid},gid={gid},mode=0755,{WORKDIR_TMPFS}"
    client.api.create_volume(
        name, driver="local", driver_opts={"type": "tmpfs", "device": "tmpfs", "o": options}, labels=labels
    )


def action_ids(user: str) -> tuple[int, int]:
    """Numeric uid and gid of a `uid[:gid]` user spec; root or a name is refused (the runner must differ)."""
    uid, _, gid = user.partition(":")
    gid = gid or uid
    if not (uid.isdigit() and gid.isdigit()) or int(uid) == 0:
        raise SandboxError(f"the sandbox user must be a numeric non-root uid[:gid], not {user!r}")
    return int(uid), int(gid)


def force_remove(client: docker.DockerClient, container_id: str) -> bool:
    """Kill and remove a container; False (logged) when that failed for a reason other than it being gone."""
    return _removed(lambda: client.api.remove_container(container_id, force=True), "container", container_id[:12])


def remove_volume(client: docker.DockerClient, name: str) -> bool:
    """Remove a run's volume (after its container); False (logged) when that failed other than by it being gone."""
    return _removed(lambda: client.api.remove_volume(name, force=True), "volume", name)


def remove_network(client: docker.DockerClient, name: str) -> bool:
    """Remove a run's setup network (after its containers); False (logged) when that failed."""
    return _removed(lambda: client.api.remove_network(name), "network", name)


def _removed(remove: Callable[[], object], kind: str, name: str) -> bool:
    """Run one removal: gone already counts as removed; any other engine error is logged and False."""
    try:
        remove()
    except NotFound:
        return True
    except (DockerException, requests.exceptions.RequestException) as exc:
        log.warning(f"sandbox.{'remove' if kind == 'container' else kind + '_remove'}_failed", **{kind: name},
                    error=str(exc))  # fmt: skip
        return False
    return True


def _slug(run_id: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]+", "-", run_id)[:40].strip("-.") or "run"
