"""Work kept at a budget's end: a limit-ended run with an acceptable change opens a `[WIP]` draft PR."""

from __future__ import annotations

from pathlib import Path

from bot.jobs import JobKind, JobStatus
from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_config import commit_files
from tests.support.scripted_model import bash
from tests.unit.test_pipeline import FIX, REPO, SUBMIT, World, github

__all__ = ["github"]
CONFIG = ".github/mini-fix.yml"


def test_a_step_limit_with_a_change_opens_a_wip_draft_pr_that_a_retry_continues(
    github: FakeGitHub, tmp_path: Path
) -> None:
    commit_files(github, REPO, {CONFIG: "limits:\n  steps: 2\n"})
    world = World(github, tmp_path, [FIX, bash("true"), bash("echo '# done' >> calc.py"), bash(SUBMIT)])
    outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    [pr] = github.pulls
    assert pr["draft"] and pr["title"] == "[WIP] add() subtracts"
    assert "step limit" in pr["body"] and "/agent retry" in pr["body"]
    head = github.branch_head(REPO, f"mini-fix/issue-{world.issue}")
    assert head and "a + b" in github.show(REPO, head, "calc.py")
    assert "step limit" in world.issue_comments()[0]  # the status comment says it is incomplete
    retried = world.run(kind=JobKind.RETRY, id="job2")
    assert retried.status == JobStatus.SUCCEEDED, retried.error
    new_head = github.branch_head(REPO, f"mini-fix/issue-{world.issue}")
    assert new_head and "a + b\n# done" in github.show(REPO, new_head, "calc.py")  # continued from the WIP
    assert github.pulls[0]["title"] == "add() subtracts" and len(github.pulls) == 1


def test_partial_work_can_be_turned_off(github: FakeGitHub, tmp_path: Path) -> None:
    commit_files(github, REPO, {CONFIG: "keep_partial_work: false\nlimits:\n  steps: 1\n"})
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    outcome = world.run()
    assert outcome.error and outcome.error.startswith("limits") and github.pulls == []


def test_a_partial_change_to_a_protected_path_is_not_published(github: FakeGitHub, tmp_path: Path) -> None:
    commit_files(github, REPO, {CONFIG: "limits:\n  steps: 1\n"})
    world = World(github, tmp_path, [bash("mkdir -p .github/workflows && echo 'on: push' > .github/workflows/x.yml")])
    outcome = world.run()
    assert outcome.error and outcome.error.startswith("limits") and github.pulls == []
    assert github.branch_head(REPO, f"mini-fix/issue-{world.issue}") is None
