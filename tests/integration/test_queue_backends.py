"""The dispatch queue and the worker's reconciler on SQLite (SqliteHuey) and on PostgreSQL (PostgresHuey)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from bot.jobs import Job, JobKind, JobOutcome, JobRequest, JobStatus
from bot.ledger import open_ledger
from bot.queue.dispatch import JobQueue, build_queue
from bot.settings import Settings
from bot.worker.pool import Worker
from tests.support.backends import backend_settings
from tests.support.threads import run_in_threads

pytestmark = pytest.mark.postgres


@pytest.fixture
def job_queue(settings: Settings) -> Iterator[JobQueue]:
    with closing(build_queue(settings)) as q:
        yield q


def test_enqueued_ids_are_pending_then_run(job_queue: JobQueue) -> None:
    ran: list[str] = []
    job_queue.bind(ran.append)
    job_queue.enqueue("a")
    job_queue.dispatch("b")
    job_queue.close()  # flushes the dispatch thread
    assert job_queue.pending_ids() == {"a", "b"}
    while job_queue.run_next(0):
        pass
    assert sorted(ran) == ["a", "b"] and job_queue.pending_ids() == set()


def test_two_consumers_of_one_queue_run_each_id_once(settings: Settings, job_queue: JobQueue) -> None:
    ran: Counter[str] = Counter()
    lock = threading.Lock()

    def record(job_id: str) -> None:
        with lock:
            ran[job_id] += 1

    consumers = [build_queue(settings) for _ in range(2)]
    for q in consumers:
        q.bind(record)
    for n in range(40):
        job_queue.enqueue(f"job-{n}")

    def drain(q: JobQueue) -> None:
        while q.run_next(0):
            pass

    run_in_threads(drain, [(q,) for q in consumers for _ in range(2)])
    for q in consumers:
        q.close()
    assert ran == Counter({f"job-{n}": 1 for n in range(40)})


def succeed(job: Job, _cancel: threading.Event) -> JobOutcome:
    return JobOutcome(JobStatus.SUCCEEDED, run_id=f"run-{job.id}")


def test_reconciler_redispatches_an_expired_lease_and_gives_up_later(settings: Settings, job_queue: JobQueue) -> None:
    ledger: Any = open_ledger(settings)
    gave_up: list[Job] = []
    worker = Worker(settings, ledger, job_queue, succeed, on_gave_up=gave_up.append)
    try:
        retried = ledger.submit(JobRequest(JobKind.FIX, 77, "octo/widgets", 1, "alice", "d-1")).job
        ledger.claim(retried.id, "killed-worker", -1)
        doomed = ledger.submit(JobRequest(JobKind.FIX, 77, "octo/widgets", 2, "alice", "d-2")).job
        for attempt in range(settings.max_claims):
            assert ledger.claim(doomed.id, f"killed-{attempt}", -1) is not None
        worker.reconcile()
        assert job_queue.pending_ids() == {retried.id}
        assert job_queue.run_next(0)
        done, failed = ledger.get(retried.id), ledger.get(doomed.id)
        assert (done.status, done.attempts) == (JobStatus.SUCCEEDED, 2)
        assert failed.status == JobStatus.FAILED and "gave up" in failed.error
        assert [j.id for j in gave_up] == [doomed.id]
    finally:
        worker.close()


def test_a_postgres_database_url_puts_the_queue_where_every_host_reads_it(tmp_path: Path) -> None:
    """An API and a worker with separate data dirs share the queue when the ledger is on PostgreSQL."""
    ran: list[str] = []
    with (
        backend_settings("postgres", tmp_path / "api") as api_side,
        closing(build_queue(api_side)) as api,
        closing(build_queue(api_side.model_copy(update={"data_dir": tmp_path / "worker"}))) as worker,
    ):
        worker.bind(ran.append)
        waiting = threading.Thread(target=lambda: [worker.run_next(0) for _ in range(3) if not ran])
        waiting.start()  # blocks on LISTEN; the API's NOTIFY wakes it
        api.dispatch("job-1")
        waiting.join()
    assert ran == ["job-1"]
