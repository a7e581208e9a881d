"""Before a run is claimed the worker makes sure of what it needs (the sandbox image, made again when it went
missing while the App ran); when it cannot, the job stays queued with its claims unspent instead of failing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from bot.jobs import Job, JobKind, JobOutcome, JobRequest, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.worker import pool
from bot.worker.images import SandboxImages
from bot.worker.pool import Worker
from sandbox.base import EngineUnavailable


class Runner:
    def __init__(self) -> None:
        self.jobs: list[Job] = []

    def __call__(self, job: Job, cancel: threading.Event) -> JobOutcome:
        self.jobs.append(job)
        return JobOutcome(JobStatus.SUCCEEDED, run_id="r")


class Engine:
    """The image on a stand-in engine: present or not, and what making it again does."""

    def __init__(self, present: bool, *, can_make: bool = True) -> None:
        self.present, self.can_make, self.made = present, can_make, 0

    def ensure_image(self, client: Any, name: str, source: Any, progress: Any) -> str:
        if not self.can_make:
            raise EngineUnavailable("no Docker engine at unix:///gone.sock")
        self.made += 1
        self.present = True
        return "built"


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> Engine:
    import sandbox.engine
    import sandbox.images

    state = Engine(present=False)
    monkeypatch.setattr(sandbox.images, "exists", lambda client, name: state.present)
    monkeypatch.setattr(sandbox.images, "ensure_image", state.ensure_image)
    monkeypatch.setattr(sandbox.engine, "connect", lambda: None)

    @contextmanager
    def no_client(self: SandboxImages) -> Iterator[None]:
        yield None

    monkeypatch.setattr(SandboxImages, "_client", no_client)
    return state


def _worker(settings: Settings, ledger: SqliteLedger, queue: JobQueue, runner: Runner) -> tuple[Worker, SandboxImages]:
    worker = Worker(settings, ledger, queue, runner)
    images = SandboxImages(settings)
    worker.before_job.append(images.ensure_present)
    worker.checks["sandbox_image"] = images.check
    return worker, images


def _fix(ledger: SqliteLedger, kind: JobKind = JobKind.FIX) -> Job:
    return ledger.submit(JobRequest(kind, 77, "octo/widgets", 1, "alice", f"d-{kind}")).job


def test_an_image_removed_while_the_app_runs_is_made_again_before_the_next_job(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue, engine: Engine
) -> None:
    runner = Runner()
    worker, _ = _worker(settings, ledger, job_queue, runner)
    job = _fix(ledger)
    assert worker.run_job(job.id) == JobStatus.SUCCEEDED
    assert engine.made == 1 and [j.id for j in runner.jobs] == [job.id]
    assert worker.readiness()["sandbox_image"] is None  # ready again


def test_a_job_waits_in_the_queue_unclaimed_while_the_image_cannot_be_made(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool, "NOT_PREPARED_WAIT", 0.0)
    engine.can_make = False
    runner = Runner()
    worker, _ = _worker(settings, ledger, job_queue, runner)
    job = _fix(ledger)
    assert worker.run_job(job.id) is None and runner.jobs == []
    after = ledger.get(job.id)
    assert after is not None and after.status == JobStatus.QUEUED and after.attempts == 0  # no claim spent
    assert job.id in job_queue.pending_ids()  # back in the queue for when the engine is back
    assert "making it again failed" in (worker.readiness()["sandbox_image"] or "")
    engine.can_make = True
    assert worker.run_job(job.id) == JobStatus.SUCCEEDED


def test_a_control_job_needs_no_sandbox_image(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue, engine: Engine
) -> None:
    engine.can_make = False
    runner = Runner()
    worker, _ = _worker(settings, ledger, job_queue, runner)
    stop = _fix(ledger, JobKind.STOP)
    assert worker.run_job(stop.id) == JobStatus.SUCCEEDED and engine.made == 0
