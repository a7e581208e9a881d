"""A job GitHub's rate limit stops before its status comment exists: deferred in the ledger, bounded by its attempts,
and its last ending told on the issue (or in one error line when GitHub refuses that too)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from bot.agent.config import load_config
from bot.github.app import GitHubApp
from bot.github.pacing import Pacers, WritePacer
from bot.github.retry import MAX_RETRIES
from bot.jobs import Job, JobKind, JobOutcome, JobRequest, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.pipeline.deps import PipelineDeps
from bot.pipeline.run import run_pipeline
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.worker.pool import Worker
from tests.support.fake_github import FakeGitHub, throwaway_key, widgets_github
from tests.support.fake_sandbox import FakeSandbox

REPO = "acme/widgets"
COMMENTS = r"/issues/\d+/comments$"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    yield from widgets_github()


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """githubkit's waits between tries (time.sleep), recorded instead of slept."""
    recorded: list[float] = []
    monkeypatch.setattr(time, "sleep", recorded.append)
    return recorded


def run(github: FakeGitHub, tmp_path: Path, attempts: int) -> JobOutcome:
    settings = Settings(
        app_id=github.app_id,
        private_key=throwaway_key(),
        github_api_url=github.base_url,
        data_dir=tmp_path / "data",
        model="scripted/test",
    )
    app = GitHubApp(settings, pacers=Pacers(lambda: WritePacer(0.0)))
    deps = PipelineDeps(
        settings, app.for_repo, lambda config, run_id: FakeSandbox(), lambda _: None, load_config(), workdir=tmp_path
    )
    issue = github.add_issue(REPO, "add() subtracts", "calc.add(2, 2) returns 0", author="alice")
    job = Job("job1", JobKind.FIX, 7, REPO, issue, "alice", "d1", JobStatus.RUNNING, attempts=attempts)
    return run_pipeline(job, threading.Event(), deps)


def bodies(github: FakeGitHub) -> list[str]:
    return [str(c["body"]) for c in github.comments]


def test_a_job_whose_status_comment_is_refused_goes_back_to_the_queue_with_githubs_delay(
    github: FakeGitHub, tmp_path: Path, sleeps: list[float]
) -> None:
    refusal = github.faults.secondary_rate_limit("POST", COMMENTS, count=None, retry_after=7)
    outcome = run(github, tmp_path, attempts=1)
    assert outcome.status == JobStatus.QUEUED and outcome.retry_in == 7
    assert outcome.error and outcome.error.startswith("github_rate_limited: posting a comment: HTTP 403")
    assert refusal.hits == MAX_RETRIES + 1 and sleeps == [7.0] * MAX_RETRIES  # waited out within the bound first
    assert bodies(github) == []


def test_the_last_attempt_ends_with_a_comment_that_says_why(
    github: FakeGitHub, tmp_path: Path, sleeps: list[float]
) -> None:
    github.faults.secondary_rate_limit("POST", COMMENTS, count=MAX_RETRIES + 1)
    outcome = run(github, tmp_path, attempts=3)  # Settings.max_claims
    assert outcome.status == JobStatus.FAILED and outcome.retry_in is None
    [comment] = bodies(github)
    assert "GitHub's rate limit kept it from starting (3 attempts)" in comment and "/agent retry" in comment
    assert "confused" in [r["content"] for r in github.reactions]


def test_when_nothing_can_be_posted_the_operator_gets_one_error_line(
    github: FakeGitHub, tmp_path: Path, sleeps: list[float]
) -> None:
    github.faults.secondary_rate_limit("POST", COMMENTS, count=None)
    with capture_logs() as logs:
        outcome = run(github, tmp_path, attempts=3)
    assert outcome.status == JobStatus.FAILED and bodies(github) == []
    [lost] = [e for e in logs if e["event"] == "job_lost_notice"]
    assert lost["log_level"] == "error"
    assert (lost["job_id"], lost["repo"], lost["requester"], lost["attempts"]) == ("job1", REPO, "alice", 3)
    assert "posting a comment: HTTP 403" in lost["notice_error"]
    assert "secondary rate limit" in lost["first_error"]


# -- the worker and the ledger --------------------


class Deferring:
    """A runner GitHub keeps refusing: each run asks to be deferred by `seconds`."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.runs: list[Job] = []

    def __call__(self, job: Job, cancel: threading.Event) -> JobOutcome:
        self.runs.append(job)
        return JobOutcome(JobStatus.QUEUED, error="github_rate_limited: x", retry_in=self.seconds)


def submit(ledger: SqliteLedger) -> Job:
    return ledger.submit(JobRequest(JobKind.FIX, 77, "octo/widgets", 1, "alice", "d-1")).job


def test_a_deferred_job_waits_in_the_ledger_until_its_time(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    worker = Worker(settings, ledger, job_queue, Deferring(3600))
    job = submit(ledger)
    assert worker.run_job(job.id) == JobStatus.QUEUED
    row = ledger.get(job.id)
    assert row is not None and row.status == JobStatus.QUEUED and row.attempts == 1  # the claim stays spent
    assert row.lease_expires_at is not None and row.lease_expires_at.timestamp() > time.time() + 3500
    assert row.error == "github_rate_limited: x"
    assert ledger.queued_ids() == []  # the reconciler leaves it alone until then
    assert ledger.claim(job.id, "another-worker", 60) is None
    worker.reconcile()
    assert job.id not in job_queue.pending_ids()


def test_a_deferred_job_runs_again_once_due_and_its_claims_stay_bounded(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    runner = Deferring(0.0)
    worker = Worker(settings, ledger, job_queue, runner)
    job = submit(ledger)
    for _ in range(3):
        assert worker.run_job(job.id) == JobStatus.QUEUED
        assert job.id in ledger.queued_ids()  # due at once: the reconciler dispatches it again
    assert [j.attempts for j in runner.runs] == [1, 2, 3]  # what the pipeline compares with max_claims


def test_a_deferral_ending_while_the_worker_stops_keeps_its_delay(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    started = threading.Event()

    def limited_until_stopped(job: Job, cancel: threading.Event) -> JobOutcome:
        started.set()
        cancel.wait(20)  # SIGTERM arrives while GitHub's limit is being waited out
        return JobOutcome(JobStatus.QUEUED, error="github_rate_limited: x", retry_in=3600)

    worker = Worker(settings, ledger, job_queue, limited_until_stopped)
    worker.start()
    job = submit(ledger)
    job_queue.enqueue(job.id)
    assert started.wait(20)
    worker.stop(timeout=10)
    row = ledger.get(job.id)
    assert row is not None and row.status == JobStatus.QUEUED and row.attempts == 1  # not a plain requeue
    assert ledger.queued_ids() == [] and job_queue.pending_ids() == set()
