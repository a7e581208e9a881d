"""A job kind is one object (`bot.pipeline.task.kinds`), chosen once from the job's kind."""

from __future__ import annotations

from typing import Any

import pytest

from bot.github.gateway import Comment, Issue, PullRequest
from bot.jobs import Job, JobKind
from bot.pipeline.task.feedback import STATUS_MARKER
from bot.pipeline.task.kinds import KINDS, kind_of


class Repo:
    """The few reads a kind makes, recorded; anything else is a test failure (AttributeError)."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.issue_comments = [
            Comment(1, "app[bot]", f"{STATUS_MARKER} working", created_at="2026-01-01T00:00:00Z"),
            Comment(2, "alice", "it fails on empty input", created_at="2026-01-01T00:01:00Z"),
        ]

    def permission(self, user: str) -> str:
        self.asked.append(user)
        return "write"

    def list_comments(self, number: int) -> list[Comment]:
        return self.issue_comments if number == 7 else [Comment(9, "bob", "and rename it", "2026-01-02T00:00:00Z")]

    def find_open_pr(self, branch: str) -> PullRequest | None:
        return PullRequest(12, "https://example.test/pull/12", "", draft=True, head=branch)

    def list_review_comments(self, number: int) -> list[Comment]:
        return []


def job(kind: JobKind, **extra: Any) -> Job:
    return Job("j1", kind, 1, "acme/widgets", 7, "alice", "d1", **extra)


def test_every_job_kind_has_its_object_and_only_help_and_stop_are_control() -> None:
    assert set(KINDS) == set(JobKind)
    assert {kind for kind in JobKind if kind_of(job(kind)).control} == {JobKind.HELP, JobKind.STOP}
    assert [kind for kind in JobKind if kind_of(job(kind)).retry] == [JobKind.RETRY]


@pytest.mark.parametrize("kind", [JobKind.FIX, JobKind.RETRY, JobKind.REVIEW])
def test_a_persons_kind_asks_github_for_the_requesters_role(kind: JobKind) -> None:
    repo = Repo()
    assert kind_of(job(kind)).requester_role(job(kind), repo) == "write"  # type: ignore[arg-type]
    assert repo.asked == ["alice"]


def test_a_ci_follow_up_is_the_apps_own_and_asks_nobodys_role() -> None:
    repo = Repo()
    assert kind_of(job(JobKind.CI)).requester_role(job(JobKind.CI), repo) == "write"  # type: ignore[arg-type]
    assert repo.asked == []


def test_a_fix_and_a_retry_pass_the_gate_and_the_recheck_without_reading_the_pr() -> None:
    for kind in (JobKind.FIX, JobKind.RETRY):
        assert kind_of(job(kind)).gate(job(kind), object()) is None  # type: ignore[arg-type]
        assert kind_of(job(kind)).recheck(job(kind), object()) is None  # type: ignore[arg-type]


def test_only_a_retrys_task_has_what_reviewers_said_on_the_pr_since_the_last_run() -> None:
    issue = Issue(7, "add() subtracts", "see title", "alice")
    fix = kind_of(job(JobKind.FIX)).task(job(JobKind.FIX), Repo(), issue, None)  # type: ignore[arg-type]
    retry = kind_of(job(JobKind.RETRY)).task(job(JobKind.RETRY, guidance="use +"), Repo(), issue, None)  # type: ignore[arg-type]
    assert "it fails on empty input" in fix and "it fails on empty input" in retry
    assert "and rename it" not in fix and "and rename it" in retry
    assert "use +" in retry
