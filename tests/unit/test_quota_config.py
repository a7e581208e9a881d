"""An organisation's own `quotas:` (its `.github` repository's and the repository's `.github/mini-fix.yml`) may only
lower the operator's quotas; a higher value is ignored with a warning, shown in `/agent help`."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from bot.jobs import Job, JobKind, JobOutcome, JobStatus
from bot.ledger import quota_notes
from bot.repo_config import quotas as repo_quotas
from bot.repo_config.schema import Quotas, RepoConfig
from bot.settings import Settings
from bot.worker import quotas

NOW = datetime(2026, 12, 5, 13, 30, tzinfo=UTC)


def job(kind: JobKind = JobKind.FIX, repo: str = "acme/app") -> Job:
    return Job("j1", kind, 1, repo, 7, "alice", "d1", JobStatus.RUNNING)


class Repos:
    """GitHub as the config reader sees it: one `.github/mini-fix.yml` per repository (None: none)."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files
        self.comments: list[str] = []

    def __call__(self, installation: int, repo: str) -> Any:
        outer = self

        class Gateway:
            def read_file(self, path: str) -> str | None:
                return outer.files.get(repo) if path == ".github/mini-fix.yml" else None

            def get_repo(self) -> Any:
                raise AssertionError("no public lookups here")

            def create_comment(self, number: int, body: str) -> int:
                outer.comments.append(body)
                return 1

        return Gateway()


def test_the_config_takes_a_quotas_section_and_refuses_unknown_keys() -> None:
    config = RepoConfig.model_validate({"quotas": {"tokens_per_month": 500, "followups_per_pr": 2}})
    assert (config.quotas.tokens_per_month, config.quotas.followups_per_pr) == (500, 2)
    with pytest.raises(ValidationError):
        RepoConfig.model_validate({"quotas": {"tokens_per_year": 5}})


def test_a_lower_value_applies_a_higher_one_is_ignored_with_a_warning() -> None:
    operator = {"tokens_per_month": 1000.0, "tokens_per_day": 0.0, "cost_per_day": 5.0}
    limits, warnings = repo_quotas.lowered(operator, {"tokens_per_month": 400, "tokens_per_day": 50, "cost_per_day": 9})
    assert limits == {"tokens_per_month": 400, "tokens_per_day": 50, "cost_per_day": 5.0}  # "none" is lowered too
    [warning] = warnings
    assert "quotas.cost_per_day: 9" in warning and "operator's 5" in warning and "ignored" in warning


def test_the_lower_of_the_repositorys_and_the_organisations_file_is_asked() -> None:
    asked = repo_quotas.asked([Quotas(tokens_per_month=900, cost_per_day=0), Quotas(tokens_per_month=300)])
    assert asked == {"tokens_per_month": 300}  # 0 and unset leave the operator's quota as it is


def test_the_guard_reads_both_files_and_a_repository_cannot_lift_its_organisations_quota() -> None:
    settings = Settings(quota_tokens_per_month=1000, _env_file=None)
    repos = Repos(
        {
            "acme/.github": "quotas:\n  tokens_per_month: 300\n",
            "acme/app": "quotas:\n  tokens_per_month: 800\n",  # the repository's own file replaces the org's...
        }
    )
    assert quotas.config_quotas(repos)(job()) == {"tokens_per_month": 300}  # ...but not the org's lowering
    ran: list[str] = []

    def runner(j: Job, cancel: threading.Event) -> JobOutcome:
        ran.append(j.id)
        return JobOutcome(JobStatus.SUCCEEDED)

    guarded = quotas.guarded(
        runner, settings, lambda inst, since: (350, 0.0, 0.0), repos, asked=quotas.config_quotas(repos),
        clock=lambda: NOW,
    )  # fmt: skip
    assert guarded(job(), threading.Event()).status == JobStatus.CANCELLED and not ran
    [body] = repos.comments
    assert "quota of 300 tokens per month is used up (350 used)" in body


def test_a_value_above_the_operators_never_raises_the_cap_and_help_shows_the_warning() -> None:
    settings = Settings(quota_tokens_per_month=1000, _env_file=None)
    repos = Repos({"acme/app": "quotas:\n  tokens_per_month: 100000\n"})
    shown: list[tuple[str, ...]] = []

    def runner(j: Job, cancel: threading.Event) -> JobOutcome:
        shown.append(quota_notes.remaining())
        return JobOutcome(JobStatus.SUCCEEDED)

    guarded = quotas.guarded(
        runner, settings, lambda inst, since: (1200, 0.0, 0.0), repos, asked=quotas.config_quotas(repos),
        clock=lambda: NOW,
    )  # fmt: skip
    assert guarded(job(), threading.Event()).status == JobStatus.CANCELLED  # still the operator's 1,000
    assert "1,000 tokens per month" in repos.comments[0]
    assert guarded(job(JobKind.HELP), threading.Event()).status == JobStatus.SUCCEEDED
    [lines] = shown
    assert lines[0] == "tokens per month: 0 of 1,000 left (it resets at 2027-01-01 00:00 UTC)"
    assert "quotas.tokens_per_month: 100000" in lines[1] and "ignored" in lines[1]
