"""Fixtures for tests against the real Docker sandbox: a missing engine or image fails them loudly."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import pytest

from bot.settings import Settings
from sandbox.base import SandboxConfig, SandboxError
from sandbox.docker import DockerSandbox
from sandbox.engine import connect
from tests.support.backends import BACKENDS, backend_settings

IMAGE = os.environ.get("MINIFIX_SANDBOX_IMAGE", "mini-fix-sandbox:latest")
PROXY_IMAGE = os.environ.get("MINIFIX_PROXY_IMAGE", "mini-fix-proxy:latest")  # the setup phase's (ensure-docker's)
SETUP_HINT = "run `bash scripts/ensure-docker.sh` (as root) to start the engine and build the images"


def small_config(**changes: object) -> SandboxConfig:
    """Limits small enough for the tests to hit them quickly."""
    base: dict[str, object] = {
        "image": IMAGE,
        "setup_proxy_image": PROXY_IMAGE,
        "memory": "256m",
        "pids_limit": 128,
        "timeout": 20,
        "wall_time_seconds": 300,
    }
    return SandboxConfig.model_validate({**base, **changes})


@pytest.fixture(scope="session")
def docker_client() -> docker.DockerClient:
    """The engine's client. Skips only when MINIFIX_SKIP_DOCKER=1; a missing engine or image fails."""
    if os.environ.get("MINIFIX_SKIP_DOCKER") == "1":
        pytest.skip("MINIFIX_SKIP_DOCKER=1: Docker sandbox tests skipped on purpose")
    try:
        client = connect()
        client.images.get(IMAGE)
    except (SandboxError, docker.errors.ImageNotFound) as exc:
        pytest.fail(f"Docker sandbox tests need an engine and {IMAGE}: {exc}; {SETUP_HINT}", pytrace=False)
    return client


@pytest.fixture
def start_sandbox(docker_client: docker.DockerClient) -> Iterator[Callable[..., DockerSandbox]]:
    """Start sandboxes with test-sized limits; every one started is removed at the end of the test."""
    started: list[DockerSandbox] = []

    def start(**changes: object) -> DockerSandbox:
        run_id = f"test-{uuid.uuid4().hex[:8]}"
        sandbox = DockerSandbox.start(small_config(**changes), run_id, client=docker_client)
        started.append(sandbox)
        return sandbox

    yield start
    for sandbox in started:
        sandbox.close()


@pytest.fixture
def sandbox(start_sandbox: Callable[..., DockerSandbox]) -> DockerSandbox:
    """One sandbox with the default test limits."""
    return start_sandbox()


def container_exists(client: docker.DockerClient, container_id: str) -> bool:
    """Whether the engine still has this container, running or not."""
    return bool(client.api.containers(all=True, filters={"id": container_id}))


@pytest.fixture(params=BACKENDS)
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    """Settings on a fresh database of each backend in turn (a module may define its own `settings`)."""
    with backend_settings(request.param, tmp_path) as settings:
        yield settings
