"""PostgreSQL restarted under a running API and worker: 503 + Retry-After while it is down, nothing lost after.

PostgreSQL runs in a container of its own (the image built from Debian's packages), so the test can stop and
start it without touching any other database on this machine. The API is `mini-fix serve --no-worker`; the worker
is the product's worker with a scripted runner (tests/support/worker_entry.py), on a data dir of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.support import compose_stack as cs
from tests.support.app_process import AppProcess
from tests.support.compose_stack import docker, wait_for
from tests.support.webhooks import deliver, labeled

pytestmark = [pytest.mark.docker, pytest.mark.compose]
SECRET = "pg-restart-secret-3e1f0a"
REPO = "acme/calc"


@pytest.fixture
def postgres() -> Iterator[tuple[str, str]]:
    """A PostgreSQL container (name, URL on its bridge address), removed afterwards."""
    if os.environ.get("MINIFIX_SKIP_DOCKER") == "1":
        pytest.skip("MINIFIX_SKIP_DOCKER=1: Docker tests skipped on purpose")
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        cs.unavailable("no Docker engine answers: run scripts/ensure-docker.sh (as root)")
    image = cs.build("build-postgres-image.sh")
    name = f"minifix-pg-{uuid.uuid4().hex[:8]}"
    env = ["-e", "POSTGRES_USER=minifix", "-e", "POSTGRES_PASSWORD=restart-pw", "-e", "POSTGRES_DB=minifix"]
    docker("run", "-d", "--name", name, *env, image)
    try:
        ip = docker("inspect", "-f", "{{.NetworkSettings.IPAddress}}", name).strip()
        url = f"postgresql://minifix:restart-pw@{ip}:5432/minifix"
        wait_for(lambda: answers(url), 60, "postgres up")
        yield name, url
    finally:
        docker("rm", "-f", "-v", name, check=False)


def answers(url: str) -> bool:
    try:
        psycopg.connect(url, connect_timeout=2).close()
    except psycopg.OperationalError:
        return False
    return True


def test_postgres_restart_gives_503_then_loses_nothing(postgres: tuple[str, str], tmp_path: Path) -> None:
    name, url = postgres
    env = {
        "MINIFIX_DATABASE_URL": url,
        "MINIFIX_WEBHOOK_SECRET": SECRET,
        "MINIFIX_LEASE_SECONDS": "4",
        "MINIFIX_WORKERS": "1",
        "MINIFIX_LOG_FORMAT": "json",
        "MINIFIX_TEST_RUN_LOG": str(tmp_path / "runs.log"),
    }
    api = AppProcess({**env, "MINIFIX_DATA_DIR": str(tmp_path / "api")}, tmp_path / "api.log", args=("--no-worker",))
    api.start()
    worker_log = (tmp_path / "worker.log").open("wb")
    worker = subprocess.Popen([sys.executable, "-m", "tests.support.worker_entry"], cwd=cs.ROOT,
                              env={**os.environ, **env, "MINIFIX_DATA_DIR": str(tmp_path / "worker")},
                              stdout=worker_log, stderr=subprocess.STDOUT)  # fmt: skip
    runs = tmp_path / "runs.log"
    ended = lambda n: runs.exists() and runs.read_text().count("end ") >= n  # noqa: E731
    try:
        first = deliver(f"{api.url}/webhook", "issues", labeled(REPO, 1, sender="alice"), SECRET)
        wait_for(lambda: ended(1), 60, "the first job", api.log)
        docker("stop", "-t", "5", name)
        down = deliver(f"{api.url}/webhook", "issues", labeled(REPO, 2, sender="alice"), SECRET, delivery="d-2")
        docker("start", name)
        wait_for(lambda: answers(url), 60, "postgres back")
        redeliver = lambda: deliver(f"{api.url}/webhook", "issues", labeled(REPO, 2, sender="alice"), SECRET, "d-2")  # noqa: E731
        again = wait_for(lambda: (r := redeliver()).status_code == 202 and r, 60, "the redelivery accepted", api.log)
        worker_says = (tmp_path / "worker.log").read_text
        wait_for(lambda: ended(2), 90, "the second job, after the restart", worker_says)
        health = httpx.get(f"{api.url}/healthz", timeout=5)
    finally:
        worker.terminate()
        worker.wait(30)
        api.stop()
    assert first.status_code == 202
    assert down.status_code == 503 and down.headers["retry-after"] == "10"
    assert again.json()["created"] is True and health.status_code == 200
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT issue, status, attempts FROM jobs ORDER BY issue").fetchall()
    assert rows == [(1, "succeeded", 1), (2, "succeeded", 1)]
