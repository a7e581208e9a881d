"""Issue 33 item 5 through the pipeline (fake GitHub over HTTP, the real SQLite ledger): a CI follow-up that could
not read the failure, or was skipped, is said on the PR and does not count toward `ci_followups`."""

from __future__ import annotations

import threading
from pathlib import Path

from bot.jobs import JobDetails, JobKind, JobRequest, JobStatus
from bot.pipeline.run import run_pipeline
from bot.pipeline.task.followup import ci_done
from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_checks import BOT, bot_commit
from tests.unit.test_pipeline import REPO, github
from tests.unit.test_pr_conversation import Conversation

__all__ = ["github"]


def _ci(world: Conversation, sha: str, key: str = "ci:1") -> JobRequest:
    details = JobDetails(pull_request=world.pull, head_sha=sha)
    return JobRequest(JobKind.CI, 7, REPO, world.issue, BOT, key, details=details)


def _run_ci(world: Conversation, sha: str, key: str = "ci:1") -> JobStatus:
    job = world.claimed(world.ledger.submit(_ci(world, sha, key)).job)
    outcome = run_pipeline(job, threading.Event(), world.deps())
    assert world.ledger.finish(job.id, "w1", outcome.status, error=outcome.error)
    assert world.model.requests == []  # none of these ran the agent
    return outcome.status


def test_an_unreadable_failure_does_not_count_toward_ci_followups(github: FakeGitHub, tmp_path: Path) -> None:
    world = Conversation(github, tmp_path, [])
    sha = str(github.branch_head(REPO, world.branch))
    github.checks.fail(REPO, sha, "tests", log="boom")
    github.faults.add("GET", r"/check-runs$", 403, count=None, body={"message": "Resource not accessible"})
    _run_ci(world, sha)
    [note] = [c["body"] for c in github.comments_on(REPO, world.pull)]
    assert "could not read what failed" in note and "has not granted `checks: read`" in note
    assert ci_done(world.ledger.issue_jobs(REPO, world.issue, installation_id=7), "next") == 0  # it never ran


def test_a_ci_rerun_that_turned_green_skips_the_follow_up_and_says_so(github: FakeGitHub, tmp_path: Path) -> None:
    world = Conversation(github, tmp_path, [])
    sha = str(github.branch_head(REPO, world.branch))  # CI failed on it, then a re-run passed: no failing run now
    assert _run_ci(world, sha) == JobStatus.CANCELLED
    [note] = [c["body"] for c in github.comments_on(REPO, world.pull)]
    assert f"`{sha[:12]}`" in note and "no check run of that commit fails any more" in note and "skipped" in note
    assert ci_done(world.ledger.issue_jobs(REPO, world.issue, installation_id=7), "next") == 0


def test_a_follow_up_for_a_commit_no_longer_the_head_says_why_it_was_skipped(
    github: FakeGitHub, tmp_path: Path
) -> None:
    world = Conversation(github, tmp_path, [])
    old = str(github.branch_head(REPO, world.branch))
    bot_commit(github, REPO, world.branch, {"calc.py": "def add(a, b):\n    return b + a\n"}, "mini-fix: next")
    assert _run_ci(world, old) == JobStatus.CANCELLED
    [note] = [c["body"] for c in github.comments_on(REPO, world.pull)]
    assert f"`{old[:12]}`" in note and "newer commit" in note and "skipped" in note


