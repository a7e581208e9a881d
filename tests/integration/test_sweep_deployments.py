"""Two deployments on one engine: each sweeper removes its own idle sandboxes and never the other's."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from bot.jobs import JobKind, JobRequest
from bot.ledger import open_ledger
from bot.ledger.contract import Ledger
from bot.settings import Settings
from bot.worker.wiring import sweep_sandboxes
from sandbox.docker import DockerSandbox
from sandbox.engine import DEPLOYMENT_LABEL, JOB_ID_LABEL
from tests.integration.conftest import container_exists, small_config

pytestmark = pytest.mark.docker


class Instance:
    """One App instance: its own data dir (so its own derived deployment name) and ledger."""

    def __init__(self, root: Path, app_id: int) -> None:
        self.settings = Settings(app_id=app_id, data_dir=root, _env_file=None)
        self.settings.data_dir.mkdir(parents=True)
        self.ledger: Ledger = open_ledger(self.settings)
        self.sandboxes: list[DockerSandbox] = []

    def job(self, issue: int, *, running: bool) -> str:
        job = self.ledger.submit(JobRequest(JobKind.FIX, 7, "acme/widgets", issue, "alice", uuid.uuid4().hex)).job
        if running:
            assert self.ledger.claim(job.id, "worker-1", 600) is not None
        return job.id

    def sandbox(self, client: docker.DockerClient, job_id: str) -> str:
        labels = {JOB_ID_LABEL: job_id, DEPLOYMENT_LABEL: self.settings.deployment_name}
        box = DockerSandbox.start(small_config(), f"test-sweep-{uuid.uuid4().hex[:8]}", client=client, labels=labels)
        self.sandboxes.append(box)
        return box.container_id


@pytest.fixture
def instances(tmp_path: Path) -> Iterator[tuple[Instance, Instance]]:
    pair = Instance(tmp_path / "a", 101), Instance(tmp_path / "b", 101)  # one App, two instances
    yield pair
    for instance in pair:
        for box in instance.sandboxes:
            box.close()  # only the containers this test started
        instance.ledger.close()


def test_each_deployment_sweeps_only_its_own_idle_sandboxes(
    docker_client: docker.DockerClient, instances: tuple[Instance, Instance]
) -> None:
    a, b = instances
    assert a.settings.deployment_name != b.settings.deployment_name
    a_idle = a.sandbox(docker_client, a.job(1, running=False))  # its job was requeued: nobody serves it
    a_busy = a.sandbox(docker_client, a.job(2, running=True))
    b_idle = b.sandbox(docker_client, b.job(1, running=False))
    b_busy = b.sandbox(docker_client, b.job(2, running=True))

    sweep_sandboxes(a.settings.deployment_name, a.ledger)
    assert not container_exists(docker_client, a_idle)
    assert container_exists(docker_client, a_busy)
    assert container_exists(docker_client, b_idle) and container_exists(docker_client, b_busy)  # not a's to touch

    sweep_sandboxes(b.settings.deployment_name, b.ledger)
    assert not container_exists(docker_client, b_idle)
    assert container_exists(docker_client, b_busy) and container_exists(docker_client, a_busy)
