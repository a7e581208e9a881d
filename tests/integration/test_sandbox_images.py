"""Making a missing sandbox image on a real engine: built from sandbox/image, a base imported from a rootfs tarball."""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from bot.settings import Settings
from bot.worker.images import SandboxImages
from sandbox.base import ImageMissing
from sandbox.images import ImageSource, ensure_base, ensure_image, has_registry

pytestmark = pytest.mark.docker
BASE = os.environ.get("MINIFIX_BASE_IMAGE", "mini-fix-base:trixie")  # what scripts/ensure-docker.sh makes


@pytest.fixture
def made(docker_client: docker.DockerClient) -> Iterator[list[str]]:
    """Image names the test makes (unique tags, never a shared image); removed at the end."""
    names: list[str] = []
    yield names
    for name in names:
        with contextlib.suppress(docker.errors.ImageNotFound):
            docker_client.images.remove(name, force=True)


def test_a_missing_sandbox_image_is_built_then_found(docker_client: docker.DockerClient, made: list[str]) -> None:
    name = f"mini-fix-sandbox-test:{uuid.uuid4().hex[:10]}"
    made.append(name)
    steps: list[str] = []
    assert ensure_image(docker_client, name, ImageSource(BASE), steps.append) == "built"
    assert any(step.startswith("Step 1/") for step in steps) and steps[-1].startswith(f"built sandbox image {name}")
    user = docker_client.containers.run(name, ["id", "-un"], remove=True, network_mode="none")
    assert user.decode().strip() == "agent"
    assert ensure_image(docker_client, name, ImageSource(BASE), steps.append) == "present"


def test_a_missing_base_is_imported_from_a_rootfs_tarball(
    docker_client: docker.DockerClient, made: list[str], tmp_path: Path
) -> None:
    base = f"mini-fix-base-test:{uuid.uuid4().hex[:10]}"
    made.append(base)
    rootfs = tmp_path / "rootfs.tar"
    with tarfile.open(rootfs, "w") as tar:  # a tiny root filesystem: enough to prove the import, not to build on
        data = b"imported\n"
        info = tarfile.TarInfo("etc/marker")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    steps: list[str] = []
    assert ensure_base(docker_client, ImageSource(base, rootfs), steps.append) == "imported"
    assert docker_client.images.get(base).attrs["Config"]["Cmd"] == ["/bin/bash"]
    assert ensure_base(docker_client, ImageSource(base, rootfs), steps.append) == "present"
    # The sandbox Dockerfile cannot run on a base without a shell: the build's own error is what the worker says.
    name = f"mini-fix-sandbox-test:{uuid.uuid4().hex[:10]}"
    made.append(name)
    with pytest.raises(ImageMissing, match="building the sandbox image failed"):
        ensure_image(docker_client, name, ImageSource(base, rootfs), steps.append)


def test_no_base_and_no_tarball_says_how_to_pre_build(docker_client: docker.DockerClient) -> None:
    source = ImageSource(f"mini-fix-base-test:{uuid.uuid4().hex[:10]}")  # no such image, and no registry has it
    with pytest.raises(ImageMissing, match=r"scripts/ensure-docker\.sh"):
        ensure_base(docker_client, source, lambda _line: None)


def test_the_worker_makes_its_configured_image_and_readiness_follows(
    docker_client: docker.DockerClient, made: list[str], settings_for_images: Settings
) -> None:
    images = SandboxImages(settings_for_images)
    made.append(images.name)
    with pytest.raises(RuntimeError, match="not checked yet"):
        images.check()
    images.check_engine()
    assert images.ensure() == "built"
    images.check()
    docker_client.images.remove(images.name, force=True)
    with pytest.raises(RuntimeError, match="no longer on the engine"):
        images.check()


@pytest.fixture
def settings_for_images(tmp_path: Path) -> Settings:
    image = f"mini-fix-sandbox-test:{uuid.uuid4().hex[:10]}"
    return Settings(data_dir=tmp_path, sandbox_image=image, sandbox_base_image=BASE, webhook_secret="s" * 32)


@pytest.mark.parametrize(
    ("name", "registry"),
    [("ghcr.io/acme/sandbox:1", True), ("localhost:5000/sandbox", True), ("localhost/sandbox", True),
     ("mini-fix-sandbox:latest", False), ("acme/sandbox:1", False), ("python:3.12-slim", False)],
)  # fmt: skip
def test_which_names_have_a_registry(name: str, registry: bool) -> None:
    assert has_registry(name) is registry
