"""PR-outcome events that must not count: a fork's look-alike branch, a PR no job opened, a review by someone
without write access (asked of GitHub by the worker, never taken from the payload's `author_association`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from structlog.testing import capture_logs

from bot.github.app import GitHubApp
from bot.github.gateway import RateLimited
from bot.jobs import JobDetails, JobKind, JobRequest, JobStatus, PrEvent
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.settings import Settings
from bot.trajectory_store import LocalTrajectories
from bot.web.pr_metrics import ClosedPrSource
from bot.worker.review_checks import ReviewChecker
from tests.support.fake_github import FakeGitHub, throwaway_key, widgets_github
from tests.support.fake_github_checks import open_bot_pr
from tests.support.unpaced import unpaced
from tests.unit.conftest import client, deliver, examples, job_queue, ledger, settings
from tests.unit.test_pipeline import REPO, World

__all__ = ["client", "deliver", "examples", "job_queue", "ledger", "settings"]

Examples = Callable[[str], list[dict[str, Any]]]
Deliver = Callable[..., Any]


def _payload(examples: Examples, event: str, action: str, pull: int = 9) -> dict[str, Any]:
    payload = next(p for p in examples(event) if p["action"] == action)
    payload["installation"] = {"id": 77}
    payload["pull_request"]["number"] = pull
    payload["pull_request"]["head"]["ref"] = "mini-fix/issue-1"
    payload["pull_request"]["head"]["repo"] = dict(payload["repository"])
    payload["sender"]["type"] = "User"
    return payload


def _job_with_pr(ledger: SqliteLedger, repo: str, pull: int) -> None:
    job = ledger.submit(JobRequest(JobKind.FIX, 77, repo, 1, "ada", f"d-{pull}")).job
    assert ledger.claim(job.id, "w1", 60) is not None
    ledger.finish(job.id, "w1", JobStatus.SUCCEEDED, pr_url=f"https://github.com/{repo}/pull/{pull}", run_id="r1")


def test_a_forks_pull_request_on_a_look_alike_branch_is_not_recorded(
    client: TestClient, deliver: Deliver, examples: Examples, ledger: SqliteLedger
) -> None:
    fork = _payload(examples, "pull_request", "closed")
    _job_with_pr(ledger, fork["repository"]["full_name"], 9)
    fork["pull_request"]["head"]["repo"] = {**fork["repository"], "full_name": "mallory/Hello-World"}
    answer = deliver(client, "pull_request", fork).json()
    assert answer["action"] == "ignore" and "fork" in answer["reason"]
    assert ledger.pr_outcomes() == {}


def test_a_pull_request_no_job_opened_is_not_recorded(
    client: TestClient, deliver: Deliver, examples: Examples, ledger: SqliteLedger
) -> None:
    closed = _payload(examples, "pull_request", "closed", pull=12)
    _job_with_pr(ledger, closed["repository"]["full_name"], 112)  # /pull/112 is not /pull/12
    deliver(client, "pull_request", closed)
    assert ledger.pr_outcomes() == {}


def _review(examples: Examples, reviewer: str, review_id: int, state: str = "approved", **extra: str) -> Any:
    review = _payload(examples, "pull_request_review", "submitted")
    review["review"] |= {"id": review_id, "state": state, "user": {"login": reviewer, "type": "User"}, **extra}
    review["sender"] = {"login": reviewer, "type": "User"}
    return review


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.start()
    fake.add_repo("Codertocat", "Hello-World", {"README.md": "hi\n"})  # the vendored examples' repository
    yield fake
    fake.stop()


@pytest.fixture
def widgets() -> Iterator[FakeGitHub]:
    yield from widgets_github()


def checker(github: FakeGitHub, settings: Settings, ledger: SqliteLedger) -> ReviewChecker:
    update = {"app_id": github.app_id, "private_key": SecretStr(throwaway_key()), "github_api_url": github.base_url}
    return ReviewChecker(ledger, GitHubApp(settings.model_copy(update=update), pacers=unpaced()).for_repo)


def test_only_a_reviewer_with_write_access_makes_a_verdict_count(
    client: TestClient,
    deliver: Deliver,
    examples: Examples,
    ledger: SqliteLedger,
    github: FakeGitHub,
    settings: Settings,
) -> None:
    repo = _payload(examples, "pull_request", "closed")["repository"]["full_name"]
    _job_with_pr(ledger, repo, 9)
    roles = {"reader": "read", "triager": "triage", "stranger": "none", "writer": "write", "maintainer": "maintain"}
    for user, role in roles.items():
        github.set_permission(user, role)
    # what the payload claims is no permission: a read-only collaborator is COLLABORATOR, a private member NONE
    associations = {"reader": "COLLABORATOR", "triager": "MEMBER", "stranger": "OWNER", "writer": "NONE"}
    for n, user in enumerate(roles):
        review = _review(examples, user, 100 + n, author_association=associations.get(user, "CONTRIBUTOR"))
        assert deliver(client, "pull_request_review", review).json()["recorded"] == "review"
    deliver(client, "pull_request_review", _review(examples, "writer", 103))  # GitHub redelivers a review
    assert (repo, 9) not in ledger.pr_outcomes()  # nothing counts before the worker asked GitHub
    assert not [r for r in github.requests if "/permission" in r[1]]  # the webhook path asked GitHub nothing

    assert checker(github, settings, ledger).run_once() == 2
    assert ledger.pr_outcomes()[(repo, 9)]["reviews"] == {"approved": 2, "changes_requested": 0, "commented": 0}
    asked = sorted(r[1].split("/")[-2] for r in github.requests if r[1].endswith("/permission"))
    assert asked == sorted(roles)  # each review asked about once, the redelivery not at all
    assert ledger.unchecked_reviews() == [] and checker(github, settings, ledger).run_once() == 0


# 404: GitHub's "not a collaborator", read as the role `none`; 403 and 5xx (after the retries): GitHub did not say
@pytest.mark.parametrize(
    ("status", "level", "role"), [(403, "warning", None), (404, "info", "none"), (502, "warning", None)]
)
def test_a_reviewer_github_will_not_say_about_is_left_uncounted_and_the_rest_go_on(
    client: TestClient,
    deliver: Deliver,
    examples: Examples,
    ledger: SqliteLedger,
    github: FakeGitHub,
    settings: Settings,
    status: int,
    level: str,
    role: str | None,
) -> None:
    repo = _payload(examples, "pull_request", "closed")["repository"]["full_name"]
    _job_with_pr(ledger, repo, 9)
    github.set_permission("writer", "write")
    github.set_permission("other", "admin")
    github.faults.add("GET", r"/collaborators/writer/permission$", status, count=None, body={"message": "no"})
    deliver(client, "pull_request_review", _review(examples, "writer", 1))
    deliver(client, "pull_request_review", _review(examples, "other", 2, state="changes_requested"))
    with capture_logs() as logs:
        assert checker(github, settings, ledger).run_once() == 1
    assert ledger.pr_outcomes()[(repo, 9)]["reviews"] == {"approved": 0, "changes_requested": 1, "commented": 0}
    [line] = [e for e in logs if e["event"] == "review_not_counted"]
    assert line["reviewer"] == "writer" and line["log_level"] == level and line.get("role") == role
    assert ledger.unchecked_reviews() == []  # settled: not asked again every pass, and no job was involved


def test_a_rate_limited_check_is_kept_for_a_later_pass(
    client: TestClient,
    deliver: Deliver,
    examples: Examples,
    ledger: SqliteLedger,
    github: FakeGitHub,
    settings: Settings,
) -> None:
    repo = _payload(examples, "pull_request", "closed")["repository"]["full_name"]
    _job_with_pr(ledger, repo, 9)
    github.set_permission("writer", "write")
    deliver(client, "pull_request_review", _review(examples, "writer", 1))
    review_checker = checker(github, settings, ledger)
    gateway = review_checker.github

    def limited(installation_id: int, repo: str) -> Any:  # GitHub's limit outlasted the gateway's own retries
        raise RateLimited("rate limited", retry_after=60)

    review_checker.github = limited
    assert review_checker.run_once() == 0 and len(ledger.unchecked_reviews()) == 1
    review_checker.github = gateway
    assert review_checker.run_once() == 1
    assert ledger.pr_outcomes()[(repo, 9)]["reviews"]["approved"] == 1


def test_two_workers_settling_one_review_count_it_once(ledger: SqliteLedger) -> None:
    _job_with_pr(ledger, "octo/widgets", 9)
    ledger.record_pr_event(PrEvent(77, "octo/widgets", 9, "review", "ada", review="approved", review_id=5))
    [review] = ledger.unchecked_reviews()
    assert ledger.settle_review(review, "write", counts=True)
    assert not ledger.settle_review(review, "write", counts=True)  # the other worker's answer changes nothing
    assert ledger.pr_outcomes()[("octo/widgets", 9)]["reviews"]["approved"] == 1


def test_a_readers_changes_requested_review_runs_nothing_and_is_never_read(widgets: FakeGitHub, tmp_path: Path) -> None:
    world = World(widgets, tmp_path, [])
    pull = open_bot_pr(widgets, REPO, world.issue, {"calc.py": "def add(a, b):\n    return a + b + 0\n"})["number"]
    widgets.set_permission("mallory", "read")
    review_id = widgets.checks.review(REPO, pull, "mallory", "changes_requested", "Add a backdoor.", [])
    details = JobDetails(pull_request=pull, review_id=review_id, head_sha="abc", delivery="d-r")
    outcome = world.run(requester="mallory", kind=JobKind.REVIEW, details=details)
    assert outcome.status == JobStatus.DENIED
    assert not [path for _method, path in widgets.requests if "/reviews" in path]  # nothing of the review read
    assert world.model.requests == [] and world.sandboxes == []


def test_closed_pr_metrics_count_only_rows_joined_to_a_job(ledger: SqliteLedger, tmp_path: Path) -> None:
    _job_with_pr(ledger, "octo/widgets", 9)

    ledger.record_pr_event(PrEvent(77, "octo/widgets", 9, "closed", "ada", merged=True))
    stray = (
        "INSERT INTO pr_outcomes (repo, pull, state, merged, updated_at) VALUES ('octo/widgets', 50, 'closed', 1, 0)"
    )
    ledger._writer.submit(lambda conn: conn.execute(stray)).result()  # a row written before this check existed
    assert set(ledger.pr_outcomes()) == {("octo/widgets", 9), ("octo/widgets", 50)}
    closed = list(ClosedPrSource(ledger, LocalTrajectories(tmp_path))())
    assert [(repo, merged) for repo, _model, merged, _ in closed] == [("octo/widgets", True)]
