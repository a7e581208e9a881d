"""git on the worker, against the fake GitHub's git smart HTTP (token checked on every request)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.github.gateway import BotIdentity
from bot.pipeline.git import diffpaths, gitops
from tests.support.fake_github import FakeGitHub

BOT = BotIdentity("mini-fix[bot]", "1+mini-fix[bot]@users.noreply.github.com")
WORKFLOW_DIFF = """diff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml
new file mode 100644
--- /dev/null
+++ b/.github/workflows/ci.yml
@@ -0,0 +1 @@
+on: push
diff --git a/src/app.py b/src/app.py
--- a/src/app.py
+++ b/src/app.py
@@ -1 +1 @@
-x = 1
+x = 2
"""


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.start()
    fake.add_repo("acme", "widgets", {"app.py": "x = 1\n"})
    yield fake
    fake.stop()


def _token(github: FakeGitHub) -> str:
    return str(github.mint(7, {"repositories": ["widgets"]})["token"])


def _url(github: FakeGitHub) -> str:
    return f"{github.base_url}/acme/widgets.git"


def test_clone_commit_push_keeps_the_token_off_disk(github: FakeGitHub, tmp_path: Path) -> None:
    token = _token(github)
    repo = tmp_path / "repo"
    gitops.clone(_url(github), token, repo, branch="main", depth=50)
    (repo / "app.py").write_text("x = 2\n")
    diff = subprocess.run(["git", "-C", str(repo), "diff", "--binary"], capture_output=True, text=True).stdout
    subprocess.run(["git", "-C", str(repo), "checkout", "--", "."], check=True)
    gitops.apply_diff(repo, diff)
    sha = gitops.commit(repo, BOT, "Fix #1: x\n\nMini-Fix-Run: r1\n")
    gitops.push(repo, token, "mini-fix/issue-1")
    assert github.branch_head("acme/widgets", "mini-fix/issue-1") == sha
    assert github.show("acme/widgets", sha, "app.py") == "x = 2\n"
    author = subprocess.run(
        ["git", "-C", str(repo), "log", "-1", "--format=%an <%ae>|%cn"], capture_output=True, text=True
    ).stdout.strip()
    assert author == f"{BOT.name} <{BOT.email}>|{BOT.name}"
    for path in (repo / ".git").rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path
    assert "extraheader" not in (repo / ".git" / "config").read_text().lower()


def test_force_push_replaces_the_branch(github: FakeGitHub, tmp_path: Path) -> None:
    token = _token(github)
    heads = []
    for n, text in enumerate(("a", "b")):
        repo = tmp_path / f"repo{n}"
        gitops.clone(_url(github), token, repo, branch="main")
        (repo / "app.py").write_text(text)
        subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
        heads.append(gitops.commit(repo, BOT, f"attempt {n}"))
        gitops.push(repo, token, "mini-fix/issue-1")
    assert github.branch_head("acme/widgets", "mini-fix/issue-1") == heads[1]


@pytest.mark.parametrize("token", ["", "ghs_made_up"])
def test_clone_without_a_minted_token_fails_and_the_error_is_scrubbed(
    github: FakeGitHub, tmp_path: Path, token: str
) -> None:
    with pytest.raises(gitops.GitError) as caught:
        gitops.clone(_url(github), token, tmp_path / "repo")
    assert "git clone failed" in str(caught.value)
    assert not token or token not in str(caught.value)
    assert "Authorization" not in str(caught.value)


def test_token_for_another_repository_cannot_clone(github: FakeGitHub, tmp_path: Path) -> None:
    other = str(github.mint(7, {"repositories": ["gadgets"]})["token"])
    with pytest.raises(gitops.GitError):
        gitops.clone(_url(github), other, tmp_path / "repo")


def test_apply_failure_is_a_git_error(github: FakeGitHub, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    gitops.clone(_url(github), _token(github), repo)
    with pytest.raises(gitops.GitError, match="git apply failed"):
        gitops.apply_diff(repo, WORKFLOW_DIFF.replace("-x = 1", "-x = 99"))


def test_protected_paths_catch_workflows_and_configured_globs() -> None:
    assert diffpaths.protected_paths(WORKFLOW_DIFF) == [".github/workflows/ci.yml"]
    assert diffpaths.protected_paths(WORKFLOW_DIFF, ["src/*.py"]) == [".github/workflows/ci.yml", "src/app.py"]
    assert diffpaths.protected_paths(WORKFLOW_DIFF, ["src/"]) == [".github/workflows/ci.yml", "src/app.py"]
    assert (
        diffpaths.protected_paths(WORKFLOW_DIFF.split("diff --git a/src")[0].replace(".github/workflows", "docs")) == []
    )


def test_changed_paths_sees_renames_and_quoted_names() -> None:
    diff = (
        "diff --git a/old.txt b/.github/workflows/new.yml\nsimilarity index 100%\n"
        "rename from old.txt\nrename to .github/workflows/new.yml\n"
        'diff --git "a/sp ace\\tx" "b/sp ace\\tx"\n'
    )
    assert diffpaths.changed_paths(diff) == ["old.txt", ".github/workflows/new.yml", "sp ace\tx"]
    assert diffpaths.protected_paths(diff) == [".github/workflows/new.yml"]


def _repo_with(tmp_path: Path, names: list[str]) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in names:
        (repo / name).write_text("x\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    return repo


def test_tracked_files_are_the_tracked_ones_and_not_untracked_ones(tmp_path: Path) -> None:
    repo = _repo_with(tmp_path, ["b.py", "a.py"])
    (repo / "scratch.txt").write_text("not tracked\n")
    assert gitops.tracked_files(repo) == ["a.py", "b.py"]


def test_tracked_files_are_none_outside_a_git_repository(tmp_path: Path) -> None:
    assert gitops.tracked_files(tmp_path) == []
