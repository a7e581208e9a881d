"""The App's image (Dockerfile) builds from the offline base and serves /healthz as its non-root user."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.compose_stack import app_image

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]
BASE = os.environ.get("MINIFIX_APP_BASE_IMAGE", "mini-fix-base:bookworm")


def docker(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check)


@pytest.fixture(scope="module")
def image() -> str:
    """Build the image (layers cached between runs) from BASE; a failed build fails the tests."""
    if os.environ.get("MINIFIX_SKIP_DOCKER") == "1":
        pytest.skip("MINIFIX_SKIP_DOCKER=1: Docker tests skipped on purpose")
    return app_image(BASE)


def test_help_runs_as_a_non_root_user(image: str) -> None:
    result = docker("run", "--rm", image, "--help")
    assert "serve" in result.stdout and "worker" in result.stdout
    assert docker("run", "--rm", "--entrypoint", "id", image, "-u").stdout.strip() == "10001"
    config = json.loads(docker("image", "inspect", image).stdout)[0]["Config"]
    assert config["Cmd"][0] == "serve" and config["User"] == "mini-fix"


def test_it_carries_the_sandbox_base_it_names(image: str) -> None:
    """The worker imports the carried root filesystem as MINIFIX_SANDBOX_BASE_IMAGE: the two must be the same
    Debian, the sandbox's (trixie by default), not the App's own base."""
    env = dict(item.split("=", 1) for item in json.loads(docker("image", "inspect", image).stdout)[0]["Config"]["Env"])
    named = env["MINIFIX_SANDBOX_BASE_IMAGE"]
    assert named == os.environ.get("MINIFIX_BASE_IMAGE", "mini-fix-base:trixie")
    carried = docker(
        "run", "--rm", "--entrypoint", "tar", image, "-xzOf", env["MINIFIX_SANDBOX_BASE_ROOTFS"], "./etc/debian_version"
    ).stdout
    assert carried == docker("run", "--rm", "--entrypoint", "cat", named, "/etc/debian_version").stdout
    assert carried != docker("run", "--rm", "--entrypoint", "cat", BASE, "/etc/debian_version").stdout


def private_key() -> str:
    """A throwaway RSA key in PEM, so the embedded worker's GitHub client can be built (nothing is called)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return pem.decode()


@pytest.fixture
def serving(image: str) -> Iterator[tuple[str, str]]:
    """The image's default command (serve, embedded worker) on a published loopback port."""
    name = f"mini-fix-test-{uuid.uuid4().hex[:8]}"
    env = {"MINIFIX_WEBHOOK_SECRET": "test-secret-7f3a9c", "MINIFIX_APP_ID": "1", "MINIFIX_PRIVATE_KEY": private_key()}
    flags = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
    docker("run", "-d", "--name", name, "-p", "127.0.0.1::3000", *flags, image)
    try:
        port = docker("port", name, "3000/tcp").stdout.split(":")[-1].strip()
        yield f"http://127.0.0.1:{port}", name
    finally:
        docker("rm", "-f", name, check=False)


def test_the_default_command_answers_healthz(serving: tuple[str, str]) -> None:
    url, name = serving
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
                body = json.loads(response.read())
            break
        except OSError:
            logs = docker("logs", name, check=False)
            assert time.monotonic() < deadline, f"no answer from /healthz: {logs.stdout[-2000:]}{logs.stderr[-2000:]}"
            time.sleep(0.5)
    assert body == {"ok": True, "worker": True}
    with urllib.request.urlopen(f"{url}/metrics", timeout=2) as response:
        assert b"minifix_queue_depth" in response.read()
    # The image's HEALTHCHECK probes this role's port: alive, but not ready (this container has no Docker engine,
    # so its embedded worker cannot have a sandbox image), and /readyz says why.
    assert docker("exec", name, "python3", "-m", "bot.healthcheck", "/healthz", check=False).returncode == 0
    assert docker("exec", name, "python3", "-m", "bot.healthcheck", "/readyz", check=False).returncode == 1
    with pytest.raises(urllib.error.HTTPError) as not_ready:
        urllib.request.urlopen(f"{url}/readyz", timeout=5)
    checks = json.loads(not_ready.value.read())["checks"]
    assert checks["ledger"] == "ok" and checks["sandbox_image"] != "ok"
    health = json.loads(docker("image", "inspect", name_of_image(name)).stdout)[0]["Config"]["Healthcheck"]["Test"]
    assert health == ["CMD", "python3", "-m", "bot.healthcheck", "/readyz"]


def name_of_image(container: str) -> str:
    return docker("inspect", "-f", "{{.Config.Image}}", container).stdout.strip()
