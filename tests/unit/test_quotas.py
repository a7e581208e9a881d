"""Token quotas: a run whose organisation used up its quota is refused with a comment naming quota, use and reset."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from functools import partial
from typing import Any

from bot.forge_ids import installation_of
from bot.jobs import Job, JobKind, JobOutcome, JobRequest, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.ledger.usage import Usage
from bot.queue.dispatch import JobQueue
from bot.settings import Settings
from bot.worker import quotas
from bot.worker.pool import Worker
from bot.worker.wiring import used_tokens

NOW = datetime(2026, 12, 5, 13, 30, tzinfo=UTC)


def job(repo: str = "acme/app", inst: int = 1, kind: JobKind = JobKind.FIX) -> Job:
    return Job("j1", kind, inst, repo, 7, "alice", "d1", JobStatus.RUNNING)


def test_overrides_replace_the_operators_defaults_per_owner() -> None:
    settings = Settings(
        quota_tokens_per_day=100,
        quota_tokens_per_month=1000,
        quota_overrides={"ACME": {"tokens_per_month": 50, "tokens_per_day": 0}},
        _env_file=None,
    )
    acme, octo = quotas.operator_limits(settings, "acme"), quotas.operator_limits(settings, "octo")
    assert (acme["tokens_per_day"], acme["tokens_per_month"]) == (0, 50)
    assert (octo["tokens_per_day"], octo["tokens_per_month"], octo["cost_per_month"]) == (100, 1000, 0)


def test_the_first_quota_reached_is_named_with_its_use_and_reset() -> None:
    settings = Settings(quota_tokens_per_day=100, quota_tokens_per_month=1000, _env_file=None)
    asked: list[tuple[int, str]] = []

    def used(inst: int, since: str) -> tuple[int, float]:
        asked.append((inst, since))
        return {"2026-12-05": (40, 0.0), "2026-12-01": (1200, 0.0)}[since]

    quota = quotas.reached(settings, used, job(), NOW)
    assert asked == [(1, "2026-12-05"), (1, "2026-12-01")]  # the day's window, then the month's
    assert quota == quotas.Quota("tokens per month", 1000, 1200, datetime(2027, 1, 1, tzinfo=UTC))
    assert "1,000 tokens per month" in quota.sentence() and "1,200 used" in quota.sentence()
    assert "2027-01-01 00:00 UTC" in quota.sentence()
    assert quotas.reached(settings, lambda inst, since: (99, 0.0), job(), NOW) is None


def test_a_cost_quota_counts_money() -> None:
    settings = Settings(quota_overrides={"acme": {"cost_per_day": 2.5}}, _env_file=None)
    quota = quotas.reached(settings, lambda inst, since: (10, 2.75), job(), NOW)
    assert quota is not None and quota.name == "cost per day" and quota.resets_at == datetime(2026, 12, 6, tzinfo=UTC)
    assert "quota of 2.50 cost per day is used up (2.75 used)" in quota.sentence()
    assert quotas.reached(settings, lambda inst, since: (10, 2.75), job("octo/app"), NOW) is None


class Comments:
    def __init__(self) -> None:
        self.posted: list[tuple[int, str, int, str]] = []

    def __call__(self, installation: int, repo: str) -> Any:
        outer = self

        class Gateway:
            def create_comment(self, number: int, body: str) -> int:
                outer.posted.append((installation, repo, number, body))
                return 1

        return Gateway()


def test_a_run_past_its_organisations_quota_is_refused_on_its_issue_and_another_runs(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    ledger.record_usage(Usage("old", "c", 1, 1, "acme/app", today, version=1, final=True, calls=3,
                              prompt_tokens=900, completion_tokens=200))  # fmt: skip
    capped = settings.model_copy(update={"quota_overrides": {"acme": {"tokens_per_month": 1000}}})
    ran: list[str] = []

    def runner(job: Job, cancel: threading.Event) -> JobOutcome:
        ran.append(job.repo)
        return JobOutcome(JobStatus.SUCCEEDED)

    comments = Comments()
    guarded = quotas.guarded(runner, capped, partial(used_tokens, ledger), comments)
    worker = Worker(capped, ledger, job_queue, guarded)
    refused = ledger.submit(JobRequest(JobKind.CI, 1, "acme/app", 7, "alice", "a")).job  # follow-ups count too
    assert worker.run_job(refused.id) == JobStatus.CANCELLED
    [(inst, repo, number, body)] = comments.posted
    assert (inst, repo, number) == (1, "acme/app", 7)
    assert "1,000 tokens per month" in body and "1,100 used" in body and "resets at" in body
    assert ledger.get(refused.id).error.startswith(quotas.REFUSED)  # type: ignore[union-attr]
    other = ledger.submit(JobRequest(JobKind.FIX, 2, "octo/app", 1, "bob", "b")).job
    assert worker.run_job(other.id) == JobStatus.SUCCEEDED and ran == ["octo/app"]
    help_ = ledger.submit(JobRequest(JobKind.HELP, 1, "acme/app", 8, "alice", "h")).job
    assert worker.run_job(help_.id) == JobStatus.SUCCEEDED  # `/agent help` is never a quota's to refuse


def test_a_run_under_a_token_quota_gets_the_headroom_as_its_token_budget() -> None:
    settings = Settings(quota_tokens_per_month=20_000, max_tokens=100_000, _env_file=None)
    budgets: list[int] = []

    def runner(job: Job, cancel: threading.Event) -> JobOutcome:
        budgets.append(quotas.within_quota(settings).max_tokens)  # what the wiring gives the pipeline
        return JobOutcome(JobStatus.SUCCEEDED)

    run = quotas.guarded(runner, settings, lambda inst, since: (17_500, 0.0), Comments())
    assert run(job(), threading.Event()).status == JobStatus.SUCCEEDED
    assert budgets == [2500]
    assert quotas.within_quota(settings).max_tokens == 100_000  # outside a run: the deployment's own ceiling
    free = quotas.guarded(runner, Settings(_env_file=None), lambda inst, since: (17_500, 0.0), Comments())
    assert free(job(), threading.Event()).status == JobStatus.SUCCEEDED and budgets[-1] == 100_000


def test_the_tightest_token_quota_sets_the_headroom() -> None:
    settings = Settings(quota_tokens_per_day=5000, quota_tokens_per_month=20_000, _env_file=None)
    used = {"2026-12-05": (1200, 0.0), "2026-12-01": (17_500, 0.0)}
    found = quotas.check(settings, lambda inst, since: used[since], job(), NOW)
    assert (found.past, found.tokens_left) == (None, 2500)
    assert found.token_quota is not None and found.token_quota.name == "tokens per month"
    used["2026-12-01"] = (2000, 0.0)
    found = quotas.check(settings, lambda inst, since: used[since], job(), NOW)
    assert (found.past, found.tokens_left) == (None, 3800)
    assert found.token_quota is not None and found.token_quota.name == "tokens per day"


def test_a_github_owner_and_a_gitlab_group_of_one_name_are_different_spenders(
    settings: Settings, ledger: SqliteLedger, job_queue: JobQueue
) -> None:
    gitlab = installation_of("acme/app")
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    for inst, tokens in ((1, 150), (gitlab, 500)):  # each one's use, in one ledger
        ledger.record_usage(Usage(f"old{inst}", "c", 1, inst, "acme/app", today, version=1, final=True, calls=1,
                                  prompt_tokens=tokens))  # fmt: skip
    capped = settings.model_copy(
        update={"quota_overrides": {"acme": {"tokens_per_day": 100}, "gitlab:acme": {"tokens_per_day": 1000}}}
    )
    ran: list[int] = []

    def runner(job: Job, cancel: threading.Event) -> JobOutcome:
        ran.append(job.installation_id)
        return JobOutcome(JobStatus.SUCCEEDED)

    comments = Comments()
    worker = Worker(capped, ledger, job_queue, quotas.guarded(runner, capped, partial(used_tokens, ledger), comments))
    on_github = ledger.submit(JobRequest(JobKind.FIX, 1, "acme/app", 7, "alice", "a")).job
    on_gitlab = ledger.submit(JobRequest(JobKind.FIX, gitlab, "acme/app", 7, "alice", "b")).job
    assert worker.run_job(on_github.id) == JobStatus.CANCELLED  # 150 of GitHub acme's 100
    assert worker.run_job(on_gitlab.id) == JobStatus.SUCCEEDED and ran == [gitlab]  # 500 of GitLab acme's 1,000
    [(inst, _, _, body)] = comments.posted
    assert inst == 1 and "100 tokens per day" in body and "150 used" in body  # GitLab's 500 not added in
    assert quotas.quota_owner(on_gitlab) == "gitlab:acme" and quotas.quota_owner(on_github) == "acme"
    only_github = settings.model_copy(update={"quota_overrides": {"acme": {"tokens_per_day": 100}}})
    assert quotas.check(only_github, partial(used_tokens, ledger), on_gitlab).status == ()  # GitHub's, not its


def test_a_hosted_models_price_is_its_higher_per_token_price_and_a_self_hosted_ones_0() -> None:
    from bot.agent.model import import_litellm, token_price

    listed = import_litellm().get_model_info("openai/gpt-4o")
    assert token_price("openai/gpt-4o") == max(listed["input_cost_per_token"], listed["output_cost_per_token"]) > 0
    assert token_price("hosted_vllm/our-own-model") == 0.0  # not in litellm's price list: costs nothing
