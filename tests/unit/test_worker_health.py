"""A dead sandbox engine (or database) logs one line when a chore starts failing and one when it recovers."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import structlog

from bot.jobs import Job, JobOutcome, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.worker import pool
from bot.worker.health import ChoreHealth
from bot.worker.pool import Worker
from sandbox.base import EngineUnavailable


def script(*results: Exception | None) -> Any:
    """A chore that raises (or not) in the given order."""
    left = list(results)

    def chore() -> None:
        error = left.pop(0)
        if error is not None:
            raise error

    return chore


def test_a_chore_logs_each_state_change_once() -> None:
    health = ChoreHealth("housekeeping")
    dead = EngineUnavailable("Cannot connect to the Docker daemon at unix:///var/run/docker.sock")
    chore = script(dead, dead, dead, None, None, dead, RuntimeError("a bug"), RuntimeError("a bug"))
    with structlog.testing.capture_logs() as logs:
        worked = [health.run(chore) for _ in range(8)]
    assert worked == [False, False, False, True, True, False, False, False]
    events = [(e["event"], e.get("exc_info", False)) for e in logs]
    assert events == [
        ("housekeeping_failing", False),  # an outage: one line, no traceback
        ("housekeeping_recovered", False),
        ("housekeeping_failing", False),
        ("housekeeping_failing", False),  # failing differently; a traceback only when it starts failing
    ]
    assert "Docker daemon" in logs[0]["error"] and logs[3]["error"] == "RuntimeError: a bug"


def test_a_first_unexpected_failure_keeps_its_traceback() -> None:
    with structlog.testing.capture_logs() as logs:
        ChoreHealth("reconcile").run(script(KeyError("job")))
    assert logs[0]["exc_info"] is True


def test_the_worker_loop_says_a_dead_engine_once(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool, "RECONCILE_EVERY", 0.01)
    tries = threading.Semaphore(0)

    def dead_engine() -> None:
        tries.release()
        raise EngineUnavailable("Cannot connect to the Docker daemon")

    def runner(job: Job, cancel: threading.Event) -> JobOutcome:
        return JobOutcome(JobStatus.SUCCEEDED)

    worker = Worker(settings, ledger, job_queue, runner)
    worker.housekeeping = dead_engine
    with structlog.testing.capture_logs() as logs:
        worker.start()
        try:
            for _ in range(5):
                assert tries.acquire(timeout=30)
        finally:
            worker.stop(timeout=5)
    failing = [e for e in logs if e["event"] == "housekeeping_failing"]
    assert len(failing) == 1 and not [e for e in logs if e["event"] == "reconcile_failing"]
