"""The git side of a job under faults: a moved default branch, short-lived tokens, transient and refused answers."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import tenacity

from bot.github.gateway import GitToken
from bot.jobs import JobStatus
from bot.pipeline.git import gitops
from bot.pipeline.publish.tokens import FreshToken
from tests.support.fake_github import FakeGitHub
from tests.support.scripted_model import ScriptedModel, bash
from tests.unit.test_pipeline import FIX, REPO, SUBMIT, World, github
from tests.unit.test_pr_head import push_on_top

__all__ = ["github"]


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gitops, "RETRY_WAIT", tenacity.wait_none())


class MovesMain(ScriptedModel):
    """Pushes a commit to main while the agent works."""

    def __init__(self, github: FakeGitHub, files: dict[str, str], replies: list[Any]) -> None:
        super().__init__(replies)
        self.github, self.files = github, files

    def query(self, messages: list[dict[str, Any]]) -> Any:
        if not self.requests:
            push_on_top(self.github, "main", self.files, "Someone else's change")
        return super().query(messages)


def _parent(github: FakeGitHub, sha: str) -> str:
    bare = str(github.repos[REPO]["bare"])
    out = subprocess.run(["git", "--git-dir", bare, "rev-parse", f"{sha}^"], capture_output=True, text=True)
    return out.stdout.strip()


def test_a_fix_follows_a_moved_default_branch_when_it_applies_cleanly(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(github, tmp_path, [])
    world.model = MovesMain(github, {"README.md": "hello\n"}, [FIX, bash(SUBMIT)])
    outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    head = github.branch_head(REPO, f"mini-fix/issue-{world.issue}")
    assert head and _parent(github, head) == github.branch_head(REPO, "main")
    assert github.show(REPO, head, "README.md") == "hello\n" and "a + b" in github.show(REPO, head, "calc.py")
    assert "rebased onto its new head" in github.pulls[0]["body"]


def test_a_fix_that_conflicts_with_the_moved_base_says_so_in_the_pr(github: FakeGitHub, tmp_path: Path) -> None:
    old_main = github.branch_head(REPO, "main")
    world = World(github, tmp_path, [])
    world.model = MovesMain(github, {"calc.py": "def add(a, b):\n    return b + a + 0\n"}, [FIX, bash(SUBMIT)])
    outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    head = github.branch_head(REPO, f"mini-fix/issue-{world.issue}")
    assert head and _parent(github, head) == old_main  # pushed on the base it was made for
    body = github.pulls[0]["body"]
    assert "conflicts with its current head" in body and "/agent retry --fresh" in body


def test_a_token_expiring_mid_run_does_not_lose_the_push(github: FakeGitHub, tmp_path: Path) -> None:
    github.token_lifetime = 2.0  # every token dies within seconds; the run outlives the first one
    world = World(github, tmp_path, [bash("sleep 3"), FIX, bash(SUBMIT)])
    outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    head = github.branch_head(REPO, f"mini-fix/issue-{world.issue}")
    assert head and "a + b" in github.show(REPO, head, "calc.py")
    git_tokens = [t for t, g in github.tokens.items() if g["permissions"] == {"contents": "write", "metadata": "read"}]
    assert len(git_tokens) >= 2  # minted again for the push


def test_a_502_on_the_first_clone_is_retried(github: FakeGitHub, tmp_path: Path) -> None:
    github.faults.git(0, 0, 502)  # the branch look-up (two requests) passes, the clone's first request fails
    world = World(github, tmp_path, [FIX, bash(SUBMIT)])
    outcome = world.run()
    assert outcome.status == JobStatus.SUCCEEDED, outcome.error
    assert [status for _, status in github.git_requests[:4]] == [200, 200, 502, 200]
    assert github.git_requests[2][0].endswith("/info/refs")  # the clone's opening request, answered 502


def test_persistent_5xx_and_refusals_read_differently(github: FakeGitHub, tmp_path: Path) -> None:
    github.faults.git(*[503] * gitops.REMOTE_ATTEMPTS)
    world = World(github, tmp_path, [])
    outcome = world.run()
    assert outcome.error and outcome.error.startswith("clone_failed")
    first = world.issue_comments()[-1]
    assert "transient failure of" in first and f"(retried {gitops.REMOTE_ATTEMPTS - 1} times)" in first
    github.faults.git(403)
    outcome = world.run(id="job2")
    assert outcome.error and outcome.error.startswith("clone_failed")
    last = world.issue_comments()[-1]
    assert "refused the App's token" in last and "transient failure of" not in last


def test_fresh_token_mints_again_only_near_expiry() -> None:
    now = [1000.0]
    minted: list[GitToken] = []

    def mint() -> GitToken:
        minted.append(GitToken(f"t{len(minted)}", now[0] + 3600))
        return minted[-1]

    token = FreshToken(mint, clock=lambda: now[0])
    assert token() == token() == "t0"
    now[0] += 3600 - 601
    assert token() == "t0"
    now[0] += 2  # within ten minutes of its expiry
    assert token() == "t1" and token.minted == ["t0", "t1"]
