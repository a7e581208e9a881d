"""GitHub's secondary rate limit on the App's writes, on a job in flight: the real App (`mini-fix serve`), the real
sandbox, a scripted model, and a fake GitHub answering 403 "You have exceeded a secondary rate limit" with
`Retry-After` (tests/support/fake_github_faults.py). Before: `job_failed_early`, a 👀 and nothing else."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.github.retry import MAX_RETRIES
from tests.e2e.test_github_flow import FILES, FIX, REPO, SECRET, app_env, jobs, wait_for
from tests.support.app_process import AppProcess
from tests.support.fake_github import FakeGitHub
from tests.support.model_server import ScriptedModelServer
from tests.support.webhooks import deliver, labeled

pytestmark = [pytest.mark.faults, pytest.mark.docker]

COMMENT_POSTS = r"^/repos/acme/calc/issues/\d+/comments$"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.start()
    fake.add_repo("acme", "calc", FILES)
    fake.set_permission("alice", "write")
    yield fake
    fake.stop()


def run_to_the_pr(github: FakeGitHub, tmp_path: Path) -> tuple[int, dict[str, Any], AppProcess]:
    """Label an issue, wait for the PR, its trajectory comment and the job's success; the App stopped after."""
    issue = github.add_issue(REPO, "add() subtracts", "add(2, 3) returns -1", author="alice")
    with ScriptedModelServer(FIX) as model:
        app = AppProcess(app_env(github, model, tmp_path / "data"), tmp_path / "app.log").start()
        try:
            response = deliver(f"{app.url}/webhook", "issues", labeled(REPO, issue, sender="alice"), SECRET)
            assert response.status_code == 202, response.text
            pr = wait_for(lambda: github.pulls, 300, "a pull request", app.log)[0]
            job = wait_for(
                lambda: [j for j in jobs(tmp_path / "data", app.env) if j["status"] == "succeeded"],
                120,
                "the job's success",
                app.log,
            )[0]
        finally:
            app.stop()
    return issue, {**pr, "job": job}, app


def events(app: AppProcess) -> list[dict[str, Any]]:
    """The App's JSON log lines (another writer's text may follow one on the same line: huey logs plain text)."""
    decoder, found = json.JSONDecoder(), []
    for line in app.log().splitlines():
        if line.startswith("{"):
            found.append(decoder.raw_decode(line)[0])
    return found


def test_two_secondary_limits_on_the_status_comment_are_waited_out(github: FakeGitHub, tmp_path: Path) -> None:
    limit = github.faults.secondary_rate_limit("POST", COMMENT_POSTS, count=2, retry_after=1)
    issue, pr, app = run_to_the_pr(github, tmp_path)
    assert limit.hits == 2
    status = github.comments_on(REPO, issue)[0]["body"]
    assert "pull request" in status.lower() and pr["html_url"] in status
    assert pr["head"]["ref"] == f"mini-fix/issue-{issue}" and pr["job"]["attempts"] == 1
    logged = events(app)
    assert [e for e in logged if e.get("event") == "github_rate_limited"][:2] and not [
        e for e in logged if e.get("event") == "job_failed_early"
    ]


def test_a_limit_past_the_bound_defers_the_job_and_the_next_claim_opens_the_pr(
    github: FakeGitHub, tmp_path: Path
) -> None:
    limit = github.faults.secondary_rate_limit("POST", COMMENT_POSTS, count=MAX_RETRIES + 1, retry_after=1)
    issue, pr, app = run_to_the_pr(github, tmp_path)
    assert limit.hits == MAX_RETRIES + 1
    [status, *_] = github.comments_on(REPO, issue)
    assert pr["html_url"] in status["body"]
    assert pr["job"]["attempts"] == 2  # the deferred claim counted: a job GitHub keeps refusing ends
    deferred = [e for e in events(app) if e.get("event") == "job_deferred"]
    assert len(deferred) == 1 and deferred[0]["retry_in_s"] == 1
