"""Quotas and use, visible: the status comment shows the job's own use, `/agent help` the repository's remaining
quota, and Grafana each installation's quota headroom."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bot.agent.model_base import ModelReply
from bot.jobs import Job, JobKind, JobOutcome, JobStatus, Outcome, RunInfo
from bot.ledger import quota_notes
from bot.ledger.usage import Usage
from bot.pipeline.admit.control import run_control
from bot.pipeline.publish.status import StatusComment
from bot.render import outcome
from bot.settings import Settings
from bot.worker import quotas, usage

NOW = datetime(2026, 12, 5, 13, 30, tzinfo=UTC)
RUN: RunInfo = {"run_id": "run-1", "model": "m", "requester": "alice", "retry": False, "exit_status": ""}


class Gateway:
    def __init__(self) -> None:
        self.bodies: list[str] = []

    def create_comment(self, issue: int, body: str) -> int:
        self.bodies.append(body)
        return 7

    def update_comment(self, comment_id: int, body: str) -> None:
        self.bodies.append(body)

    def list_comments(self, issue: int) -> list[Any]:
        return []

    def permission(self, user: str) -> str:
        return "write"

    def add_reaction(self, *args: Any, **kwargs: Any) -> None:
        pass


def written(use: Usage) -> Future[bool]:
    done: Future[bool] = Future()
    done.set_result(True)
    return done


def job(kind: JobKind = JobKind.FIX, job_id: str = "job-usage") -> Job:
    return Job(job_id, kind, 5, "acme/app", 3, "alice", "d1", JobStatus.RUNNING, comment_id=9)


def test_the_status_comment_shows_the_jobs_own_use_while_it_is_metered() -> None:
    meter = usage.JobMeter(job(), written)
    meter.add_call(ModelReply("ok", prompt_tokens=12_000, completion_tokens=345), 38.2)
    meter.add_cpu(12.4)
    gh = Gateway()
    status = StatusComment(gh, 3, RUN, lambda: 0.0, job_id="job-usage")  # type: ignore[arg-type]
    status.start()
    assert "Used so far: 12,345 tokens · 38 s of model time · 12 s of sandbox CPU" in gh.bodies[-1]
    status.finish(outcome(Outcome.CANCELLED, run=RUN), {"pr": None, "run": None})
    assert "Used: 12,345 tokens · 38 s of model time · 12 s of sandbox CPU" in gh.bodies[-1]  # not "so far"
    assert "so far" not in gh.bodies[-1]
    meter.finish(1.0)
    status.start()
    assert "Used so far" not in gh.bodies[-1]  # the claim ended: nothing stale is shown
    other = StatusComment(gh, 3, RUN, lambda: 0.0, job_id="unmetered")  # type: ignore[arg-type]
    other.start()
    assert "Used so far" not in gh.bodies[-1]


def test_help_shows_the_repositorys_remaining_quota() -> None:
    settings = Settings(quota_tokens_per_month=10_000, quota_followups_per_pr=3, _env_file=None)
    gh = Gateway()

    def runner(j: Job, cancel: threading.Event) -> JobOutcome:
        return run_control(j, gh, j.issue, lambda *a: [], "mini-fix")  # type: ignore[arg-type]

    run = quotas.guarded(
        runner, settings, lambda inst, since: (7_500, 0.0, 0.0), lambda i, r: gh, followups=lambda j, since: 1,
        clock=lambda: NOW,
    )  # fmt: skip
    assert run(job(JobKind.HELP), threading.Event()).status == JobStatus.SUCCEEDED
    [body] = gh.bodies
    assert "remaining quota" in body
    assert "- tokens per month: 2,500 of 10,000 left (it resets at 2027-01-01 00:00 UTC)" in body
    assert "- follow-ups per PR: 2 of 3 left (it never resets)" in body
    plain = Gateway()
    run_control(job(JobKind.HELP), plain, 3, lambda *a: [], "mini-fix")  # type: ignore[arg-type]
    assert "remaining quota" not in plain.bodies[0] and "/agent retry" in plain.bodies[0]


def test_a_checked_run_sets_its_installations_quota_headroom_for_grafana() -> None:
    settings = Settings(quota_tokens_per_day=1000, _env_file=None)
    run = quotas.guarded(
        lambda j, c: JobOutcome(JobStatus.SUCCEEDED), settings, lambda inst, since: (250, 0.0, 0.0), lambda i, r: None,  # type: ignore[arg-type,return-value]
        clock=lambda: NOW,
    )  # fmt: skip
    assert run(job(), threading.Event()).status == JobStatus.SUCCEEDED
    assert quotas.HEADROOM.labels(installation="5", quota="tokens per day")._value.get() == 0.75
    dashboard = (Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "mini-fix.json").read_text()
    assert "min by (installation, quota) (minifix_quota_headroom_ratio)" in dashboard


def test_quota_notes_are_the_runs_own() -> None:
    assert quota_notes.remaining() == () and quota_notes.token_budget_reason(10) == ""
    with quota_notes.running(quota_notes.RunQuota(10, "why", ("a line",))):
        assert quota_notes.remaining() == ("a line",) and quota_notes.token_budget_reason(10) == "why"
        assert quota_notes.token_budget_reason(11) == ""
    assert quota_notes.remaining() == ()
