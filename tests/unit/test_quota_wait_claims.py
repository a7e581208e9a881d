"""A quota wait spends no claim: a run sent back to wait for a quota's reset is claimable at the reset with its claim
count as before that claim, however many windows it waits through (MINIFIX_MAX_CLAIMS counts runs that started);
a GitHub rate-limit deferral still spends its claim. On the ledger's SQLite and on a real PostgreSQL."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot import metrics
from bot.github.gateway import RateLimited
from bot.jobs import Job, JobKind, JobOutcome, JobRequest, JobStatus
from bot.ledger import open_ledger
from bot.pipeline.admit import deferral
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.worker import quotas
from bot.worker.pool import Worker
from tests.support.backends import backend_settings

MAX_CLAIMS = 2


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    overrides = {"max_claims": MAX_CLAIMS, "quota_when_reached": "wait"}
    with backend_settings(request.param, tmp_path, **overrides) as found:
        yield found


@pytest.fixture
def ledger(settings: Settings) -> Iterator[Any]:
    led = open_ledger(settings)
    yield led
    led.close()


def make_due(settings: Settings, job_id: str) -> None:
    """The reset came: the deferred row may be claimed now (as the clock would make it)."""
    when = time.time() - 1
    if settings.uses_postgres:
        import psycopg

        with psycopg.connect(settings.database_url or "", autocommit=True) as conn:
            conn.execute("UPDATE jobs SET lease_expires_at = %s WHERE id = %s", (when, job_id))
        return
    with sqlite3.connect(settings.data_dir / "mini-fix.db") as conn:
        conn.execute("UPDATE jobs SET lease_expires_at = ? WHERE id = ?", (when, job_id))


def submit(ledger: Any, issue: int = 7) -> Job:
    job: Job = ledger.submit(JobRequest(JobKind.FIX, 1, "acme/app", issue, "alice", f"d-{issue}")).job
    return job


class Comments:
    def __init__(self) -> None:
        self.posted: list[str] = []

    def __call__(self, installation: int, repo: str) -> Any:
        return self

    def create_comment(self, number: int, body: str) -> int:
        self.posted.append(body)
        return 1

    def add_reaction(self, number: int, content: str) -> None:
        return None


def test_a_run_waits_through_more_windows_than_its_claims_and_then_runs(
    settings: Settings, ledger: Any, job_queue: JobQueue
) -> None:
    capped = settings.model_copy(update={"quota_overrides": {"acme": {"tokens_per_day": 100}}})
    spent = {"tokens": 150}
    ran: list[int] = []

    def runner(j: Job, cancel: threading.Event) -> JobOutcome:
        ran.append(j.attempts)
        return JobOutcome(JobStatus.SUCCEEDED)

    used = lambda inst, since: (spent["tokens"], 0.0, 0.0)  # noqa: E731
    comments = Comments()
    worker = Worker(capped, ledger, job_queue, quotas.guarded(runner, capped, used, comments))
    waiting = submit(ledger)
    observed = queue_waits()
    for _ in range(MAX_CLAIMS + 3):  # more windows than the job has claims
        assert worker.run_job(waiting.id) == JobStatus.QUEUED and ran == []
        row = ledger.get(waiting.id)
        assert row is not None and (row.status, row.attempts, row.worker_id) == (JobStatus.QUEUED, 0, None)
        assert row.error is not None and row.error.startswith(quotas.WAITING)
        assert waiting.id not in ledger.queued_ids()  # still hidden until the reset
        make_due(settings, waiting.id)
    spent["tokens"] = 0  # a new window
    assert worker.run_job(waiting.id) == JobStatus.SUCCEEDED
    assert ran == [1]  # its first claim that ran is its first claim counted
    assert len(comments.posted) == 1  # one comment for the quota it waited on, however often
    assert queue_waits() == observed + 1  # its queue wait is observed once, at its first claim


def queue_waits() -> float:
    return sum(s.value for m in metrics.QUEUE_WAIT_SECONDS.collect() for s in m.samples if s.name.endswith("_count"))


def test_a_rate_limit_deferral_still_spends_its_claim(settings: Settings, ledger: Any, job_queue: JobQueue) -> None:
    comments = Comments()

    def runner(j: Job, cancel: threading.Event) -> JobOutcome:
        return deferral.rate_limited(j, comments, RateLimited("HTTP 403: rate limit", 60), "run-1", settings)  # type: ignore[arg-type]

    worker = Worker(settings, ledger, job_queue, runner)
    job = submit(ledger)
    assert worker.run_job(job.id) == JobStatus.QUEUED
    row = ledger.get(job.id)
    assert row is not None and (row.status, row.attempts) == (JobStatus.QUEUED, 1)
    make_due(settings, job.id)
    assert worker.run_job(job.id) == JobStatus.FAILED  # its last claim: ended, where the maintainer sees it
    assert ledger.get(job.id).attempts == MAX_CLAIMS and len(comments.posted) == 1


def test_giving_the_claim_back_keeps_the_holder_check(ledger: Any) -> None:
    job = submit(ledger)
    assert ledger.claim(job.id, "w", 60) is not None
    assert not ledger.defer(job.id, "other", time.time() + 3600, "quota_wait: x", spent=False)
    held = ledger.get(job.id)
    assert held is not None and (held.status, held.attempts, held.worker_id) == (JobStatus.RUNNING, 1, "w")
    assert ledger.defer(job.id, "w", time.time() + 3600, "quota_wait: x", spent=False)
    assert not ledger.defer(job.id, "w", time.time() + 3600, "quota_wait: x", spent=False)  # no longer running
    back = ledger.get(job.id)
    assert back is not None and (back.status, back.attempts, back.worker_id) == (JobStatus.QUEUED, 0, None)
