"""`/agent stop` reaches a worker whose only run slot is busy: the control lane runs it, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.jobs import Job, JobKind, JobOutcome, JobRequest, JobStatus
from bot.ledger import Ledger, open_ledger
from bot.queue.dispatch import build_queue
from bot.settings import Settings
from bot.worker.pool import Worker
from tests.support.backends import backend_settings
from tests.support.compose_stack import wait_for

pytestmark = pytest.mark.postgres


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    with backend_settings(request.param, tmp_path, workers=1, lease_seconds=2) as settings:
        yield settings


def scripted_runner(ledger: Ledger) -> tuple[threading.Event, object]:
    """A fix run that lasts until it is cancelled; a stop that cancels the issue's run, as the pipeline's does."""
    started = threading.Event()

    def run(job: Job, cancel: threading.Event) -> JobOutcome:
        if job.kind == JobKind.STOP:
            ledger.cancel(job.repo, job.issue, f"/agent stop by @{job.requester}", installation_id=job.installation_id)
            return JobOutcome(JobStatus.SUCCEEDED)
        started.set()
        cancel.wait(120)
        return JobOutcome(JobStatus.CANCELLED, error="stopped")

    return started, run


def test_stop_is_handled_while_the_only_slot_runs(settings: Settings) -> None:
    ledger = open_ledger(settings)
    started, runner = scripted_runner(ledger)
    worker = Worker(settings, ledger, build_queue(settings), runner)  # type: ignore[arg-type]
    worker.start()
    try:
        fix = ledger.submit(JobRequest(JobKind.FIX, 1, "acme/calc", 7, "alice", "d-fix")).job
        worker.queue.enqueue(fix.id)
        assert started.wait(60), "the fix run never started"
        polls_before = worker.control.polls
        stop = ledger.submit(JobRequest(JobKind.STOP, 1, "acme/calc", 7, "alice", "d-stop")).job
        worker.queue.enqueue(stop.id)  # behind the busy slot: only the control lane can take it now
        wait_for(lambda: ledger.get(stop.id).status == JobStatus.SUCCEEDED, 60, "the stop job")  # type: ignore[union-attr]
        polls = worker.control.polls - polls_before
        wait_for(lambda: ledger.get(fix.id).status == JobStatus.CANCELLED, 60, "the run cancelled")  # type: ignore[union-attr]
    finally:
        worker.close()
    assert polls <= 3, f"the stop waited {polls} control-lane polls"
