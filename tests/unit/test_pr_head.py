"""Retries build on the PR branch's head: a person's commits are kept, a branch moved during the run is not
overwritten, `--fresh` starts over; against the fake GitHub's real git."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any

import tenacity

from bot.agent.model_base import ModelReply
from bot.github.gateway import BotIdentity
from bot.jobs import JobDetails, JobKind, JobStatus
from bot.pipeline.git import gitops
from tests.support.fake_github import FakeGitHub
from tests.support.scripted_model import ScriptedModel, bash
from tests.unit.test_pipeline import FIX, REPO, SUBMIT, World, github

__all__ = ["github"]  # the fixture, shared with test_pipeline
BRANCH_OF = "mini-fix/issue-{}"
BOT = BotIdentity("mini-fix[bot]", "1+mini-fix[bot]@users.noreply.github.com")


def _git(github: FakeGitHub, *args: str) -> str:
    bare = str(github.repos[REPO]["bare"])
    return subprocess.run(["git", "--git-dir", bare, *args], capture_output=True, text=True, check=True).stdout


def _is_ancestor(github: FakeGitHub, old: str, new: str) -> bool:
    bare = str(github.repos[REPO]["bare"])
    return subprocess.run(["git", "--git-dir", bare, "merge-base", "--is-ancestor", old, new]).returncode == 0


def push_on_top(github: FakeGitHub, branch: str, files: dict[str, str], message: str = "Edit") -> str:
    """A person's commit on top of `branch` (created from main when absent), pushed to the fake; its sha."""
    bare = str(github.repos[REPO]["bare"])
    with tempfile.TemporaryDirectory() as tmp:
        exists = github.branch_head(REPO, branch) is not None
        subprocess.run(["git", "clone", "-q", *(["-b", branch] if exists else []), bare, tmp], check=True)
        for path, text in files.items():
            (Path(tmp) / path).write_text(text)
        who = ["-c", "user.name=Maintainer", "-c", "user.email=m@example.com"]
        subprocess.run(["git", "-C", tmp, "add", "-A"], check=True)
        subprocess.run(["git", "-C", tmp, *who, "commit", "-qm", message], check=True)
        subprocess.run(["git", "-C", tmp, "push", "-q", "origin", f"HEAD:refs/heads/{branch}"], check=True)
    head = github.branch_head(REPO, branch)
    assert head
    return head


def _first_run(world: World) -> str:
    outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    head = world.github.branch_head(REPO, BRANCH_OF.format(world.issue))
    assert head
    return head


