"""A run that crosses its organisation's token, cost or model-second quota mid-run stops as at its job budget's end
(MINIFIX_MAX_TOKENS), and ends with its own outcome (`quota`): the message names the quota that stopped it (the
tightest), and the advice is the quota's, not "narrow the issue down"."""

from __future__ import annotations

import dataclasses
import threading
import time
from functools import partial
from pathlib import Path

from bot.jobs import Job, JobOutcome, JobStatus
from bot.ledger import quota_notes
from bot.pipeline.capacity import JobBudget
from bot.worker import quotas
from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_config import commit_files
from tests.support.scripted_model import bash
from tests.unit.test_pipeline import FIX, REPO, SUBMIT, World, github, run_job
from tests.unit.test_wip_budget import _assert_wip_draft

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


def _quota_run(
    github: FakeGitHub,
    tmp_path: Path,
    settings: dict[str, object],
    used: tuple[float, float, float],
    *,
    replies: list[object] | None = None,
    slow: float = 0.0,
    model_price: quotas.quota_notes.TokenPrice | None = None,
    keep: bool = False,
) -> tuple[World, JobOutcome]:
    """A run under the quota guard, as the wiring runs it, its organisation having `used` (tokens, cost, model
    seconds) today; each model call takes at least `slow` seconds; `keep`: its partial work kept as a [WIP] draft."""
    config = f"keep_partial_work: {str(keep).lower()}  # {tmp_path.name}\n"  # a new commit per run
    commit_files(github, REPO, {".github/mini-fix.yml": config})
    tmp_path.mkdir(exist_ok=True)
    world = World(github, tmp_path, replies or [FIX, *[bash("true")] * 20])
    runs = world.settings.model_copy(update={"max_tokens": 1_000_000, **settings})
    model = world.model

    class Slow:
        name = model.name

        def query(self, messages: list[dict[str, object]]) -> object:
            time.sleep(slow)  # the model server's time: what a model-second quota counts
            return model.query(messages)  # type: ignore[arg-type]

    def runner(job: Job, cancel: threading.Event) -> JobOutcome:
        deps = dataclasses.replace(world.deps(), settings=quotas.within_quota(runs), model=lambda _: Slow())
        return run_job(job, cancel, deps)

    guarded = quotas.guarded(runner, runs, lambda inst, since: used, lambda i, r: None, model_price=model_price)  # type: ignore[arg-type,return-value]
    job = Job("job1", quotas.JobKind.FIX, 7, REPO, world.issue, "alice", "d1", JobStatus.RUNNING)
    return world, guarded(job, threading.Event())


def _stopped_by(world: World, outcome: JobOutcome, words: str) -> None:
    """The run stopped mid-run with the outcome `quota`, `words` (the quota, its use) in its error and comment."""
    assert outcome.status == JobStatus.FAILED and outcome.error and outcome.error.startswith("quota:"), outcome.error
    assert words in outcome.error
    comments = "\n".join(world.issue_comments())
    assert words in comments and "; it resets at " in comments and "MINIFIX_MAX_TOKENS" not in comments
    assert len(world.model.requests) < 10  # stopped at the quota, not at the script's end


PRICED = {"price_per_million_prompt_tokens": 1_000.0, "price_per_million_completion_tokens": 2_000.0}


def test_crossing_a_cost_quota_mid_run_stops_it_with_the_quota_named(github: FakeGitHub, tmp_path: Path) -> None:
    # 0.50 left at 0.002 a token (the higher price) is 250 tokens: the third step's 330 cross it
    world, outcome = _quota_run(github, tmp_path, {**PRICED, "quota_cost_per_day": 10.0}, (0, 9.5, 0))
    _stopped_by(world, outcome, "quota of 10.00 cost per day was reached during the run (its last 0.50 of cost")
    assert len(world.model.requests) == 3


def test_a_hosted_models_own_price_bounds_a_cost_quota(github: FakeGitHub, tmp_path: Path) -> None:
    price = {"scripted/test": 0.002}.get  # litellm's price of the run's model, no operator price set
    world, outcome = _quota_run(github, tmp_path, {"quota_cost_per_month": 10.0}, (0, 9.5, 0), model_price=price)  # type: ignore[arg-type]
    _stopped_by(world, outcome, "quota of 10.00 cost per month was reached during the run")