SECONDARY = {"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}


def test_a_rate_limit_on_reading_the_failure_defers_the_follow_up_it_is_no_missing_permission(
    github: FakeGitHub, tmp_path: Path
) -> None:
    world = Conversation(github, tmp_path, [])
    sha = str(github.branch_head(REPO, world.branch))
    github.checks.fail(REPO, sha, "tests", log="boom")
    github.faults.add("GET", r"/check-runs$", 403, count=None, headers={"Retry-After": "900"}, body=SECONDARY)
    job = world.claimed(world.ledger.submit(_ci(world, sha)).job)
    outcome = run_pipeline(job, threading.Event(), world.deps())
    assert outcome.status == JobStatus.QUEUED and outcome.retry_in == 900  # waits GitHub's time out, uncounted
    assert world.model.requests == [] and github.comments_on(REPO, world.pull) == []  # no "not granted" note
    assert "rate limit" in str(outcome.error)


def test_a_rate_limited_ci_read_leaves_the_asks_folded_beside_it_running(github: FakeGitHub, tmp_path: Path) -> None:
    from tests.unit.test_pr_conversation import EDIT, SUBMIT, bash

    world = Conversation(github, tmp_path, [EDIT, bash(SUBMIT)])
    review = world.review("alice", "Change it.", "Drop the `+ 0`.")
    sha = str(github.branch_head(REPO, world.branch))
    github.checks.fail(REPO, sha, "tests", log="boom")
    world.ledger.submit(_ci(world, sha))  # waits for the review's run, and is folded into it
    github.faults.add("GET", r"/check-runs$", 403, count=None, headers={"Retry-After": "900"}, body=SECONDARY)
    outcome = run_pipeline(world.claimed(review), threading.Event(), world.deps())
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error  # the review is worked on all the same
    assert "Drop the `+ 0`." in world.model.requests[0][1]["content"]


def test_a_waiting_ci_ask_for_an_older_commit_is_skipped_with_a_note_on_the_pr(
    github: FakeGitHub, tmp_path: Path
) -> None:
    from tests.unit.test_pr_conversation import EDIT, SUBMIT, bash

    world = Conversation(github, tmp_path, [EDIT, bash(SUBMIT)])
    review = world.review("alice", "Change it.", "Drop the `+ 0`.")
    old = str(github.branch_head(REPO, world.branch))
    ci = world.ledger.submit(_ci(world, old)).job  # waits for the review's run
    bot_commit(github, REPO, world.branch, {"calc.py": "def add(a, b):\n    return b + a\n"}, "mini-fix: next")
    outcome = run_pipeline(world.claimed(review), threading.Event(), world.deps())
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    assert world.status(ci) == JobStatus.CANCELLED
    notes = [c["body"] for c in github.comments_on(REPO, world.pull) if "skipped" in c["body"]]
    assert len(notes) == 1 and f"`{old[:12]}`" in notes[0] and "newer commit" in notes[0]


def test_a_ci_follow_up_that_fails_on_github_before_its_run_is_not_counted(github: FakeGitHub, tmp_path: Path) -> None:
    world = Conversation(github, tmp_path, [])
    sha = str(github.branch_head(REPO, world.branch))
    github.checks.fail(REPO, sha, "tests", log="boom")
    github.faults.add("GET", r"/repos/acme/widgets$", 404, count=None, body={"message": "Not Found"})  # get_repo
    assert _run_ci(world, sha) == JobStatus.FAILED  # after its status comment, before the agent
    [job] = [j for j in world.ledger.issue_jobs(REPO, world.issue, installation_id=7) if j.kind == JobKind.CI]
    assert job.status == JobStatus.FAILED and not job.details.ran
    assert ci_done(world.ledger.issue_jobs(REPO, world.issue, installation_id=7), "next") == 0


def test_a_ci_follow_up_whose_run_started_counts_once_however_often_it_is_resumed(
    github: FakeGitHub, tmp_path: Path
) -> None:
    from tests.unit.test_pr_conversation import SUBMIT, bash

    world = Conversation(github, tmp_path, [bash(SUBMIT), bash(SUBMIT)])  # each run changes nothing: it fails
    sha = str(github.branch_head(REPO, world.branch))
    github.checks.fail(REPO, sha, "tests", log="boom")
    asked = world.ledger.submit(_ci(world, sha)).job
    first = world.ledger.claim(asked.id, "w1", 0)  # its lease ends at once: a worker that dies mid-run
    assert first is not None
    run_pipeline(first, threading.Event(), world.deps())  # the run started; its worker never finishes it
    resumed = world.ledger.claim(asked.id, "w2", 60)
    assert resumed is not None and resumed.attempts == 2 and resumed.details.ran  # the mark was read back
    outcome = run_pipeline(resumed, threading.Event(), world.deps())
    assert outcome.status == JobStatus.FAILED and len(world.model.requests) == 2, outcome.error
    assert world.ledger.finish(asked.id, "w2", outcome.status, error=outcome.error)
    assert ci_done(world.ledger.issue_jobs(REPO, world.issue, installation_id=7), "next") == 1
