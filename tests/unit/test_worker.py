"""The worker with a fake runner: runs, failures, cancellation, shutdown requeue, and the reconciler."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from bot.jobs import Job, JobKind, JobOutcome, JobRequest, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.worker import pool
from bot.worker.pool import Worker


class FakeRunner:
    """Records the jobs it runs; by default succeeds, or waits for the cancel event when `block` is set."""

    def __init__(self, block: bool = False, fail: bool = False) -> None:
        self.block, self.fail = block, fail
        self.started = threading.Event()
        self.jobs: list[Job] = []
        self.cancelled = False

    def __call__(self, job: Job, cancel: threading.Event) -> JobOutcome:
        self.jobs.append(job)
        self.started.set()
        if self.fail:
            raise RuntimeError("pipeline bug")
        if self.block:
            self.cancelled = cancel.wait(30)
            return JobOutcome(JobStatus.CANCELLED, error="cancelled")
        return JobOutcome(JobStatus.SUCCEEDED, pr_url=f"https://github.com/{job.repo}/pull/1", run_id="run-1")


def wait_for(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + 20
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


@pytest.fixture
def make_worker(settings: Settings, ledger: SqliteLedger, job_queue: JobQueue) -> Iterator[Callable[..., Worker]]:
    workers: list[Worker] = []

    def make(runner: FakeRunner, **overrides: object) -> Worker:
        worker = Worker(settings.model_copy(update=overrides), ledger, job_queue, runner)
        workers.append(worker)
        return worker

    yield make
    for worker in workers:
        worker.stop(timeout=5)


def submit(ledger: SqliteLedger, issue: int = 1) -> Job:
    return ledger.submit(JobRequest(JobKind.FIX, 77, "octo/widgets", issue, "alice", f"d-{issue}")).job


def test_runs_a_job_and_records_the_outcome(make_worker: Callable[..., Worker], ledger: SqliteLedger) -> None:
    runner = FakeRunner()
    job = submit(ledger)
    assert make_worker(runner).run_job(job.id) == JobStatus.SUCCEEDED
    done = ledger.get(job.id)
    assert done is not None and done.pr_url == "https://github.com/octo/widgets/pull/1" and done.run_id == "run-1"
    assert runner.jobs[0].status == JobStatus.RUNNING and runner.jobs[0].attempts == 1
    assert make_worker(runner).run_job(job.id) is None  # finished jobs are not run twice


def test_a_runner_exception_fails_the_job_only(make_worker: Callable[..., Worker], ledger: SqliteLedger) -> None:
    job = submit(ledger)
    assert make_worker(FakeRunner(fail=True)).run_job(job.id) == JobStatus.FAILED
    failed = ledger.get(job.id)
    assert failed is not None and failed.error == "RuntimeError: pipeline bug"


def test_a_stopped_job_gets_its_cancel_event(make_worker: Callable[..., Worker], ledger: SqliteLedger) -> None:
    runner = FakeRunner(block=True)
    worker = make_worker(runner, lease_seconds=1)
    job = submit(ledger)
    thread = threading.Thread(target=worker.run_job, args=(job.id,))
    thread.start()
    assert runner.started.wait(10)
    ledger.cancel("octo/widgets", 1, "/agent stop", installation_id=job.installation_id)
    thread.join(20)
    assert runner.cancelled
    assert ledger.get(job.id).status == JobStatus.CANCELLED  # type: ignore[union-attr]


def test_started_worker_takes_jobs_from_the_queue(
    make_worker: Callable[..., Worker], ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    worker = make_worker(FakeRunner())
    worker.start()
    job = submit(ledger)
    job_queue.dispatch(job.id)
    assert wait_for(lambda: ledger.get(job.id).status == JobStatus.SUCCEEDED)  # type: ignore[union-attr]


def test_stop_puts_running_jobs_back(
    make_worker: Callable[..., Worker], ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    runner = FakeRunner(block=True)
    worker = make_worker(runner)
    worker.start()
    job = submit(ledger)
    job_queue.enqueue(job.id)
    assert runner.started.wait(20)
    worker.stop(timeout=10)
    assert runner.cancelled
    back = ledger.get(job.id)
    assert back is not None and back.status == JobStatus.QUEUED and back.attempts == 0
    assert job_queue.pending_ids() == {job.id}


def test_stop_wakes_idle_slots_instead_of_waiting_out_their_poll(
    make_worker: Callable[..., Worker], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool, "POLL_SECONDS", 60.0)  # an idle slot's wait on the queue outlasts the stop's timeout
    worker = make_worker(FakeRunner())
    worker.start()
    assert wait_for(worker.ready.is_set)
    threads = list(worker._threads)
    worker.stop(timeout=10)
    assert not [t.name for t in threads if t.is_alive()]


def test_reconciler_dispatches_queued_rows_the_queue_lacks(
    make_worker: Callable[..., Worker], ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    job = submit(ledger)  # recorded, but the process died before the enqueue
    worker = make_worker(FakeRunner())
    worker.reconcile()
    worker.reconcile()
    assert [t.args for t in job_queue.huey.pending()] == [(job.id,)]


def test_reconciler_retries_an_expired_lease(
    make_worker: Callable[..., Worker], ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    job = submit(ledger)
    ledger.claim(job.id, "killed-worker", -1)
    worker = make_worker(FakeRunner())
    worker.reconcile()
    assert job_queue.pending_ids() == {job.id}
    assert job_queue.run_next(0)
    done = ledger.get(job.id)
    assert done is not None and done.status == JobStatus.SUCCEEDED and done.attempts == 2


def test_reconciler_gives_up_after_max_attempts(settings: Settings, ledger: SqliteLedger, job_queue: JobQueue) -> None:
    gave_up: list[Job] = []
    worker = Worker(settings, ledger, job_queue, FakeRunner(), on_gave_up=gave_up.append)
    job = submit(ledger)
    for attempt in range(settings.max_claims):
        assert ledger.claim(job.id, f"killed-{attempt}", -1) is not None
    worker.reconcile()
    failed = ledger.get(job.id)
    assert failed is not None and failed.status == JobStatus.FAILED and "gave up" in (failed.error or "")
    assert [j.id for j in gave_up] == [job.id] and gave_up[0].status == JobStatus.FAILED
    assert job_queue.pending_ids() == set()


def test_no_job_is_claimed_before_the_warm_ups_finish(
    make_worker: Callable[..., Worker], ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    runner, release, warming = FakeRunner(), threading.Event(), threading.Event()

    def slow_import() -> None:
        warming.set()
        release.wait(20)

    worker = make_worker(runner)
    worker.warm_ups.append(slow_import)
    job = submit(ledger)
    job_queue.enqueue(job.id)
    worker.start()
    assert warming.wait(20)
    # the job waits for the warm-up: an idle slot would have claimed it within milliseconds
    assert not runner.started.wait(0.3) and not worker.ready.is_set()
    assert ledger.get(job.id).status == JobStatus.QUEUED  # type: ignore[union-attr]
    release.set()
    assert wait_for(worker.ready.is_set) and runner.started.wait(20)
    assert wait_for(lambda: ledger.get(job.id).status == JobStatus.SUCCEEDED)  # type: ignore[union-attr]
