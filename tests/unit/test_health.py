"""Liveness and readiness: the API's /readyz, a worker's own port (/healthz, /readyz, /metrics), the HEALTHCHECK."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from bot.healthcheck import role_port
from bot.jobs import JobOutcome, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.web.app import create_app
from bot.worker.health_server import readiness_answer, serve
from bot.worker.pool import Worker
from tests.support.app_process import free_port


def _runner(job: object, cancel: threading.Event) -> JobOutcome:
    return JobOutcome(JobStatus.SUCCEEDED)


@pytest.fixture
def worker(settings: Settings, ledger: SqliteLedger, job_queue: JobQueue) -> Iterator[Worker]:
    made = Worker(settings, ledger, job_queue, _runner)
    yield made
    made.stop()


def _missing_image() -> None:
    raise RuntimeError("sandbox image mini-fix-sandbox:x: not checked yet")


def test_a_worker_is_not_ready_before_its_warm_ups_nor_while_a_check_fails(worker: Worker) -> None:
    worker.checks["sandbox_image"] = _missing_image
    problems = worker.readiness()
    assert problems["ledger"] is None and problems["queue"] is None
    assert problems["warm_up"] is not None and "warming up" in problems["warm_up"]
    assert problems["sandbox_image"] == "RuntimeError: sandbox image mini-fix-sandbox:x: not checked yet"
    worker.ready.set()
    del worker.checks["sandbox_image"]
    assert set(worker.readiness().values()) == {None}


def test_readiness_answer_is_503_with_each_check_named() -> None:
    assert readiness_answer({"ledger": None, "queue": None}) == (
        200,
        {"ready": True, "checks": {"ledger": "ok", "queue": "ok"}},
    )
    status, body = readiness_answer({"ledger": None, "engine": "no Docker engine"})
    assert status == 503 and body == {"ready": False, "checks": {"ledger": "ok", "engine": "no Docker engine"}}


def test_the_api_readyz_reports_the_embedded_worker_and_healthz_stays_liveness(
    settings: Settings, worker: Worker
) -> None:
    worker.checks["sandbox_image"] = _missing_image
    worker.ready.set()
    with TestClient(create_app(settings, embedded_worker=worker)) as client:
        worker.ready.set()  # the lifespan started the worker: its warm-ups (none here) are done at once
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["checks"]["sandbox_image"].startswith("RuntimeError: sandbox image")
        assert client.get("/healthz").status_code == 200
        del worker.checks["sandbox_image"]
        assert client.get("/readyz").json() == {
            "ready": True,
            "checks": {"warm_up": "ok", "ledger": "ok", "queue": "ok"},
        }


def test_an_api_only_readyz_checks_ledger_and_queue(client: TestClient) -> None:
    assert client.get("/readyz").json() == {"ready": True, "checks": {"ledger": "ok", "queue": "ok"}}


def test_a_worker_port_serves_metrics_liveness_and_readiness(worker: Worker) -> None:
    port = free_port()
    worker.checks["sandbox_image"] = _missing_image
    server = serve(port, worker.readiness, host="127.0.0.1")
    try:
        base = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(f"{base}/healthz", timeout=5) as response:
            assert json.loads(response.read()) == {"ok": True}
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{base}/readyz", timeout=5)
        assert refused.value.code == 503
        assert json.loads(refused.value.read())["checks"]["warm_up"].startswith("RuntimeError: warming up")
        with urllib.request.urlopen(f"{base}/metrics", timeout=5) as response:
            assert "minifix_jobs_running" in response.read().decode()
    finally:
        server.shutdown()


@pytest.mark.parametrize(
    ("argv", "port"),
    [
        (["/opt/bin/python3", "/opt/bin/mini-fix", "serve", "--host", "0.0.0.0", "--port", "3000"], 3000),
        (["mini-fix", "serve", "--port=8080", "--no-worker"], 8080),
        (["mini-fix", "serve"], 3000),
        (["/sbin/docker-init", "--", "mini-fix", "worker", "--metrics-port", "9300"], 9300),
        (["mini-fix", "worker"], None),
    ],
)
def test_the_healthcheck_probes_the_port_of_the_containers_role(argv: list[str], port: int | None) -> None:
    assert role_port(argv) == port


def test_a_worker_without_an_engine_is_not_ready_and_says_where_it_looked(
    settings: Settings, worker: Worker, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from bot.worker.images import SandboxImages

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    images = SandboxImages(settings)
    worker.checks.update(docker_engine=images.check_engine, sandbox_image=images.check)
    worker.ready.set()
    problems = worker.readiness()
    assert problems["docker_engine"] is not None and "no-engine.sock" in problems["docker_engine"]
    assert problems["sandbox_image"] == f"RuntimeError: sandbox image {settings.sandbox_image}: not checked yet"
    stopping = threading.Event()
    retrying = threading.Thread(target=images.ensure_until_ready, args=(stopping,))
    retrying.start()  # fails, then waits to retry: the failure is what readiness reports meanwhile
    deadline = time.monotonic() + 20
    while "not checked yet" in (worker.readiness()["sandbox_image"] or "") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "no Docker engine at unix://" in (worker.readiness()["sandbox_image"] or "")
    stopping.set()  # a stopping worker ends the retries at once
    retrying.join(5)
    assert not retrying.is_alive()
