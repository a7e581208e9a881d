"""Asks that wait for an issue's run: the worker queues the next one when a run ends, and a waiting `/agent retry`
cancels the running run only once GitHub says its requester may write."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from bot.jobs import Job, JobKind, JobOutcome, JobRequest, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.worker.pool import Worker
from bot.worker.retries import RetryAdmission

REPO = "octo/widgets"


def ask(ledger: SqliteLedger, kind: JobKind, requester: str, key: str) -> Job:
    return ledger.submit(JobRequest(kind, 77, REPO, 1, requester, key, guidance="go")).job


class Recorded:
    """A runner that finishes each job at once and records them."""

    def __init__(self) -> None:
        self.jobs: list[Job] = []

    def __call__(self, job: Job, cancel: threading.Event) -> JobOutcome:
        self.jobs.append(job)
        return JobOutcome(JobStatus.SUCCEEDED)


@pytest.fixture
def worker(settings: Settings, ledger: SqliteLedger, job_queue: JobQueue) -> Iterator[Worker]:
    made = Worker(settings, ledger, job_queue, Recorded())
    yield made
    made.stop(timeout=5)


def test_a_finished_run_queues_the_oldest_ask_that_waited(
    worker: Worker, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    first = ask(ledger, JobKind.FIX, "alice", "d-1")
    review = ask(ledger, JobKind.REVIEW, "bob", "review:1")
    ci = ask(ledger, JobKind.CI, "mini-fix[bot]", "ci:1")
    assert worker.run_job(first.id) == JobStatus.SUCCEEDED
    assert ledger.get(review.id).status == JobStatus.QUEUED  # type: ignore[union-attr]
    assert review.id in job_queue.pending_ids()
    assert ledger.get(ci.id).status == JobStatus.WAITING  # type: ignore[union-attr]  # the next run folds it


def test_the_reconciler_queues_asks_a_dead_worker_left_waiting(
    worker: Worker, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    first = ask(ledger, JobKind.FIX, "alice", "d-1")
    later = ask(ledger, JobKind.RETRY, "alice", "d-2")
    assert ledger.claim(first.id, "dead", 60) and ledger.finish(first.id, "dead", JobStatus.FAILED)
    worker.reconcile()
    assert ledger.get(later.id).status == JobStatus.QUEUED and later.id in job_queue.pending_ids()  # type: ignore[union-attr]


class Roles:
    """The one GitHub read admission makes, and the comments it writes."""

    def __init__(self, roles: dict[str, str]) -> None:
        self.roles, self.comments = roles, []  # type: list[tuple[int, str]]

    def permission(self, user: str) -> str:
        return self.roles.get(user, "none")

    def create_comment(self, number: int, body: str) -> int:
        self.comments.append((number, body))
        return len(self.comments)


def admission(ledger: SqliteLedger, gh: Roles, dispatched: list[str]) -> RetryAdmission:
    github: Callable[[int, str], Any] = lambda _inst, _repo: gh  # noqa: E731
    return RetryAdmission(ledger, github, dispatched.append)


def test_a_readers_retry_is_denied_and_the_running_job_goes_on(ledger: SqliteLedger) -> None:
    running = ask(ledger, JobKind.REVIEW, "alice", "review:1")
    assert ledger.claim(running.id, "w1", 60) is not None
    retry = ask(ledger, JobKind.RETRY, "mallory", "d-m")
    gh, dispatched = Roles({"alice": "write", "mallory": "read"}), []  # type: Roles, list[str]
    assert admission(ledger, gh, dispatched).once() == 1
    assert ledger.renew(running.id, "w1", 60)  # not cancelled
    assert ledger.get(retry.id).status == JobStatus.DENIED and dispatched == []  # type: ignore[union-attr]
    assert len(gh.comments) == 1 and "@mallory" in gh.comments[0][1]
    assert admission(ledger, gh, dispatched).once() == 0  # decided once


def test_a_writers_retry_cancels_the_running_job_and_runs_next(ledger: SqliteLedger) -> None:
    running = ask(ledger, JobKind.CI, "mini-fix[bot]", "ci:1")
    assert ledger.claim(running.id, "w1", 60) is not None
    review = ask(ledger, JobKind.REVIEW, "bob", "review:1")
    retry = ask(ledger, JobKind.RETRY, "alice", "d-a")
    gh, dispatched = Roles({"alice": "maintain"}), []  # type: Roles, list[str]
    admission(ledger, gh, dispatched).once()
    assert not ledger.renew(running.id, "w1", 60) and dispatched == [retry.id] and gh.comments == []
    assert ledger.get(retry.id).status == JobStatus.QUEUED  # type: ignore[union-attr]
    assert [j.id for j in ledger.waiting_asks(REPO, 1, installation_id=77)] == [
        review.id
    ]  # folded into the retry's run
