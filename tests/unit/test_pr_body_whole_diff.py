"""A retry or follow-up rewrites the PR body; the warnings that hold for the PR's whole diff stay (issue 32 #6).

The follow-up's own change is diffed against the PR head, so an earlier commit on the branch that dropped a test
(or touched a protected path) is invisible to it; the PR body is about the whole pull request, so the App checks
the whole diff against the default branch again whenever it rewrites the body.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from bot.jobs import JobKind, JobStatus
from tests.support.fake_github import FakeGitHub
from tests.support.fake_github_config import commit_files
from tests.support.scripted_model import bash
from tests.unit.test_pipeline import FIX, REPO, SUBMIT, World, github

__all__ = ["github"]
TESTS = (
    "from calc import add\n\n\ndef test_add():\n    assert add(1, 1) == 2\n\n\n"
    "def test_zero():\n    assert add(0, 0) == 0\n"
)
DROP_ZERO = bash(
    "printf 'from calc import add\\n\\n\\ndef test_add():\\n    assert add(1, 1) == 2\\n' > tests/test_calc.py"
)
WARNING = "drops existing tests: tests/test_calc.py::test_zero"


def _persons_commit(github: FakeGitHub, branch: str, files: dict[str, str]) -> None:
    """A person's commit on top of `branch`, pushed to the fake."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["git", "clone", "-q", "-b", branch, str(github.repos[REPO]["bare"]), tmp], check=True)
        for path, text in files.items():
            (Path(tmp) / path).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / path).write_text(text)
        who = ["-c", "user.name=Maintainer", "-c", "user.email=m@example.com"]
        subprocess.run(["git", "-C", tmp, "add", "-A"], check=True)
        subprocess.run(["git", "-C", tmp, *who, "commit", "-qm", "ci"], check=True)
        subprocess.run(["git", "-C", tmp, "push", "-q", "origin", f"HEAD:refs/heads/{branch}"], check=True)


def _pr_body(github: FakeGitHub) -> str:
    [pr] = github.pulls
    return str(pr["body"])


def test_a_retry_keeps_the_warning_for_a_test_an_earlier_commit_dropped(github: FakeGitHub, tmp_path: Path) -> None:
    commit_files(github, REPO, {"tests/test_calc.py": TESTS})
    world = World(github, tmp_path, [FIX, DROP_ZERO, bash(SUBMIT), bash("echo '# v2' >> calc.py"), bash(SUBMIT)])
    first = world.run()
    assert first.status == JobStatus.SUCCEEDED, first.error
    assert WARNING in _pr_body(github)  # the first run's own diff drops it
    retry = world.run(kind=JobKind.RETRY, id="job2", delivery_id="d2", guidance="also add a comment")
    assert retry.status == JobStatus.SUCCEEDED, retry.error
    head = github.branch_head(REPO, f"mini-fix/issue-{world.issue}")
    assert head and "test_zero" not in github.show(REPO, head, "tests/test_calc.py")  # still dropped
    assert WARNING in _pr_body(github)


def test_a_retry_names_protected_paths_a_person_changed_on_the_branch(github: FakeGitHub, tmp_path: Path) -> None:
    world = World(github, tmp_path, [FIX, bash(SUBMIT), bash("echo '# v2' >> calc.py"), bash(SUBMIT)])
    assert world.run().status == JobStatus.SUCCEEDED
    branch = f"mini-fix/issue-{world.issue}"
    _persons_commit(github, branch, {".github/workflows/ci.yml": "on: push\n"})
    retry = world.run(kind=JobKind.RETRY, id="job2", delivery_id="d2")
    assert retry.status == JobStatus.SUCCEEDED, retry.error
    body = _pr_body(github)
    assert "protected" in body and ".github/workflows/ci.yml" in body


def test_a_retry_whose_branch_drops_nothing_has_no_warning(github: FakeGitHub, tmp_path: Path) -> None:
    commit_files(github, REPO, {"tests/test_calc.py": TESTS})
    world = World(github, tmp_path, [FIX, bash(SUBMIT), bash("echo '# v2' >> calc.py"), bash(SUBMIT)])
    assert world.run().status == JobStatus.SUCCEEDED
    retry = world.run(kind=JobKind.RETRY, id="job2", delivery_id="d2")
    assert retry.status == JobStatus.SUCCEEDED, retry.error
    assert "[!WARNING]" not in _pr_body(github)
