"""A run that crosses its organisation's token quota mid-run stops as at its job budget's end (MINIFIX_MAX_TOKENS),
and ends with its own outcome (`quota`): the message names the quota, and the advice is the quota's, not "narrow the
issue down"."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

from bot.jobs import Job, JobOutcome, JobStatus
from bot.ledger import quota_notes
from bot.pipeline.capacity import JobBudget
from bot.worker import quotas
from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_config import commit_files
from tests.support.scripted_model import bash
from tests.unit.test_pipeline import FIX, REPO, World, github, run_job

__all__ = ["github"]


def test_a_budget_a_quota_set_names_the_quota_from_any_thread() -> None:
    with quota_notes.running(quota_notes.RunQuota(2500, "the quota of 9 tokens per month was reached")):
        budget = JobBudget(tokens=2500, seconds=0, cancel=threading.Event())
        other = JobBudget(tokens=9999, seconds=0, cancel=threading.Event())  # not the quota's budget
    counter = threading.Thread(target=budget.count, args=(1, 2600))  # attempts count from their own threads
    counter.start()
    counter.join(10)
    other.count(1, 10_000)
    assert budget.spent == "the quota of 9 tokens per month was reached" and budget.quota_spent
    assert "MINIFIX_MAX_TOKENS" in other.spent and not other.quota_spent


def test_crossing_a_token_quota_mid_run_stops_it_with_the_quota_named(github: FakeGitHub, tmp_path: Path) -> None:
    commit_files(github, REPO, {".github/mini-fix.yml": "keep_partial_work: false\n"})  # else a [WIP] draft
    world = World(github, tmp_path, [FIX, *[bash("true")] * 20])
    settings = world.settings.model_copy(update={"quota_tokens_per_month": 10_000, "max_tokens": 1_000_000})

    def runner(job: Job, cancel: threading.Event) -> JobOutcome:
        deps = dataclasses.replace(world.deps(), settings=quotas.within_quota(settings))  # as the wiring does
        return run_job(job, cancel, deps)

    guarded = quotas.guarded(runner, settings, lambda inst, since: (9_700, 0.0, 0.0), lambda i, r: None)  # type: ignore[arg-type,return-value]
    job = Job("job1", quotas.JobKind.FIX, 7, REPO, world.issue, "alice", "d1", JobStatus.RUNNING)
    outcome = guarded(job, threading.Event())
    assert outcome.status == JobStatus.FAILED and outcome.error and outcome.error.startswith("quota:")
    assert "quota of 10,000 tokens per month was reached during the run" in outcome.error
    comments = "\n".join(world.issue_comments())
    assert "quota of 10,000 tokens per month was reached during the run" in comments
    assert "MINIFIX_MAX_TOKENS" not in comments
    assert "spend quota was reached during the run" in comments and "Narrow the issue down" not in comments
    assert "its last 300 tokens were this run's budget); it resets at " in comments  # its use, and when it resets
    assert len(world.model.requests) < 10  # stopped at the quota's 300 tokens, not at the script's end
