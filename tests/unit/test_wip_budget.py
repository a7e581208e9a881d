"""Work kept when the job's token budget (MINIFIX_MAX_TOKENS) or an organisation's token quota stops a run mid-way:
as at the agent's own limits, an acceptable change so far opens a `[WIP]` draft whose body names what stopped it;
with `keep_partial_work: false` nothing is opened."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

from bot.jobs import Job, JobOutcome, JobStatus
from bot.pipeline.capacity import JobBudget
from bot.worker import quotas
from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_config import commit_files
from tests.support.scripted_model import bash
from tests.unit.test_attempts import Attempts
from tests.unit.test_pipeline import FIX, REPO, World, github, run_job

__all__ = ["github"]
CONFIG = ".github/mini-fix.yml"
BUSY = [FIX, *[bash("true")] * 20]  # 110 tokens a step; fixes at once, never submits
BUDGET = "the job's token budget over all attempts (300, MINIFIX_MAX_TOKENS) was spent"
QUOTA = "quota of 10,000 tokens per month was reached during the run"


def _budget_run(github: FakeGitHub, tmp_path: Path) -> tuple[World, JobOutcome]:
    world = World(github, tmp_path, list(BUSY))
    world.settings = world.settings.model_copy(update={"max_tokens": 300})
    return world, world.run()


def _quota_run(github: FakeGitHub, tmp_path: Path) -> tuple[World, JobOutcome]:
    """A run whose organisation has 300 of its 10,000 monthly tokens left, through the quota guard as wired."""
    world = World(github, tmp_path, list(BUSY))
    settings = world.settings.model_copy(update={"quota_tokens_per_month": 10_000, "max_tokens": 1_000_000})

    def runner(job: Job, cancel: threading.Event) -> JobOutcome:
        deps = dataclasses.replace(world.deps(), settings=quotas.within_quota(settings))
        return run_job(job, cancel, deps)

    guarded = quotas.guarded(runner, settings, lambda inst, since: (9_700, 0.0, 0.0), lambda i, r: None)  # type: ignore[arg-type,return-value]
    job = Job("job1", quotas.JobKind.FIX, 7, REPO, world.issue, "alice", "d1", JobStatus.RUNNING)
    return world, guarded(job, threading.Event())


def _assert_wip_draft(github: FakeGitHub, world: World, outcome: JobOutcome, reason: str) -> None:
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    [pr] = github.pulls
    assert pr["draft"] and pr["title"] == "[WIP] add() subtracts"
    assert reason in pr["body"] and "/agent retry" in pr["body"]
    head = github.branch_head(REPO, f"mini-fix/issue-{world.issue}")
    assert head and "a + b" in github.show(REPO, head, "calc.py")  # the change the host took out
    assert reason in world.issue_comments()[0]  # the status comment says what stopped it
    assert len(world.model.requests) < 10  # stopped at the budget, not at the script's end


def test_a_spent_job_token_budget_keeps_the_change_as_a_wip_draft(github: FakeGitHub, tmp_path: Path) -> None:
    world, outcome = _budget_run(github, tmp_path)
    _assert_wip_draft(github, world, outcome, BUDGET)


def test_a_token_quota_crossed_mid_run_keeps_the_change_as_a_wip_draft(github: FakeGitHub, tmp_path: Path) -> None:
    world, outcome = _quota_run(github, tmp_path)
    _assert_wip_draft(github, world, outcome, QUOTA)
    assert "MINIFIX_MAX_TOKENS" not in github.pulls[0]["body"]


def test_without_keep_partial_work_a_spent_job_budget_opens_nothing(github: FakeGitHub, tmp_path: Path) -> None:
    commit_files(github, REPO, {CONFIG: "keep_partial_work: false\n"})
    world, outcome = _budget_run(github, tmp_path)
    assert outcome.status == JobStatus.FAILED and outcome.error and outcome.error.startswith("limits")
    assert BUDGET in outcome.error and github.pulls == []
    assert github.branch_head(REPO, f"mini-fix/issue-{world.issue}") is None


def test_without_keep_partial_work_a_crossed_quota_opens_nothing(github: FakeGitHub, tmp_path: Path) -> None:
    commit_files(github, REPO, {CONFIG: "keep_partial_work: false\n"})
    world, outcome = _quota_run(github, tmp_path)
    assert outcome.status == JobStatus.FAILED and outcome.error and QUOTA in outcome.error
    assert github.pulls == [] and github.branch_head(REPO, f"mini-fix/issue-{world.issue}") is None


def test_a_spent_token_budget_stops_the_attempts_but_leaves_their_containers() -> None:
    budget = JobBudget(tokens=100, seconds=0, cancel=threading.Event())
    budget.count(1, 150)
    assert budget.stop.is_set() and not budget.closing.is_set() and "MINIFIX_MAX_TOKENS" in budget.tokens_spent
    budget.halt("/agent stop by @alice")  # a stop of the job still removes them at once
    assert budget.closing.is_set()


def test_with_several_attempts_the_one_with_a_change_is_kept_when_the_budget_stops_them_all(
    github: FakeGitHub, tmp_path: Path
) -> None:
    commit_files(github, REPO, {CONFIG: "attempts: 2\n"})
    idle = [bash("true")] * 30  # changes nothing: no partial work to keep
    world = Attempts(github, tmp_path, {0.0: list(BUSY), 0.7: idle}, max_tokens=1000)
    outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    [pr] = github.pulls
    assert pr["draft"] and pr["title"].startswith("[WIP] ")
    assert "token budget over all attempts (1,000, MINIFIX_MAX_TOKENS)" in pr["body"]
    head = github.branch_head(REPO, f"mini-fix/issue-{world.issue}")
    assert head and "a + b" in github.show(REPO, head, "calc.py")
    assert all(box.closed for box in world.sandboxes)  # each container still removed once its work was taken
