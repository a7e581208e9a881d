"""MINIFIX_QUOTA_WHEN_REACHED=wait: a run past a quota stays queued until the window resets (the fair pick skips it
until then), with one comment saying which quota, what was used and when it will start; and the model-second and
follow-up quotas in the same check."""

from __future__ import annotations

import sqlite3
import threading
import time
from datetime import UTC, datetime
from typing import Any

from bot.jobs import Job, JobKind, JobOutcome, JobRequest, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.worker import quotas
from bot.worker.pool import Worker
from bot.worker.wiring import followups_started

NOW = datetime(2026, 12, 5, 13, 30, tzinfo=UTC)


def job(kind: JobKind = JobKind.FIX, error: str | None = None) -> Job:
    return Job("j1", kind, 1, "acme/app", 7, "alice", "d1", JobStatus.RUNNING, error=error)


class Comments:
    def __init__(self) -> None:
        self.posted: list[tuple[str, int, str]] = []

    def __call__(self, installation: int, repo: str) -> Any:
        outer = self

        class Gateway:
            def create_comment(self, number: int, body: str) -> int:
                outer.posted.append((repo, number, body))
                return 1

        return Gateway()


def never(job: Job, cancel: threading.Event) -> JobOutcome:
    raise AssertionError("a run past its quota must not start")


def test_waiting_sends_the_run_back_until_the_reset_with_one_comment() -> None:
    settings = Settings(quota_tokens_per_day=100, quota_when_reached="wait", _env_file=None)
    comments = Comments()
    run = quotas.guarded(never, settings, lambda inst, since: (150, 0.0, 0.0), comments, clock=lambda: NOW)
    outcome = run(job(), threading.Event())
    assert outcome.status == JobStatus.QUEUED
    assert outcome.retry_in == 10.5 * 3600 + quotas.WAIT_MARGIN_SECONDS  # 13:30 -> the next UTC midnight
    assert outcome.error is not None and outcome.error.startswith(f"{quotas.WAITING}: tokens per day:")
    [(repo, number, body)] = comments.posted
    assert (repo, number) == ("acme/app", 7)
    assert "will start on this at 2026-12-06 00:00 UTC" in body and "100 tokens per day" in body
    assert "150 used" in body
    again = run(job(error=outcome.error), threading.Event())  # claimed again, still past it: no second comment
    assert again.status == JobStatus.QUEUED and len(comments.posted) == 1
    retry = run(job(JobKind.RETRY), threading.Event())  # `/agent retry` gets the same answer
    assert retry.status == JobStatus.QUEUED and "will start on this at" in comments.posted[-1][2]


def test_refuse_stays_the_default() -> None:
    comments = Comments()
    run = quotas.guarded(
        never, Settings(quota_tokens_per_day=100, _env_file=None), lambda i, s: (150, 0.0, 0.0), comments,
        clock=lambda: NOW,
    )  # fmt: skip
    outcome = run(job(), threading.Event())
    assert outcome.status == JobStatus.CANCELLED and outcome.retry_in is None
    assert "did not start on this" in comments.posted[0][2]


def test_a_model_second_quota_is_checked_like_tokens() -> None:
    settings = Settings(quota_model_seconds_per_month=3600, _env_file=None)
    used = {"2026-12-01": (10, 0.0, 4000.0)}
    quota = quotas.check(settings, lambda inst, since: used[since], job(), NOW).past
    assert quota is not None and quota.name == "model-seconds per month"
    assert "quota of 3,600 model-seconds per month is used up (4,000 used)" in quota.sentence()
    used["2026-12-01"] = (10, 0.0, 3000.0)
    assert quotas.check(settings, lambda inst, since: used[since], job(), NOW).past is None


def test_follow_up_quotas_count_follow_ups_only_and_a_per_pr_one_never_waits() -> None:
    settings = Settings(quota_followups_per_pr=2, quota_followups_per_day=5, quota_when_reached="wait", _env_file=None)
    asked: list[float | None] = []

    def followups(j: Job, since: float | None) -> int:
        asked.append(since)
        return 2 if since is None else 1

    comments = Comments()
    run = quotas.guarded(never, settings, lambda i, s: (0, 0.0, 0.0), comments, followups=followups, clock=lambda: NOW)
    outcome = run(job(JobKind.CI), threading.Event())
    assert outcome.status == JobStatus.CANCELLED  # a PR's follow-ups never reset: waiting would be for ever
    assert "quota of 2 follow-ups per PR is used up (2 used); it never resets" in comments.posted[0][2]
    assert asked == [None]
    found = quotas.check(settings, lambda i, s: (0, 0.0, 0.0), job(JobKind.FIX), NOW, followups=followups)
    assert found.past is None and asked == [None]  # a first run is no follow-up: not counted, not asked
    daily = Settings(quota_followups_per_day=1, _env_file=None)
    quota = quotas.check(daily, lambda i, s: (0, 0.0, 0.0), job(JobKind.REVIEW), NOW, followups=followups).past
    assert quota is not None and quota.name == "follow-ups per day"
    assert asked[-1] == NOW.replace(hour=0, minute=0).timestamp()


