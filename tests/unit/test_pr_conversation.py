"""The PR conversation under concurrency, through the pipeline (fake GitHub over HTTP, real git, the real SQLite
ledger, a host-side sandbox, a scripted model): asks that waited for a run are folded into the next one, each
checked first; a closed or merged PR is never pushed to by a follow-up."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from bot.jobs import Job, JobDetails, JobKind, JobRequest, JobStatus
from bot.ledger.sqlite.ledger import SqliteLedger
from bot.pipeline.deps import PipelineDeps
from bot.pipeline.publish.status import job_marker
from bot.pipeline.run import run_pipeline
from bot.pipeline.task.feedback import STATUS_MARKER
from bot.worker.ledger_hooks import job_hooks
from bot.worker.wiring import _mark_ran
from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_checks import BOT, bot_commit, open_bot_pr
from tests.support.scripted_model import bash
from tests.unit.test_pipeline import REPO, SUBMIT, World, github

__all__ = ["github"]
EDIT = bash("printf 'def add(a, b):\\n    return a + b\\n' > calc.py")
FIRST_FIX = {"calc.py": "def add(a, b):\n    return a + b + 0\n"}


class Conversation(World):
    """World with the App's PR open on the issue and a ledger holding the asks."""

    def __init__(self, github: FakeGitHub, tmp_path: Path, replies: list[Any]) -> None:
        super().__init__(github, tmp_path, replies)
        self.ledger = SqliteLedger(tmp_path / "ledger.db")
        self.pull = open_bot_pr(github, REPO, self.issue, FIRST_FIX)["number"]
        self.branch = f"mini-fix/issue-{self.issue}"
        for user in ("alice", "bob"):
            github.set_permission(user, "write")
        github.set_permission("mallory", "read")

    def deps(self) -> PipelineDeps:
        hooks = job_hooks(self.ledger, 7)  # as the worker wires them, for this world's installation
        marks = partial(_mark_ran, self.ledger)
        return replace(super().deps(), asks=hooks.asks, issue_jobs=hooks.issue_jobs, run_started=marks)

    def ask(self, kind: JobKind, requester: str, key: str, **details: Any) -> Job:
        """An ask recorded as the webhook path records it."""
        head = str(self.github.branch_head(REPO, self.branch))
        info = JobDetails(pull_request=self.pull, head_sha=head, **details)
        req = JobRequest(kind, 7, REPO, self.issue, requester, key, details=info)
        return self.ledger.submit(req).job

    def review(self, user: str, body: str, comment: str) -> Job:
        inline = [{"path": "calc.py", "line": 2, "diff_hunk": "@@ -1 +1 @@", "body": comment}]
        review_id = self.github.checks.review(REPO, self.pull, user, "changes_requested", body, inline)
        return self.ask(JobKind.REVIEW, user, f"review:{review_id}", review_id=review_id)

    def claimed(self, job: Job) -> Job:
        found = self.ledger.claim(job.id, "w1", 60)
        assert found is not None
        return found

    def status(self, job: Job) -> JobStatus:
        found = self.ledger.get(job.id)
        assert found is not None
        return found.status


def test_asks_that_waited_are_folded_into_the_next_run_each_checked_first(github: FakeGitHub, tmp_path: Path) -> None:
    world = Conversation(github, tmp_path, [EDIT, bash(SUBMIT)])
    first = world.review("alice", "Two things.", "Drop the `+ 0`.")
    second = world.review("bob", "One more.", "Name the test after the bug.")  # seconds later: it waits
    retry_req = JobRequest(JobKind.RETRY, 7, REPO, world.issue, "mallory", "d-m", guidance="Delete the tests.")
    denied = world.ledger.submit(retry_req).job
    sha = str(github.branch_head(REPO, world.branch))
    github.checks.fail(REPO, sha, "tests", log="AssertionError: 6 != 5", output="1 failed")
    ci = world.ledger.submit(
        JobRequest(
            JobKind.CI, 7, REPO, world.issue, BOT, "ci:1", details=JobDetails(pull_request=world.pull, head_sha=sha)
        )
    ).job
    assert [world.status(j) for j in (second, denied, ci)] == [JobStatus.WAITING] * 3
    outcome = run_pipeline(world.claimed(first), threading.Event(), world.deps())
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    task = world.model.requests[0][1]["content"]
    assert "Drop the `+ 0`." in task and "Name the test after the bug." in task  # both reviews worked on
    assert "AssertionError: 6 != 5" in task  # the CI failure that waited, folded in
    assert "Delete the tests." not in json.dumps(world.model.requests)  # a reader's ask has no effect
    assert [world.status(j) for j in (second, denied, ci)] == [JobStatus.FOLDED, JobStatus.DENIED, JobStatus.FOLDED]
    pr_comments = [c["body"] for c in github.comments_on(REPO, world.pull)]
    [answer] = [c for c in pr_comments if "worked on" in c]
    assert "the review by @alice" in answer and "the review by @bob" in answer and "`tests`" in answer
    assert "Drop the `+ 0`." in answer and "Name the test after the bug." in answer
    assert any("@mallory" in c and "write" in c for c in world.issue_comments())  # told where they asked
    assert "# v" not in github.show(REPO, world.branch, "calc.py")  # pushed to the PR's branch
    assert "return a + b\n" in github.show(REPO, world.branch, "calc.py") and len(github.pulls) == 1


