"""No duplicate PRs: an open PR that already closes the issue is linked instead of opening another."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.pipeline.publish.pr import closes
from tests.support.fake_github import FakeGitHub
from tests.support.scripted_model import bash
from tests.unit.test_pipeline import FIX, REPO, SUBMIT, World, github
from tests.unit.test_pr_head import push_on_top

__all__ = ["github"]


def _persons_pr(
    github: FakeGitHub, body: str, number: int = 90, *, author: str = "alice", head_repo: str = REPO
) -> dict[str, Any]:
    """An open PR by `author` whose head branch lives in `head_repo` (a fork when it is not REPO)."""
    push_on_top(github, "alice-fix", {"calc.py": "def add(a, b):\n    return a + b\n"})
    pull = {
        "number": number, "repo": REPO, "title": "Fix add", "body": body, "draft": False, "state": "open",
        "head": {"ref": "alice-fix", "repo": {"full_name": head_repo}}, "base": {"ref": "main"},
        "html_url": f"{github.base_url}/{REPO}/pull/{number}", "user": {"login": author},
    }  # fmt: skip
    github.pulls.append(pull)
    return pull


def test_an_open_pr_that_fixes_the_issue_is_linked_not_duplicated(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    theirs = _persons_pr(github, f"This resolves #{world.issue}.")
    outcome = world.run()
    assert outcome.error and outcome.error.startswith("duplicate_pr")
    assert github.pulls == [theirs] and github.branch_head(REPO, f"mini-fix/issue-{world.issue}") is None
    comments = world.issue_comments()
    assert theirs["html_url"] in comments[-1] and "already fixes this issue" in comments[-1]
    assert "already fixes this issue" in comments[0] and theirs["html_url"] in comments[0]  # the status comment


def test_an_outsiders_fork_pr_that_says_it_fixes_the_issue_does_not_block(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    _persons_pr(github, f"Fixes #{world.issue}", author="mallory", head_repo="mallory/widgets")
    outcome = world.run()
    assert outcome.error is None and len(github.pulls) == 2
    assert github.branch_head(REPO, f"mini-fix/issue-{world.issue}") is not None


def test_a_writers_fork_pr_blocks_before_the_agent_runs(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    github.set_permission("bob", "maintain")
    theirs = _persons_pr(github, f"Fixes #{world.issue}", author="bob", head_repo="bob/widgets")
    outcome = world.run()
    assert outcome.error and outcome.error.startswith("duplicate_pr")
    assert github.pulls == [theirs] and world.model.requests == []  # no model call, no sandbox spent on it


def test_a_pr_that_only_mentions_the_issue_does_not_block(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    _persons_pr(github, f"Related to #{world.issue}; fixes #{world.issue + 40}")
    outcome = world.run()
    assert outcome.error is None and len(github.pulls) == 2


def test_closing_keywords() -> None:
    assert closes("Fixes #3", 3, "acme/widgets") and closes("closed: #3", 3, "acme/widgets")
    assert closes("resolves acme/widgets#3", 3, "acme/widgets")
    assert closes("Fix https://github.com/acme/widgets/issues/3", 3, "acme/widgets")
    assert not closes("resolves other/repo#3", 3, "acme/widgets") and not closes("Fixes #31", 3, "acme/widgets")
    assert not closes("about #3", 3, "acme/widgets") and not closes("prefix#3", 3, "acme/widgets")