def test_a_maintainers_fix_up_survives_a_retry_which_adds_one_commit_on_top(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(github, tmp_path, [FIX, bash(SUBMIT), bash("echo '# v2' >> calc.py"), bash(SUBMIT)])
    _first_run(world)
    branch = BRANCH_OF.format(world.issue)
    fix_up = push_on_top(github, branch, {"NOTES.md": "by a maintainer\n"}, "Maintainer's fix-up")
    outcome = world.run(kind=JobKind.RETRY, guidance="also add a comment")
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    head = github.branch_head(REPO, branch)
    assert head and head != fix_up and _is_ancestor(github, fix_up, head)
    assert _git(github, "rev-parse", f"{head}^").strip() == fix_up  # one new commit, no squash
    assert github.show(REPO, head, "NOTES.md") == "by a maintainer\n"
    assert _git(github, "diff", "--name-only", f"{head}^", head).split() == ["calc.py"]  # only the new change
    task = world.model.requests[2][1]["content"]
    assert "What this run builds on" in task and "Maintainer's fix-up" in task and "NOTES.md" in task
    assert len(github.pulls) == 1


class MovesTheBranch(ScriptedModel):
    """A scripted model that pushes a person's commit to the PR branch while the run works."""

    def __init__(self, github: FakeGitHub, branch: str, at: int, replies: list[Any]) -> None:
        super().__init__(replies)
        self.github, self.branch, self.at = github, branch, at

    def query(self, messages: list[dict[str, Any]]) -> ModelReply:
        if len(self.requests) == self.at:
            push_on_top(self.github, self.branch, {"LATE.md": "pushed during the run\n"})
        return super().query(messages)


def test_a_branch_moved_during_the_run_is_not_overwritten(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    _first_run(world)
    branch = BRANCH_OF.format(world.issue)
    world.model = MovesTheBranch(github, branch, 2, [FIX, bash(SUBMIT), bash("echo '# v2' >> calc.py"), bash(SUBMIT)])
    world.model.requests = [[], []]  # the first two replies were spent by the first run
    outcome = world.run(kind=JobKind.RETRY, run_id="run2")
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    moved = github.branch_head(REPO, branch)
    assert moved and github.show(REPO, moved, "LATE.md") == "pushed during the run\n"  # the person's push kept
    other = github.branch_head(REPO, f"{branch}-run2")
    assert other and "# v2" in github.show(REPO, other, "calc.py")
    [_, into_branch] = github.pulls
    assert into_branch["head"]["ref"] == f"{branch}-run2" and into_branch["base"]["ref"] == branch
    status = world.issue_comments()[-1]
    assert f"{branch}-run2" in status and "was not overwritten" in status


def test_retry_fresh_starts_over_from_the_default_branch(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(github, tmp_path, [FIX, bash(SUBMIT), bash("echo '# v2' >> calc.py"), bash(SUBMIT)])
    _first_run(world)
    outcome = world.run(kind=JobKind.RETRY, details=JobDetails(fresh=True))
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    head = github.branch_head(REPO, BRANCH_OF.format(world.issue))
    assert head and _git(github, "rev-parse", f"{head}^").strip() == github.branch_head(REPO, "main")
    assert "return a - b" in github.show(REPO, head, "calc.py")  # the first run's fix is gone: started over
    assert "What this run builds on" not in world.model.requests[2][1]["content"]


def test_lease_refuses_a_push_over_a_moved_branch(github: FakeGitHub, tmp_path: Path) -> None:
    token = str(github.mint(7, {"repositories": ["widgets"]})["token"])
    url = f"{github.base_url}/{REPO}.git"
    repo = tmp_path / "repo"
    gitops.clone(url, token, repo, branch="main")
    started = gitops.remote_head(url, token, "topic")
    assert started is None
    push_on_top(github, "topic", {"x.md": "someone\n"})
    (repo / "calc.py").write_text("changed\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    gitops.commit(repo, BOT, "mine")
    try:
        gitops.push(repo, token, "topic", lease=gitops.NO_BRANCH)
    except gitops.LeaseRejected:
        pass
    else:
        raise AssertionError("the push replaced a branch created after the job started")
    assert github.show(REPO, "topic", "x.md") == "someone\n"


def test_transient_git_failures_are_retried_and_refusals_are_not(
    github: FakeGitHub, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setattr(gitops, "RETRY_WAIT", tenacity.wait_none())
    token = str(github.mint(7, {"repositories": ["widgets"]})["token"])
    url = f"{github.base_url}/{REPO}.git"
    github.faults.git(502)
    gitops.clone(url, token, tmp_path / "a", branch="main")
    assert [s for _, s in github.git_requests][:2] == [502, 200]
    github.faults.git(*[502] * gitops.REMOTE_ATTEMPTS)
    try:
        gitops.clone(url, token, tmp_path / "b", branch="main")
    except gitops.GitError as exc:
        assert exc.transient and f"retried {gitops.REMOTE_ATTEMPTS - 1} times" in str(exc)
    else:
        raise AssertionError("a clone answered 502 every time succeeded")
    before = len(github.git_requests)
    github.faults.git(403)
    try:
        gitops.clone(url, token, tmp_path / "c", branch="main")
    except gitops.GitError as exc:
        assert not exc.transient and gitops.is_refusal(str(exc))
    else:
        raise AssertionError("a clone answered 403 succeeded")
    assert len(github.git_requests) == before + 1  # a refusal is not retried
