"""A run's helpers (workdir volume, setup network, proxy) go with it, also when a crashed run leaves them.

(`sweep` takes the same label path; it is not run here: it would remove every expired mini-fix container on a
shared engine.)
"""

from __future__ import annotations

import uuid

import docker
import pytest

from sandbox.cleanup import remove_run_containers
from sandbox.docker import DockerSandbox
from sandbox.engine import RUN_ID_LABEL
from tests.integration.conftest import small_config

pytestmark = pytest.mark.docker


def _left(client: docker.DockerClient, run_id: str) -> dict[str, int]:
    label = {"label": f"{RUN_ID_LABEL}={run_id}"}
    return {
        "containers": len(client.api.containers(all=True, filters=label)),
        "volumes": len(client.api.volumes(filters=label).get("Volumes") or []),
        "networks": len(client.api.networks(filters=label)),
    }


def _abandoned(client: docker.DockerClient) -> str:
    """Start a sandbox with a setup network and lose track of it, as a killed worker does."""
    run_id = f"test-leftover-{uuid.uuid4().hex[:8]}"
    sandbox = DockerSandbox.start(small_config(network=True), run_id, client=client)
    sandbox._timer.cancel()
    assert _left(client, run_id) == {"containers": 2, "volumes": 1, "networks": 1}  # sandbox + proxy
    return run_id


def test_closing_removes_the_volume_the_network_and_the_proxy(docker_client: docker.DockerClient) -> None:
    run_id = f"test-close-{uuid.uuid4().hex[:8]}"
    sandbox = DockerSandbox.start(small_config(network=True), run_id, client=docker_client)
    sandbox.close()
    assert _left(docker_client, run_id) == {"containers": 0, "volumes": 0, "networks": 0}


def test_removing_a_runs_containers_takes_its_volume_and_network_too(docker_client: docker.DockerClient) -> None:
    run_id = _abandoned(docker_client)
    remove_run_containers(run_id, docker_client)
    assert _left(docker_client, run_id) == {"containers": 0, "volumes": 0, "networks": 0}