def submit(ledger: SqliteLedger, inst: int, repo: str, issue: int, kind: JobKind = JobKind.FIX) -> Job:
    delivery = f"d-{len(ledger.list(1000))}"
    return ledger.submit(JobRequest(kind, inst, repo, issue, "alice", delivery)).job


def test_a_waiting_run_is_skipped_by_the_fair_pick_until_its_time_then_runs(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    spent = {"acme": 150}
    capped = settings.model_copy(update={"quota_overrides": {"acme": {"tokens_per_day": 100}},
                                         "quota_when_reached": "wait"})  # fmt: skip
    ran: list[str] = []

    def runner(j: Job, cancel: threading.Event) -> JobOutcome:
        ran.append(j.repo)
        return JobOutcome(JobStatus.SUCCEEDED)

    def used(inst: int, since: str) -> tuple[int, float, float]:
        return (spent["acme"] if inst == 1 else 0), 0.0, 0.0

    comments = Comments()
    worker = Worker(capped, ledger, job_queue, quotas.guarded(runner, capped, used, comments))
    waiting = submit(ledger, 1, "acme/app", 7)
    assert worker.run_job(waiting.id) == JobStatus.QUEUED and ran == []
    row = ledger.get(waiting.id)
    assert row is not None and row.status == JobStatus.QUEUED and row.error is not None
    assert row.error.startswith(quotas.WAITING) and len(comments.posted) == 1
    assert waiting.id not in ledger.queued_ids()  # not due: no slot wakes for it
    other = submit(ledger, 2, "octo/app", 1)
    assert worker.run_job(waiting.id) == JobStatus.SUCCEEDED and ran == ["octo/app"]  # the fair pick took octo's
    assert worker.run_job(waiting.id) is None  # nothing else is claimable: the waiting run is skipped
    assert ledger.get(other.id).status == JobStatus.SUCCEEDED  # type: ignore[union-attr]
    with sqlite3.connect(capped.data_dir / "mini-fix.db") as conn:  # the reset came
        conn.execute("UPDATE jobs SET lease_expires_at = ? WHERE id = ?", (time.time() - 1, waiting.id))
    spent["acme"] = 0
    assert worker.run_job(waiting.id) == JobStatus.SUCCEEDED and ran == ["octo/app", "acme/app"]
    assert len(comments.posted) == 1


def test_follow_ups_started_are_counted_from_the_ledger(ledger: SqliteLedger) -> None:
    fix = submit(ledger, 1, "acme/app", 7)
    ledger.claim(fix.id, "w", 60)
    ledger.finish(fix.id, "w", JobStatus.SUCCEEDED)
    ci = submit(ledger, 1, "acme/app", 7, JobKind.CI)
    ledger.claim(ci.id, "w", 60)
    ledger.finish(ci.id, "w", JobStatus.SUCCEEDED)
    other_pr = submit(ledger, 1, "acme/lib", 3, JobKind.REVIEW)
    ledger.claim(other_pr.id, "w", 60)
    ledger.finish(other_pr.id, "w", JobStatus.FAILED)
    turned_away = submit(ledger, 1, "acme/app", 7, JobKind.CI)
    ledger.claim(turned_away.id, "w", 60)
    ledger.finish(turned_away.id, "w", JobStatus.CANCELLED, error=f"{quotas.REFUSED}: ...")
    asking = submit(ledger, 1, "acme/app", 7, JobKind.CI)
    ledger.claim(asking.id, "w", 60)
    held = ledger.get(asking.id)
    assert held is not None
    assert followups_started(ledger, held, None) == 1  # this PR's: the CI one that ran, not the fix, not itself
    assert followups_started(ledger, held, 0.0) == 2  # the installation's: the other PR's review too
    assert followups_started(ledger, held, time.time() + 60) == 0