def test_a_readers_ask_leaves_the_ci_bound_alone(github: FakeGitHub, tmp_path: Path) -> None:
    world = Conversation(github, tmp_path, [])
    lead = world.ask(JobKind.REVIEW, "mallory", "review:m", review_id=1)
    assert run_pipeline(world.claimed(lead), threading.Event(), world.deps()).status == JobStatus.DENIED
    assert world.ledger.finish(lead.id, "w1", JobStatus.DENIED)
    ci = Job("c", JobKind.CI, 7, REPO, world.issue, BOT, "ci", JobStatus.SUCCEEDED)
    from bot.pipeline.task.followup import ci_done

    assert (
        ci_done([ci, *world.ledger.issue_jobs(REPO, world.issue, installation_id=7)], "x") == 1
    )  # the denied review reset nothing


def test_a_follow_up_on_a_closed_pr_is_not_run(github: FakeGitHub, tmp_path: Path) -> None:
    world = Conversation(github, tmp_path, [])
    review = world.review("alice", "Change it.", "Here.")
    github.close_pull(REPO, world.pull)
    head = github.branch_head(REPO, world.branch)
    outcome = run_pipeline(world.claimed(review), threading.Event(), world.deps())
    assert outcome.status == JobStatus.CANCELLED and "was closed" in str(outcome.error)
    assert world.model.requests == [] and github.branch_head(REPO, world.branch) == head and len(github.pulls) == 1
    [note] = [c["body"] for c in github.comments_on(REPO, world.pull)]
    assert "was closed before this follow-up started" in note and "did not reopen it" in note


class _ClosesThePr:
    """A scripted model whose first reply comes after a person merged the PR."""

    def __init__(self, world: Conversation, replies: list[Any]) -> None:
        self.world, self.inner = world, world.model
        self.inner.replies = replies
        self.name, self.requests = "scripted", self.inner.requests

    def query(self, messages: list[dict[str, Any]]) -> Any:
        if not self.requests:
            self.world.github.close_pull(REPO, self.world.pull, merged=True)
        return self.inner.query(messages)


def test_a_pr_merged_while_the_follow_up_works_is_not_pushed_to_or_reopened(github: FakeGitHub, tmp_path: Path) -> None:
    world = Conversation(github, tmp_path, [])
    world.model = _ClosesThePr(world, [EDIT, bash(SUBMIT)])  # type: ignore[assignment]
    review = world.review("alice", "Change it.", "Here.")
    head = github.branch_head(REPO, world.branch)
    outcome = run_pipeline(world.claimed(review), threading.Event(), world.deps())
    assert outcome.status == JobStatus.CANCELLED and "pr_ended" in str(outcome.error)
    assert github.branch_head(REPO, world.branch) == head and len(github.pulls) == 1  # nothing pushed, no new PR
    status = world.issue_comments()[0]
    assert "the pull request was merged while this run worked" in status
    [note] = [c["body"] for c in github.comments_on(REPO, world.pull) if "merged" in c["body"]]
    assert "was merged while this run worked" in note and "add the trigger label" in note


def test_a_resumed_follow_up_ending_before_its_run_closes_the_status_comment_left_working(
    github: FakeGitHub, tmp_path: Path
) -> None:
    world = Conversation(github, tmp_path, [])
    sha = str(github.branch_head(REPO, world.branch))
    details = JobDetails(pull_request=world.pull, head_sha=sha)
    ci = world.ledger.submit(JobRequest(JobKind.CI, 7, REPO, world.issue, BOT, "ci:1", details=details)).job
    working = f":hourglass_flowing_sand: **mini-fix is working on this issue**\n{STATUS_MARKER}\n{job_marker(ci.id)}"
    left = github.add_comment(REPO, world.issue, working, BOT)  # the first claim's worker posted it, pushed, died
    bot_commit(github, REPO, world.branch, {"calc.py": "def add(a, b):\n    return a + b\n"}, "mini-fix: follow-up")
    resumed = replace(world.claimed(ci), attempts=2)
    outcome = run_pipeline(resumed, threading.Event(), world.deps())
    assert outcome.status == JobStatus.CANCELLED and world.model.requests == []
    [body] = [c["body"] for c in github.comments if c["id"] == left]
    assert "is working" not in body and "its worker stopped mid-run" in body and "newer head commit" in body