def test_a_self_hosted_model_at_price_0_is_not_bounded_by_a_cost_quota(github: FakeGitHub, tmp_path: Path) -> None:
    # the same quota, 0.001 left: a model litellm prices at 0.002 a token stops at once; one at price 0 runs on
    quota, used = {"quota_cost_per_day": 10.0}, (0.0, 9.999, 0.0)
    hosted = partial(_quota_run, github, tmp_path / "hosted", quota, used, model_price={"scripted/test": 0.002}.get)
    _stopped_by(*hosted(), "quota of 10.00 cost per day was reached during the run")
    world, outcome = _quota_run(
        github, tmp_path / "own", quota, used, replies=[FIX, bash(SUBMIT)], model_price=lambda name: 0.0
    )
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    assert len(world.model.requests) == 2


def test_priced_model_seconds_count_toward_a_cost_quota(github: FakeGitHub, tmp_path: Path) -> None:
    # tokens cost nothing; each call's at least 0.3 s at 1.00 a second crosses the 1.00 left within 4 calls
    settings = {"price_per_model_second": 1.0, "quota_cost_per_day": 10.0}
    world, outcome = _quota_run(github, tmp_path, settings, (0, 9.8, 0), slow=0.1)
    _stopped_by(world, outcome, "quota of 10.00 cost per day was reached during the run (its last 0.20 of cost")


def test_crossing_a_model_seconds_quota_mid_run_stops_it_with_the_quota_named(
    github: FakeGitHub, tmp_path: Path
) -> None:
    # 0.2 model-seconds left; each call takes at least 0.1 s, so the second call at the latest crosses it
    world, outcome = _quota_run(github, tmp_path, {"quota_model_seconds_per_day": 100.0}, (0, 0, 99.8), slow=0.1)
    _stopped_by(world, outcome, "quota of 100 model-seconds per day was reached during the run (its last 0.2 model")


def test_the_tightest_quota_ends_the_run_and_is_the_one_named(github: FakeGitHub, tmp_path: Path) -> None:
    settings = {**PRICED, "quota_tokens_per_month": 10_000, "quota_cost_per_day": 10.0,
                "quota_model_seconds_per_month": 3_600.0}  # fmt: skip
    # 300 tokens left of the token quota, 0.30 of the cost quota (150 tokens), an hour of model-seconds
    world, outcome = _quota_run(github, tmp_path / "cost", settings, (9_700, 9.7, 0))
    _stopped_by(world, outcome, "quota of 10.00 cost per day was reached during the run")
    assert "tokens per month" not in (outcome.error or "") and "model-seconds" not in (outcome.error or "")
    assert len(world.model.requests) == 2  # at the cost quota's 150 tokens, before the token quota's 300
    # 200 tokens left of the token quota, 5.00 of the cost quota (2,500 tokens)
    world, outcome = _quota_run(github, tmp_path / "tokens", settings, (9_800, 5.0, 0))
    _stopped_by(world, outcome, "quota of 10,000 tokens per month was reached during the run")
    assert "cost per day" not in (outcome.error or "") and len(world.model.requests) == 2
    # 0.2 model-seconds left (calls of 0.1 s: the second at the latest), 1,000 tokens, 1.00 of cost (500 tokens)
    world, outcome = _quota_run(github, tmp_path / "seconds", settings, (9_000, 9.0, 3_599.8), slow=0.1)
    _stopped_by(world, outcome, "quota of 3,600 model-seconds per month was reached during the run")
    assert "cost per day" not in (outcome.error or "") and len(world.model.requests) <= 3


def test_a_model_seconds_quota_crossed_mid_run_keeps_the_change_as_a_wip_draft(
    github: FakeGitHub, tmp_path: Path
) -> None:
    world, outcome = _quota_run(
        github, tmp_path, {"quota_model_seconds_per_day": 100.0}, (0, 0, 99.8), slow=0.1, keep=True
    )
    _assert_wip_draft(github, world, outcome, "quota of 100 model-seconds per day was reached during the run")
